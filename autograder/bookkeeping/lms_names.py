"""Who handed in which file, read from the names learning management systems give a bulk download.

``nbgrader zip_collect CH`` (``make zip-collect CH=…``) unpacks the archive an instructor downloaded from the LMS
and files each notebook under ``submitted/<student>/<chapter>/``; it needs to know, from each file's name, whose
it is. :class:`LMSFileNames` (nbgrader's collector plugin, set in ``nbgrader_config.py``) reads the names of:

* **Canvas** ("Download Submissions"): ``<login>[_LATE]_<canvas user id>_<submission id>_<file name>``, the file
  name with ``-1``, ``-2``… added when a student handed in again;
* **Moodle** ("Download all submissions"): a folder (or, flattened, a prefix) ``<Full Name>_<participant id>_
  assignsubmission_file_`` before the file name;
* **Blackboard** ("Download Assignment"): ``<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file name>``.

Each is matched to the roster (``roster.csv`` beside the gradebook): Canvas by the user id (the roster's
``lms_id``) or the login, Moodle by the full name, Blackboard by the username (the roster's ``id``); without a
roster, or for someone not on it, the name's own id is used. A file no pattern fits is skipped with a warning.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from nbgrader.plugins import FileNameCollectorPlugin

GRADING = Path(os.environ.get("DLCOURSE_GRADING_DIR", str(Path(__file__).resolve().parents[1]))).resolve()

CANVAS = re.compile(r"^(?P<login>[^_/]+)_(?P<late>LATE_)?(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>[^/]+?)_(?P<participant>\d+)_assignsubmission_(?:file|onlinetext)_/?(?P<file>.+)$")
BLACKBOARD = re.compile(r"^(?P<assignment>.+?)_(?P<user>[^_/]+)_attempt_"
                        r"(?P<stamp>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})_?(?P<file>.*)$")
RESUBMITTED = re.compile(r"-\d+(?=\.ipynb$)")  # Canvas's 00_welcome-1.ipynb


def _roster(path: Path) -> list[dict[str, str]]:
    from autograder.bookkeeping import roster

    try:
        return [{**fields, "id": sid} for sid, fields in roster.read(path).items()]
    except Exception:  # noqa: BLE001 - no roster, or a broken one (make grades reports it): the names' own ids
        return []


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def student_of(relative: str, people: list[dict[str, str]]) -> tuple[str, str, str | None] | None:
    """(student id, file name, time handed in or None) for a file of an LMS download, by its path relative to the
    extracted folder; None when no LMS's naming fits."""
    parts = relative.replace(os.sep, "/").split("/")
    for start in range(len(parts)):  # the archive's own folders come first (nbgrader extracts a zip into one)
        found = _one_name("/".join(parts[start:]), people)
        if found is not None:
            return found
    return None


def _one_name(name: str, people: list[dict[str, str]]) -> tuple[str, str, str | None] | None:
    if (m := BLACKBOARD.match(name)) and m["file"]:
        user = m["user"]
        who = next((p["id"] for p in people if user in (p["id"], p.get("lms_id", ""))), user)
        stamp = m["stamp"]
        when = f"{stamp[:10]} {stamp[11:].replace('-', ':')}"
        return who, m["file"], when
    if m := MOODLE.match(name):
        full = _key(m["name"])
        who = next((p["id"] for p in people
                    if full in (_key(p.get("first_name", "") + p.get("last_name", "")),
                                _key(p.get("last_name", "") + p.get("first_name", "")))), _key(m["name"]))
        return who, m["file"].split("/")[-1], None
    if "/" not in name and (m := CANVAS.match(name)):
        who = next((p["id"] for p in people if m["user"] == p.get("lms_id")), None) or \
            next((p["id"] for p in people if _key(m["login"]) in (p["id"], _key(p.get("last_name", "") +
                                                                                    p.get("first_name", "")))),
                 m["login"])
        return who, RESUBMITTED.sub("", m["file"]), None
    return None


class LMSFileNames(FileNameCollectorPlugin):
    """nbgrader's collector plugin for Canvas, Moodle and Blackboard downloads (see the module's text)."""

    def collect(self, submitted_file: str) -> dict | None:
        if os.path.splitext(submitted_file)[1] not in self.valid_ext:
            return None
        extracted = GRADING / "downloaded"
        try:
            relative = str(Path(submitted_file).resolve().relative_to(extracted.resolve()))
            relative = relative.split(os.sep, 2)[2]  # <chapter>/extracted/<what the LMS named it>
        except (ValueError, IndexError):
            relative = Path(submitted_file).name
        found = student_of(relative, _roster(GRADING / "roster.csv"))
        if found is None:
            self.log.warning("not a Canvas, Moodle or Blackboard file name, skipped: %s", relative)
            return None
        student, file_id, when = found
        collected = {"student_id": student, "file_id": file_id}
        if when:
            collected["timestamp"] = when
        return collected
