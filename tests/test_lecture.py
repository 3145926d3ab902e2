"""make lecture: a lecture copy of a chapter with every answer and slide metadata, refreshed without ever
losing a lecturer's edits, and never written back into solutions/."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys

import lecture  # autograder/ is on sys.path (conftest)
import nbformat
import pytest
from conftest import CHAPTERS, ROOT

CHAPTER = "00_welcome"


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_copy_has_the_answers_and_slides_and_solutions_stay_untouched(tmp_path):
    source = ROOT / "solutions" / CHAPTER / f"{CHAPTER}.ipynb"
    before = _sha(source)
    done = subprocess.run([sys.executable, str(ROOT / "autograder" / "lecture.py"), "prepare", "--chapter", CHAPTER,
                           "--root", str(tmp_path / "lecture")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "a lecture copy was made" in done.stdout, done.stdout + done.stderr
    copy = nbformat.read(tmp_path / "lecture" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    assert _sha(source) == before
    assert any("### BEGIN SOLUTION" in c.source for c in copy.cells), "the answers are in"
    kinds = [c.metadata["slideshow"]["slide_type"] for c in copy.cells]
    assert kinds[0] == "slide" and kinds.count("slide") >= 4 and set(kinds) <= {"slide", "subslide", "skip", "-"}
    for cell, kind in zip(copy.cells, kinds, strict=True):
        assert not lecture.is_hidden_test(cell), "hidden tests are grading machinery, not lecture material"
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            assert kind == "slide"
    hidden = [c for c in nbformat.read(source, as_version=4).cells if lecture.is_hidden_test(c)]
    assert hidden and len(copy.cells) == len(nbformat.read(source, as_version=4).cells) - len(hidden)
    unknown = subprocess.run([sys.executable, str(ROOT / "autograder" / "lecture.py"), "prepare", "--chapter",
                              "99_nothing", "--root", str(tmp_path / "lecture")], capture_output=True, text=True)
    assert unknown.returncode != 0 and CHAPTER in unknown.stderr


def test_preparing_again_never_loses_a_lecturers_edits(tmp_path):
    solutions = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions" / CHAPTER, solutions / CHAPTER)
    root = tmp_path / "lecture"
    source = solutions / CHAPTER / f"{CHAPTER}.ipynb"
    copy, said = lecture.prepare(CHAPTER, root, solutions)
    assert said == "a lecture copy was made"
    assert lecture.prepare(CHAPTER, root, solutions)[1] == "the lecture copy is up to date"

    nb = nbformat.read(copy, as_version=4)  # the lecturer runs a cell and saves
    nb.cells[0].source += "\n\nA note for today's class."
    nbformat.write(nb, copy)
    assert "kept" in lecture.prepare(CHAPTER, root, solutions)[1]
    assert "A note for today's class." in copy.read_text()

    chapter = nbformat.read(source, as_version=4)  # the chapter changes too
    chapter.cells[-1].source += "\n\nA corrected sentence."
    nbformat.write(chapter, source)
    said = lecture.prepare(CHAPTER, root, solutions)[1]
    assert "refreshed" in said and "saved as" in said
    (kept,) = [p for p in copy.parent.glob(f"{CHAPTER}.*.ipynb")]
    assert kept.name in said and "A note for today's class." in kept.read_text()
    assert "A corrected sentence." in copy.read_text() and "A note for today's class." not in copy.read_text()

    chapter.cells[-1].source += " Again."  # changed once more, the copy untouched since: refreshed, no backup
    nbformat.write(chapter, source)
    said = lecture.prepare(CHAPTER, root, solutions)[1]
    assert "refreshed" in said and "saved as" not in said and len(list(copy.parent.glob(f"{CHAPTER}.*.ipynb"))) == 1


@pytest.mark.parametrize("chapter", [pytest.param(c, marks=pytest.mark.xdist_group(f"lecture-{c}")) for c in CHAPTERS])
def test_every_chapter_runs_in_lecture_mode_with_its_long_demos_switched_off(tmp_path, monkeypatch, chapter):
    """make lecture's copy, run top to bottom as a lecturer's Run All runs it (DLCOURSE_LECTURE=1): no error, nothing
    on stderr, and each demo behind a RUN_LIVE switch shows its recorded result instead of running (FAST and full
    mode, which run those demos, are covered by test_notebooks and make checkpoints)."""
    from nbclient import NotebookClient

    for name in ("DLCOURSE_FAST", "NBGRADER_EXECUTION", "DLCOURSE_RETRAIN", "DLCOURSE_SAVE_CHECKPOINTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DLCOURSE_LECTURE", "1")  # the kernel inherits this process's environment
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # correctness is checked here; one thread spares the other worker
    copy, _ = lecture.prepare(chapter, tmp_path / "lecture")
    nb = nbformat.read(copy, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="dlcourse",
                   resources={"metadata": {"path": str(copy.parent)}}).execute()
    printed, switched = [], 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            assert out.get("name") != "stderr", f"{chapter}: {cell.source.splitlines()[0]!r} wrote to stderr: {out}"
            if out.get("name") == "stdout":
                printed.append(out.text)
        switched += "runtime.live(RUN_LIVE)" in cell.source
    text = "".join(printed)
    assert "mode: FAST" in text, "lecture mode runs FAST budgets"
    assert text.count("RUN_LIVE = False") >= switched, f"{chapter}: a switched-off demo ran anyway"
