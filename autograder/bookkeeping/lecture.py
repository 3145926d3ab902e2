"""``make lecture``: a chapter opened for teaching, in a lecture copy that is never written back into
``solutions/``.

``lecture/<chapter>/`` holds a copy of the chapter's source folder (every answer filled in, the model
answers) with slide metadata, so the notebook also opens as a slideshow: a markdown cell that starts a
section (``#`` or ``##``) begins a slide, a ``###`` heading a sub-slide. The hidden-test cells are left out
of the copy. The slideshow is jupyterlab-deck's: it presents the notebook inside JupyterLab, so every widget
works on its slide (the command palette's "Start Deck", or the deck button of the notebook; Space and
Shift+Space step through, the arrows go across slides and down into sub-slides). ``make lecture`` opens it
in lecture mode (``DLCOURSE_LECTURE=1``, see ``runtime.lecture``).
JupyterLab saves the lecturer's runs and edits into the copy; ``solutions/`` stays clean.

Preparing again never loses what a lecturer did: a copy nobody changed is refreshed when the chapter
changed; an edited copy is kept as it is, or, when the chapter changed too, saved beside the new copy under
a name with the time in it.

    python autograder/bookkeeping/lecture.py prepare --chapter 04_gpt_decoding [--root lecture]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
LECTURE = ROOT / "lecture"
RECORD = ".lecture.json"
# What a lecture copy holds beyond the chapter itself (slide metadata, cells left out): part of the record, so a
# copy made under an older layout is refreshed (an edited one saved beside it first), as when the chapter changes.
# 2: continuation cells carry no slide type (jupyterlab-deck drops a "-" cell from the slides).
LAYOUT = 2


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def slide_type(cell: nbformat.NotebookNode) -> str:
    """The cell's place in the slideshow: "slide", "subslide", "skip" or "-" (on the slide before)."""
    if is_hidden_test(cell):
        return "skip"
    if cell.cell_type == "markdown":
        first = cell.source.lstrip().split("\n", 1)[0]
        if first.startswith(("# ", "## ")):
            return "slide"
        if first.startswith("### "):
            return "subslide"
    return "-"


def is_hidden_test(cell: nbformat.NotebookNode) -> bool:
    """A hidden-test cell: grading machinery, run by the grader, never shown in class."""
    return cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get(
        "grade_id", "").endswith("_hidden")


def with_slides(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with every cell's slide type set (see :func:`slide_type`); the first cell always opens a slide.

    A cell that goes on the slide before carries no slide type at all: that is what every slideshow tool
    reads as "on the slide before" (nbconvert and RISE take a missing type as ``"-"``; jupyterlab-deck, which
    ``make lecture`` uses, reads only a missing type so and would drop a ``"-"`` cell from the slides)."""
    for i, cell in enumerate(nb.cells):
        kind = "slide" if i == 0 else slide_type(cell)
        cell.metadata.pop("slideshow", None)
        if kind != "-":
            cell.metadata["slideshow"] = {"slide_type": kind}
    return nb


def lecture_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The lecture copy of a chapter: every answer in, slide metadata set, the hidden-test cells left out.

    Nothing later in a chapter uses what a hidden test defines (the student release, which has none, runs
    the same cells), and leaving them out spares a lecture's Run All one to two seconds per exercise.
    """
    nb.cells = [cell for cell in nb.cells if not is_hidden_test(cell)]
    return with_slides(nb)


def prepare(chapter: str, root: Path = LECTURE, solutions: Path = SOLUTIONS) -> tuple[Path, str]:
    """Make or refresh ``root/chapter``; returns the lecture notebook and what was done, in a sentence."""
    source_dir = solutions / chapter
    sources = sorted(source_dir.glob("*.ipynb")) if source_dir.is_dir() else []
    if len(sources) != 1:
        known = ", ".join(sorted(p.name for p in solutions.iterdir() if p.is_dir()))
        raise SystemExit(f"no chapter {chapter!r} under {solutions} (chapters: {known})")
    (source,) = sources
    target_dir = root / chapter
    target = target_dir / source.name
    record_path = target_dir / RECORD
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    source_now = f"{_digest(source)} layout {LAYOUT}"
    said = ""
    existed = target.is_file()
    if existed:
        edited = _digest(target) != record.get("copy")
        changed = source_now != record.get("source")
        if not changed:
            return target, ("your lecture copy, with your runs and edits, is kept" if edited
                            else "the lecture copy is up to date")
        if edited:
            kept = target.with_name(f"{target.stem}.{time.strftime('%Y%m%d-%H%M%S')}.ipynb")
            shutil.copy2(target, kept)
            said = f"; your edited copy is saved as {kept.name}"
    shutil.copytree(source_dir, target_dir, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    nbformat.write(lecture_notebook(nbformat.read(source, as_version=4)), target)
    record_path.write_text(json.dumps({"source": source_now, "copy": _digest(target)}, indent=1) + "\n")
    return target, ("the lecture copy was refreshed from the chapter, which changed" + said if existed
                    else "a lecture copy was made")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["prepare"])
    parser.add_argument("--chapter", required=True)
    parser.add_argument("--root", type=Path, default=LECTURE)
    args = parser.parse_args(argv)
    target, said = prepare(args.chapter, args.root)
    print(f"{target.relative_to(args.root.parent) if args.root.parent in target.parents else target}: {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
