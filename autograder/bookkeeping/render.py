"""A rendered copy of the course: every chapter executed (full mode unless asked otherwise) and written as
HTML with its outputs and widget state, to read without running anything.

Two copies come out of one execution of each chapter's source notebook:

* ``<out>/instructor/<chapter>.html`` — the source notebook as executed: answers, hidden tests, model answers.
* ``<out>/students/<chapter>.html`` — the release's cells (answer stubs, visible tests only, no model answers)
  with the outputs the executed source produced for the same cells. It shows what a student sees after
  *Run All* with correct answers, and gives nothing away. The same notebook is kept beside it,
  ``<out>/students/<chapter>.ipynb``, with its widget state: ``make site``
  (``autograder/bookkeeping/website.py``) builds the course's website from it.

The pages work offline: the scripts that draw the widgets from their saved state and typeset the maths are
copied into ``<out>/static/`` (fetched once by ``make setup``, see ``autograder/bookkeeping/offline.py``)
and loaded from there; ``--cdn`` writes pages that load them from public CDNs instead. Each cell has a time limit
(``--cell-timeout``): a cell that runs past it is named, that chapter is not written, and the others are.

    python autograder/bookkeeping/render.py [--chapter 04_gpt_decoding] [--fast] [--out build/html] [--cdn]
"""

from __future__ import annotations

import argparse
import copy
import html
import os
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: the `autograder` package is imported from the repository
    sys.path.insert(0, str(ROOT))

from autograder.bookkeeping import offline  # noqa: E402

HERE = Path(__file__).resolve().parent
SOLUTIONS, COURSE = ROOT / "solutions", ROOT / "course"
KERNEL = "dlcourse"


STATIC = "static"  # beside students/ and instructor/: the scripts the pages load
CELL_TIMEOUT = 1200.0  # seconds; the longest full-mode cell (a training demo) takes a few minutes


class RenderError(RuntimeError):
    """A chapter could not be executed; the message names the cell."""


def execute(chapter: str, fast: bool, timeout: float = CELL_TIMEOUT) -> tuple[nbformat.NotebookNode, float]:
    """Run the chapter's source notebook top to bottom in its folder; the executed notebook and seconds.
    RenderError naming the cell when one runs past ``timeout`` seconds or fails."""
    from autograder.bookkeeping.kernels import NotebookFailed, run_notebook

    (source,) = sorted((SOLUTIONS / chapter).glob("*.ipynb"))
    os.environ["DLCOURSE_FAST"] = "1" if fast else "0"  # the kernel inherits this process's environment
    try:
        return run_notebook(source, timeout, kernel_name=KERNEL, store_widget_state=True)
    except NotebookFailed as err:
        raise RenderError(f"{chapter}: {err.where}") from None


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


def to_html(nb: nbformat.NotebookNode, scripts: str | None = None) -> str:
    """The page of ``nb``: with ``scripts`` (a URL relative to the page, where :mod:`offline` copied the
    scripts) it loads nothing from the internet; without, the scripts come from nbconvert's CDNs."""
    from nbconvert import HTMLExporter

    if scripts is None:
        exporter = HTMLExporter(template_name="lab")
    else:
        exporter = HTMLExporter(template_name="offline", extra_template_basedirs=[str(HERE / "templates" / "html")],
                                require_js_url=f"{scripts}/{offline.REQUIRE_JS}",
                                widget_renderer_url=f"{scripts}/{offline.WIDGETS_JS}",
                                mathjax_url=f"{scripts}/{offline.MATHJAX_JS}")
    body, _ = exporter.from_notebook_node(nb)
    return body


def render(chapters: list[str], out: Path, fast: bool, cdn: bool = False,
           cell_timeout: float = CELL_TIMEOUT) -> list[tuple[str, float]]:
    """Write both copies of each chapter and an index per copy; returns (chapter, seconds executed). A chapter
    whose execution stops is left out (its error printed) and the others are written; RenderError at the end
    names every chapter left out."""
    scripts = None
    if not cdn:
        offline.install(out / STATIC)  # before hours of execution: missing scripts stop it here
        scripts = f"../{STATIC}"
    done, failed = [], []
    for chapter in chapters:
        try:
            executed, seconds = execute(chapter, fast, cell_timeout)
        except RenderError as err:
            print(f"NOT rendered: {err}", file=sys.stderr, flush=True)
            failed.append(str(err))
            continue
        students = student_copy(executed, chapter)
        for who, nb in (("instructor", executed), ("students", students)):
            (out / who).mkdir(parents=True, exist_ok=True)
            (out / who / f"{chapter}.html").write_text(to_html(nb, scripts), encoding="utf-8")
        nbformat.write(students, out / "students" / f"{chapter}.ipynb")  # the executed copy make site reads
        done.append((chapter, seconds))
        print(f"rendered {chapter} ({'FAST' if fast else 'full'} mode, executed in {seconds:.0f} s)", flush=True)
    mode = "FAST mode" if fast else "full mode"
    for who in ("instructor", "students"):
        rows = "\n".join(f'<li><a href="{html.escape(ch)}.html">{html.escape(ch)}</a> '
                         f"(executed in {s:.0f} s)</li>" for ch, s in done)
        whose = "instructor's" if who == "instructor" else "students'"
        (out / who / "index.html").write_text(
            f"<!doctype html><html lang='en'><meta charset='utf-8'><title>Deep Learning from Scratch ({who})</title>"
            f"\n<main><h1>Deep Learning from Scratch — the {whose} copy, {mode}</h1>\n<ul>\n{rows}\n</ul></main>\n",
            encoding="utf-8")
    if failed:
        raise RenderError("not rendered:\n" + "\n".join(failed))
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapter", help="one chapter (default: all)")
    parser.add_argument("--fast", action="store_true", help="FAST mode (a minute per chapter) instead of full")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "html")
    parser.add_argument("--cdn", action="store_true", help="pages that load their scripts from public CDNs")
    parser.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT, help="seconds a cell may run")
    args = parser.parse_args(argv)
    from autograder.bookkeeping import pipeline

    try:
        chapters = pipeline.chapters(args.chapter)  # all, or the one named, which must exist
    except pipeline.PipelineError as err:
        print(err, file=sys.stderr)
        return 2
    try:
        render(chapters, args.out, args.fast, cdn=args.cdn, cell_timeout=args.cell_timeout)
    except (RenderError, offline.OfflineError) as err:
        print(err, file=sys.stderr)
        return 1
    print(f"open {args.out / 'students' / 'index.html'} (or instructor/index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
