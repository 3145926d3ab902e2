"""A rendered copy of the course: every chapter executed (full mode unless asked otherwise) and written as
HTML with its outputs and widget state, to read without running anything.

Two copies come out of one execution of each chapter's source notebook:

* ``<out>/instructor/<chapter>.html`` — the source notebook as executed: answers, hidden tests, model answers.
* ``<out>/students/<chapter>.html`` — the release's cells (answer stubs, visible tests only, no model answers)
  with the outputs the executed source produced for the same cells. It shows what a student sees after
  *Run All* with correct answers, and gives nothing away.

    python autograder/render.py [--chapter 04_gpt_decoding] [--fast] [--out build/html]
"""

from __future__ import annotations

import argparse
import copy
import html
import os
import sys
import time
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOLUTIONS, COURSE = ROOT / "solutions", ROOT / "course"
KERNEL = "dlcourse"


def execute(chapter: str, fast: bool, timeout: float = 1800) -> tuple[nbformat.NotebookNode, float]:
    """Run the chapter's source notebook top to bottom in its folder; the executed notebook and seconds."""
    from nbclient import NotebookClient

    (source,) = sorted((SOLUTIONS / chapter).glob("*.ipynb"))
    nb = nbformat.read(source, as_version=4)
    os.environ["DLCOURSE_FAST"] = "1" if fast else "0"  # the kernel inherits this process's environment
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, store_widget_state=True,
                   resources={"metadata": {"path": str(source.parent)}}).execute()
    return nb, time.perf_counter() - start


def student_copy(executed: nbformat.NotebookNode, chapter: str) -> nbformat.NotebookNode:
    """The release's cells, each with the outputs of the executed source cell of the same id."""
    (release,) = sorted((COURSE / chapter).glob("*.ipynb"))
    student = nbformat.read(release, as_version=4)
    by_id = {cell.get("id"): cell for cell in executed.cells}
    for cell in student.cells:
        ran = by_id.get(cell.get("id"))
        if cell.cell_type == "code" and ran is not None:
            cell.outputs = copy.deepcopy(ran.get("outputs", []))
            cell.execution_count = ran.get("execution_count")
    student.metadata["widgets"] = copy.deepcopy(executed.metadata.get("widgets", {}))
    return student


def to_html(nb: nbformat.NotebookNode) -> str:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    return body


def render(chapters: list[str], out: Path, fast: bool) -> list[tuple[str, float]]:
    """Write both copies of each chapter and an index per copy; returns (chapter, seconds executed)."""
    done = []
    for chapter in chapters:
        executed, seconds = execute(chapter, fast)
        for who, nb in (("instructor", executed), ("students", student_copy(executed, chapter))):
            (out / who).mkdir(parents=True, exist_ok=True)
            (out / who / f"{chapter}.html").write_text(to_html(nb), encoding="utf-8")
        done.append((chapter, seconds))
        print(f"rendered {chapter} ({'FAST' if fast else 'full'} mode, executed in {seconds:.0f} s)", flush=True)
    mode = "FAST mode" if fast else "full mode"
    for who in ("instructor", "students"):
        rows = "\n".join(f'<li><a href="{html.escape(ch)}.html">{html.escape(ch)}</a> '
                         f"(executed in {s:.0f} s)</li>" for ch, s in done)
        (out / who / "index.html").write_text(
            f"<!doctype html><meta charset='utf-8'><title>Deep Learning from Scratch ({who})</title>\n"
            f"<h1>Deep Learning from Scratch — {who}' copy, {mode}</h1>\n<ul>\n{rows}\n</ul>\n", encoding="utf-8")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapter", help="one chapter (default: all)")
    parser.add_argument("--fast", action="store_true", help="FAST mode (a minute per chapter) instead of full")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "html")
    args = parser.parse_args(argv)
    chapters = sorted(p.name for p in SOLUTIONS.iterdir()
                      if p.is_dir() and (not args.chapter or p.name == args.chapter))
    if not chapters:
        print(f"no chapter {args.chapter!r} under solutions/", file=sys.stderr)
        return 2
    render(chapters, args.out, args.fast)
    print(f"open {args.out / 'students' / 'index.html'} (or instructor/index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
