"""A semester with the course: what a person enters survives every command, and there is one way to grade.

A tiny class of chapter 00 (one right submission, one whose answer uses an escape hatch and goes to review)
is graded once in a temporary grading folder; the tests then play an instructor's semester on it in order:
hand-given scores and comments, re-grades of unchanged and changed submissions, nbgrader's own autograde
(command line and formgrader's API), and the review list. Then the instructor's commands that must fail
safely (a release that fails leaves course/ as it was) and start where they should (make lab and make
formgrader, as root too, without a stray gradebook), and review.csv's open and resolved items.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import PIPELINE, ROOT
from kernel import reference_answers
from kernel import released_notebook as submission

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("semester")]

CHAPTER = "00_welcome"
CHANGED = "the submission changed after manual grading"


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, DLCOURSE_GRADING_DIR=str(root), OMP_NUM_THREADS="1", **extra)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader calls alembic
    env.pop("DLCOURSE_GRADEBOOK", None)
    return env


def _run(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PIPELINE), *args], env=_env(root, **extra),
                          capture_output=True, text=True, timeout=900, cwd=ROOT)


def _save(root: Path, student: str, nb: nbformat.NotebookNode) -> Path:
    folder = root / "submitted" / student / CHAPTER
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{CHAPTER}.ipynb")
    return folder / f"{CHAPTER}.ipynb"


def _gradebook(root: Path):
    from nbgrader.api import Gradebook

    return Gradebook(f"sqlite:///{root / 'gradebook.db'}")


def hand_grade(root: Path, student: str, grade_id: str, score: float, comment: str | None = None) -> None:
    """What formgrader does when a person saves a manual score (and a comment on the answer cell)."""
    with _gradebook(root) as gb:
        grade = gb.find_grade(grade_id, CHAPTER, CHAPTER, student)
        grade.manual_score = score
        grade.needs_manual_grade = False  # formgrader's GradeHandler.put
        if comment is not None:
            answer = grade_id.rsplit("_", 1)[0] + "_answer"
            gb.find_comment(answer, CHAPTER, CHAPTER, student).manual_comment = comment
        gb.db.commit()


def grades_of(root: Path, student: str) -> dict[str, tuple]:
    """grade id → (auto score, manual score, needs manual grade); answer id → manual comment."""
    with _gradebook(root) as gb:
        nb = gb.find_submission_notebook(CHAPTER, CHAPTER, student)
        got: dict[str, tuple] = {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade) for g in nb.grades}
        got.update({c.name: (c.manual_comment,) for c in nb.comments})
        return got


def review_rows(root: Path) -> list[dict[str, str]]:
    result = _run(root, "grades")
    assert result.returncode == 0, result.stdout + result.stderr
    return list(csv.DictReader((root / "review.csv").open()))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def semester(tmp_path_factory):
    root = tmp_path_factory.mktemp("semester")
    good = reference_answers(CHAPTER)
    _save(root, "alice", submission(CHAPTER, good))
    # an escape hatch in an answer: not run, its exercise scores 0 and goes to a person
    _save(root, "bob", submission(CHAPTER, dict(good, ce_answer=good["ce_answer"] + "\nexec('x = 1')")))
    result = _run(root, "autograde", "--chapter", CHAPTER, DLCOURSE_CELL_TIMEOUT="60", JOBS="2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 graded, 0 failed, 1 flagged for review" in result.stdout, result.stdout
    return root


def test_flagged_exercise_is_open_in_the_review_list(semester):
    root = semester
    assert grades_of(root, "bob")["ce_hidden"][2] is True
    rows = [r for r in review_rows(root) if r["student"] == "bob" and r["exercise"] == "ce"]
    assert len(rows) == 1 and rows[0]["status"] == "open" and rows[0]["manual_score"] == "", rows
    assert "exec" in rows[0]["reason"], rows


def test_manual_grades_survive_an_unchanged_rerun(semester):
    root = semester
    hand_grade(root, "alice", "softmax_hidden", 2.5, comment="nicely vectorised")
    hand_grade(root, "bob", "ce_visible", 1)
    hand_grade(root, "bob", "ce_hidden", 2, comment="exec was not needed; otherwise right")
    with _gradebook(root) as gb:  # the grader flagged bob's notebook; the person clears the flag
        notebook = gb.find_submission_notebook(CHAPTER, CHAPTER, "bob")
        assert notebook.flagged
        notebook.flagged = False
        gb.db.commit()
    result = _run(root, "autograde", "--chapter", CHAPTER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 graded" in result.stdout and "2 unchanged" in result.stdout, result.stdout
    alice, bob = grades_of(root, "alice"), grades_of(root, "bob")
    assert alice["softmax_hidden"] == (3, 2.5, False), alice
    assert alice["softmax_answer"] == ("nicely vectorised",), alice
    assert bob["ce_hidden"] == (0, 2, False) and bob["ce_visible"] == (0, 1, False), bob
    assert bob["ce_answer"] == ("exec was not needed; otherwise right",), bob
    with _gradebook(root) as gb:
        assert not gb.find_submission_notebook(CHAPTER, CHAPTER, "bob").flagged  # a person's choice stays
    # the flagged exercise a person graded is listed as resolved, with the manual score
    rows = [r for r in review_rows(root) if r["student"] == "bob" and r["exercise"] == "ce"]
    assert len(rows) == 1 and rows[0]["status"] == "resolved" and rows[0]["manual_score"] == "3", rows
    assert "does not record who" in rows[0]["note"], rows
    grades = {r["student_id"]: r for r in csv.DictReader((root / "grades.csv").open())}
    assert float(grades["alice"][f"{CHAPTER}/softmax"]) == 1 + 2.5  # the manual score replaces the automatic one
    assert float(grades["bob"][f"{CHAPTER}/ce"]) == 3


def test_manual_grades_survive_a_forced_regrade(semester):
    root = semester
    before = json.loads((root / "results" / f"alice__{CHAPTER}.json").read_text())
    result = _run(root, "autograde", "--chapter", CHAPTER, "--student", "alice", "--force", "--jobs", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 graded, 0 failed" in result.stdout, result.stdout
    after = json.loads((root / "results" / f"alice__{CHAPTER}.json").read_text())
    assert after["seconds"] != before["seconds"], "--force did not grade again"
    alice = grades_of(root, "alice")
    assert alice["softmax_hidden"] == (3, 2.5, False), alice  # same submission: nothing to review again
    assert alice["softmax_answer"] == ("nicely vectorised",), alice
    assert after["manual"]["softmax_hidden"]["score"] == 2.5 and not after.get("review"), after


def test_changed_tests_grade_again_but_send_no_manual_grade_back(semester, tmp_path):
    """A change on the course's side (here an oracle declaration; a fixed hidden test is the same) grades
    every submission again, but the files handed in did not change: no manual grade goes back to review."""
    root = semester
    from autograder.core import oracles

    changed = tmp_path / "oracles.toml"
    declared = (ROOT / "autograder" / "core" / "oracles.toml").read_text()
    changed.write_text(declared.replace('why = "', 'why = "(clarified) ', 1))
    assert oracles.chapter_text(CHAPTER, changed) != oracles.chapter_text(CHAPTER)
    result = _run(root, "autograde", "--chapter", CHAPTER, DLCOURSE_ORACLES=str(changed))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 graded, 0 failed" in result.stdout and CHANGED not in result.stdout, result.stdout
    assert grades_of(root, "alice")["softmax_hidden"] == (3, 2.5, False)
    assert grades_of(root, "bob")["ce_hidden"] == (0, 2, False)
    result = _run(root, "autograde", "--chapter", CHAPTER)  # back to the committed declarations
    assert "2 graded, 0 failed" in result.stdout and CHANGED not in result.stdout, result.stdout


def test_a_changed_submission_keeps_its_manual_grade_and_goes_back_to_review(semester):
    root = semester
    path = root / "submitted" / "alice" / CHAPTER / f"{CHAPTER}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("handed in again after the deadline"))
    nbformat.write(nb, path)
    result = _run(root, "autograde", "--chapter", CHAPTER, DLCOURSE_CELL_TIMEOUT="60")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 graded" in result.stdout and "1 unchanged" in result.stdout, result.stdout
    assert f"softmax: {CHANGED}" in result.stdout, result.stdout
    alice = grades_of(root, "alice")
    assert alice["softmax_hidden"] == (3, 2.5, True), alice
    assert alice["softmax_answer"] == ("nicely vectorised",), alice
    assert alice["ce_hidden"] == (3, None, False), alice  # no manual grade there: nothing to look at again
    rows = [r for r in review_rows(root) if r["student"] == "alice" and r["exercise"] == "softmax"]
    assert len(rows) == 1 and rows[0]["status"] == "open" and CHANGED in rows[0]["reason"], rows
    # a second run (unchanged now) keeps it open: the person has not looked at the new submission yet
    result = _run(root, "autograde", "--chapter", CHAPTER)
    assert "2 unchanged" in result.stdout and f"softmax: {CHANGED}" in result.stdout, result.stdout
    assert grades_of(root, "alice")["softmax_hidden"] == (3, 2.5, True)
    # the person saves a grade again in formgrader (the same score): resolved, and it stays resolved
    hand_grade(root, "alice", "softmax_hidden", 2.5)
    result = _run(root, "autograde", "--chapter", CHAPTER)
    assert result.returncode == 0 and CHANGED not in result.stdout, result.stdout
    assert grades_of(root, "alice")["softmax_hidden"] == (3, 2.5, False)
    rows = [r for r in review_rows(root) if r["student"] == "alice" and r["exercise"] == "softmax"]
    assert len(rows) == 1 and rows[0]["status"] == "resolved" and rows[0]["manual_score"] == "2.5", rows


# ------------------------------------------------------------------- nbgrader's own autograde, every way in

API_SCRIPT = """
import json, sys
from nbgrader.apps import NbGrader
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

app = NbGrader()  # as formgrader does: the nbgrader_config.py of the folder it was started in
app.load_config_file()
coursedir = CourseDirectory(config=app.config)
if len(sys.argv) > 3:
    coursedir.autograded_directory = sys.argv[3]
api = NbGraderAPI(coursedir, config=app.config)
print("RESULT " + json.dumps(api.autograde(sys.argv[1], sys.argv[2])))
"""


def _snapshot(root: Path) -> dict:
    """Every autograded file's bytes, every grade and comment of the class: what nbgrader must not touch."""
    files = {str(p.relative_to(root)): _digest(p) for p in sorted((root / "autograded").rglob("*")) if p.is_file()}
    with _gradebook(root) as gb:
        marks = {(s, g.name): (g.auto_score, g.manual_score, g.needs_manual_grade, g.extra_credit)
                 for s in ("alice", "bob")
                 for g in gb.find_submission_notebook(CHAPTER, CHAPTER, s).grades}
        marks.update({(s, c.name): (c.manual_comment,) for s in ("alice", "bob")
                      for c in gb.find_submission_notebook(CHAPTER, CHAPTER, s).comments})
    graded = {s: _graded_view(root / "autograded" / s / CHAPTER / f"{CHAPTER}.ipynb") for s in ("alice", "bob")}
    return {"files": files, "marks": marks, **graded}


def _graded_view(path: Path) -> list:
    """Each cell's source, and the outputs of the test cells (the grader's messages)."""
    nb = nbformat.read(path, as_version=4)
    return [(c.source, c.get("outputs") if c.metadata.get("nbgrader", {}).get("grade") else None) for c in nb.cells]


def _api(root: Path, *args: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", API_SCRIPT, *args], cwd=ROOT / "autograder", env=_env(root),
                          capture_output=True, text=True, timeout=900)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, done.stdout + done.stderr
    return json.loads(line.removeprefix("RESULT ")), done.stdout + done.stderr


def test_nbgrader_autograde_on_the_command_line_runs_the_trusted_grader(semester):
    root = semester
    before = _snapshot(root)
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "autograde", CHAPTER],
                          cwd=ROOT / "autograder", env=_env(root), capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "trusted grader" in out and "2 unchanged since they were graded" in out, out
    assert _snapshot(root) == before  # nothing of nbgrader's Autograde ran: no file, no score changed


def test_formgrader_autograde_button_runs_the_trusted_grader(semester):
    root = semester
    before = _snapshot(root)
    results = json.loads((root / "results" / f"bob__{CHAPTER}.json").read_text())
    got, out = _api(root, CHAPTER, "bob")  # formgrader's button: NbGraderAPI.autograde(force=True)
    assert got["success"], out
    assert "trusted grader" in got["log"] and "1 graded, 0 failed" in got["log"], got
    after = _snapshot(root)
    assert json.loads((root / "results" / f"bob__{CHAPTER}.json").read_text())["seconds"] != results["seconds"]
    assert after["marks"] == before["marks"], "the trusted grader's scores and the manual grades stay"
    # the trusted grader's notebook: the same cells, and the grader's own report in every test cell (a new
    # run differs only in widget ids and the like)
    assert _graded_view(root / "autograded" / "bob" / CHAPTER / f"{CHAPTER}.ipynb") == before["bob"]
    assert set(after["files"]) == set(before["files"])


def test_nbgrader_autograde_that_cannot_be_routed_is_refused_and_touches_nothing(semester, tmp_path):
    root = semester
    before = _snapshot(root)
    got, out = _api(root, CHAPTER, "alice", str(tmp_path / "elsewhere"))
    assert not got["success"], got
    assert "make autograde" in got["log"], got
    assert _snapshot(root) == before and not (tmp_path / "elsewhere").exists()


# ------------------------------------------------------------------------------------ instructor commands


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): _digest(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_failing_release_leaves_course_unchanged(tmp_path, monkeypatch):
    from autograder.bookkeeping import pipeline

    before = _tree(ROOT / "course")
    # a real nbgrader failure (a gradebook that cannot be opened): nbgrader empties the release folder first
    with pytest.raises(pipeline.PipelineError) as err:
        pipeline.release(CHAPTER, gradebook=tmp_path / "no" / "such" / "folder" / "gradebook.db")
    message = str(err.value)
    assert "\n" not in message and f"the release of {CHAPTER} failed" in message, message
    assert "course/ is unchanged" in message and "database" in message, message
    assert _tree(ROOT / "course") == before

    # a later chapter failing after an earlier one was generated: nothing of either reaches course/
    def generate(ch, out, gradebook=None):
        if ch != CHAPTER:
            import shutil

            shutil.rmtree(out, ignore_errors=True)  # what nbgrader's --force does before it fails
            raise pipeline.PipelineError(f"`nbgrader generate_assignment {ch}` failed:\nValueError: broken cell")
        (out / ch).mkdir(parents=True)
        (out / ch / f"{ch}.ipynb").write_text("{}")

    monkeypatch.setattr(pipeline, "generate", generate)
    with pytest.raises(pipeline.PipelineError, match="ValueError: broken cell"):
        pipeline.release()
    assert _tree(ROOT / "course") == before


def test_release_needs_no_grading_folder_and_makes_missing_folders(tmp_path, monkeypatch):
    from autograder.bookkeeping import pipeline

    monkeypatch.setenv("DLCOURSE_GRADING_DIR", str(tmp_path / "not" / "there"))
    monkeypatch.delenv("DLCOURSE_GRADEBOOK", raising=False)
    out = tmp_path / "new" / "course"
    written = pipeline.release(CHAPTER, out=out)
    assert written == [out / CHAPTER / f"{CHAPTER}.ipynb"]
    committed = ROOT / "course" / CHAPTER / f"{CHAPTER}.ipynb"
    assert json.loads(written[0].read_text()) == json.loads(committed.read_text())
    mtime = written[0].stat().st_mtime_ns
    pipeline.release(CHAPTER, out=out)  # again: an unchanged file is left alone
    assert written[0].stat().st_mtime_ns == mtime


def _make(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


def test_make_help_lists_formgrader_and_lab_runs_as_root():
    assert "make formgrader" in _make("help").stdout
    lab = _make("-n", "lab").stdout
    assert "-m dlcourse lab" in lab, lab  # as root with --allow-root, and without formgrader: tests/test_student.py
    formgrader = _make("-n", "formgrader").stdout
    assert "cd autograder &&" in formgrader and ("--allow-root" in formgrader) == (os.getuid() == 0), formgrader


def test_make_formgrader_uses_the_course_gradebook_and_leaves_no_stray_one(tmp_path):
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    grading = tmp_path / "grading"  # not there yet: the configuration makes it
    strays = [ROOT / "gradebook.db", ROOT / "course" / "gradebook.db", ROOT / "autograder" / "course" / "gradebook.db"]
    existed = {p for p in strays if p.exists()}
    server = subprocess.Popen(["make", "--no-print-directory", "formgrader", f"ARGS=--port={port} --no-browser"],
                              cwd=ROOT, env={**os.environ, "DLCOURSE_GRADING_DIR": str(grading),
                                             "JUPYTER_TOKEN": "semester"},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        got = None
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/formgrader/api/assignments?token=semester",
                                            timeout=10) as reply:
                    got = json.loads(reply.read())
                break
            except OSError:
                time.sleep(0.5)
        assert got is not None, "formgrader did not answer"
        assert {a["name"] for a in got} <= set(os.listdir(ROOT / "solutions")), got
    finally:
        os.killpg(server.pid, 15)
        out = server.communicate(timeout=30)[0]
    assert (grading / "gradebook.db").exists(), out
    assert {p for p in strays if p.exists()} == existed, "a stray gradebook.db was created"
    if os.getuid() == 0:
        assert "--allow-root" in out and "WARNING: running as root" in out, out


# --------------------------------------------------------------------------------- review.csv, quickly


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's own session handling
def test_review_list_shows_each_item_open_then_resolved(tmp_path, monkeypatch):
    """A gradebook and results written by hand: a flagged exercise, a repaired file and a submission that
    could not be graded, before and after a person graded the first by hand."""
    from nbgrader.api import Gradebook

    from autograder.bookkeeping import export

    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment(CHAPTER)
        gb.add_notebook(CHAPTER, CHAPTER)
        for gid, points in (("softmax_visible", 1), ("softmax_hidden", 3), ("ce_hidden", 3)):
            gb.add_grade_cell(gid, CHAPTER, CHAPTER, max_score=points, cell_type="code")
        gb.add_solution_cell("softmax_answer", CHAPTER, CHAPTER)
        for student in ("carol", "dave"):
            gb.add_student(student)
            gb.add_submission(CHAPTER, student)
        for grade in gb.find_submission_notebook(CHAPTER, CHAPTER, "carol").grades:
            grade.auto_score = 0.0 if grade.name.startswith("softmax") else 3.0
            grade.needs_manual_grade = grade.name.startswith("softmax")
        gb.db.commit()
    results = tmp_path / "results"
    results.mkdir()
    (results / f"carol__{CHAPTER}.json").write_text(json.dumps({
        "student": "carol", "chapter": CHAPTER, "flagged": {"softmax": ["use of exec"]},
        "notices": ["the notebook was not valid JSON: recovered 9 of 10 cells"], "tests": []}))
    (results / f"dave__{CHAPTER}.json").write_text(json.dumps({
        "student": "dave", "chapter": CHAPTER, "error": "the kernel could not be started", "tests": []}))

    def rows() -> dict[tuple[str, str], dict[str, str]]:
        export.write(export.read(url, results), tmp_path / "grades.csv")
        with (tmp_path / "review.csv").open() as f:
            got = list(csv.DictReader(f))
        assert set(got[0]) == {"student", "chapter", "exercise", "status", "manual_score", "reason", "note"}
        return {(r["student"], r["exercise"]): r for r in got}

    before = rows()
    assert before["carol", "softmax"]["status"] == "open" and before["carol", "softmax"]["reason"] == "use of exec"
    assert before["carol", "(whole submission)"]["status"] == "open"
    assert before["dave", "(whole submission)"]["status"] == "open"
    assert "could not be started" in before["dave", "(whole submission)"]["reason"]
    assert ("carol", "ce") not in before  # nothing flagged there

    with Gradebook(url) as gb:  # a person grades the flagged exercise's cells in formgrader
        for gid, score in (("softmax_visible", 1), ("softmax_hidden", 2)):
            grade = gb.find_grade(gid, CHAPTER, CHAPTER, "carol")
            grade.manual_score, grade.needs_manual_grade = score, False
        gb.db.commit()
    after = rows()
    assert len(after) == len(before)  # still listed, now resolved
    resolved = after["carol", "softmax"]
    assert (resolved["status"], resolved["manual_score"]) == ("resolved", "3"), resolved
    assert "does not record who" in resolved["note"], resolved
    assert after["carol", "(whole submission)"]["status"] == "resolved"
    assert after["dave", "(whole submission)"]["status"] == "open"
