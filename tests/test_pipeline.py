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
from conftest import CHAPTERS, PIPELINE, ROOT, solution_notebook
from kernel import reference_answers as answers_from_solution
from kernel import released_notebook as submission

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("pipeline")]

from autograder.bookkeeping import pipeline  # noqa: E402  (the repository is on sys.path, see conftest)

CHAPTER = "00_welcome"
STUDENTS = ("full_marks", "blank", "all_wrong", "noisy", "edited_tests", "tamperer", "swallows_interrupt",
            "reads_solutions", "corrupt_file", "pasted_test_cell", "renamed_and_duplicated", "new_graded_cell",
            "truncated", "lone_surrogate", "quits", "exits_process", "kills_itself", "writes_gradebook",
            "prints_hidden_tests", "helper_cell", "reads_a_demo")


def _mutants(chapter):
    from test_notebooks import load_mutants

    return load_mutants(chapter)


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




def _save(root: Path, student: str, chapter: str, nb_or_text) -> None:
    folder = root / "submitted" / student / chapter
    folder.mkdir(parents=True)
    target = folder / f"{chapter}.ipynb"
    if isinstance(nb_or_text, str):
        target.write_text(nb_or_text)
    else:
        nbformat.write(nb_or_text, target)


def _env(root: Path, **env_extra: str) -> dict[str, str]:
    """This process's environment with grading moved under ``root``, one thread per process unless
    ``env_extra`` says otherwise."""
    return {**os.environ, "DLCOURSE_GRADING_DIR": str(root), "OMP_NUM_THREADS": "1", **env_extra}


def _run(root: Path, *args: str, timeout: float = 900, **env_extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PIPELINE), *args],
                          env=_env(root, **env_extra), capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class of chapter 00: honest, wrong, careless and hostile submissions, autograded once.

    Yields (root, autograde output, scores). Every chapter's reference answers and blank release are graded by
    tests/test_pipeline_chapters.py, in a group of its own that the other test worker can run meanwhile.
    """
    root = tmp_path_factory.mktemp("grading")
    _save(root, "full_marks", CHAPTER, submission(CHAPTER, answers_from_solution(CHAPTER)))
    _save(root, "blank", CHAPTER, submission(CHAPTER))
    good = answers_from_solution(CHAPTER)
    first_wrong = {f"{ex}_answer": wrongs[0][1] for ex, wrongs in _mutants(CHAPTER).items()}
    _save(root, "all_wrong", CHAPTER, submission(CHAPTER, first_wrong))
    # correct answers whose calls print warnings and stderr text while the tests run
    noisy = {gid: src.replace('"""\n', '"""\n    import sys, warnings\n    warnings.warn("noise from a '
                              'correct answer")\n    print("stderr noise", file=sys.stderr)\n'
                              '    print("noise on the interpreter\'s own stderr", file=sys.__stderr__)\n', 1)
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
    # an answer that reads what a demo cell before it made: grading must run that demo, though it skips it otherwise
    _save(root, "reads_a_demo", CHAPTER, submission(CHAPTER, dict(
        good, sgd_answer="assert len(labels) == 6  # the widget demo's words\n" + good["sgd_answer"])))
    _add_accidents(root, good, first_wrong)
    result = _run(root, "autograde", DLCOURSE_CELL_TIMEOUT="25", JOBS="2")  # two at a time, as on 2 cores
    scores = {}
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            scores[student, CHAPTER] = gradebook_scores(gb, student, CHAPTER)
    yield root, result, scores


def gradebook_scores(gb, student: str, chapter: str) -> dict[str, tuple[float, float]]:
    """grade id → (score, max score) of a student's graded submission of a chapter ({} if there is none)."""
    try:
        nb = gb.find_submission_notebook(chapter, chapter, student)
    except Exception:  # noqa: BLE001 - not submitted or not graded
        return {}
    return {g.name: (g.score, g.max_score) for g in nb.grades}


def test_autograde_reports_every_submission_and_survives_a_corrupt_one(graded):
    _, result, scores = graded
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert f"{len(STUDENTS)} graded, 0 failed" in out, out
    assert "corrupt_file" in out and "not valid JSON" in out, out
    assert all(scores[student, CHAPTER] for student in STUDENTS), scores
    assert all(score == 0 for score, _ in scores["corrupt_file", CHAPTER].values())


def test_the_grading_kernel_cannot_read_the_solutions(graded):
    _, _, scores = graded
    got = scores["reads_solutions", CHAPTER]
    assert got["softmax_hidden"][0] == 0, got


def _add_accidents(root: Path, good: dict[str, str], wrong: dict[str, str]) -> None:
    """Honest accidents (each costs at most its own exercise) and attacks on the grading folder."""
    def paste_test(nb):  # a test cell copied with its metadata, then edited to print instead of test
        test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ce_visible")
        copy = nbformat.from_dict(json.loads(json.dumps(test)))
        copy.source = "print('my own check')"
        nb.cells.insert(nb.cells.index(test) + 1, copy)

    _save(root, "pasted_test_cell", CHAPTER, submission(CHAPTER, good, edit=paste_test))

    def rename_and_duplicate(nb):  # softmax's answer lost its grade id; ce's answer cell is duplicated
        for cell in list(nb.cells):
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid == "softmax_answer":
                cell.metadata["nbgrader"]["grade_id"] = "cell-1a2b3c"
            if gid == "ce_answer":
                stale = nbformat.from_dict(json.loads(json.dumps(cell)))
                stale.source = "# YOUR CODE HERE\nraise NotImplementedError()"
                nb.cells.insert(nb.cells.index(cell), stale)

    _save(root, "renamed_and_duplicated", CHAPTER, submission(CHAPTER, good, edit=rename_and_duplicate))

    def new_graded(nb):  # a cell that claims 100 points and passes
        cell = nbformat.v4.new_code_cell("print('free points')")
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": "bonus", "locked": False, "points": 100,
                                     "schema_version": 3, "solution": False}
        nb.cells.insert(3, cell)

    _save(root, "new_graded_cell", CHAPTER, submission(CHAPTER, good, edit=new_graded))
    text = nbformat.writes(submission(CHAPTER, good))
    _save(root, "truncated", CHAPTER, text[: text.index('"sgd_answer"') - 200])
    _save(root, "lone_surrogate", CHAPTER,  # JSON-escaped, as a browser may write it
          json.dumps(submission(CHAPTER, dict(good, ce_answer=good["ce_answer"] + "\n_s = '\ud800'"))))
    _save(root, "quits", CHAPTER, submission(CHAPTER, dict(good, softmax_answer=good["softmax_answer"] + "\nquit()")))
    _save(root, "exits_process", CHAPTER,
          submission(CHAPTER, dict(good, softmax_answer=good["softmax_answer"] + "\nimport os\nos._exit(0)")))
    _save(root, "kills_itself", CHAPTER, submission(CHAPTER, dict(
        good, ce_answer=good["ce_answer"] + "\nimport os as _o, signal as _sg\n_k = _o.kill\n_k(_o.getpid(), 9)")))
    # answers that go after the gradebook and a classmate's submission, then print what they found
    attack = (
        "import pathlib\nfor _p in pathlib.Path('/').rglob('gradebook.db'):\n    print('found', _p)\n"
        "    _p.write_bytes(b'')\nfor _p in pathlib.Path('/').rglob('*.ipynb'):\n"
        "    if 'submitted' in str(_p):\n        _p.write_text('{}')\n")
    _save(root, "writes_gradebook", CHAPTER, submission(CHAPTER, dict(wrong, sgd_answer=wrong["sgd_answer"] + "\n"
                                                                    + attack)))
    spy = good["softmax_answer"].replace('"""\n', '"""\n    print("HIDDEN-INPUT", x.shape, x.flatten()[:3])\n', 1)
    spy += "\n_ = softmax(torch.zeros(1, 3))  # prints in the kernel while the notebook is graded"
    _save(root, "prints_hidden_tests", CHAPTER, submission(CHAPTER, dict(good, softmax_answer=spy)))

    def helper(nb):  # a helper function in a cell of its own, used by the answer below it
        idx = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "sgd_answer")
        nb.cells.insert(idx, nbformat.v4.new_code_cell("def _residuals(w, b, X, y):\n    return X @ w + b - y"))

    _save(root, "helper_cell", CHAPTER, submission(CHAPTER, dict(good, sgd_answer=good["sgd_answer"].replace(
        "r = X @ w + b - y", "r = _residuals(w, b, X, y)")), edit=helper))


def _full(scores, student, exercises):
    got = scores[student, CHAPTER]
    return {k: v for k, v in got.items() if k.rsplit("_", 1)[0] in exercises and v[0] != v[1]}


def test_honest_accidents_cost_nothing_or_only_their_own_exercise(graded):
    _, _, scores = graded
    everything = ("softmax", "ce", "sgd")
    for student in ("pasted_test_cell", "renamed_and_duplicated", "new_graded_cell", "lone_surrogate",
                    "helper_cell", "prints_hidden_tests"):
        assert not _full(scores, student, everything), (student, scores[student, CHAPTER])
    for student, lost in [("truncated", "sgd"), ("quits", "softmax"), ("exits_process", "softmax"),
                          ("kills_itself", "ce")]:
        kept = tuple(e for e in everything if e != lost)
        assert not _full(scores, student, kept), (student, scores[student, CHAPTER])
        assert all(v[0] == 0 for k, v in scores[student, CHAPTER].items() if k.startswith(lost + "_")), student
    assert "bonus" not in scores["new_graded_cell", CHAPTER]


def test_the_gradebook_and_classmates_are_out_of_reach(graded):
    root, result, scores = graded
    assert (root / "gradebook.db").stat().st_size > 0
    assert scores["full_marks", CHAPTER]["softmax_hidden"][0] == 3
    seen = (root / "autograded" / "writes_gradebook" / CHAPTER / f"{CHAPTER}.ipynb").read_text()
    assert str(root) not in seen, "the sandbox can see the course's grading folder"
    for path in (root / "submitted").rglob("*.ipynb"):
        assert path.read_text() != "{}", f"{path} was overwritten"


def test_results_say_where_the_time_went(graded):
    root, _, _ = graded
    data = json.loads((root / "results" / f"full_marks__{CHAPTER}.json").read_text())
    spent = data["timings"]
    assert set(spent) == {"planning", "kernel start", "release cells", "student cells", "tests", "restarts",
                          "closing", "recording"}, spent
    assert spent["release cells"] > 0 and spent["student cells"] > 0 and spent["tests"] > 0, spent
    assert spent["recording"] > 0, spent  # the instructor's process, after grading
    graded_time = sum(v for k, v in spent.items() if k != "recording")
    assert spent["restarts"] == 0 and graded_time <= data["seconds"] + 0.01, data


def _outputs(root: Path, student: str) -> list[tuple[str, str]]:
    """(first line of source, text of its outputs) of each code cell of a student's autograded notebook."""
    nb = nbformat.read(root / "autograded" / student / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    return [(c.source.splitlines()[0] if c.source else "", "".join(o.get("text", "") for o in c.outputs))
            for c in nb.cells if c.cell_type == "code"]


def test_grading_leaves_out_the_demos_nothing_graded_needs(graded):
    from autograder.core import grade

    root, _, scores = graded
    data = json.loads((root / "results" / f"full_marks__{CHAPTER}.json").read_text())
    assert data["skipped_cells"] == 2, data  # the softmax widget and the training demo
    skipped = [first for first, text in _outputs(root, "full_marks") if text == grade.SKIPPED_NOTE]
    assert len(skipped) == 2 and skipped[0].startswith("labels = "), skipped
    assert all(score == points for score, points in scores["full_marks", CHAPTER].values())


def test_an_answer_that_reads_a_demo_gets_the_demo_run(graded):
    from autograder.core import grade

    root, _, scores = graded
    got = scores["reads_a_demo", CHAPTER]
    assert got["sgd_visible"][0] == got["sgd_visible"][1] > 0 and got["sgd_hidden"][0] == got["sgd_hidden"][1], got
    data = json.loads((root / "results" / f"reads_a_demo__{CHAPTER}.json").read_text())
    assert data["skipped_cells"] == 1, data
    demo = next(text for first, text in _outputs(root, "reads_a_demo") if first.startswith("labels = "))
    assert demo != grade.SKIPPED_NOTE


def test_results_are_reproducible(graded):
    root, _, scores = graded
    before = json.loads((root / "results" / f"full_marks__{CHAPTER}.json").read_text())
    again = _run(root, "autograde", "--student", "full_marks", "--chapter", CHAPTER, "--force", "--jobs", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 graded, 0 failed" in again.stdout, again.stdout
    data = json.loads((root / "results" / f"full_marks__{CHAPTER}.json").read_text())
    assert data["seconds"] != before["seconds"], "--force did not grade the submission again"
    assert {t["grade_id"]: t["score"] for t in data["tests"]} == {
        k: v[0] for k, v in scores["full_marks", CHAPTER].items()}


def test_a_second_run_grades_only_what_changed(graded):
    root, _, scores = graded
    target = root / "submitted" / "all_wrong" / CHAPTER / f"{CHAPTER}.ipynb"
    changed = nbformat.read(target, as_version=4)
    changed.cells.append(nbformat.v4.new_markdown_cell("a late edit"))
    nbformat.write(changed, target)
    again = _run(root, "autograde", "--chapter", CHAPTER, DLCOURSE_CELL_TIMEOUT="40")
    out = again.stdout + again.stderr
    assert "1 graded, 0 failed" in out and f"{len(STUDENTS) - 1} unchanged" in out, out
    assert "all_wrong" in again.stdout and "full_marks" not in again.stdout, again.stdout


def test_a_cell_that_swallows_the_interrupt_is_stopped_and_the_rest_is_graded(graded):
    _, _, scores = graded
    got = scores["swallows_interrupt", CHAPTER]
    assert got["ce_hidden"][0] == got["ce_hidden"][1] > 0, got
    assert got["sgd_hidden"][0] == got["sgd_hidden"][1] > 0, got


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


@pytest.mark.parametrize("student", ["full_marks", "all_wrong"])
def test_the_feedback_page_has_no_serious_accessibility_violation(graded, student):
    """axe-core (tests/test_accessibility.py) on the page a student receives: full marks, and every answer wrong
    (the failures' messages and tracebacks shown)."""
    from browser import serious
    from test_accessibility import axe

    root, _, _ = graded
    page = root / "feedback" / student / CHAPTER / f"{CHAPTER}.html"
    if not page.is_file():
        result = _run(root, "feedback")
        assert result.returncode == 0, result.stdout + result.stderr
    assert not serious(axe(page))


def test_feedback_hides_hidden_tests_and_grades_export(graded):
    root, _, _ = graded
    result = _run(root, "feedback")
    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "feedback" / "full_marks" / CHAPTER / f"{CHAPTER}.html").read_text()
    assert "visible tests passed" in html
    assert "Test cell" not in html and "A numerically stable softmax: hidden tests" in html  # exercises named
    wrong = htmllib.unescape((root / "feedback" / "all_wrong" / CHAPTER / f"{CHAPTER}.html").read_text())
    assert "values differ" in wrong or "expected" in wrong  # the failures are reported...
    for line in hidden_test_lines(CHAPTER):  # ...without quoting the hidden tests
        assert line not in wrong, f"feedback shows a hidden test line: {line}"
    printed = "HIDDEN-INPUT torch.Size"  # what the answer prints (its source, with the literal, is shown)
    assert printed in (root / "autograded" / "prints_hidden_tests" / CHAPTER / f"{CHAPTER}.ipynb").read_text()
    spied = (root / "feedback" / "prints_hidden_tests" / CHAPTER / f"{CHAPTER}.html").read_text()
    assert printed not in spied, "text an answer printed while the notebook was graded reached the feedback"
    result = _run(root, "grades")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {r["student_id"]: r for r in csv.DictReader((root / "grades.csv").open())}
    possible = rows["(points possible)"]
    assert float(rows["full_marks"][f"{CHAPTER}/total"]) == float(possible[f"{CHAPTER}/total"]) > 0
    assert float(rows["full_marks"]["total"]) == float(possible[f"{CHAPTER}/total"])
    assert float(rows["blank"]["total"]) == 0
    assert float(rows["full_marks"][f"{CHAPTER}/softmax"]) == float(possible[f"{CHAPTER}/softmax"]) > 0
    assert "01_seq2seq_attention/total" not in rows["tamperer"]  # nobody handed it in: not exported
    review = list(csv.DictReader((root / "review.csv").open()))
    assert {"reads_solutions", "tamperer"} <= {r["student"] for r in review}, review
    assert all(r["reason"] != "flagged by the grader" for r in review), review  # the grader's own reasons
    assert any(r["student"] == "corrupt_file" and "JSON" in r["reason"] for r in review), review
    page = htmllib.unescape((root / "analytics" / f"{CHAPTER}.html").read_text())  # the class analytics, beside
    assert f"class analytics: {root / 'analytics' / f'{CHAPTER}.html'}" in result.stdout  # the grades
    assert "Class analytics, 00_welcome" in page and "full_marks" in page and "The failing tests" in page
    for fmt, header in (("canvas", "Student,ID,SIS User ID,SIS Login ID,Section,"), ("moodle", "ID number,")):
        result = _run(root, "grades", "--format", fmt)
        assert result.returncode == 0, result.stdout + result.stderr
        text = (root / f"grades-{fmt}.csv").read_text()
        assert text.startswith(header) and "full_marks" in text, text[:300]


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
