"""A term as a new instructor meets it: every score true and no line that misleads.

A class of chapter 00 — a right submission, one flagged for review, one cut off mid-cell (a damaged file) — is
graded once in a temporary grading folder. The tests then check what the instructor is told at each step: the
damaged file is a review item everywhere (the autograde line, formgrader's flag, the feedback, one row of
review.csv); exports and feedback list what is still open and ``--strict`` refuses to export while anything is;
every mistyped chapter, folder, number or file is one line and exit status 2; a policy file that is not there is
an error that names it; LMS downloads are collected by ``make zip-collect``; extensions live beside the roster.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import PIPELINE, ROOT
from kernel import reference_answers
from kernel import released_notebook as submission

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("term")]

CHAPTER = "00_welcome"


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, DLCOURSE_GRADING_DIR=str(root), OMP_NUM_THREADS="1", **extra)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    for key in ("DLCOURSE_GRADEBOOK", "DLCOURSE_POLICY", "JOBS", "STRICT"):
        if key not in extra:
            env.pop(key, None)
    return env


def _run(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PIPELINE), *args], env=_env(root, **extra),
                          capture_output=True, text=True, timeout=900, cwd=ROOT)


def _save(root: Path, student: str, text: str) -> None:
    folder = root / "submitted" / student / CHAPTER
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{CHAPTER}.ipynb").write_text(text)


def _one_line_error(result: subprocess.CompletedProcess, *says: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for text in says:
        assert text in lines[0], lines[0]


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = tmp_path_factory.mktemp("term")
    good = reference_answers(CHAPTER)
    _save(root, "alice", nbformat.writes(submission(CHAPTER, good)))
    _save(root, "bob", nbformat.writes(submission(CHAPTER, dict(good, ce_answer=good["ce_answer"] + "\nexec('1')"))))
    whole = nbformat.writes(submission(CHAPTER, good))
    cut = whole.index('"ce_answer"')  # cut off in the middle of the second exercise's answer cell
    _save(root, "carol", whole[:cut])
    result = _run(root, "autograde", "--chapter", CHAPTER, JOBS="2")
    assert result.returncode == 0, result.stdout + result.stderr
    return root, result.stdout


def test_a_damaged_notebook_is_a_review_item_on_the_autograde_line(term):
    root, out = term
    line = next(ln for ln in out.splitlines() if " carol " in f" {ln} ")
    assert line.startswith("REVIEW"), out
    assert "damaged" in out.split(line, 1)[1].split("\n", 2)[1], out
    assert "3 graded, 0 failed, 2 flagged for review" in out, out


def test_a_damaged_notebook_is_one_open_row_of_the_review_list(term):
    root, _ = term
    result = _run(root, "grades")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [r for r in csv.DictReader((root / "review.csv").open()) if r["student"] == "carol"]
    assert len(rows) == 1 and rows[0]["status"] == "open", rows
    assert rows[0]["reason"].startswith("damaged file") and "ce" in rows[0]["reason"], rows


def test_formgrader_flags_the_damaged_notebook(term):
    from nbgrader.api import Gradebook

    root, _ = term
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(CHAPTER, CHAPTER, "carol")
        assert notebook.flagged
        missing = {g.name for g in notebook.grades if g.needs_manual_grade}
        assert {"ce_visible", "ce_hidden"} <= missing, missing  # the answers the file lost wait for a person


def test_grades_and_feedback_list_open_review_items_and_strict_refuses(term):
    root, _ = term
    result = _run(root, "grades")
    assert result.returncode == 0
    assert "2 review item(s) still open" in result.stdout, result.stdout
    assert "bob" in result.stdout and "carol" in result.stdout
    before = (root / "grades.csv").read_bytes()
    result = _run(root, "grades", "--format", "canvas", "--strict")
    _one_line_error(result, "2 review item(s) are open", "review.csv")
    assert not (root / "grades-canvas.csv").exists() and (root / "grades.csv").read_bytes() == before
    result = _run(root, "feedback", STRICT="1")
    _one_line_error(result, "review item(s) are open")
    assert not (root / "feedback").exists()


def test_feedback_says_the_file_was_damaged_and_a_flag_shows_no_points(term):
    root, _ = term
    result = _run(root, "feedback")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "feedback written for 3 submission(s)" in result.stdout and "still open" in result.stdout, result.stdout
    carol = (root / "feedback" / "carol" / CHAPTER / f"{CHAPTER}.html").read_text()
    assert "damaged" in carol and "not valid JSON" in carol
    bob = (root / "feedback" / "bob" / CHAPTER / f"{CHAPTER}.html").read_text()
    assert "flagged for review" in bob
    assert "Score: 1.0 / 1.0" not in bob.split("ce_visible")[-1].split("ce_hidden")[0]


def test_every_written_line_follows_a_file_that_exists(tmp_path):
    result = _run(tmp_path / "nowhere", "feedback")
    _one_line_error(result, "nothing was autograded", str(tmp_path / "nowhere"))
    assert not (tmp_path / "nowhere").exists()


def test_bad_chapters_numbers_folders_and_files_are_one_line(tmp_path):
    _one_line_error(_run(tmp_path, "autograde", "--chapter", "00_welcom"), "no chapter '00_welcom'")
    _one_line_error(_run(tmp_path, "autograde", JOBS="abc"), "JOBS", "abc")
    _one_line_error(_run(tmp_path, "grades", "--chapter", "00_welcom"), "no chapter '00_welcom'")
    _one_line_error(_run(tmp_path / "new", "grades"), "nothing was autograded", str(tmp_path / "new"))
    fresh = _run(tmp_path / "fresh", "autograde")  # the README's own example: a grading folder not made yet
    assert fresh.returncode == 0 and "no submissions" in fresh.stdout and not fresh.stderr.strip(), fresh.stderr
    _one_line_error(_run(tmp_path, "grades", DLCOURSE_POLICY=str(tmp_path / "polcy.toml")),
                    "no late policy", str(tmp_path / "polcy.toml"))
    hub = subprocess.run([sys.executable, str(ROOT / "autograder" / "platforms" / "hub.py"), "start", "--roster",
                          str(tmp_path / "rooster.csv")], env=_env(tmp_path), capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    _one_line_error(hub, "no roster", str(tmp_path / "rooster.csv"))


def test_grades_say_which_policy_and_deadlines_they_applied(term, tmp_path):
    root, _ = term
    policy = tmp_path / "policy.toml"
    policy.write_text(f'timezone = "UTC"\n[late]\nper_day = 0.1\n'
                      f'[chapters.{CHAPTER}]\ndeadline = 2026-10-12T23:59:00\n')
    result = _run(root, "grades", DLCOURSE_POLICY=str(policy))
    assert result.returncode == 0, result.stderr
    assert f"late policy: {policy}" in result.stdout and f"{CHAPTER} due 2026-10-12 23:59 UTC" in result.stdout
    result = _run(root, "grades")
    assert "late policy: " in result.stdout and "no deadlines" in result.stdout, result.stdout


def test_extensions_live_beside_the_roster_not_in_the_committed_policy(term, tmp_path):
    root, _ = term
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[chapters.{CHAPTER}]\ndeadline = 2026-10-12T23:59:00\n')
    (root / "extensions.toml").write_text(f'[[extensions]]\nstudent = "alice"\nchapter = "{CHAPTER}"\ndays = 3\n')
    result = _run(root, "grades", DLCOURSE_POLICY=str(policy))
    assert result.returncode == 0, result.stderr
    assert "1 extension(s) from " + str(root / "extensions.toml") in result.stdout, result.stdout
    policy.write_text(policy.read_text() + f'[[extensions]]\nstudent = "bob"\nchapter = "{CHAPTER}"\ndays = 1\n')
    result = _run(root, "grades", DLCOURSE_POLICY=str(policy))
    assert "names students" in result.stdout and "extensions.toml" in result.stdout, result.stdout
    (root / "extensions.toml").unlink()
    ignored = subprocess.run(["git", "check-ignore", "autograder/extensions.toml"], cwd=ROOT, capture_output=True)
    assert ignored.returncode == 0, "autograder/extensions.toml is not ignored by git"


# ------------------------------------------------------------------------------------------ LMS downloads

PEOPLE = ("id,first_name,last_name,email,lms_id\nada,Ada,Lovelace,ada@example.edu,10001\n"
          "alan,Alan,Turing,alan@example.edu,10002\n")
DOWNLOADS = {
    "canvas": ["lovelaceada_10001_55501_00_welcome.ipynb", "turingalan_LATE_10002_55502_00_welcome-1.ipynb"],
    "moodle": ["Ada Lovelace_123456_assignsubmission_file_/00_welcome.ipynb",
               "Alan Turing_123457_assignsubmission_file_/00_welcome.ipynb"],
    "blackboard": ["00_welcome_ada_attempt_2026-10-12-22-01-00_00_welcome.ipynb",
                   "00_welcome_alan_attempt_2026-10-13-09-30-00_00_welcome.ipynb"],
}


@pytest.mark.parametrize("lms", list(DOWNLOADS))
def test_zip_collect_files_an_lms_download_under_the_grading_folder(lms, tmp_path):
    (tmp_path / "roster.csv").write_text(PEOPLE)
    archive = tmp_path / "downloaded" / CHAPTER / "archive"
    archive.mkdir(parents=True)
    notebook = nbformat.writes(submission(CHAPTER, reference_answers(CHAPTER)))
    with zipfile.ZipFile(archive / "submissions.zip", "w") as zf:
        for name in DOWNLOADS[lms]:
            zf.writestr(name, notebook)
    result = subprocess.run(["make", "zip-collect", f"CH={CHAPTER}"], cwd=ROOT, env=_env(tmp_path),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    for student in ("ada", "alan"):
        assert (tmp_path / "submitted" / student / CHAPTER / f"{CHAPTER}.ipynb").is_file(), result.stdout
    if lms == "blackboard":
        stamp = (tmp_path / "submitted" / "ada" / CHAPTER / "timestamp.txt").read_text()
        assert stamp.startswith("2026-10-12 22:01:00"), stamp
    assert not (ROOT / "autograder" / "downloaded").exists() and not (ROOT / "downloaded").exists()
    status = subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=ROOT, capture_output=True,
                            text=True).stdout
    assert "downloaded" not in status, status


def test_a_result_json_of_a_damaged_file_names_it(term):
    root, _ = term
    data = json.loads((root / "results" / f"carol__{CHAPTER}.json").read_text())
    assert data["damaged"].startswith("the notebook is not valid JSON"), data.get("damaged")


def test_make_targets_report_only_what_setup_did(tmp_path):
    """The checks `make setup` reports are not printed again by every target that runs setup first."""
    result = subprocess.run(["make", "grades"], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True,
                            timeout=300)
    for chatter in ("already present, verified", "grading sandbox: available", "setup complete", "already in"):
        assert chatter not in result.stdout, result.stdout
    assert "nothing was autograded" in result.stderr


# ----------------------------------------------------------------------------- what students see in JupyterLab

def _nbgrader_menu(config: Path, tmp_path: Path) -> list[str] | None:
    """The items of JupyterLab's Nbgrader menu (None when there is no such menu), with ``config`` as the students'
    Jupyter configuration folder, as Chromium shows them."""
    from browser import lab_in_browser

    course = tmp_path / "course"
    course.mkdir(parents=True)
    with lab_in_browser(course, env={"JUPYTER_CONFIG_PATH": str(config)}) as (lab, browser):
        page = browser.new_page()
        try:
            page.goto(f"{lab.base}/lab?token={lab.token}")
            page.wait_for_selector("#jp-menu-panel, .lm-MenuBar", timeout=90_000)
            page.wait_for_timeout(1500)  # extensions add their menus as they activate
            titles = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
            if "Nbgrader" not in titles:
                return None
            page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
            page.wait_for_selector(".lm-Menu", timeout=10_000)
            items = page.locator(".lm-Menu .lm-Menu-item:not(.lm-mod-hidden) .lm-Menu-itemLabel")
            return [t.strip() for t in items.all_inner_texts() if t.strip()]
        finally:
            page.close()


def test_students_see_only_the_nbgrader_tools_they_can_use(tmp_path):
    from browser import unavailable

    why = unavailable()
    if why:
        pytest.skip(why)
    local = _nbgrader_menu(ROOT / "deploy" / "lab", tmp_path / "local")  # make lab: no exchange, no formgrader
    assert local is None or not [i for i in local if "Formgrader" in i or "Course" in i], local
    hub = _nbgrader_menu(ROOT / "deploy" / "hub" / "student", tmp_path / "hub")  # a student's server on make hub
    assert hub == ["Assignment List"], hub


def test_formgrader_shows_the_policys_due_dates_and_its_generate_button_runs_the_release(term, tmp_path):
    """formgrader reads due dates from the gradebook (make grades writes the policy's there), and its Generate
    button (NbGraderAPI.generate_assignment) runs the course's release, not nbgrader's generate into course/."""
    from nbgrader.api import Gradebook

    root, _ = term
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[chapters.{CHAPTER}]\ndeadline = 2026-10-12T23:59:00\n")
    assert _run(root, "grades", DLCOURSE_POLICY=str(policy)).returncode == 0
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        assert str(gb.find_assignment(CHAPTER).duedate) == "2026-10-12 23:59:00"
    assert _run(root, "grades").returncode == 0  # the committed policy has no deadline: none in the gradebook
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        assert gb.find_assignment(CHAPTER).duedate is None
    before = {p: p.read_bytes() for p in sorted((ROOT / "course" / CHAPTER).rglob("*")) if p.is_file()}
    code = ("import json\nfrom nbgrader.apps import NbGraderAPI\nfrom nbgrader.apps.baseapp import NbGrader\n"
            "app = NbGrader()\napp.load_config_file()\napi = NbGraderAPI(app.coursedir, parent=app)\n"
            f"print(json.dumps(api.generate_assignment({CHAPTER!r})))\n")  # formgrader's Generate button
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "autograder", env=_env(root), capture_output=True,
                          text=True, timeout=600)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["success"], got
    assert "the course's release" in got["log"] and f"released course/{CHAPTER}" in got["log"], got["log"]
    after = {p: p.read_bytes() for p in sorted((ROOT / "course" / CHAPTER).rglob("*")) if p.is_file()}
    assert after == before  # the release is current: the course's release rewrote nothing


def _formgrader_pages(root: Path, log: Path, paths: list[str], **extra: str) -> dict[str, str]:
    """formgrader's pages as ``make formgrader`` serves them (a Jupyter server in autograder/, the repository as
    its root), the grading folder and the policy through the environment."""
    import secrets
    import signal
    import urllib.request

    from browser import _free_port, wait_for_server

    port, token = _free_port(), secrets.token_hex(16)
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "jupyter"), "server", f"--ServerApp.root_dir={ROOT}", "--allow-root",
             f"--port={port}", "--no-browser", f"--IdentityProvider.token={token}"],
            cwd=ROOT / "autograder", env=_env(root, **extra), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for_server(f"{base}/formgrader/api/assignments?token={token}", process, log, "formgrader")
            return {path: urllib.request.urlopen(f"{base}{path}?token={token}", timeout=60).read().decode()
                    for path in paths}
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)


def test_formgrader_says_its_scores_are_before_the_penalty_and_how_chapters_travel(term, tmp_path):
    """Every formgrader page opens with the course's notice: which submissions lose points for lateness (the score
    formgrader shows, and the export's), the review items still open; the assignments page of a server without
    the exchange says how chapters reach students instead of nbgrader's warning about a missing folder."""
    root, _ = term
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[late]\nper_day = 0.1\nmax_penalty = 0.5\n[chapters.{CHAPTER}]\n"
                      "deadline = 2026-10-12T23:59:00\n")
    pages = _formgrader_pages(root, tmp_path / "formgrader.log",
                              ["/formgrader/manage_assignments", f"/formgrader/manage_submissions/{CHAPTER}",
                               "/formgrader/manage_students", "/formgrader/gradebook"],
                              DLCOURSE_POLICY=str(policy), DLCOURSE_EXCHANGE=str(tmp_path / "no" / "exchange"))
    for path, html in pages.items():
        notice = html.split('id="course-notice"', 1)[1].split("</div>", 1)[0]
        assert "before the late penalty" in notice and str(policy) in notice, (path, notice)
        late = notice.split('id="course-notice-late"', 1)[1].split("</ul>", 1)[0]
        assert f"alice · {CHAPTER}:" in late and "−6 point(s): 12 here, 6 in the export" in late, late
        review = notice.split('id="course-notice-review"', 1)[1].split("</ul>", 1)[0]
        assert f"bob · {CHAPTER} · ce" in review and f"carol · {CHAPTER}" in review, review
    assignments = pages["/formgrader/manage_assignments"]
    assert 'id="course-exchange"' in assignments and "make zip-collect" in assignments
    assert "#warning-exchange { display: none; }" in assignments  # nbgrader's own warning, hidden
    pages = _formgrader_pages(root, tmp_path / "formgrader-missing.log", ["/formgrader/manage_students"],
                              DLCOURSE_POLICY=str(tmp_path / "typo.toml"))
    problem = pages["/formgrader/manage_students"].split('id="course-notice-problem"', 1)[1].split("</p>", 1)[0]
    assert "late policy cannot be read" in problem and "typo.toml" in problem, problem
