"""The instructor's pipeline end to end: release, autograde, feedback, grades, bundle.

Submissions are built from the committed release the way students produce them (answers typed into
answer cells) and graded in a temporary grading folder, so an instructor's gradebook is never touched.
"""

from __future__ import annotations

import csv
import html as htmllib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import CHAPTERS, ROOT, solution_notebook

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("pipeline")]

import pipeline  # noqa: E402  (autograder/ is on sys.path, see conftest)

CHAPTER = "00_welcome"
STUDENTS = ("full_marks", "blank", "all_wrong", "noisy", "edited_tests", "tamperer", "swallows_interrupt",
            "reads_solutions")


def _mutants(chapter):
    from test_notebooks import load_mutants

    return load_mutants(chapter)


def answers_from_solution(chapter: str) -> dict[str, str]:
    """grade_id → answer source as a student would type it (the solution without its markers)."""
    nb = nbformat.read(solution_notebook(chapter), as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            lines = [ln for ln in cell.source.splitlines() if "### BEGIN SOLUTION" not in ln
                     and "### END SOLUTION" not in ln]
            out[meta["grade_id"]] = "\n".join(lines)
    return out


def solution_regions(chapter: str) -> list[list[str]]:
    """The lines between each ``### BEGIN SOLUTION`` and ``### END SOLUTION`` of the chapter."""
    regions: list[list[str]] = []
    for cell in nbformat.read(solution_notebook(chapter), as_version=4).cells:
        inside = False
        for line in cell.source.splitlines():
            if "### BEGIN SOLUTION" in line:
                inside = True
                regions.append([])
            elif "### END SOLUTION" in line:
                inside = False
            elif inside:
                regions[-1].append(line)
    return regions


def hidden_test_lines(chapter: str) -> list[str]:
    """Distinctive code lines of the chapter's hidden tests."""
    nb = nbformat.read(solution_notebook(chapter), as_version=4)
    lines = []
    for cell in nb.cells:
        if "### BEGIN HIDDEN TESTS" in cell.source:
            body = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            lines += [ln.strip() for ln in body.splitlines() if len(ln.strip()) > 30 and not ln.strip().startswith("#")]
    assert lines
    return lines


def submission(chapter: str, answers: dict[str, str] | None = None, edit=None) -> nbformat.NotebookNode:
    """The released notebook with some answer cells replaced (``answers``) and an optional ``edit(nb)``."""
    (release,) = sorted((ROOT / "course" / chapter).glob("*.ipynb"))
    nb = nbformat.read(release, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if answers and gid in answers:
            cell.source = answers[gid]
    if edit:
        edit(nb)
    return nb


def _save(root: Path, student: str, chapter: str, nb_or_text) -> None:
    folder = root / "submitted" / student / chapter
    folder.mkdir(parents=True)
    target = folder / f"{chapter}.ipynb"
    if isinstance(nb_or_text, str):
        target.write_text(nb_or_text)
    else:
        nbformat.write(nb_or_text, target)


def _run(root: Path, *args: str, timeout: float = 900, **env_extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DLCOURSE_GRADING_DIR=str(root), OMP_NUM_THREADS="1", **env_extra)
    return subprocess.run([sys.executable, str(ROOT / "autograder" / "pipeline.py"), *args], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Six students' submissions of chapter 00, autograded once; yields (root, autograde output, scores)."""
    root = tmp_path_factory.mktemp("grading")
    for chapter in CHAPTERS:  # every chapter: the reference answers, and the untouched release
        _save(root, "full_marks", chapter, submission(chapter, answers_from_solution(chapter)))
        _save(root, "blank", chapter, submission(chapter))
    good = answers_from_solution(CHAPTER)
    first_wrong = {f"{ex}_answer": wrongs[0][1] for ex, wrongs in _mutants(CHAPTER).items()}
    _save(root, "all_wrong", CHAPTER, submission(CHAPTER, first_wrong))
    # correct answers whose calls print warnings and stderr text while the tests run
    noisy = {gid: src.replace('"""\n', '"""\n    import sys, warnings\n    warnings.warn("noise from a '
                              'correct answer")\n    print("stderr noise", file=sys.stderr)\n', 1)
             for gid, src in good.items()}
    _save(root, "noisy", CHAPTER, submission(CHAPTER, noisy))

    def gut_the_tests(nb):  # a blank submission whose test cells were replaced by `pass`
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade"):
                cell.source = "pass"

    _save(root, "edited_tests", CHAPTER, submission(CHAPTER, edit=gut_the_tests))

    def fake_pass(nb):  # correct-looking tests rigged by patching torch and the checks module
        nb.cells.insert(4, nbformat.v4.new_code_cell(
            "import torch\nfrom dlcourse import checks\ntorch.allclose = lambda *a, **k: True\n"
            "checks.compare_with_oracle = lambda *a, **k: None\nchecks.compare_gradients = lambda *a, **k: None"))

    _save(root, "tamperer", CHAPTER, submission(CHAPTER, first_wrong, edit=fake_pass))
    # an answer cell that never ends and swallows the grader's interrupt
    hang = dict(good, softmax_answer=good["softmax_answer"] + (
        "\nimport time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass"))
    _save(root, "swallows_interrupt", CHAPTER, submission(CHAPTER, hang))
    # an answer that finds the instructor's repository and runs the solution cells
    steal = dict(softmax_answer=(
        "import json, pathlib\nimport dlcourse\n"
        "_src = pathlib.Path(dlcourse.__file__).parent.parent / 'solutions' / '00_welcome' / '00_welcome.ipynb'\n"
        "for _c in json.loads(_src.read_text())['cells']:\n"
        "    if _c.get('metadata', {}).get('nbgrader', {}).get('solution'):\n"
        "        exec(''.join(_c['source']))"))
    _save(root, "reads_solutions", CHAPTER, submission(CHAPTER, steal))
    _save(root, "corrupt_file", CHAPTER, "{ this is not a notebook")
    result = _run(root, "autograde", DLCOURSE_CELL_TIMEOUT="20")
    scores = {}
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            for chapter in CHAPTERS:
                try:
                    nb = gb.find_submission_notebook(chapter, chapter, student)
                except Exception:  # not submitted or not graded
                    continue
                scores[student, chapter] = {g.name: (g.score, g.max_score) for g in nb.grades}
    yield root, result, scores


def test_autograde_reports_every_submission_and_survives_a_corrupt_one(graded):
    _, result, scores = graded
    out = result.stdout + result.stderr
    assert result.returncode == 1, out  # one failed submission
    assert "FAILED  corrupt_file" in out, out
    assert f"{8 + 2 * (len(CHAPTERS) - 1)} graded, 1 failed" in out, out
    assert {(student, CHAPTER) for student in STUDENTS} <= set(scores)


def test_the_grading_kernel_cannot_read_the_solutions(graded):
    _, result, scores = graded
    if "grading kernel: sandboxed" not in result.stdout:
        pytest.skip("bubblewrap is not available here, so grading is not sandboxed (see the autograde warning)")
    got = scores["reads_solutions", CHAPTER]
    assert got["softmax_hidden"][0] == 0, got


def test_a_cell_that_swallows_the_interrupt_is_stopped_and_the_rest_is_graded(graded):
    _, _, scores = graded
    got = scores["swallows_interrupt", CHAPTER]
    assert got["ce_hidden"][0] == got["ce_hidden"][1] > 0, got
    assert got["sgd_hidden"][0] == got["sgd_hidden"][1] > 0, got


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solution_gets_full_marks(graded, chapter):
    _, _, scores = graded
    got = scores["full_marks", chapter]
    lost = {k: v for k, v in got.items() if v[0] != v[1]}
    assert got and not lost, f"{chapter}: points lost by the reference answers: {lost}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_blank_release_of_every_chapter_gets_zero(graded, chapter):
    _, _, scores = graded
    got = scores["blank", chapter]
    autograded = {k: v for k, v in got.items() if not k.endswith("_answer")}
    assert autograded and all(score == 0 for score, _ in autograded.values()), autograded


def test_stderr_noise_does_not_cost_points(graded):
    _, _, scores = graded
    lost = {k: v for k, v in scores["noisy", CHAPTER].items() if v[0] != v[1]}
    assert not lost, f"noise on stderr cost points: {lost}"


@pytest.mark.parametrize("student", ["blank", "edited_tests"])
def test_blank_release_gets_zero_autograded_points(graded, student):
    _, _, scores = graded
    autograded = {k: v for k, v in scores[student, CHAPTER].items() if not k.endswith("_answer")}
    assert autograded and all(score == 0 for score, _ in autograded.values()), autograded


@pytest.mark.parametrize("student", ["all_wrong", "tamperer"])
def test_wrong_answers_lose_every_hidden_test(graded, student):
    _, _, scores = graded
    hidden = {k: v for k, v in scores[student, CHAPTER].items() if k.endswith("_hidden")}
    assert len(hidden) == len(_mutants(CHAPTER)), hidden
    assert all(score == 0 for score, _ in hidden.values()), hidden


def test_feedback_hides_hidden_tests_and_grades_export(graded):
    root, _, _ = graded
    result = _run(root, "feedback")
    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "feedback" / "full_marks" / CHAPTER / f"{CHAPTER}.html").read_text()
    assert "visible tests passed" in html
    wrong = htmllib.unescape((root / "feedback" / "all_wrong" / CHAPTER / f"{CHAPTER}.html").read_text())
    assert "CheckFailure" in wrong  # the failures are reported...
    for line in hidden_test_lines(CHAPTER):  # ...without quoting the hidden tests
        assert line not in wrong, f"feedback shows a hidden test line: {line}"
    result = _run(root, "grades")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {r["student_id"]: r for r in csv.DictReader((root / "grades.csv").open())}
    assert float(rows["full_marks"]["raw_score"]) == float(rows["full_marks"]["max_score"]) > 0
    assert float(rows["blank"]["raw_score"]) == 0


def test_committed_release_is_current_and_leaks_nothing():
    assert pipeline.release_differences() == []
    assert pipeline.release_leaks(ROOT / "course") == []
    assert pipeline.source_problems() == []
    for chapter in CHAPTERS:
        released = (ROOT / "course" / chapter / f"{chapter}.ipynb").read_text()
        for region in solution_regions(chapter):  # the last lines of every solution region
            body = [ln.strip() for ln in region[-3:] if ln.strip() and not ln.strip().startswith("#")]
            assert not any(line in released for line in body if len(line) > 25), f"solution code in {chapter}"


def test_bundle_holds_no_solutions_and_no_hidden_tests(tmp_path):
    out = pipeline.bundle(tmp_path / "bundle.zip")
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        zf.extractall(tmp_path / "x")
    tops = {Path(n).parts[1] for n in names}
    assert {"course", "dlcourse", "README.md", "requirements.txt"} <= tops
    assert not tops & {"solutions", "autograder", "tests", ".git", ".venv", "models"}
    assert pipeline.release_leaks(tmp_path / "x") == []
    for name in names:
        if name.endswith(".ipynb"):
            json.loads(zipfile.ZipFile(out).read(name))
