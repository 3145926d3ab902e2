"""Grades out of the gradebook: a wide CSV per exercise, or the files Canvas and Moodle import, and the
list of submissions that need a person to look at them.

Scores are read from nbgrader's gradebook, so a manual grade given in formgrader replaces the automatic one.
An exercise is an answer cell and the test cells named after it (``softmax_answer``, ``softmax_visible``,
``softmax_hidden`` → ``softmax``). A chapter that a student did not submit is left blank, not 0, so that
a learning management system can tell "missing" from "scored nothing".
"""

from __future__ import annotations

import csv
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

FORMATS = ("csv", "canvas", "moodle")


@dataclass
class Table:
    """Everything the exports need, read once from the gradebook."""

    chapters: dict[str, dict[str, float]] = field(default_factory=dict)  # chapter -> exercise -> points
    students: dict[str, dict[str, str]] = field(default_factory=dict)  # id -> first/last name, email
    scores: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (student, chapter) -> ex
    review: list[dict[str, str]] = field(default_factory=list)  # student, chapter, exercise, reason

    def total(self, student: str, chapter: str) -> float | None:
        got = self.scores.get((student, chapter))
        return None if got is None else round(sum(got.values()), 4)


def read(db_url: str, results: Path | None = None) -> Table:
    """The gradebook (and, for the reasons behind each review flag, the grader's results JSON)."""
    from grade import exercise_of
    from nbgrader.api import Gradebook, MissingEntry

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
                                          "last_name": student.last_name or "", "email": student.email or ""}
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
                        row = {"student": student.id, "chapter": chapter, "exercise": ex,
                               "reason": "flagged by the grader"}
                        if grade.needs_manual_grade and grade.manual_score is None and row not in table.review:
                            table.review.append(row)
                table.scores[student.id, chapter] = got
    _reasons(table, results)
    return table


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
        for exercise, reasons in data.get("flagged", {}).items():
            row = next((r for r in table.review if r == {**who, "exercise": exercise, "reason": r["reason"]}), None)
            if row is None:
                table.review.append(row := {**who, "exercise": exercise, "reason": ""})
            row["reason"] = "; ".join(dict.fromkeys(reasons))
        if data.get("error"):
            table.review.append({**who, "exercise": "(whole submission)", "reason": data["error"]})
        for notice in data.get("notices", []):  # what was recovered may have lost work: a person looks
            table.review.append({**who, "exercise": "(whole submission)", "reason": f"recovered: {notice}"})


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def write(table: Table, out: Path, fmt: str = "csv") -> list[Path]:
    """Write the grades in ``fmt`` and the review list next to them; returns the files written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown grades format {fmt!r}; one of {', '.join(FORMATS)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    chapters = list(table.chapters)
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        if fmt == "csv":
            columns = [(ch, ex) for ch in chapters for ex in table.chapters[ch]]
            w.writerow(["student_id", "first_name", "last_name", "email"]
                       + [f"{ch}/{ex}" for ch, ex in columns] + [f"{ch}/total" for ch in chapters] + ["total"])
            w.writerow(["(points possible)", "", "", ""] + [_number(table.chapters[ch][ex]) for ch, ex in columns]
                       + [_number(sum(table.chapters[ch].values())) for ch in chapters]
                       + [_number(sum(sum(p.values()) for p in table.chapters.values()))])
            for sid, who in table.students.items():
                cells = [_number(table.scores[sid, ch].get(ex, 0.0)) if (sid, ch) in table.scores else ""
                         for ch, ex in columns]
                totals = [table.total(sid, ch) for ch in chapters]
                w.writerow([sid, who["first_name"], who["last_name"], who["email"]] + cells
                           + [_number(t) for t in totals] + [_number(sum(t for t in totals if t is not None))])
        elif fmt == "canvas":  # Canvas's gradebook import: identity columns, a points-possible row
            w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + chapters)
            w.writerow(["    Points Possible", "", "", "", ""]
                       + [_number(sum(table.chapters[ch].values())) for ch in chapters])
            for sid, who in table.students.items():
                name = ", ".join(p for p in (who["last_name"], who["first_name"]) if p) or sid
                w.writerow([name, "", sid, sid, ""] + [_number(table.total(sid, ch)) for ch in chapters])
        else:  # Moodle's "Import grades from CSV": map "ID number" (or email) to a user field
            w.writerow(["ID number", "Email address"] + chapters)
            for sid, who in table.students.items():
                w.writerow([sid, who["email"]] + [_number(table.total(sid, ch)) for ch in chapters])
    review = out.with_name("review.csv")
    with review.open("w", newline="") as f:
        w = csv.DictWriter(f, ["student", "chapter", "exercise", "reason"])
        w.writeheader()
        w.writerows(sorted(table.review, key=lambda r: (r["student"], r["chapter"], r["exercise"])))
    return [out, review]
