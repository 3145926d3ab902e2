"""The LMS hand-off: roster, late policy, submission times, the grades files Canvas and Moodle import, and
feedback that names each exercise.

Everything but the last two tests is pure or builds a small gradebook with nbgrader's API in a temporary
folder (no grading runs); those two run nbgrader (about ten seconds) and are marked ``pipeline``.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import ROOT

from autograder.bookkeeping import export, policy, roster
from autograder.bookkeeping.policy import Rule, days_late, penalty

CH0, CH1 = "00_welcome", "01_seq2seq_attention"
# nbgrader's own session handling, when a submission is added through its API
pytestmark = pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")


@pytest.fixture(autouse=True)
def venv_on_path(monkeypatch):
    """nbgrader's Gradebook runs alembic, from the virtual environment, when it creates a gradebook."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
T = datetime(2026, 10, 12, 23, 59, tzinfo=UTC)  # a deadline


# ------------------------------------------------------------------------------------------- the policy


def test_no_deadline_or_no_time_is_never_late():
    assert days_late(T + timedelta(days=30), None) == 0
    assert days_late(None, T) == 0
    assert penalty(0, 8, 12, Rule(per_day=0.1)) == 0


def test_days_late_with_grace_counts_from_the_deadline():
    grace = timedelta(minutes=15)
    assert days_late(T - timedelta(hours=1), T, grace) == 0
    assert days_late(T + timedelta(minutes=15), T, grace) == 0  # at the end of the grace period: on time
    assert days_late(T + timedelta(minutes=16), T, grace) == 1  # a started day counts whole
    assert days_late(T + timedelta(days=1), T, grace) == 1
    assert days_late(T + timedelta(days=1, seconds=1), T, grace) == 2
    assert days_late(T + timedelta(hours=36), T, grace, whole_days=False) == 1.5


def test_penalty_units_and_cap():
    assert penalty(2, 8, 12, Rule(per_day=0.1, unit="score")) == pytest.approx(1.6)  # 20 % of 8
    assert penalty(2, 8, 12, Rule(per_day=0.1, unit="max")) == pytest.approx(2.4)  # 20 % of 12
    assert penalty(2, 8, 12, Rule(per_day=1.5, unit="points", max_penalty=100)) == 3
    assert penalty(9, 8, 12, Rule(per_day=0.1, unit="score", max_penalty=0.5)) == 4  # capped at 50 %
    assert penalty(9, 2, 12, Rule(per_day=1, unit="points", max_penalty=100)) == 2  # never below 0


def _policy(text: str, chapters=(CH0, CH1)) -> policy.Policy:
    import tomllib

    return policy.parse(tomllib.loads(text), list(chapters))


POLICY = f"""
timezone = "Europe/Berlin"
[late]
grace_minutes = 15
per_day = 0.1
max_penalty = 0.3
[chapters.{CH0}]
deadline = 2026-10-12T23:59:00          # Berlin time: 21:59 UTC
canvas_assignment_id = 4711
[chapters.{CH1}]
deadline = 2026-10-19                   # the whole day
unit = "points"
per_day = 2
max_penalty = 5
[[extensions]]
student = "ada"
chapter = "{CH0}"
days = 2
[[extensions]]
student = "alan"
chapter = "{CH0}"
deadline = 2026-10-20T12:00:00Z
"""


def test_policy_file_deadlines_rules_and_extensions():
    p = _policy(POLICY)
    assert p.deadlines[CH0] == datetime(2026, 10, 12, 21, 59, tzinfo=UTC)
    assert p.deadlines[CH1] == datetime(2026, 10, 19, 22, 0, tzinfo=UTC)  # midnight at the day's end, Berlin
    assert p.canvas_ids == {CH0: "4711"}
    assert p.rule_for(CH1).unit == "points" and p.rule_for(CH1).grace == timedelta(minutes=15)
    assert p.deadline_for("grace", CH0) == (p.deadlines[CH0], False)
    assert p.deadline_for("ada", CH0) == (p.deadlines[CH0] + timedelta(days=2), True)
    assert p.deadline_for("alan", CH0) == (datetime(2026, 10, 20, 12, tzinfo=UTC), True)
    late = p.assess("grace", CH0, p.deadlines[CH0] + timedelta(hours=30), 10, 12)
    assert (late.days, late.penalty, late.total(10)) == (2, 2, 8)
    assert p.assess("ada", CH0, p.deadlines[CH0] + timedelta(hours=30), 10, 12).penalty == 0  # extended
    capped = p.assess("grace", CH0, p.deadlines[CH0] + timedelta(days=10), 10, 12)
    assert capped.penalty == 3  # at most 30 %
    line = late.describe(10, 12)
    assert "Submitted 2026-10-14 03:59 UTC" in line and "deadline 2026-10-12 21:59 UTC" in line
    assert "2 days late" in line and "penalty 2 points" in line and "8 / 12" in line
    assert "(extended)" in p.assess("ada", CH0, T, 10, 12).describe()
    assert "on time" in p.assess("grace", CH0, p.deadlines[CH0], 10, 12).describe()
    assert "no deadline" in policy.Policy().assess("x", CH0, T, 1, 1).describe()


@pytest.mark.parametrize(("text", "says"), [
    ("[late]\ngrace = 5", "unknown setting 'grace'"),
    ("[late]\nunit = 'percent'", "unit must be one of"),
    ("[late]\nper_day = 10", "fractions"),
    ("[late]\nper_day = -1", "at least 0"),
    ("timezone = 'Mars/Olympus'", "unknown timezone"),
    ("[chapters.00_welcom]\ndeadline = 2026-10-12T23:59:00", "no chapter '00_welcom'"),
    ("[chapters.00_welcome]\ndeadline = 'next monday'", "not a date and time"),
    ("[[extensions]]\nstudent = 'ada'\nchapter = '00_welcome'\ndays = 1\nhours = 2", "exactly one of"),
    ("[[extensions]]\nstudent = 'ada'\nchapter = '00_welcome'\ndays = 1\n"
     "[[extensions]]\nstudent = 'ada'\nchapter = '00_welcome'\ndays = 2", "a second extension"),
    ("[[extensions]]\nchapter = '00_welcome'\ndays = 1", "needs both a student and a chapter"),
    ("deadline = 2026-10-12", "unknown setting 'deadline'"),
])
def test_a_malformed_policy_is_one_clear_line(text, says):
    with pytest.raises(policy.PolicyError) as err:
        _policy(text)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_policy_file_missing_invalid_and_committed(tmp_path):
    assert policy.load(tmp_path / "none.toml").deadlines == {}
    bad = tmp_path / "policy.toml"
    bad.write_text("[late\n")
    with pytest.raises(policy.PolicyError, match="not valid TOML"):
        policy.load(bad)
    committed = policy.load(ROOT / "autograder" / "policy.toml", sorted(p.name for p in (ROOT / "solutions").iterdir()))
    assert committed.deadlines == {} and committed.extensions == {}  # shipped without deadlines: nothing late


def test_submission_time_sources(tmp_path):
    folder = tmp_path / "ada" / CH0
    folder.mkdir(parents=True)
    nb = folder / f"{CH0}.ipynb"
    nb.write_text("{}")
    os.utime(nb, (1_760_000_000, 1_760_000_000))
    assert policy.submission_time(folder, nb) == (datetime.fromtimestamp(1_760_000_000, UTC),
                                                   f"modification time of {CH0}.ipynb")
    lms = folder / f"{CH0}_ada_attempt_2026-10-12-23-59-30_{CH0}.ipynb"  # Blackboard's download name
    lms.write_text("{}")
    berlin = _policy('timezone = "Europe/Berlin"').timezone
    assert policy.submission_time(folder, lms, berlin)[0] == datetime(2026, 10, 12, 21, 59, 30, tzinfo=UTC)
    lms.unlink()
    (folder / "timestamp.txt").write_text("2026-10-12 21:59:01.123456 UTC")  # nbgrader's exchange
    assert policy.submission_time(folder, nb) == (datetime(2026, 10, 12, 21, 59, 1, 123456, tzinfo=UTC),
                                                   "timestamp.txt")
    (folder / "timestamp.txt").write_text("2026-10-12 23:59:01 +0200")
    assert policy.submission_time(folder, nb)[0] == datetime(2026, 10, 12, 21, 59, 1, tzinfo=UTC)
    (folder / "timestamp.txt").write_text("yesterday-ish")
    when, source = policy.submission_time(folder, nb)
    assert when == datetime.fromtimestamp(1_760_000_000, UTC) and "timestamp.txt unreadable" in source


# ------------------------------------------------------------------------------------------- the roster


def _roster(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "roster.csv"
    path.write_bytes(text.encode("utf-8"))
    return path


def test_roster_reads_names_email_lms_id_and_extra_columns(tmp_path):
    path = _roster(tmp_path, "\ufeffid,first_name,last_name,email,lms_id,section,notes\n"
                             'ada,Ada,"Lovelace, Countess",ada@example.edu,10001,Mon,x\n\n'
                             "alan,Alan,Turing,,10002,,\n")
    got = roster.read(path)
    assert got["ada"] == {"first_name": "Ada", "last_name": "Lovelace, Countess", "email": "ada@example.edu",
                          "lms_id": "10001", "section": "Mon"}
    assert got["alan"]["email"] == "" and list(got) == ["ada", "alan"]
    assert roster.read(tmp_path / "absent.csv") == {}
    assert roster.read(ROOT / "autograder" / "roster.example.csv")  # the committed example reads


@pytest.mark.parametrize(("text", "says"), [
    ("id,first_name,last_name,email\nada,Ada,L,a@x\n", "missing column lms_id"),
    ("id,first_name,email,lms_id\nada,Ada,a@x,1\n", "missing column last_name"),
    ("id,first_name,last_name,email,lms_id\nada,A,L,a@x,1\nbob,B,M,b@x,2\nada,A,L,a@x,1\n",
     "line 4: id 'ada' repeats line 2"),
    ("id,first_name,last_name,email,lms_id\n,A,L,a@x,1\n", "line 2 has no id"),
    ("id,first_name,last_name,email,lms_id\nada lovelace,A,L,a@x,1\n", "not a folder name"),
    ("id,first_name,last_name,email,lms_id\nada,Ada,Lovelace, Countess,a@x,1\n", "needs quotes"),
    ("id,first_name,last_name,email,lms_id,email\nada,A,L,a@x,1,b@x\n", "appears twice"),
])
def test_a_malformed_roster_is_one_clear_line(tmp_path, text, says):
    with pytest.raises(roster.RosterError) as err:
        roster.read(_roster(tmp_path, text))
    assert says in str(err.value) and "\n" not in str(err.value)


def test_roster_sync_adds_and_updates_students_and_keeps_what_it_lacks(tmp_path):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        gb.add_student("ada", first_name="Ada", email="old@example.edu")
        gb.add_student("typed", first_name="Typed", last_name="In Formgrader")
        people = {"ada": {"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.edu", "lms_id": "1"},
                  "alan": {"first_name": "Alan", "last_name": "", "email": "", "lms_id": "2"},
                  "typed": {"first_name": "", "last_name": "", "email": "t@example.edu", "lms_id": ""}}
        assert roster.sync(gb, people) == ["ada", "alan", "typed"]
        assert roster.sync(gb, people) == []  # in step: nothing to do
        ada, alan, typed = (gb.find_student(s) for s in ("ada", "alan", "typed"))
        assert (ada.last_name, ada.email, ada.lms_user_id) == ("Lovelace", "ada@example.edu", "1")
        assert (alan.first_name, alan.lms_user_id) == ("Alan", "2")
        assert (typed.first_name, typed.last_name, typed.email) == ("Typed", "In Formgrader", "t@example.edu")


# ---------------------------------------------------------------------------------- the grades files


def gradebook(tmp_path: Path) -> str:
    """Two chapters (00: softmax 1+3 and ce 1+3 points; 01 with nobody's submission); ada full marks, alan 5 of
    8, grace (not on the roster) 2 of 8."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        for ch in (CH0, CH1):
            gb.add_assignment(ch)
            gb.add_notebook(ch, ch)
        for gid, points in (("softmax_visible", 1), ("softmax_hidden", 3), ("ce_visible", 1), ("ce_hidden", 3)):
            gb.add_grade_cell(gid, CH0, CH0, max_score=points, cell_type="code")
        gb.add_grade_cell("attn_hidden", CH1, CH1, max_score=5, cell_type="code")
        for sid, scores in (("ada", (1, 3, 1, 3)), ("alan", (1, 0, 1, 3)), ("grace", (1, 1, 0, 0))):
            gb.add_student(sid)
            gb.add_submission(CH0, sid)
            for gid, score in zip(("softmax_visible", "softmax_hidden", "ce_visible", "ce_hidden"), scores,
                                  strict=True):
                gb.find_grade(gid, CH0, CH0, sid).auto_score = score
        gb.db.commit()
    return url


PEOPLE = {"ada": {"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.edu", "lms_id": "10001",
                  "section": "Mon"},
          "alan": {"first_name": "Alan", "last_name": "Turing", "email": "alan@example.edu", "lms_id": "10002",
                   "section": ""},
          "kurt": {"first_name": "Kurt", "last_name": "Gödel", "email": "kurt@example.edu", "lms_id": "10003",
                   "section": ""}}


def _table(tmp_path: Path, late_alan: bool = True) -> export.Table:
    results = tmp_path / "results"
    results.mkdir()
    deadline = datetime(2026, 10, 12, 21, 59, tzinfo=UTC)
    for sid, when in (("ada", deadline - timedelta(hours=2)), ("alan", deadline + timedelta(hours=30))):
        (results / f"{sid}__{CH0}.json").write_text(
            f'{{"student": "{sid}", "chapter": "{CH0}", "submitted": "{when.isoformat()}", '
            f'"submitted_from": "timestamp.txt"}}')
    return export.read(gradebook(tmp_path), results)


def _rows(rows: list[list[str]]) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO("\n".join(",".join(f'"{c}"' for c in r) for r in rows))))


LATE = _policy(f'[late]\nper_day = 0.1\n[chapters.{CH0}]\ndeadline = 2026-10-12T21:59:00Z\ncanvas_assignment_id = 4711')


def test_canvas_file_imports_as_it_is(tmp_path):
    table = _table(tmp_path)
    assert export.merge_roster(table, PEOPLE) == ["grace"]  # exported all the same, and reported
    rows = export.grade_rows(table, "canvas", policy=LATE)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{CH0} (4711)"]  # no 01
    assert rows[1] == ["    Points Possible", "", "", "", "", "8"]
    by_id = {r[2]: r for r in rows[2:]}
    assert by_id["ada"] == ["Lovelace, Ada", "10001", "ada", "ada", "Mon", "8"]
    assert by_id["alan"] == ["Turing, Alan", "10002", "alan", "alan", "", "4"]  # 5, 2 days late: -20 %
    assert by_id["grace"] == ["grace", "", "grace", "grace", "", "2"]
    assert by_id["kurt"][-1] == ""  # on the roster, nothing handed in: blank...
    zero = export.grade_rows(table, "canvas", [CH0, CH1], missing="zero", policy=LATE)
    assert zero[0][-2:] == [f"{CH0} (4711)", CH1]
    assert {r[2]: r[-2:] for r in zero[2:]}["kurt"] == ["0", "0"]  # ...or 0


def test_moodle_file_matches_on_id_email_or_user_id(tmp_path):
    table = _table(tmp_path)
    export.merge_roster(table, PEOPLE)
    rows = export.grade_rows(table, "moodle", policy=LATE)
    assert rows[0] == ["ID number", "Email address", "User ID", "First name", "Surname", CH0, f"{CH0} days late"]
    by_id = {r[0]: r for r in rows[1:]}
    assert by_id["alan"] == ["alan", "alan@example.edu", "10002", "Alan", "Turing", "4", "2"]
    assert by_id["ada"][-2:] == ["8", "0"] and by_id["kurt"][-2:] == ["", ""]


def test_wide_csv_has_late_columns_and_totals_after_the_penalty(tmp_path):
    table = _table(tmp_path)
    rows = _rows(export.grade_rows(table, "csv", policy=LATE))
    possible, by_id = rows[0], {r["student_id"]: r for r in rows[1:]}
    assert possible[f"{CH0}/total"] == "8" and f"{CH1}/total" not in possible
    alan = by_id["alan"]
    assert (alan[f"{CH0}/softmax"], alan[f"{CH0}/ce"]) == ("1", "4")  # exercises: what the tests gave
    assert alan[f"{CH0}/submitted"] == "2026-10-14 03:59:00 UTC"
    assert (alan[f"{CH0}/days_late"], alan[f"{CH0}/penalty"], alan[f"{CH0}/total"], alan["total"]) == \
        ("2", "1", "4", "4")
    assert by_id["ada"][f"{CH0}/days_late"] == "0" and by_id["ada"]["total"] == "8"
    assert by_id["grace"][f"{CH0}/submitted"] == ""  # no time recorded: never late
    assert by_id["grace"][f"{CH0}/days_late"] == "0"
    plain = _rows(export.grade_rows(table, "csv"))  # no policy: no penalty
    assert {r["student_id"]: r for r in plain[1:]}["alan"]["total"] == "5"


def test_bad_arguments_write_nothing(tmp_path):
    table = _table(tmp_path)
    out = tmp_path / "grades-canvas.csv"
    out.write_text("kept")
    for kwargs, says in (({"chapters": ["99_nothing"]}, "no chapter '99_nothing'"),
                         ({"missing": "NaN"}, "unknown missing-submission rule"), ({"fmt": "xls"}, "unknown grades")):
        with pytest.raises(ValueError, match=says):
            export.write(table, out, **{"fmt": "canvas", **kwargs})
    assert out.read_text() == "kept" and not (tmp_path / "review.csv").exists()


def test_grades_command_end_to_end(tmp_path, monkeypatch, capsys):
    """``pipeline.py grades --format canvas`` on a gradebook: the roster synced in, a bad roster refused."""
    from autograder.bookkeeping import pipeline

    url = gradebook(tmp_path)
    (tmp_path / "results").mkdir()
    roster_csv = tmp_path / "roster.csv"
    shutil.copy(ROOT / "autograder" / "roster.example.csv", roster_csv)
    monkeypatch.setenv("DLCOURSE_GRADEBOOK", url)
    (tmp_path / "policy.toml").write_text("")  # a policy without deadlines (a missing one is an error)
    for name, value in (("GRADING", tmp_path), ("RESULTS", tmp_path / "results"), ("ROSTER", roster_csv),
                        ("GRADES_CSV", tmp_path / "grades.csv"), ("POLICY", tmp_path / "policy.toml"),
                        ("EXTENSIONS", tmp_path / "extensions.toml")):
        monkeypatch.setattr(pipeline, name, value)
    monkeypatch.setattr(pipeline, "sync_gradebook", lambda names=None: [])  # the chapters are in the gradebook already
    assert pipeline.main(["grades", "--format", "canvas", "--missing", "zero"]) == 0
    out = capsys.readouterr().out
    assert "not on the roster" not in out and "grades-canvas.csv" in out  # the example lists all three
    rows = list(csv.reader((tmp_path / "grades-canvas.csv").open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", CH0]
    assert {r[2]: (r[0], r[1], r[-1]) for r in rows[2:]} == {
        "ada": ("Lovelace, Ada", "10001", "8"), "alan": ("Turing, Alan", "10002", "5"),
        "grace": ("Hopper, Grace", "10003", "2")}
    from nbgrader.api import Gradebook

    with Gradebook(url) as gb:
        assert gb.find_student("alan").email == "alan.turing@example.edu"  # the gradebook follows the roster
    roster_csv.write_text("id,first_name,last_name,email,lms_id\nada,A,L,a@x,1\nada,A,L,a@x,1\n")
    before = (tmp_path / "grades-canvas.csv").read_text()
    assert pipeline.main(["grades", "--format", "canvas"]) == 2
    err = capsys.readouterr().err
    assert "id 'ada' repeats line 2" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "grades-canvas.csv").read_text() == before  # nothing changed
    with Gradebook(url) as gb:
        assert gb.find_student("ada").email == "ada.lovelace@example.edu"


def test_make_grades_passes_chapters_and_missing_through():
    result = subprocess.run(["make", "-n", "grades", "FORMAT=canvas", f"CH={CH0} {CH1}", "MISSING=zero"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    line = next(ln for ln in result.stdout.splitlines() if "pipeline.py grades" in ln)
    assert f"--format canvas --chapter {CH0} --chapter {CH1} --missing zero" in " ".join(line.split())


# ------------------------------------------------------------------------------------------ the feedback


@pytest.mark.pipeline
def test_feedback_names_each_exercise_and_states_the_late_policy(tmp_path):
    """nbgrader's feedback on a chapter-00 submission: the list names exercises, not "Test cell"."""
    from nbgrader.api import Gradebook

    env = dict(os.environ, DLCOURSE_GRADING_DIR=str(tmp_path), DLCOURSE_POLICY=str(tmp_path / "policy.toml"),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
               DLCOURSE_PIPELINE="1")  # nbgrader's own generate_assignment, as the pipeline runs it
    nbgrader = [str(Path(sys.executable).parent / "nbgrader")]
    run = subprocess.run(nbgrader + ["generate_assignment", CH0, "--force",
                                     f"--CourseDirectory.release_directory={tmp_path / 'release'}"],
                         cwd=ROOT / "autograder", env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    graded = tmp_path / "autograded" / "alan" / CH0
    graded.mkdir(parents=True)
    shutil.copy(ROOT / "course" / CH0 / f"{CH0}.ipynb", graded)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        gb.add_student("alan")
        gb.add_submission(CH0, "alan")
        for grade in gb.find_submission_notebook(CH0, CH0, "alan").grades:
            grade.auto_score = grade.max_score
        gb.db.commit()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / f"alan__{CH0}.json").write_text(
        f'{{"student": "alan", "chapter": "{CH0}", "submitted": "2026-10-14T03:59:00+00:00"}}')
    (tmp_path / "policy.toml").write_text(f"[late]\nper_day = 0.1\n[chapters.{CH0}]\n"
                                          "deadline = 2026-10-12T21:59:00Z\n")
    run = subprocess.run(nbgrader + ["generate_feedback", CH0, "--force"], cwd=ROOT / "autograder", env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    import html as htmllib

    page = htmllib.unescape((tmp_path / "feedback" / "alan" / CH0 / f"{CH0}.html").read_text())
    toc = page.split('<div id="toc">')[1].split("</div>")[0]
    assert "Test cell" not in toc
    assert '1 · A numerically stable softmax: hidden tests</a> (Score: 3.0 / 3.0)' in toc
    assert "2 · Cross-entropy from logits, skipping padding: visible tests</a> (Score: 1.0 / 1.0)" in toc
    assert "3 · One SGD step, by hand: hidden tests" in toc
    assert ("Submitted 2026-10-14 03:59 UTC; deadline 2026-10-12 21:59 UTC; 2 days late: penalty 2.4 points "
            "(10% of the score per day, at most 100%); score after the penalty 9.6 / 12.") in page
