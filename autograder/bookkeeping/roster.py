"""The class roster: ``roster.csv`` beside the gradebook (``autograder/roster.csv``, not committed: it holds
personal data; ``roster.example.csv`` shows the shape).

Columns: ``id`` (the student's id in nbgrader, the folder name under submitted/), ``first_name``,
``last_name``, ``email``, ``lms_id`` (the LMS's own user id: Canvas's numeric ID, Moodle's user id). Other
columns (``section``, notes) are kept and ignored, except ``section``, which the Canvas file uses.

The roster is read, never written. :func:`sync` copies it into nbgrader's students table; a field left empty
in the roster leaves what the gradebook holds (a name typed into formgrader) as it is.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

COLUMNS = ("id", "first_name", "last_name", "email", "lms_id")
FIELDS = {"first_name": "first_name", "last_name": "last_name", "email": "email", "lms_id": "lms_user_id"}
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$")  # a folder name nbgrader accepts


class RosterError(ValueError):
    """roster.csv cannot be used; the message says where and why, on one line."""


def read(path: Path) -> dict[str, dict[str, str]]:
    """id -> {first_name, last_name, email, lms_id, section} from ``path`` ({} when there is no roster).
    Raises :class:`RosterError` for a missing column, an empty, malformed or repeated id."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's byte-order mark is fine
    except UnicodeDecodeError as err:
        raise RosterError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); save it as CSV UTF-8") \
            from None
    rows = csv.reader(text.splitlines())
    header = [h.strip().lower() for h in next(rows, [])]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise RosterError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                          f"(the header must name {', '.join(COLUMNS)})")
    repeated = sorted({h for h in header if h and header.count(h) > 1})
    if repeated:
        raise RosterError(f"{path}: column {repeated[0]!r} appears twice in the header")
    roster: dict[str, dict[str, str]] = {}
    first_line: dict[str, int] = {}
    for line, row in enumerate(rows, 2):
        if not any(cell.strip() for cell in row):
            continue  # blank lines
        if len(row) > len(header):
            raise RosterError(f"{path}: line {line} has {len(row)} fields, the header {len(header)} "
                              "(a comma inside a name needs quotes)")
        entry = {h: (row[i].strip() if i < len(row) else "") for i, h in enumerate(header) if h}
        sid = entry["id"]
        if not sid:
            raise RosterError(f"{path}: line {line} has no id")
        if not ID.match(sid):
            raise RosterError(f"{path}: line {line}: id {sid!r} is not a folder name (letters, digits, . _ @ + -)")
        if sid in roster:
            raise RosterError(f"{path}: line {line}: id {sid!r} repeats line {first_line[sid]}")
        first_line[sid] = line
        roster[sid] = {k: entry.get(k, "") for k in (*COLUMNS[1:], "section")}
    return roster


def sync(gradebook, roster: dict[str, dict[str, str]]) -> list[str]:
    """Bring nbgrader's students table in step with the roster: each roster student exists, with the roster's
    non-empty fields. Nothing is deleted. Returns the ids added or changed."""
    from nbgrader.api import MissingEntry

    changed = []
    for sid, entry in roster.items():
        wanted = {attr: entry.get(col, "") for col, attr in FIELDS.items() if entry.get(col, "")}
        try:
            student = gradebook.find_student(sid)
        except MissingEntry:
            gradebook.add_student(sid, **wanted)
            changed.append(sid)
            continue
        if any(getattr(student, attr) != value for attr, value in wanted.items()):
            gradebook.update_or_create_student(sid, **wanted)
            changed.append(sid)
    return changed


def sync_url(db_url: str, roster: dict[str, dict[str, str]]) -> list[str]:
    """:func:`sync` on the gradebook at ``db_url``."""
    import warnings

    from nbgrader.api import Gradebook

    if not roster:
        return []
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        return sync(gb, roster)
