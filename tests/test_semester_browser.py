"""A semester of chapter 00, end to end, with the manual grading done in a real browser.

A class of six on a roster (with LMS ids) and a late policy, in a temporary grading folder: a right
submission, a wrong one (a planted wrong answer), one whose answer uses an escape hatch (flagged for a person),
a damaged file, a late one, and a student who handed nothing in. The tests play the semester in order:

1. ``pipeline.py autograde`` grades the class as the rules say;
2. a person grades the flagged exercise in formgrader, in headless Chromium, on the JupyterLab server started
   the way ``make formgrader`` starts it (typing a score into each of its test cells and a comment under the
   answer: formgrader saves each field when it changes, on leaving it);
3. unchanged, forced and changed re-grades keep the manual scores and comment, and a changed submission sends
   the exercise back to review;
4. feedback and the grades files (wide CSV, Canvas, Moodle) carry the manual points, the late penalty and the
   roster's LMS ids;
5. nothing of this reached the repository (no stray gradebook.db, no file changed or added outside build/).

A screenshot of the formgrader page goes to ``build/browser/semester/`` (not committed). Skipped, with the
reason, without Chromium or the playwright package.
"""

from __future__ import annotations

import csv
import html as htmllib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from browser import chromium, unavailable, wait_for_server
from conftest import PIPELINE, ROOT
from kernel import reference_answers
from kernel import released_notebook as submission

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("semester_browser")]

CHAPTER = "00_welcome"
CHANGED = "the submission changed after manual grading"
SHOTS = ROOT / "build" / "browser" / "semester"
BIN = Path(sys.executable).parent

# The class: id, first name, last name, LMS id. "missing" is on the roster and hands nothing in.
ROSTER = [("right", "Rita", "Right", "20001"), ("wrong", "Walt", "Wrong", "20002"),
          ("flagged", "Flora", "Flagged", "20003"), ("damaged", "Dana", "Damaged", "20004"),
          ("late", "Lars", "Late", "20005"), ("missing", "Mia", "Missing", "20006")]
LMS_ID = {sid: lms for sid, _, _, lms in ROSTER}

# Deadline 2026-10-12 23:59 Berlin = 21:59 UTC; 15 minutes' grace; 10 % of the score per started day late.
POLICY = f"""
timezone = "Europe/Berlin"

[late]
grace_minutes = 15
per_day = 0.10
unit = "score"
max_penalty = 0.50

[chapters.{CHAPTER}]
deadline = 2026-10-12T23:59:00
canvas_assignment_id = 4711
"""
ON_TIME = "2026-10-12 18:30:00.000000 UTC"
TWO_DAYS_LATE = "2026-10-14 18:00:00.000000 UTC"  # 1 day 20 hours after the deadline: 2 started days

# What the person types into formgrader for the flagged exercise (ce: visible 1 point, hidden 3).
MANUAL = {"ce_visible": 1, "ce_hidden": 2}
COMMENT = "exec was not needed here; the log-sum-exp is right, the padding mask half right"
WRONG = ("sgd", "steps up the gradient")  # the planted wrong answer: exercise, what is wrong


# ---------------------------------------------------------------------------------------------- helpers


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, DLCOURSE_GRADING_DIR=str(root), DLCOURSE_POLICY=str(root / "policy.toml"),
               OMP_NUM_THREADS="1", **extra)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")  # nbgrader calls alembic; jupyter from the venv
    env.pop("DLCOURSE_GRADEBOOK", None)
    return env


def _run(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(PIPELINE), *args], env=_env(root, **extra),
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, f"pipeline.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def _autograde(root: Path, *args: str) -> str:
    return _run(root, "autograde", "--chapter", CHAPTER, *args, DLCOURSE_CELL_TIMEOUT="60", JOBS="2").stdout


def _save(root: Path, student: str, nb: nbformat.NotebookNode | str, when: str = ON_TIME) -> Path:
    folder = root / "submitted" / student / CHAPTER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{CHAPTER}.ipynb"
    if isinstance(nb, str):
        path.write_text(nb)
    else:
        nbformat.write(nb, path)
    (folder / "timestamp.txt").write_text(when + "\n")  # what nbgrader's exchange writes
    return path


def _grades_of(root: Path, student: str) -> dict[str, tuple]:
    """grade id → (auto score, manual score, needs manual grade); answer id → (manual comment,)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(CHAPTER, CHAPTER, student)
        got: dict[str, tuple] = {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade) for g in nb.grades}
        got.update({c.name: (c.manual_comment,) for c in nb.comments})
        return got


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _review(root: Path, student: str, exercise: str) -> list[dict[str, str]]:
    _run(root, "grades")
    return [r for r in _csv(root / "review.csv") if r["student"] == student and r["exercise"] == exercise]


def _assert_hand_grades_kept(root: Path, needs_grade: bool = False) -> None:
    got = _grades_of(root, "flagged")
    for gid, score in MANUAL.items():
        assert got[gid] == (0, score, needs_grade), (gid, got)
    assert got["ce_answer"] == (COMMENT,), got


# Repository state: what git sees, and the grading artefacts git ignores (a stray gradebook.db above all).
ARTEFACTS = ("gradebook.db", ".gradebook-sync.json", "grades.csv", "grades-canvas.csv", "grades-moodle.csv",
             "review.csv", "roster.csv", "submitted", "autograded", "feedback", "results", ".nbgrader.log")


def _porcelain() -> list[str]:
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return sorted(done.stdout.splitlines())


def _artefacts() -> set[str]:
    places = [ROOT, ROOT / "autograder", ROOT / "course", ROOT / "autograder" / "course", ROOT / "course" / CHAPTER,
              ROOT / "solutions", ROOT / "solutions" / CHAPTER]
    return {str(p / name) for p in places for name in ARTEFACTS if (p / name).exists()}


# ------------------------------------------------------------------------------------------ the class


@pytest.fixture(scope="module")
def semester(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from test_notebooks import load_mutants

    before = {"porcelain": _porcelain(), "artefacts": _artefacts()}
    root = tmp_path_factory.mktemp("semester_browser") / "grading"
    root.mkdir()
    with (root / "roster.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "first_name", "last_name", "email", "lms_id", "section"])
        for sid, first, last, lms in ROSTER:
            out.writerow([sid, first, last, f"{sid}@example.edu", lms, "Monday lab"])
    (root / "policy.toml").write_text(POLICY)

    good = reference_answers(CHAPTER)
    _save(root, "right", submission(CHAPTER, good))
    exercise, what = WRONG
    wrong_answer = dict(load_mutants(CHAPTER)[exercise])[what]
    _save(root, "wrong", submission(CHAPTER, dict(good, **{f"{exercise}_answer": wrong_answer})))
    # an escape hatch in the cross-entropy answer: not run, the exercise scores 0 and goes to a person
    _save(root, "flagged", submission(CHAPTER, dict(good, ce_answer=good["ce_answer"] + "\nexec('x = 1')")))
    text = nbformat.writes(submission(CHAPTER, good))
    _save(root, "damaged", text[: len(text) * 2 // 3])  # the upload broke off two thirds of the way
    _save(root, "late", submission(CHAPTER, good), when=TWO_DAYS_LATE)
    out = _autograde(root)
    return {"root": root, "out": out, "before": before, "good": good}


def test_autograde_scores_the_class_as_the_rules_say(semester):
    root, out = semester["root"], semester["out"]
    assert "5 graded, 0 failed, 2 flagged for review" in out, out  # the escape hatch and the damaged file
    lines = {ln.split()[1]: ln for ln in out.splitlines() if ln.split()[:1] in (["graded"], ["REVIEW"])}
    assert set(lines) == {"right", "wrong", "flagged", "damaged", "late"}, out
    assert lines["flagged"].startswith("REVIEW") and lines["damaged"].startswith("REVIEW"), out
    assert "ce: flagged for review: use of exec" in out, out

    right = _grades_of(root, "right")
    assert all(auto > 0 and manual is None and not needs for auto, manual, needs in
               (v for k, v in right.items() if len(v) == 3)), right
    assert "12.0/12.0" in lines["right"] and "12.0/12.0" in lines["late"], out

    exercise, _ = WRONG
    wrong = _grades_of(root, "wrong")
    assert wrong[f"{exercise}_hidden"][0] == 0, wrong  # the planted wrong answer loses the exercise
    assert all(wrong[f"{ex}_hidden"][0] == 3 for ex in ("softmax", "ce") if ex != exercise), wrong

    flagged = _grades_of(root, "flagged")
    assert flagged["ce_visible"] == (0, None, True) and flagged["ce_hidden"] == (0, None, True), flagged
    assert flagged["softmax_hidden"][0] == 3 and flagged["sgd_hidden"][0] == 3, flagged
    assert "8.0/12.0" in lines["flagged"], out

    # the damaged file is graded, with a notice saying what was recovered, and the answers it lost go to a person
    damaged = json.loads((root / "results" / f"damaged__{CHAPTER}.json").read_text())
    assert not damaged.get("error") and damaged["tests"], damaged
    assert any("not valid JSON" in n for n in damaged["notices"]), damaged["notices"]
    assert "not valid JSON" in out.split("damaged", 1)[1], out
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:  # marked for a person in the gradebook
        assert gb.find_submission_notebook(CHAPTER, CHAPTER, "damaged").flagged
        assert not gb.find_submission_notebook(CHAPTER, CHAPTER, "right").flagged

    late = json.loads((root / "results" / f"late__{CHAPTER}.json").read_text())
    assert late["submitted_from"] == "timestamp.txt" and late["submitted"].startswith("2026-10-14T18:00"), late

    # the review list: the flagged exercise and the damaged file are open
    _run(root, "grades")
    review = {(r["student"], r["exercise"]): r for r in _csv(root / "review.csv")}
    ce = review["flagged", "ce"]
    assert ce["status"] == "open" and "exec" in ce["reason"] and ce["manual_score"] == "", ce
    assert review["damaged", "(whole submission)"]["status"] == "open", review
    assert not [k for k in review if k[0] in ("right", "late", "missing")], review


# ------------------------------------------------------------------------------- formgrader, by hand


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Formgrader:
    """JupyterLab started as ``make formgrader`` starts it: in autograder/, the repository as its root, with
    --allow-root, a token and a free port; the grading folder and policy through the environment."""

    def __init__(self, root: Path, log: Path) -> None:
        self.port, self.token = _free_port(), secrets.token_hex(16)
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [str(BIN / "jupyter"), "lab", f"--ServerApp.root_dir={ROOT}", "--allow-root", f"--port={self.port}",
             "--no-browser", f"--IdentityProvider.token={self.token}"],
            cwd=ROOT / "autograder", env=_env(root), stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            wait_for_server(f"{self.base}/formgrader/api/assignments?token={self.token}", self.process, log,
                            "formgrader")
        except RuntimeError:
            self.close()
            raise

    @property
    def base(self) -> str:
        return f"http://localhost:{self.port}"

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # the server and its own children (none here)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


NEEDS_GRADE = re.compile(r"\bneeds_manual_grade\b")  # formgrader's mark on a score waiting for a person


def _saved(page, kind: str):
    """The PUT formgrader's Backbone model sends when a score (``grade``) or a comment is saved."""
    return page.expect_response(lambda r: f"/formgrader/api/{kind}/" in r.url and r.request.method == "PUT",
                                timeout=30_000)


def test_a_person_grades_the_flagged_exercise_in_formgrader(semester, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    root = semester["root"]
    server = Formgrader(root, tmp_path / "formgrader.log")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), headless=True, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(60_000)
                # /formgrader → Manage Assignments; the token in the address logs the browser in (a cookie)
                page.goto(f"{server.base}/formgrader?token={server.token}")
                page.locator(f'a[href$="/formgrader/manage_submissions/{CHAPTER}"]').first.click()
                # Manage Submissions → the student (a link only once the submission is autograded)
                page.locator(f'a[href$="/formgrader/manage_students/flagged/{CHAPTER}"]').click()
                # the student's notebooks of the chapter → the autograded notebook, for grading
                page.locator('a[href*="/formgrader/submissions/"]').first.click()
                page.wait_for_url("**/formgrader/submissions/**")
                # the page's grade and comment fields are bound once formgrader has loaded them (the placeholder
                # is then the automatic score; a cell that waits for a person is marked needs_manual_grade)
                for gid in MANUAL:
                    field = page.locator(f"input.score#{gid}")
                    expect(field).to_have_attribute("placeholder", "0", timeout=30_000)
                    expect(field).to_have_class(NEEDS_GRADE)
                comment = page.locator("textarea.comment#ce_answer-comment")
                expect(comment).to_have_attribute("placeholder", re.compile("^Type any comments here"))
                # formgrader saves a field on its change event, i.e. when the person leaves it
                for gid, score in MANUAL.items():
                    field = page.locator(f"input.score#{gid}")
                    with _saved(page, "grade") as reply:
                        field.click()
                        field.fill(str(score))
                        field.press("Tab")
                    assert reply.value.ok, reply.value.status
                    assert reply.value.json()["manual_score"] == score
                with _saved(page, "comment") as reply:
                    comment.click()
                    comment.fill(COMMENT)
                    comment.press("Tab")
                assert reply.value.ok and reply.value.json()["manual_comment"] == COMMENT, reply.value.status
                # the page shows what was saved when it is opened again
                page.reload()
                for gid, score in MANUAL.items():
                    field = page.locator(f"input.score#{gid}")
                    expect(field).to_have_value(str(score), timeout=30_000)
                    expect(field).not_to_have_class(NEEDS_GRADE)
                expect(comment).to_have_value(COMMENT)
                SHOTS.mkdir(parents=True, exist_ok=True)
                comment.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / "formgrader-flagged-ce.png"))
            finally:
                browser.close()
    finally:
        server.close()
    _assert_hand_grades_kept(root)
    rows = _review(root, "flagged", "ce")
    assert len(rows) == 1 and rows[0]["status"] == "resolved" and rows[0]["manual_score"] == "3", rows
    assert "exec" in rows[0]["reason"], rows


# -------------------------------------------------------------------------------------------- re-grades


def test_hand_grades_survive_unchanged_forced_and_changed_regrades(semester):
    root = semester["root"]
    out = _autograde(root)  # nothing changed: nothing graded, the hand grades written back as they are (the
    # damaged file's lost answer still waits for a person)
    assert "0 graded, 0 failed, 1 flagged for review, 5 unchanged" in out, out
    _assert_hand_grades_kept(root)

    results = root / "results" / f"flagged__{CHAPTER}.json"
    before = json.loads(results.read_text())
    out = _autograde(root, "--student", "flagged", "--force")  # graded again, the same file: nothing to look at
    assert "1 graded, 0 failed, 0 flagged for review" in out, out
    assert json.loads(results.read_text())["seconds"] != before["seconds"], "--force did not grade again"
    assert "ce: flagged for review: use of exec (graded by hand since)" in out, out
    _assert_hand_grades_kept(root)
    assert _review(root, "flagged", "ce")[0]["status"] == "resolved"

    # the student hands in again: a comment line added in another answer, still on time
    good = semester["good"]
    answers = dict(good, ce_answer=good["ce_answer"] + "\nexec('x = 1')",
                   softmax_answer=good["softmax_answer"] + "\n# checked against torch.softmax by hand")
    _save(root, "flagged", submission(CHAPTER, answers), when="2026-10-12 21:30:00.000000 UTC")
    out = _autograde(root)
    assert "1 graded, 0 failed, 2 flagged for review, 4 unchanged" in out, out  # and the damaged file, still open
    assert f"ce: {CHANGED}" in out, out
    _assert_hand_grades_kept(root, needs_grade=True)  # kept, and waiting for a person again
    rows = _review(root, "flagged", "ce")
    assert len(rows) == 1 and rows[0]["status"] == "open" and CHANGED in rows[0]["reason"], rows
    assert not [r for r in _csv(root / "review.csv") if r["exercise"] == "softmax"]  # nothing graded by hand there


# ------------------------------------------------------------------------------------ feedback and grades


def test_feedback_and_the_grades_files(semester):
    root = semester["root"]
    out = _run(root, "feedback").stdout
    assert "feedback written for 5 submission(s) under" in out and "2 review item(s) still open" in out, out

    out = _run(root, "grades").stdout
    assert "late: late 00_welcome: 2 day(s), -2.4 points (12 -> 9.6); time from timestamp.txt" in out, out
    assert "not on the roster" not in out, out
    grades = {r["student_id"]: r for r in _csv(root / "grades.csv")}
    flagged = grades["flagged"]
    assert float(flagged[f"{CHAPTER}/ce"]) == sum(MANUAL.values()), flagged  # the manual points count
    assert float(flagged["total"]) == 4 + 4 + sum(MANUAL.values()), flagged
    late = grades["late"]
    assert (late[f"{CHAPTER}/days_late"], late[f"{CHAPTER}/penalty"], late[f"{CHAPTER}/total"], late["total"]) == \
        ("2", "2.4", "9.6", "9.6"), late
    assert grades["right"]["total"] == "12" and grades["right"][f"{CHAPTER}/days_late"] == "0", grades["right"]
    assert float(grades["wrong"]["total"]) <= 9, grades["wrong"]
    assert grades["missing"][f"{CHAPTER}/total"] == "", grades["missing"]

    _run(root, "grades", "--format", "canvas")
    with (root / "grades-canvas.csv").open(newline="") as f:
        canvas = list(csv.reader(f))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{CHAPTER} (4711)"], canvas[0]
    assert canvas[1][0].strip() == "Points Possible" and canvas[1][-1] == "12", canvas[1]
    by_id = {r[2]: r for r in canvas[2:]}
    assert set(by_id) == set(LMS_ID), by_id
    assert all(by_id[sid][1] == lms for sid, lms in LMS_ID.items()), by_id  # Canvas's ID: the roster's lms_id
    assert by_id["flagged"][0] == "Flagged, Flora" and by_id["flagged"][-1] == "11", by_id["flagged"]
    assert by_id["late"][-1] == "9.6" and by_id["right"][-1] == "12", by_id
    assert by_id["missing"][-1] == "", by_id["missing"]  # nothing handed in: blank

    _run(root, "grades", "--format", "moodle", "--missing", "zero")
    moodle = {r["ID number"]: r for r in _csv(root / "grades-moodle.csv")}
    assert moodle["missing"][CHAPTER] == "0", moodle["missing"]  # ...or 0 when asked
    assert moodle["missing"]["User ID"] == LMS_ID["missing"] and moodle["flagged"][CHAPTER] == "11", moodle
    assert (moodle["late"][CHAPTER], moodle["late"][f"{CHAPTER} days late"]) == ("9.6", "2"), moodle["late"]

    page = htmllib.unescape((root / "feedback" / "flagged" / CHAPTER / f"{CHAPTER}.html").read_text())
    toc = page.split('<div id="toc">')[1].split("</div>")[0]
    assert "Test cell" not in toc, toc
    for title in ("A numerically stable softmax", "Cross-entropy from logits, skipping padding",
                  "One SGD step, by hand"):
        assert f"{title}: hidden tests" in toc, toc
    assert "Cross-entropy from logits, skipping padding: hidden tests</a> (Score: 2.0 / 3.0)" in toc, toc
    assert "Comment on 2 · Cross-entropy from logits, skipping padding: answer</a>" in toc, toc  # not its grade id
    assert "11.0 / 12.0" in page and COMMENT in page
    late_page = htmllib.unescape((root / "feedback" / "late" / CHAPTER / f"{CHAPTER}.html").read_text())
    assert "2 days late: penalty 2.4 points" in late_page and "9.6 / 12" in late_page


# ------------------------------------------------------------------------------------ the repository


def test_nothing_in_the_repository_changed(semester):
    before = semester["before"]
    # Only what appeared since: other work in the tree may change or commit files meanwhile.
    new = sorted(set(_porcelain()) - set(before["porcelain"]))
    assert not new, f"changed or added in the repository while the semester ran: {new}"
    assert _artefacts() == before["artefacts"], "grading files (a stray gradebook.db?) appeared in the repository"
    assert (semester["root"] / "gradebook.db").exists()
