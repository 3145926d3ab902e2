"""A class on the course's JupyterHub (``make hub``), end to end, in headless Chromium.

``make hub`` starts on loopback with a roster of two students; the instructor (the hub's admin) logs in and
sees the class, and releases chapter 00 through the exchange. Each student logs in, fetches the chapter from
nbgrader's Assignments panel, fills it in (the right answers; a planted wrong answer), validates and submits it
there. The instructor collects, grades with the course's grader and returns feedback through the exchange;
each student fetches their own feedback in the panel. Then:

* the grades are those of grading the same notebooks directly, and the submission time came from the exchange;
* each student sees only their own work and feedback: not the other's home, the exchange's submissions or
  feedback list, the solutions or the gradebook.

The test makes two Unix accounts and one for the instructor (removed at the end), so it runs as root only;
skipped, with the reason, where the accounts, Chromium or the proxy cannot be had. Screenshots go to
``build/browser/hub/`` (not committed).
"""

from __future__ import annotations

import csv
import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from browser import _free_port, launch, unavailable, wait_for_server
from conftest import ROOT
from kernel import reference_answers
from kernel import released_notebook as submission

sys.path.insert(0, str(ROOT))
from autograder.platforms import hub  # noqa: E402

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("hub")]

CHAPTER = "00_welcome"
WRONG = ("sgd", "steps up the gradient")  # bob's planted wrong answer: exercise, what is wrong
SHOTS = ROOT / "build" / "browser" / "hub"


def _env(grading: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, DLCOURSE_GRADING_DIR=str(grading), OMP_NUM_THREADS="1", **extra)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("DLCOURSE_GRADEBOOK", None)
    return env


def _make(grading: Path, *args: str) -> str:
    done = subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, env=_env(grading), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"make {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _as(user: str, code: str, *args: str) -> subprocess.CompletedProcess:
    """Python ``code`` run as ``user`` with ``args`` (what their server's kernels and terminals can do)."""
    return subprocess.run(["runuser", "-u", user, "--", sys.executable, "-c", code, *args], capture_output=True,
                          text=True, cwd="/", timeout=120)


def _modes(folder: Path) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir() if not p.is_symlink()}


@pytest.fixture(scope="module")
def cls(tmp_path_factory):
    reason = unavailable() or hub.unavailable()
    if reason:
        pytest.skip(reason)
    tag = secrets.token_hex(3)
    students = {f"ann{tag}": "right", f"bob{tag}": "wrong"}
    instructor = f"prof{tag}"
    grading = tmp_path_factory.mktemp("hub") / "grading"
    grading.mkdir()
    with (grading / "roster.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "first_name", "last_name", "email", "lms_id", "section"])
        for i, sid in enumerate(students):
            out.writerow([sid, sid[:3].title(), "Student", f"{sid}@example.edu", str(30001 + i), "Monday lab"])
    root = Path(tempfile.mkdtemp(prefix="dlcourse-hub-", dir="/tmp"))
    port = _free_port()
    modes = _modes(ROOT)
    # On a machine whose Python lives in root's home (pyenv), make hub refuses until the way to it is open:
    # opened for the test (entering, not listing) and closed again after it.
    closed = {p: stat.S_IMODE(p.stat().st_mode) for p in hub.closed_ancestors()}
    for path, mode in closed.items():
        path.chmod(mode | stat.S_IXOTH)
    log = (grading / "hub.log").open("w")
    process = subprocess.Popen(["make", "--no-print-directory", "hub", f"ROSTER={grading / 'roster.csv'}",
                                f"HUB_ROOT={root}", f"HUB_PORT={port}", f"INSTRUCTOR={instructor}"],
                               cwd=ROOT, env=_env(grading), stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        wait_for_server(f"http://127.0.0.1:{port}/hub/health", process, grading / "hub.log", "make hub", 240)
        with (root / "passwords.csv").open() as f:
            passwords = {row["account"]: row["password"] for row in csv.DictReader(f)}
        good = reference_answers(CHAPTER)
        from test_notebooks import load_mutants

        exercise, what = WRONG
        answers = {f"ann{tag}": good,
                   f"bob{tag}": dict(good, **{f"{exercise}_answer": dict(load_mutants(CHAPTER)[exercise])[what]})}
        yield {"students": students, "instructor": instructor, "grading": grading, "root": root, "port": port,
               "url": f"http://127.0.0.1:{port}", "passwords": passwords, "answers": answers, "tag": tag,
               "process": process}
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()
        hub.remove_accounts([*students, instructor])
        for path, mode in {**modes, **closed}.items():  # the repository (and the way to Python) as they were
            path.chmod(mode)
        shutil.rmtree(root, ignore_errors=True)


def _login(browser, cls, user: str, then: str = ""):
    """A new page, logged in as ``user`` on the hub's login form, then taken to ``then`` (by default where the hub
    sends a person who logs in: their own server, started for them)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(120_000)
    page.goto(f"{cls['url']}/hub/login" + (f"?next={then}" if then else ""))
    page.fill("#username_input", user)
    page.fill("#password_input", cls["passwords"][user])
    page.click("#login_submit")
    return page


def _lab(browser, cls, user: str):
    """The student's JupyterLab (spawned on first login) with the Assignments panel open."""
    page = _login(browser, cls, user)
    page.wait_for_url(f"**/user/{user}/lab**", timeout=180_000)
    _assignments(page)
    return page


def _assignments(page) -> None:
    """Nbgrader → Assignment List: the panel where students fetch, validate, submit and fetch feedback."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()


def _contents(page, user: str, path: str, body: dict | None = None) -> dict:
    """The Jupyter contents API of the student's server, called from their page with their cookies and the XSRF
    token JupyterLab sends on every request (a hub's server takes a cookie without it for no one): what the
    editor does when it opens or saves a file."""
    return page.evaluate(
        """async ([url, body]) => {
            const xsrf = (document.cookie.match('\\\\b_xsrf=([^;]*)') || [])[1] || '';
            const headers = {'Content-Type': 'application/json', 'X-XSRFToken': decodeURIComponent(xsrf)};
            const r = await fetch(url, body ? {method: 'PUT', body: JSON.stringify(body), headers} : {headers});
            return {status: r.status, body: r.ok ? await r.json() : await r.text()};
        }""", [f"/user/{user}/api/contents/{path}", body])


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.fixture(scope="module")
def cycle(cls):
    """The whole cycle through the hub; what each step showed."""
    from playwright.sync_api import sync_playwright

    grading, seen = cls["grading"], {}
    seen["release"] = _make(grading, "hub-release", f"CH={CHAPTER}", f"HUB_ROOT={cls['root']}")
    with sync_playwright() as p:
        browser = launch(p)
        try:
            admin = _login(browser, cls, cls["instructor"], "/hub/admin")  # no server of their own started
            for student in cls["students"]:
                admin.get_by_text(student, exact=True).first.wait_for()
            _shot(admin, "admin")
            seen["admin"] = admin.content()
            admin.close()
            pages = {}
            for student in cls["students"]:
                page = pages[student] = _lab(browser, cls, student)
                page.get_by_role("button", name="Fetch", exact=True).click()
                page.get_by_role("button", name="Submit", exact=True).wait_for()
                fetched = _contents(page, student, f"{CHAPTER}/{CHAPTER}.ipynb")
                assert fetched["status"] == 200, fetched
                nb = nbformat.from_dict(fetched["body"]["content"])
                filled = submission(CHAPTER, cls["answers"][student])
                assert [c.source for c in nb.cells if c.cell_type == "markdown"] == \
                    [c.source for c in filled.cells if c.cell_type == "markdown"]  # what was fetched is the release
                content = json.loads(nbformat.writes(filled))
                saved = _contents(page, student, f"{CHAPTER}/{CHAPTER}.ipynb",
                                  {"type": "notebook", "format": "json", "content": content})
                assert saved["status"] == 200, saved
                # validate in the panel: the notebook runs through nbgrader's validator in the student's server
                page.locator("a.assignment-notebooks-link").first.click()  # the chapter's notebooks, unfolded
                page.get_by_role("button", name="Validate", exact=True).first.click()
                dialog = page.locator(".jp-Dialog")
                dialog.wait_for(timeout=300_000)
                seen[f"validate {student}"] = dialog.inner_text()
                _shot(page, f"validate-{cls['students'][student]}")
                dialog.get_by_role("button").last.click()
                page.get_by_role("button", name="Submit", exact=True).first.click()
                page.get_by_text("Fetch Feedback").first.wait_for()
                _shot(page, f"submitted-{cls['students'][student]}")
            seen["collect"] = _make(grading, "hub-collect", f"CH={CHAPTER}", f"HUB_ROOT={cls['root']}")
            seen["autograde"] = _make(grading, "autograde", f"CH={CHAPTER}", "JOBS=2")
            seen["feedback"] = _make(grading, "hub-feedback", f"CH={CHAPTER}", f"HUB_ROOT={cls['root']}")
            for student, page in pages.items():
                page.reload()
                _assignments(page)
                page.get_by_role("button", name="Fetch Feedback", exact=True).first.click()
                page.get_by_text("(view feedback)").first.wait_for()
                _shot(page, f"feedback-{cls['students'][student]}")
                listing = _contents(page, student, f"{CHAPTER}/feedback")
                assert listing["status"] == 200, listing
                (stamp,) = [e["name"] for e in listing["body"]["content"]]
                html = _contents(page, student, f"{CHAPTER}/feedback/{stamp}/{CHAPTER}.html")
                assert html["status"] == 200, html
                seen[f"feedback {student}"] = html["body"]["content"]
                page.close()
        finally:
            browser.close()
    return seen


def _results(grading: Path) -> dict[str, dict]:
    return {p.name.split("__")[0]: json.loads(p.read_text()) for p in (grading / "results").glob(f"*__{CHAPTER}.json")}


def test_the_instructor_sees_the_class_and_releases_through_the_exchange(cls, cycle):
    assert f"Released as: dlcourse {CHAPTER}" in cycle["release"]
    for student in cls["students"]:
        assert student in cycle["admin"]


def test_students_validate_and_submit_and_the_instructor_collects(cls, cycle):
    ann, bob = cls["students"]
    assert "passes" in cycle[f"validate {ann}"].lower() or "success" in cycle[f"validate {ann}"].lower(), \
        cycle[f"validate {ann}"]
    assert "fail" in cycle[f"validate {bob}"].lower() or "error" in cycle[f"validate {bob}"].lower(), \
        cycle[f"validate {bob}"]
    for student in cls["students"]:
        assert f"Collecting submission: {student} {CHAPTER}" in cycle["collect"]
        folder = cls["grading"] / "submitted" / student / CHAPTER
        assert (folder / "timestamp.txt").is_file() and (folder / f"{CHAPTER}.ipynb").is_file()


def test_grades_through_the_hub_are_those_of_grading_directly(cls, cycle, tmp_path):
    hub_results = _results(cls["grading"])
    assert set(hub_results) == set(cls["students"])
    ann, bob = cls["students"]
    # ann handed in the reference answers, which earn every point when graded directly (test_pipeline_chapters);
    # bob's notebook, with its planted wrong answer, is graded here directly, outside the hub
    direct = tmp_path / "direct"
    folder = direct / "submitted" / bob / CHAPTER
    folder.mkdir(parents=True)
    nbformat.write(submission(CHAPTER, cls["answers"][bob]), folder / f"{CHAPTER}.ipynb")
    _make(direct, "autograde", f"CH={CHAPTER}")
    direct_result = _results(direct)[bob]
    assert hub_results[ann]["score"] == hub_results[ann]["max_score"] == direct_result["max_score"]
    assert hub_results[bob]["score"] == direct_result["score"] < direct_result["max_score"]
    assert [(t["grade_id"], t["score"]) for t in hub_results[bob]["tests"]] == \
        [(t["grade_id"], t["score"]) for t in direct_result["tests"]]
    for student in cls["students"]:
        assert hub_results[student]["submitted_from"] == "timestamp.txt"  # the exchange's time, for the late policy


def test_each_student_gets_their_own_feedback(cls, cycle):
    ann, bob = cls["students"]
    results = _results(cls["grading"])
    assert results[ann]["score"] != results[bob]["score"]
    for student in (ann, bob):  # the chapter's total, as the grader gave it to this student
        result = results[student]
        assert f"{CHAPTER} (Score: {result['score']:.1f} / {result['max_score']:.1f})" in cycle[f"feedback {student}"]
    wrong = cls["answers"][bob][f"{WRONG[0]}_answer"].splitlines()[-1].strip()
    assert wrong not in cls["answers"][ann][f"{WRONG[0]}_answer"]
    assert wrong not in cycle[f"feedback {ann}"]


def test_a_student_cannot_read_what_is_not_theirs(cls, cycle):
    ann, bob = cls["students"]
    exchange = cls["root"] / "exchange" / "dlcourse"
    # nbgrader's exchange keeps a submission from others by its name (the inbound folder cannot be listed, and the
    # name ends in 9 random bytes): without the list, nobody finds bob's
    (theirs,) = [p.name for p in (exchange / "inbound").iterdir() if p.name.startswith(f"{bob}+")]
    assert re.fullmatch(rf"{bob}\+{CHAPTER}\+[^+]+\+[A-Za-z0-9_-]{{12}}", theirs), theirs
    secret = {
        "bob's home": f"/home/{bob}",
        "the exchange's submissions": str(exchange / "inbound"),
        "the exchange's feedback": str(exchange / "feedback"),
        "the solutions": str(ROOT / "solutions"),
        "the autograder folder": str(ROOT / "autograder"),
        "the tests": str(ROOT / "tests"),
        "the repository's history": str(ROOT / ".git"),
        "the grading folder": str(cls["grading"]),
        "the hub's state": str(cls["root"] / "state"),
        "the passwords": str(cls["root"] / "passwords.csv"),
    }
    code = ("import json, os, sys\n"
            "out = {}\n"
            "for what, p in json.loads(sys.argv[1]).items():\n"
            "    try:\n"
            "        os.listdir(p) if os.path.isdir(p) else open(p).read()\n"
            "        out[what] = 'read'\n"
            "    except PermissionError:\n"
            "        out[what] = 'refused'\n"
            "print(json.dumps(out))\n")
    done = _as(ann, code, json.dumps(secret))
    assert done.returncode == 0, done.stderr
    reached = json.loads(done.stdout)
    assert {what for what, how in reached.items() if how != "refused"} == set(), reached
    # what a student needs is open to her, read-only: the course package, its data and models, her own work
    mine = _as(ann, f"import dlcourse, os; os.listdir(os.path.expanduser('~/{CHAPTER}'))")
    assert mine.returncode == 0, mine.stderr
    for folder in ("dlcourse", "data", "models", ".venv"):
        wrote = _as(ann, f"open({str(ROOT / folder / 'planted.py')!r}, 'w')")
        assert wrote.returncode != 0 and "PermissionError" in wrote.stderr, (folder, wrote.stderr)
        assert not (ROOT / folder / "planted.py").exists()


def test_stopping_the_hub_is_one_clean_shutdown(cls, cycle):
    """Ctrl-C on ``make hub`` (SIGINT to its process group), then the SIGTERM a terminal's close sends: the hub
    stops every server once and says nothing false (no "Failed to stop user", no task left pending, no
    traceback from a server interrupted twice)."""
    process, log = cls["process"], cls["grading"] / "hub.log"
    before = len(log.read_text())
    os.killpg(process.pid, signal.SIGINT)
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=90)
    said = log.read_text()[before:]
    assert "initiating shutdown" in said, said[-3000:]
    for wrong in ("Failed to stop user", "Task was destroyed", "Traceback", "KeyboardInterrupt"):
        assert wrong not in said, said[-3000:]
    assert said.count("Cleaning up single-user servers") == 1, said[-3000:]


def test_roster_ids_that_cannot_be_accounts_are_refused_by_name():
    assert hub.account_names({"ada": {}, "_lab2": {}}, "instructor") == ["ada", "_lab2", "instructor"]
    with pytest.raises(hub.HubError) as err:
        hub.account_names({"ada": {}, "Grace": {}, "alan.turing": {}, "7of9": {}}, "instructor")
    assert "Grace, alan.turing, 7of9" in str(err.value)


def test_the_lock_closes_all_but_what_students_need(tmp_path):
    repo = tmp_path / "repo"
    for name in (*hub.OPEN, "solutions", "autograder", "tests", ".git", "build"):
        (repo / name).mkdir(parents=True)
        (repo / name).chmod(0o755)
    (repo / "Makefile").write_text("")
    (repo / "Makefile").chmod(0o644)
    grading = tmp_path / "grading"
    grading.mkdir(mode=0o755)
    grading.chmod(0o755)
    locked = hub.lock(repo, grading)
    assert sorted(p.name for p in locked) == [".git", "Makefile", "autograder", "build", "grading", "solutions",
                                              "tests"]
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [*repo.iterdir(), grading]}
    assert all(modes[name] == 0o755 for name in hub.OPEN), modes
    assert modes["solutions"] == modes["autograder"] == modes["grading"] == 0o700 and modes["Makefile"] == 0o600
