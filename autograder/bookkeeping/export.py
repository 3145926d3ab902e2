"""Grades out of the gradebook: a wide CSV per exercise, or the files Canvas and Moodle import, and the
review list: every item that needed a person (a flagged exercise, a submission the grader could not grade or
had to repair, a hand-graded exercise whose submission changed since), open or resolved.

Scores are read from nbgrader's gradebook, so a manual grade given in formgrader replaces the automatic one.
An exercise is an answer cell and the test cells named after it (``softmax_answer``, ``softmax_visible``,
``softmax_hidden`` → ``softmax``). A chapter that a student did not submit is left blank, not 0, so that
a learning management system can tell "missing" from "scored nothing" (``missing="zero"`` writes 0 instead).

Only the chapters asked for are exported (by default those with at least one submission). The roster
(:mod:`roster`) gives names, e-mail and the LMS's user id; the late policy (:mod:`policy`) turns each
submission's time (recorded by the grader in the results JSON) into days late and a penalty, and the totals
exported are after the penalty.
"""

from __future__ import annotations

import csv
import json
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

FORMATS = ("csv", "canvas", "moodle")
MISSING = ("blank", "zero")
REVIEW_COLUMNS = ["student", "chapter", "exercise", "status", "manual_score", "reason", "note"]
WHOLE = "(whole submission)"  # a review item about the whole submission rather than one exercise
NOT_GRADED = "not graded"
DAMAGED = "damaged file"
LOST_ANSWER = ("the submitted file was damaged and this answer was not among the cells recovered: the empty stub "
               "was run")  # grade.LOST_ANSWER (this module does not import the grader)


@dataclass
class Table:
    """Everything the exports need, read once from the gradebook."""

    chapters: dict[str, dict[str, float]] = field(default_factory=dict)  # chapter -> exercise -> points
    students: dict[str, dict[str, str]] = field(default_factory=dict)  # id -> first/last name, email
    scores: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (student, chapter) -> ex
    submitted: dict[tuple[str, str], datetime] = field(default_factory=dict)  # when it was handed in
    submitted_from: dict[tuple[str, str], str] = field(default_factory=dict)  # where that time was read
    on_roster: set[str] | None = None  # the roster's ids (None: there is no roster)
    review: list[dict[str, str]] = field(default_factory=list)  # student, chapter, exercise, reason (+ status)
    # (student, chapter, exercise) -> whether a cell of it still needs a manual grade, and the manual points
    hand: dict[tuple[str, str, str], dict] = field(default_factory=dict)

    def total(self, student: str, chapter: str) -> float | None:
        got = self.scores.get((student, chapter))
        return None if got is None else round(sum(got.values()), 4)


def read(db_url: str, results: Path | None = None) -> Table:
    """The gradebook (and, for the reasons behind each review flag, the grader's results JSON)."""
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.core.grade import exercise_of

    table = Table()
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            points: dict[str, float] = {}
            for notebook in assignment.notebooks:
                for cell in notebook.grade_cells:
                    ex = exercise_of(cell.name)
                    points[ex] = points.get(ex, 0.0) + float(cell.max_score)
            table.chapters[assignment.name] = points
        for student in sorted(gb.students, key=lambda s: s.id):
            table.students[student.id] = {"first_name": student.first_name or "",
                                          "last_name": student.last_name or "", "email": student.email or "",
                                          "lms_id": student.lms_user_id or "", "section": ""}
            for chapter in table.chapters:
                try:
                    submission = gb.find_submission(chapter, student.id)
                except MissingEntry:
                    continue
                got: dict[str, float] = {}
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        ex = exercise_of(grade.name)
                        got[ex] = got.get(ex, 0.0) + float(grade.score or 0.0)
                        state = table.hand.setdefault((student.id, chapter, ex), {"open": False, "manual": None})
                        state["open"] = state["open"] or bool(grade.needs_manual_grade)
                        if grade.manual_score is not None:
                            state["manual"] = (state["manual"] or 0.0) + float(grade.manual_score)
                        row = {"student": student.id, "chapter": chapter, "exercise": ex,
                               "reason": "marked as needing a manual grade in the gradebook"}
                        if grade.needs_manual_grade and row not in table.review:
                            table.review.append(row)
                table.scores[student.id, chapter] = got
    _reasons(table, results)
    _times(table, results)
    _status(table)
    return table


NOT_RECORDED = "nbgrader 0.9 does not record who gave a manual grade"


def _status(table: Table) -> None:
    """Each review item open or resolved: an exercise is resolved once a person gave its cells a manual
    score in formgrader and none of them needs a manual grade any more; a submission that could not be
    graded stays open until it is graded; what the grader recovered counts as looked at once a person gave
    any manual score in that submission."""
    for row in table.review:
        key = (row["student"], row["chapter"], row["exercise"])
        if row["exercise"] == WHOLE:
            hand = any(k[:2] == key[:2] and s["manual"] is not None for k, s in table.hand.items())
            lost = [ex for ex in row.pop("lost", "").split(",") if ex]
            if row["reason"].startswith(DAMAGED) and lost:
                done = all((state := table.hand.get((*key[:2], ex))) is not None and not state["open"]
                           and state["manual"] is not None for ex in lost)
                row.update(status="resolved" if done else "open", manual_score="",
                           note=(f"every lost answer was graded by hand; {NOT_RECORDED}" if done else
                                 "open the autograded notebook, then grade the lost answers by hand in formgrader "
                                 "(or ask the student for the file)"))
            elif row["reason"].startswith(NOT_GRADED):
                row.update(status="open", manual_score="", note="run make autograde again once the cause is fixed")
            elif hand:
                row.update(status="resolved", manual_score="",
                           note=f"a manual score was given in this submission; {NOT_RECORDED}")
            else:
                row.update(status="open", manual_score="",
                           note="check the autograded notebook, then grade it by hand in formgrader")
            continue
        state = table.hand.get(key)
        done = state is not None and not state["open"] and state["manual"] is not None
        row.update(status="resolved" if done else "open",
                   manual_score=_number(state["manual"]) if done else "",
                   note=(f"graded by hand in formgrader; {NOT_RECORDED}" if done else
                         "give its cells a manual score in formgrader (make formgrader)"))


def _reasons(table: Table, results: Path | None) -> None:
    """The grader's own reasons for each review flag, flags outside any exercise (a student's added cell),
    the submissions it could not grade and what it recovered or tolerated in the ones it did (a notebook
    that was not valid JSON, a duplicated answer cell, a hung test) — from the results JSON beside the
    gradebook."""
    if results is None or not results.exists():
        return
    for path in sorted(results.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        who = {"student": data.get("student", "?"), "chapter": data.get("chapter", "?")}
        # the grader's flags, and the hand-graded exercises whose submission changed since (pipeline.Recorder)
        flagged: dict[str, list[str]] = {}
        for source in ("flagged", "review"):
            for exercise, reasons in (data.get(source) or {}).items():
                flagged.setdefault(exercise, []).extend(reasons)
        notices = list(data.get("notices", []))
        if data.get("damaged"):  # one row says it all: what was wrong with the file, and the answers it lost
            lost = [ex for ex, reasons in flagged.items() if reasons and all(r == LOST_ANSWER for r in reasons)]
            for exercise in lost:
                del flagged[exercise]
            table.review[:] = [r for r in table.review
                               if (r["student"], r["chapter"]) != (who["student"], who["chapter"]) or
                               r["exercise"] not in lost]
            table.review.append({**who, "exercise": WHOLE, "reason": f"{DAMAGED}: {data['damaged']}" + (
                f"; answers not recovered: {', '.join(lost)}" if lost else ""), "lost": ",".join(lost)})
            notices = [n for n in notices if not (n.startswith(("the notebook is not valid JSON",
                                                                "the file is not valid UTF-8"))
                                                  or ("is missing; the empty stub was run" in n))]
        for exercise, reasons in flagged.items():
            row = next((r for r in table.review if r == {**who, "exercise": exercise, "reason": r["reason"]}), None)
            if row is None:
                table.review.append(row := {**who, "exercise": exercise, "reason": ""})
            row["reason"] = "; ".join(dict.fromkeys(reasons))
        if data.get("error"):
            table.review.append({**who, "exercise": WHOLE, "reason": f"{NOT_GRADED}: {data['error']}"})
        for notice in notices:  # what was recovered may have lost work: a person looks
            table.review.append({**who, "exercise": WHOLE, "reason": f"recovered: {notice}"})


def _times(table: Table, results: Path | None) -> None:
    """When each submission was handed in, as the grader recorded it (``submitted`` in the results JSON)."""
    if results is None or not results.exists():
        return
    for path in sorted(results.glob("*.json")):
        try:
            data = json.loads(path.read_text())
            when = datetime.fromisoformat(data["submitted"])
        except (ValueError, KeyError, TypeError):
            continue
        key = str(data.get("student")), str(data.get("chapter"))
        table.submitted[key] = when if when.tzinfo else when.replace(tzinfo=UTC)
        table.submitted_from[key] = str(data.get("submitted_from", ""))


def merge_roster(table: Table, roster: dict[str, dict[str, str]]) -> list[str]:
    """Names, e-mail, LMS id and section from the roster (its non-empty fields win); every roster student gets
    a row. Returns the students with submissions who are not on the roster (they are still exported)."""
    table.on_roster = set(roster)
    for sid, entry in roster.items():
        who = table.students.setdefault(sid, {"first_name": "", "last_name": "", "email": "", "lms_id": "",
                                              "section": ""})
        who.update({k: v for k, v in entry.items() if k in who and v})
    table.students = dict(sorted(table.students.items()))
    return not_on_roster(table)


def not_on_roster(table: Table) -> list[str]:
    """Students in the gradebook with at least one submission whom the roster does not list."""
    if table.on_roster is None:
        return []
    return sorted({sid for sid, _ in table.scores} - table.on_roster)


def select_chapters(table: Table, wanted: list[str] | None = None) -> list[str]:
    """The chapters to export: those named (each must be in the gradebook), or those with a submission."""
    if wanted:
        unknown = [ch for ch in wanted if ch not in table.chapters]
        if unknown:
            raise ValueError(f"no chapter {unknown[0]!r} in the gradebook; chapters: {', '.join(table.chapters)}")
        return list(dict.fromkeys(wanted))
    submitted = {ch for _, ch in table.scores}
    return [ch for ch in table.chapters if ch in submitted]


@dataclass
class Mark:
    """One student's result in one chapter, after the late policy."""

    raw: float | None  # None: not submitted
    final: float | None
    late: object = None  # policy.Late, when the submission was assessed


def mark(table: Table, sid: str, chapter: str, policy=None) -> Mark:
    raw = table.total(sid, chapter)
    if raw is None:
        return Mark(None, None)
    if policy is None:
        return Mark(raw, raw)
    late = policy.assess(sid, chapter, table.submitted.get((sid, chapter)), raw,
                         sum(table.chapters[chapter].values()))
    return Mark(raw, late.total(raw), late)


def late_marks(table: Table, policy, chapters: list[str] | None = None) -> list[tuple[str, str, Mark]]:
    """(student, chapter, mark) of every submission the policy finds late, in the table's order of students and
    the given order of chapters (default: every chapter of the table)."""
    found = []
    for sid in table.students:
        for ch in table.chapters if chapters is None else chapters:
            got = mark(table, sid, ch, policy)
            if got.late is not None and got.late.days > 0:
                found.append((sid, ch, got))
    return found


def grade_rows(table: Table, fmt: str = "csv", chapters: list[str] | None = None, missing: str = "blank",
               policy=None) -> list[list[str]]:
    """The rows of the grades file in ``fmt``: ``csv`` (a column per exercise, the submission time, days late
    and penalty, the total after it per chapter and overall), ``canvas`` (Canvas's gradebook import: Student, ID
    = the roster's lms_id, SIS User ID, SIS Login ID, Section, a column per chapter named "chapter (Canvas
    assignment id)" when policy.toml gives the id, a points-possible row) or ``moodle`` (Moodle's CSV grade
    import: ID number, e-mail and user id to match on, names, a column per chapter, days late per chapter)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown grades format {fmt!r}; one of {', '.join(FORMATS)}")
    if missing not in MISSING:
        raise ValueError(f"unknown missing-submission rule {missing!r}; one of {', '.join(MISSING)}")
    chapters = select_chapters(table, chapters)
    absent = "" if missing == "blank" else "0"
    marks = {(sid, ch): mark(table, sid, ch, policy) for sid in table.students for ch in chapters}

    def total(sid: str, ch: str) -> str:
        got = marks[sid, ch]
        return absent if got.final is None else _number(got.final)

    def days(sid: str, ch: str) -> str:
        late = marks[sid, ch].late
        return "" if late is None else _number(late.days)

    possible = {ch: sum(table.chapters[ch].values()) for ch in chapters}
    rows: list[list[str]] = []
    if fmt == "csv":
        columns = [(ch, ex) for ch in chapters for ex in table.chapters[ch]]
        rows.append(["student_id", "first_name", "last_name", "email", "lms_id"]
                    + [f"{ch}/{ex}" for ch, ex in columns]
                    + [f"{ch}/{what}" for ch in chapters for what in ("submitted", "days_late", "penalty")]
                    + [f"{ch}/total" for ch in chapters] + ["total"])
        rows.append(["(points possible)", "", "", "", ""] + [_number(table.chapters[ch][ex]) for ch, ex in columns]
                    + ["" for _ in chapters for _ in range(3)]
                    + [_number(possible[ch]) for ch in chapters] + [_number(sum(possible.values()))])
        for sid, who in table.students.items():
            cells = [_number(table.scores[sid, ch].get(ex, 0.0)) if (sid, ch) in table.scores else absent
                     for ch, ex in columns]
            late = []
            for ch in chapters:
                got = marks[sid, ch].late
                when = table.submitted.get((sid, ch)) if (sid, ch) in table.scores else None
                late += [when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if when else "", days(sid, ch),
                         "" if got is None else _number(got.penalty)]
            finals = [marks[sid, ch].final for ch in chapters]
            rows.append([sid, who["first_name"], who["last_name"], who["email"], who.get("lms_id", "")] + cells
                        + late + [total(sid, ch) for ch in chapters]
                        + [_number(sum(t for t in finals if t is not None))])
    elif fmt == "canvas":
        ids = getattr(policy, "canvas_ids", {}) or {}
        rows.append(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
                    + [f"{ch} ({ids[ch]})" if ids.get(ch) else ch for ch in chapters])
        rows.append(["    Points Possible", "", "", "", ""] + [_number(possible[ch]) for ch in chapters])
        for sid, who in table.students.items():
            name = ", ".join(p for p in (who["last_name"], who["first_name"]) if p) or sid
            rows.append([name, who.get("lms_id", ""), sid, sid, who.get("section", "")]
                        + [total(sid, ch) for ch in chapters])
    else:
        rows.append(["ID number", "Email address", "User ID", "First name", "Surname"] + chapters
                    + [f"{ch} days late" for ch in chapters])
        for sid, who in table.students.items():
            rows.append([sid, who["email"], who.get("lms_id", ""), who["first_name"], who["last_name"]]
                        + [total(sid, ch) for ch in chapters] + [days(sid, ch) for ch in chapters])
    return rows


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def write(table: Table, out: Path, fmt: str = "csv", chapters: list[str] | None = None, missing: str = "blank",
          policy=None) -> list[Path]:
    """Write the grades in ``fmt`` (see :func:`grade_rows`) and the review list next to them; returns the files
    written. Nothing is written when the arguments are wrong; a file is replaced whole or not at all."""
    rows = grade_rows(table, fmt, chapters, missing, policy)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with partial.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    partial.replace(out)
    review = out.with_name("review.csv")
    with review.open("w", newline="") as f:
        w = csv.DictWriter(f, REVIEW_COLUMNS)
        w.writeheader()
        w.writerows(sorted(table.review, key=lambda r: (r["student"], r["chapter"], r["exercise"])))
    return [out, review]
