"""One way to grade, whatever starts it: nbgrader's own autograde goes through the course's trusted grader.

nbgrader's ``Autograde`` converter runs a submission's hidden tests inside the student's kernel, unsandboxed,
and writes its own autograded notebook and scores over the grader's. Both ways in — ``nbgrader autograde``
on the command line and formgrader's *Autograde* button (``NbGraderAPI.autograde``) — end in
``Autograde.start``. :func:`install` (called by ``nbgrader_config.py``, which every nbgrader process of the
course loads) replaces it: nothing of nbgrader's grading runs, not even its clean-up of the old output; the
chosen submissions are graded by ``pipeline.py autograde`` (the sandbox, the tests in the grader, the one
writer of the gradebook) and its report goes to nbgrader's log. Where that cannot be done faithfully (an
nbgrader configuration pointing at other folders, a pattern of chapters) it refuses with one line naming
``make autograde``, having touched nothing. Formgrader's *Generate* button (and ``nbgrader generate_assignment``)
runs the course's release in the same way (:func:`generate_start`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AUTOGRADER = Path(__file__).resolve().parents[1]
ROOT = AUTOGRADER.parent
PIPELINE = AUTOGRADER / "bookkeeping" / "pipeline.py"
USE_MAKE = "use `make autograde` (CH=<chapter>, FORCE=1) from the course repository"


class Refused(Exception):
    """nbgrader asked for something the trusted grader cannot do in its place."""


def grading_dir() -> Path:
    """The folder of submitted/, autograded/ and the gradebook (the same rule as nbgrader_config.py)."""
    return Path(os.environ.get("DLCOURSE_GRADING_DIR", str(AUTOGRADER))).resolve()


def pipeline_command(coursedir, force: bool) -> list[str]:
    """``pipeline.py autograde`` for what nbgrader was asked to grade; :class:`Refused` when it differs."""
    grading = grading_dir()
    expected_db = os.environ.get("DLCOURSE_GRADEBOOK", f"sqlite:///{grading / 'gradebook.db'}")

    def folder(name: str) -> Path:
        return (Path(coursedir.root) / getattr(coursedir, name)).resolve()

    if (folder("submitted_directory"), folder("autograded_directory")) != (grading / "submitted",
                                                                           grading / "autograded") \
            or coursedir.db_url != expected_db:
        raise Refused("nbgrader is configured with other grading folders or gradebook than the course's grader")
    chapter, student = coursedir.assignment_id, coursedir.student_id
    if not chapter or any(ch in chapter for ch in "*?["):
        raise Refused(f"nbgrader's autograde of chapter pattern {chapter!r} is not supported")
    command = [_python(), str(PIPELINE), "autograde", "--chapter", chapter]
    if student and student != "*":
        if any(ch in student for ch in "*?["):
            raise Refused(f"nbgrader's autograde of student pattern {student!r} is not supported")
        command += ["--student", student]
    if force:
        command.append("--force")
    return command


def _python() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def autograde_start(converter) -> None:
    """What ``Autograde.start`` does in this course: the trusted grader grades, nbgrader logs its report."""
    from nbgrader.converters.base import NbGraderException

    try:
        command = pipeline_command(converter.coursedir, bool(converter.force))
    except Refused as why:
        message = f"nbgrader's own autograde is switched off in this course ({why}): {USE_MAKE}"
        converter.log.error(message)
        raise NbGraderException(message) from None
    converter.log.info("grading with the course's trusted grader: %s", " ".join(command[1:]))
    _run_logged(converter, command, "the course's trusted grader")


def _run_logged(converter, command: list[str], what: str) -> None:
    """Run ``command`` (the course's pipeline) from the repository, its report to nbgrader's log; a failure is an
    NbGraderException naming ``what`` failed and its last line."""
    from nbgrader.converters.base import NbGraderException

    env = dict(os.environ)
    env["PATH"] = str(Path(command[0]).parent) + os.pathsep + env.get("PATH", "")
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        converter.log.info(line)
    if done.returncode != 0:
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
        message = f"{what} failed (exit {done.returncode}): {lines[-1] if lines else 'no output'}"
        converter.log.error(message)
        raise NbGraderException(message)


PIPELINE_ENV = "DLCOURSE_PIPELINE"  # set by pipeline.py for the nbgrader commands it runs itself
_GENERATE: dict[str, object] = {}


def generate_start(converter) -> None:
    """What ``GenerateAssignment.start`` does in this course: formgrader's *Generate* button and ``nbgrader
    generate_assignment`` run the course's release (``pipeline.py release``: generated aside, checked, then moved
    into course/, so a failure leaves course/ as it was); the pipeline's own call runs nbgrader's."""
    from nbgrader.converters.base import NbGraderException

    if os.environ.get(PIPELINE_ENV) == "1":
        _GENERATE["start"](converter)
        return
    coursedir = converter.coursedir
    if (Path(coursedir.root) / coursedir.release_directory).resolve() != (ROOT / "course").resolve():
        message = ("nbgrader's own generate_assignment is switched off in this course (it was asked for another "
                   "release folder): use `make release` (CH=<chapter>)")
        converter.log.error(message)
        raise NbGraderException(message)
    chapter = coursedir.assignment_id
    command = [_python(), str(PIPELINE), "release"]
    if chapter and chapter != "*":
        if any(ch in chapter for ch in "*?["):
            message = f"generating chapters by pattern ({chapter!r}) is not supported here: use `make release`"
            converter.log.error(message)
            raise NbGraderException(message)
        command += ["--chapter", chapter]
    converter.log.info("generating with the course's release: %s", " ".join(command[1:]))
    _run_logged(converter, command, "the course's release")


def install() -> None:
    """Route nbgrader's ``Autograde`` converter (command line and formgrader) through the trusted grader, and its
    ``GenerateAssignment`` (formgrader's Generate button) through the course's release."""
    from nbgrader.converters import Autograde, GenerateAssignment

    Autograde.start = autograde_start
    if GenerateAssignment.start is not generate_start:
        _GENERATE["start"] = GenerateAssignment.start
        GenerateAssignment.start = generate_start
