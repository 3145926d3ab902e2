"""The instructor's pipeline: release, check, autograde, feedback, grades, bundle.

Run through the Makefile (``make release``, ``make autograde``, ...) or directly::

    python autograder/bookkeeping/pipeline.py release [--chapter 00_welcome]
    python autograder/bookkeeping/pipeline.py check       # course/ up to date, solutions/ clean, metadata valid
    python autograder/bookkeeping/pipeline.py autograde [--student ID] [--chapter CH] [--jobs N]
                                                        [--scheduler ADDR] [--force]
    python autograder/bookkeeping/pipeline.py feedback
    python autograder/bookkeeping/pipeline.py grades [--format csv|canvas|moodle] [--chapter CH ...]
                                                     [--missing blank|zero]
    python autograder/bookkeeping/pipeline.py similarity CHAPTER [--archive DIR] [--threshold 0.7]
    python autograder/bookkeeping/pipeline.py bundle      # dist/dlcourse-student.zip

Submissions live in ``autograder/submitted/<student>/<chapter>/<chapter>.ipynb``. Each is graded in a
fresh sandboxed kernel under wall-clock limits (:mod:`grade`), several at a time or on a Dask cluster
(:mod:`parallel`); this process alone records the results, so one that hangs or crashes is reported and
the others are still graded, and a run that is stopped continues where it stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable
from datetime import UTC
from pathlib import Path
from typing import Any

import nbformat

AUTOGRADER = Path(__file__).resolve().parents[1]
ROOT = AUTOGRADER.parent
if str(ROOT) not in sys.path:  # run as a script: the `autograder` package is imported from the repository
    sys.path.insert(0, str(ROOT))

from autograder.bookkeeping.course_preprocessors import MODEL_ANSWER_TAG  # noqa: E402

SOLUTIONS = ROOT / "solutions"
COURSE = ROOT / "course"
# Same rule as nbgrader_config.py: DLCOURSE_GRADING_DIR relocates the grading folders.
GRADING = Path(os.environ.get("DLCOURSE_GRADING_DIR", str(AUTOGRADER))).resolve()
SUBMITTED = GRADING / "submitted"
AUTOGRADED = GRADING / "autograded"
FEEDBACK = GRADING / "feedback"
GRADES_CSV = GRADING / "grades.csv"
RESULTS = GRADING / "results"
# The class roster and the extensions (personal data: beside the gradebook, never committed) and the late policy
# (committed).
ROSTER = GRADING / "roster.csv"
EXTENSIONS = GRADING / "extensions.toml"
POLICY = Path(os.environ.get("DLCOURSE_POLICY", str(AUTOGRADER / "policy.toml"))).resolve()
KERNEL_NAME = "dlcourse"

# What students receive: no solutions/, no autograder/, no tests/.
BUNDLE_ITEMS = ["README.md", "Makefile", "requirements.txt", "requirements-student.txt", "environment.yml",
                "pyproject.toml", "LICENSE",
                "dlcourse", "course", "data", "deploy/lab", "docs"]  # docs/: the guides the README links to


class PipelineError(RuntimeError):
    """A pipeline step failed; the message says which and why."""


def chapters(chapter: str | None = None) -> list[str]:
    """Chapter folders under solutions/ (all of them, or the one named, which must exist)."""
    found = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith("."))
    if chapter is None:
        return found
    if chapter not in found:
        raise PipelineError(f"no chapter {chapter!r} under solutions/; chapters: {', '.join(found)}")
    return [chapter]


def _env(gradebook: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # nbgrader calls alembic as a subprocess: the venv's bin must be on PATH.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("HF_DATASETS_OFFLINE", "1")
    env["DLCOURSE_PIPELINE"] = "1"  # nbgrader's own converters run (one_grader.py routes the others' here)
    if gradebook is not None:
        env["DLCOURSE_GRADEBOOK"] = f"sqlite:///{gradebook}"
    return env


def nbgrader(*args: str, gradebook: Path | None = None, timeout: float | None = None,
             check: bool = True) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` from autograder/ (where its config lives)."""
    cmd = [str(Path(sys.executable).parent / "nbgrader"), *args]
    try:
        result = subprocess.run(cmd, cwd=AUTOGRADER, env=_env(gradebook), capture_output=True, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise PipelineError(f"`nbgrader {' '.join(args)}` took longer than {timeout:.0f} s") from err
    if check and result.returncode != 0:
        raise PipelineError(f"`nbgrader {' '.join(args)}` failed (exit {result.returncode}):\n"
                            f"{(result.stdout + result.stderr)[-3000:]}")
    return result


# ----------------------------------------------------------------------------------------------- release


def generate(chapter: str, out: Path, gradebook: Path | None = None) -> None:
    """``nbgrader generate_assignment`` of one chapter (or ``*``, all of them) into ``out`` (which nbgrader empties
    first, and may leave empty when it fails: never a committed folder). ``gradebook`` None records the chapter
    in the course's."""
    nbgrader("generate_assignment", chapter, "--force", f"--CourseDirectory.release_directory={out}",
             gradebook=gradebook)


def generate_each(names: list[str], out: Path, gradebook: Path | None = None) -> None:
    """:func:`generate` of every chapter in ``names``. All of the course's chapters go through one nbgrader
    process (its pattern ``*`` is exactly :func:`chapters`): starting nbgrader costs about as much as
    generating a chapter, so twelve chapters take about 10 s instead of 50. When that run fails, the chapters
    are generated one at a time, so that the error names the chapter that failed."""
    if len(names) > 1 and sorted(names) == chapters():
        try:
            generate("*", out, gradebook)
            return
        except PipelineError:
            pass  # find which chapter failed, below
    for ch in names:
        try:
            generate(ch, out, gradebook)
        except PipelineError as err:
            raise ChapterFailed(ch, err) from None


class ChapterFailed(PipelineError):
    """:func:`generate_each` failed on ``chapter``; ``why`` is nbgrader's error."""

    def __init__(self, chapter: str, why: PipelineError) -> None:
        super().__init__(str(why))
        self.chapter, self.why = chapter, why


def release(chapter: str | None = None, out: Path | None = None, gradebook: Path | None = None) -> list[Path]:
    """Generate the student release of each chapter into ``out`` (default course/). Returns the notebooks.

    Every chapter asked for is generated into a temporary folder first (with a gradebook of its own, unless
    one is given: the release needs none of the course's); ``out/<chapter>/`` is updated only when all of
    them succeeded, so a failure leaves ``out`` as it was and says why in one line.
    """
    target = out or COURSE
    names = chapters(chapter)
    with tempfile.TemporaryDirectory(prefix="dlcourse-release-") as tmp:
        fresh = Path(tmp) / "release"
        try:
            generate_each(names, fresh, gradebook or Path(tmp) / "gradebook.db")
        except ChapterFailed as err:
            raise PipelineError(f"the release of {err.chapter} failed ({_last_error(str(err.why))}); "
                                f"{_shown(target)} is unchanged") from None
        for ch in names:
            _sync_dir(fresh / ch, target / ch)
    return [p for ch in names for p in sorted((target / ch).glob("*.ipynb"))]


def _shown(path: Path) -> str:
    return f"{path.relative_to(ROOT)}/" if path.is_relative_to(ROOT) else f"{path}/"


def _last_error(output: str) -> str:
    """The line of a tool's output that says what went wrong: the last exception, else the last error."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for pattern in (r"^[A-Za-z_][\w.]*(Error|Exception)\b.*", r"\bERROR\b.*"):
        found = [ln for ln in lines if re.search(pattern, ln)]
        if found:
            return found[-1][:300]
    return lines[-1][:300] if lines else "no output"


def _sync_dir(new: Path, dest: Path) -> None:
    """``dest`` made equal to ``new`` file by file: a changed file is replaced atomically, an unchanged one left
    alone, one the release no longer has removed; missing folders are made."""
    dest.mkdir(parents=True, exist_ok=True)
    fresh = {p.relative_to(new) for p in new.rglob("*") if p.is_file()}
    for rel in sorted(fresh):
        src, dst = new / rel, dest / rel
        if dst.is_file() and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        partial = dst.with_name(f".{dst.name}.partial")
        shutil.copy2(src, partial)
        os.replace(partial, dst)
    for path in sorted(dest.rglob("*"), reverse=True):  # deepest first
        if path.is_file() and path.relative_to(dest) not in fresh:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _release_to_temp(tmp: Path, chapter: str | None = None) -> Path:
    out = tmp / "release"
    generate_each(chapters(chapter), out, gradebook=tmp / "gradebook.db")
    return out


def _same_notebook(a: Path, b: Path) -> bool:
    return json.loads(a.read_text()) == json.loads(b.read_text())


def release_differences(chapter: str | None = None) -> list[str]:
    """How the committed course/ differs from a fresh release (empty when it is up to date)."""
    diffs = []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = _release_to_temp(Path(tmp), chapter)
        for ch in chapters(chapter):
            new_files = {p.relative_to(fresh / ch) for p in (fresh / ch).rglob("*") if p.is_file()}
            old_dir = COURSE / ch
            old_files = ({p.relative_to(old_dir) for p in old_dir.rglob("*") if p.is_file()}
                         if old_dir.exists() else set())
            for rel in sorted(new_files - old_files):
                diffs.append(f"course/{ch}/{rel} is missing")
            for rel in sorted(old_files - new_files):
                diffs.append(f"course/{ch}/{rel} is not produced by the release")
            for rel in sorted(new_files & old_files):
                a, b = fresh / ch / rel, old_dir / rel
                same = _same_notebook(a, b) if rel.suffix == ".ipynb" else a.read_bytes() == b.read_bytes()
                if not same:
                    diffs.append(f"course/{ch}/{rel} differs from a fresh release")
        stray = {p.name for p in COURSE.iterdir() if p.is_dir()} - set(chapters()) if COURSE.exists() else set()
        diffs += [f"course/{name} has no source under solutions/" for name in sorted(stray)]
    return diffs


# ---------------------------------------------------------------------------------------------- checks

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN_MARKERS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


def notebook_problems(path: Path) -> list[str]:
    """Problems with one source notebook: outputs, kernel, nbgrader metadata, markers."""
    nb = nbformat.read(path, as_version=4)
    where = path.relative_to(ROOT)
    found = []
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as err:
        found.append(f"{where}: invalid notebook: {err.message}")
    if nb.metadata.get("kernelspec", {}).get("name") != KERNEL_NAME:
        found.append(f"{where}: kernelspec must be {KERNEL_NAME!r}")
    ids: dict[str, int] = {}
    graded = 0
    for i, cell in enumerate(nb.cells):
        src = cell.source
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None):
            found.append(f"{where}: cell {i} has outputs or an execution count (solutions/ must be clean)")
        meta = cell.metadata.get("nbgrader")
        has_solution = all(m in src for m in SOLUTION_MARKERS)
        has_hidden = all(m in src for m in HIDDEN_MARKERS)
        if meta is None:
            if has_solution or has_hidden:
                found.append(f"{where}: cell {i} has solution or hidden-test markers but no nbgrader metadata")
            continue
        gid = meta.get("grade_id")
        if not gid:
            found.append(f"{where}: cell {i} has nbgrader metadata without a grade_id")
        elif gid in ids:
            found.append(f"{where}: grade_id {gid!r} is used by cells {ids[gid]} and {i}")
        else:
            ids[gid] = i
        if meta.get("grade"):
            graded += 1
            points = meta.get("points")
            if not isinstance(points, int | float) or points <= 0:
                found.append(f"{where}: graded cell {gid!r} needs positive points, has {points!r}")
            if not meta.get("locked") and not meta.get("solution"):
                found.append(f"{where}: test cell {gid!r} must be locked")
        if meta.get("solution") and cell.cell_type == "code" and not has_solution:
            found.append(f"{where}: answer cell {gid!r} lacks ### BEGIN/END SOLUTION markers")
        if gid and gid.endswith("_hidden") and not has_hidden:
            found.append(f"{where}: hidden test cell {gid!r} lacks ### BEGIN/END HIDDEN TESTS markers")
        if has_hidden and not meta.get("grade"):
            found.append(f"{where}: cell {gid!r} has hidden tests but is not graded")
    if graded == 0:
        found.append(f"{where}: no graded cell")
    found += _model_answer_problems(nb, where)
    found += _reading_problems(nb, where)
    return found


def _reading_problems(nb: nbformat.NotebookNode, where: Path) -> list[str]:
    """Every entry of the "Further reading" list links to where it can be read."""
    sections = [("\n" + c.source).split("\n## Further reading", 1)[1] for c in nb.cells
                if c.cell_type == "markdown" and "\n## Further reading" in "\n" + c.source]
    if len(sections) != 1:
        return [f"{where}: expected one '## Further reading' section, found {len(sections)}"]
    section = sections[0].split("\n## ", 1)[0]  # up to the next heading of that level
    entries = re.split(r"\n(?=\* )", section)
    return [f"{where}: a further-reading entry without a link: {e.strip()[:80]!r}"
            for e in entries if e.strip().startswith("* ") and "](http" not in e]


def _model_answer_problems(nb: nbformat.NotebookNode, where: Path) -> list[str]:
    """The recap questions (the cell with grade id ``recap``) need a model answer for each question in the
    markdown cell right after them, tagged ``model-answer`` (the release drops it)."""
    recap = next((i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "recap"),
                 None)
    if recap is None:
        return [f"{where}: no recap cell (grade id 'recap')"]
    questions = re.findall(r"^\d+\. ", nb.cells[recap].source.split("## Further reading")[0], flags=re.M)
    after = nb.cells[recap + 1] if recap + 1 < len(nb.cells) else None
    if after is None or MODEL_ANSWER_TAG not in after.metadata.get("tags", []) or after.cell_type != "markdown":
        return [f"{where}: the recap questions need a markdown cell tagged {MODEL_ANSWER_TAG!r} right after them"]
    answers = re.findall(r"^\d+\. ", after.source, flags=re.M)
    if len(answers) != len(questions):
        return [f"{where}: {len(questions)} recap questions but {len(answers)} model answers"]
    return []


def oracle_problems() -> list[str]:
    """Exercises without a declared oracle (autograder/core/oracles.toml), or declarations of no exercise."""
    from autograder.core import oracles

    exercises = {}
    for ch in chapters():
        for path in sorted((SOLUTIONS / ch).glob("*.ipynb")):
            exercises[ch] = [c.metadata["nbgrader"]["grade_id"].removesuffix("_answer")
                             for c in nbformat.read(path, as_version=4).cells
                             if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    return oracles.problems(exercises)


def source_problems() -> list[str]:
    """Problems across every source notebook under solutions/."""
    found = []
    for ch in chapters():
        notebooks = sorted((SOLUTIONS / ch).glob("*.ipynb"))
        if not notebooks:
            found.append(f"solutions/{ch} has no notebook")
        for path in notebooks:
            found += notebook_problems(path)
    return found


def release_leaks(root: Path) -> list[str]:
    """Solution code or hidden tests that reached a release folder (course/ or a bundle)."""
    found = []
    for path in sorted(root.rglob("*.ipynb")):
        text = path.read_text()
        for marker in SOLUTION_MARKERS + HIDDEN_MARKERS:
            if marker in text:
                found.append(f"{path}: contains {marker!r}")
        cells = json.loads(text).get("cells", [])
        if any(MODEL_ANSWER_TAG in c.get("metadata", {}).get("tags", []) for c in cells):
            found.append(f"{path}: contains a model answer")
    return found


# ------------------------------------------------------------------------------------------- grading


def gradebook_url() -> str:
    """The gradebook nbgrader uses (the same rule as nbgrader_config.py)."""
    return os.environ.get("DLCOURSE_GRADEBOOK", f"sqlite:///{GRADING / 'gradebook.db'}")


def sync_gradebook(names: Iterable[str] | None = None) -> list[str]:
    """Record the chapters' source cells in the gradebook (autograde restores locked cells from it): those in
    ``names`` (the ones a command grades or exports), or every chapter.

    A chapter whose source and release are unchanged since it was last recorded in this gradebook, and which
    the gradebook still holds, is skipped (recording one takes a few seconds). Returns the chapters recorded.
    """
    from nbgrader.api import Gradebook, MissingEntry

    db_url = gradebook_url()
    stamp_path = GRADING / ".gradebook-sync.json"
    stamps = json.loads(stamp_path.read_text()) if stamp_path.exists() else {}
    done = stamps.setdefault(db_url, {})
    wanted = set(chapters()) if names is None else set(names) & set(chapters())
    fingerprints = {ch: _fingerprint(ch) for ch in sorted(wanted)}
    held = set()
    exists = not db_url.startswith("sqlite:///") or Path(db_url.removeprefix("sqlite:///")).exists()
    if exists and done:  # opening a gradebook that is not there would create it (nbgrader's release does)
        with Gradebook(db_url) as gb:
            for ch in fingerprints:
                with contextlib.suppress(MissingEntry):
                    if gb.find_assignment(ch).notebooks:
                        held.add(ch)
    changed = [(ch, fp) for ch, fp in fingerprints.items() if ch not in held or done.get(ch) != fp]
    # Three chapters or more: every chapter in one nbgrader run (about the cost of three run one by one; the
    # unchanged ones are recorded again as they are). Fewer: one at a time, each stamped when recorded, so
    # that a run stopped half-way keeps what it recorded.
    if len(changed) >= 3:
        batches = [[(ch, fingerprints.get(ch) or _fingerprint(ch)) for ch in chapters()]]
    else:
        batches = [[item] for item in changed]
    for batch in batches:
        GRADING.mkdir(parents=True, exist_ok=True)  # a grading folder not there yet is made
        with tempfile.TemporaryDirectory() as tmp:
            generate_each([ch for ch, _ in batch], Path(tmp))  # records them in the course's gradebook
        done.update(batch)
        GRADING.mkdir(parents=True, exist_ok=True)
        stamp_path.write_text(json.dumps(stamps, indent=1) + "\n")
    return [ch for ch, _ in changed]


def sync_due_dates(rules) -> list[str]:
    """The policy's deadlines as nbgrader's due dates in the gradebook (formgrader shows them, and which
    submissions were late); a chapter without one has none. Returns the chapters changed."""
    import warnings

    from nbgrader.api import Gradebook

    changed = []
    with warnings.catch_warnings(), Gradebook(gradebook_url()) as gb:
        warnings.simplefilter("ignore")
        for assignment in gb.assignments:
            deadline = rules.deadlines.get(assignment.name)
            due = deadline.astimezone(UTC).replace(tzinfo=None) if deadline is not None else None  # naive UTC
            if assignment.duedate != due:
                assignment.duedate = due
                changed.append(assignment.name)
        if changed:
            gb.db.commit()
    return changed


def _fingerprint(chapter: str) -> str:
    """A digest of the chapter's source and release notebooks: it changes when either does."""
    import hashlib

    digest = hashlib.sha256()
    for nb in sorted((SOLUTIONS / chapter).glob("*.ipynb")) + sorted((COURSE / chapter).glob("*.ipynb")):
        digest.update(nb.read_bytes())
    return digest.hexdigest()


def recorded_chapters() -> set[str]:
    """The chapters this grading folder's gradebook holds (none when there is no gradebook yet)."""
    from nbgrader.api import Gradebook

    db_url = gradebook_url()
    if db_url.startswith("sqlite:///") and not Path(db_url.removeprefix("sqlite:///")).exists():
        return set()  # opening it would create it
    with Gradebook(db_url) as gb:
        return {a.name for a in gb.assignments if a.notebooks}


def submissions(student: str | None = None, chapter: str | None = None) -> list[tuple[str, str]]:
    """(student, chapter) pairs found under autograder/submitted/."""
    if not SUBMITTED.exists():
        return []
    pairs = []
    for sdir in sorted(p for p in SUBMITTED.iterdir() if p.is_dir()):
        if student and sdir.name != student:
            continue
        for cdir in sorted(p for p in sdir.iterdir() if p.is_dir()):
            if chapter and cdir.name != chapter:
                continue
            pairs.append((sdir.name, cdir.name))
    return pairs


# Why an exercise that a person graded by hand goes back to them (results JSON "review", then review.csv).
CHANGED_AFTER_MANUAL = "the submission changed after manual grading"


def _read_result(path: Path) -> dict:
    """A recorded result as JSON ({} when there is none or it cannot be read)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_result(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(data, indent=1) + "\n")
    partial.replace(path)  # a run stopped mid-write leaves the old result, never half of one


def result_path(student: str, chapter: str) -> Path:
    return RESULTS / f"{student}__{chapter}.json"


class Recorder:
    """The one writer: autograded notebooks, results JSON and the gradebook, for results in any order.

    What a person entered in formgrader (a manual score, extra credit, a comment, a flag) is never
    overwritten. The results JSON remembers, per hand-graded cell, the submission's fingerprint that the
    manual score was given against (``manual``); when the submission changed since, the manual score stays,
    the cell needs a manual grade again and ``review`` gives the reason, until a person saves a grade for it
    again in formgrader.
    """

    def __init__(self, db_url: str | None = None) -> None:
        self.db_url = db_url or gradebook_url()

    def __enter__(self) -> Recorder:
        from nbgrader.api import Gradebook

        self.gradebook = Gradebook(self.db_url)
        return self

    def __exit__(self, *exc: object) -> None:
        self.gradebook.close()

    def record(self, result, graded_nb: nbformat.NotebookNode | None, notebook_name: str,
               fingerprint: str = "", submission: str = "", **extra: object) -> None:
        """Write one submission's result; a failed grading writes its JSON (with the reason) only.

        ``fingerprint`` changes with the submission, the release and the tests (it decides what is graded
        again); ``submission`` with the submitted file alone (it decides whether a manual grade was given
        against what was handed in: a fixed test or oracle declaration sends nothing back to review).
        """
        start = time.monotonic()
        if graded_nb is not None:
            out_dir = AUTOGRADED / result.student / result.chapter
            out_dir.mkdir(parents=True, exist_ok=True)
            nbformat.write(graded_nb, out_dir / f"{notebook_name}.ipynb")
            # As nbgrader's autograde: the submission's timestamp.txt and, from the exchange, its secret, which
            # feedback carries on and nbgrader's release_feedback needs (its hash names the student's feedback)
            handed_in = SUBMITTED / result.student / result.chapter
            for name in ("timestamp.txt", "submission_secret.txt"):
                if (handed_in / name).is_file():
                    shutil.copyfile(handed_in / name, out_dir / name)
            if not (handed_in / "timestamp.txt").is_file():
                (out_dir / "timestamp.txt").write_text(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()) + "\n")
        target = result_path(result.student, result.chapter)
        before = _read_result(target)
        data = {**result.to_json(), "fingerprint": fingerprint, "submission": submission, **extra}
        for key in ("manual", "review"):  # a grading that failed keeps what was known of the hand grades
            if key in before:
                data[key] = before[key]
        if result.tests:
            data["manual"], data["review"] = self.gradebook_entry(result, notebook_name, submission or fingerprint,
                                                                  before)
        if data.get("timings"):  # the instructor's side: the autograded notebook, the gradebook, this file
            data["timings"] = {**data["timings"], "recording": round(time.monotonic() - start, 3)}
        _write_result(target, data)

    def refresh(self, result, notebook_name: str, submission: str) -> None:
        """An unchanged submission's recorded result written back into the gradebook (a replaced or restored
        gradebook gets it back), and what a person graded by hand since noted in its results JSON."""
        target = result_path(result.student, result.chapter)
        data = _read_result(target)
        manual, review = self.gradebook_entry(result, notebook_name, submission, data)
        if data and (data.get("manual", {}), data.get("review", {})) != (manual, review):
            _write_result(target, {**data, "manual": manual, "review": review})

    def gradebook_entry(self, result, notebook_name: str, fingerprint: str = "",
                        before: dict | None = None) -> tuple[dict, dict]:
        """Scores and review flags of one submission in the gradebook (idempotent).

        ``fingerprint`` identifies the submitted file (:meth:`record`'s ``submission``); ``before`` is the
        submission's previous results JSON. Returns its new ``manual`` (grade id → the manual score and the
        submission it was given against) and ``review`` (exercise → reasons) entries.
        """
        import warnings

        from nbgrader.api import MissingEntry

        from autograder.core.grade import exercise_of

        before = before or {}
        known = before.get("manual", {})
        # What a person grading by hand since the last run saw: the previously recorded submission.
        shown = before.get("submission") or before.get("fingerprint") or fingerprint
        manual: dict[str, dict] = {}
        review: dict[str, list[str]] = {}  # kept once resolved: review.csv lists it as resolved
        tests = {t.grade_id: t for t in result.tests}
        gb = self.gradebook
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's own session handling
            gb.update_or_create_student(result.student)
            try:
                gb.find_submission(result.chapter, result.student)
            except MissingEntry:
                gb.add_submission(result.chapter, result.student)
            nb = gb.find_submission_notebook(notebook_name, result.chapter, result.student)
            for grade in nb.grades:
                test = tests.get(grade.name)
                exercise = test.exercise if test else exercise_of(grade.name)
                if test is not None:
                    grade.auto_score = test.score
                if grade.manual_score is None:
                    if test is not None:
                        grade.needs_manual_grade = exercise in result.flagged
                    continue
                seen = known.get(grade.name)
                # A manual score not seen before (or saved again in formgrader after it was sent back for
                # review) was given against what was recorded when the person graded it.
                regiven = (not isinstance(seen, dict) or seen.get("score") != grade.manual_score
                           or (seen.get("changed") and not grade.needs_manual_grade))
                against = shown if regiven else seen.get("fingerprint", shown)
                changed = bool(fingerprint) and against != fingerprint
                manual[grade.name] = {"score": grade.manual_score, "fingerprint": against, "changed": changed}
                grade.needs_manual_grade = changed
                reasons = review.setdefault(exercise, list((before.get("review") or {}).get(exercise, [])))
                if changed and CHANGED_AFTER_MANUAL not in reasons:
                    reasons.append(CHANGED_AFTER_MANUAL)
            review = {exercise: reasons for exercise, reasons in review.items() if reasons}
            # Flagged for a person while a cell waits for a manual grade, or when this grading found something
            # the last one had not (a flagged exercise, a repaired file, a duplicated answer): a run never
            # clears the flag, and one that finds nothing new does not raise again a flag a person cleared.
            found = set(result.flagged) | set(result.notices)
            known_before = set(before.get("flagged") or {}) | set(before.get("notices") or [])
            if any(grade.needs_manual_grade for grade in nb.grades) or found - known_before:
                nb.flagged = True
            gb.db.commit()
        return manual, review


def hand_graded(result) -> tuple[set[str], list[str]]:
    """Of a recorded submission: the exercises whose every test cell a person graded by hand (for this very
    submission), and those hand-graded before the submission changed (they wait for a person again)."""
    manual = _read_result(result_path(result.student, result.chapter)).get("manual", {})
    cells: dict[str, list[str]] = {}
    for test in result.tests:
        cells.setdefault(test.exercise, []).append(test.grade_id)
    by_hand = {ex for ex, ids in cells.items()
               if all(g in manual and not manual[g].get("changed") for g in ids)}
    changed = [ex for ex, ids in cells.items() if any(manual.get(g, {}).get("changed") for g in ids)]
    return by_hand, changed


def previous_result(student: str, chapter: str, fingerprint: str):
    """The recorded result of this exact submission (same file, release and tests), if it was graded."""
    from autograder.core import grade as grading

    data = _read_result(result_path(student, chapter))
    if data.get("fingerprint") != fingerprint or data.get("error") or not data.get("tests"):
        return None
    return grading.GradeResult.from_json(data)


def autograde(student: str | None = None, chapter: str | None = None, cell_timeout: float = 300,
              submission_timeout: float = 1800, unsafe: bool = False, jobs: int = 1, scheduler=None,
              force: bool = False, progress: bool = True, all_cells: bool = False) -> tuple[list, list]:
    """Grade the submissions (all, or the chosen ones); returns (graded now, unchanged and skipped).

    Only the cells grading needs run (:mod:`needs`); ``all_cells`` runs every cell of the release too (the demos'
    outputs then appear in the autograded notebooks) and grades everything again.

    ``jobs`` submissions at a time on this machine, or on the Dask cluster at ``scheduler``. Results are
    recorded as they arrive; a run that is stopped and started again grades only what is new or changed
    (``force`` grades everything again).
    """
    from autograder.core import oracles, parallel, sandbox

    try:  # a malformed declaration stops the run before anything is graded
        oracles.load()
    except oracles.DeclarationError as err:
        raise PipelineError(f"{err} (the declarations of each exercise's oracle)") from err
    if scheduler is None:
        ok, why = sandbox.bwrap_available()
        if not ok and not unsafe:
            raise PipelineError(f"the grading sandbox cannot be had here: {why}. Grading untrusted code without "
                                "it exposes the solutions and the gradebook; pass --unsafe (UNSAFE=1) to grade "
                                "anyway.")
    if scheduler is not None:  # first, so that a wrong address fails at once
        try:
            make_executor, close = parallel.dask_pool(scheduler, jobs)
        except ConnectionError as err:
            raise PipelineError(str(err)) from err
    else:
        make_executor, close = parallel.local_pool(jobs), (lambda: None)
    try:
        return _grade_all(student, chapter, cell_timeout, submission_timeout, unsafe, force or all_cells, progress,
                          make_executor, all_cells, jobs, scheduler is not None)
    finally:
        close()


def _grade_all(student: str | None, chapter: str | None, cell_timeout: float, submission_timeout: float,
               unsafe: bool, force: bool, progress: bool, make_executor, all_cells: bool = False,
               jobs: int = 1, distributed: bool = False) -> tuple[list, list]:
    """:func:`autograde` once its workers are there: plan, skip what is unchanged, grade, record."""
    from autograder.core import grade as grading
    from autograder.core import parallel

    known = set(chapters())
    people, rules = load_roster(), load_policy()  # a malformed roster or policy stops here, changing nothing
    found = submissions(student, chapter)
    sync_gradebook({ch for _, ch in found})  # the chapters this run grades
    sync_due_dates(rules)
    sync_roster(people)
    times: dict[tuple[str, str], dict] = {}  # when each submission was handed in (results JSON fields)
    results, skipped, todo = [], [], []
    for sid, ch in found:
        if ch not in known:
            results.append(grading.GradeResult(sid, ch, error=f"unknown chapter {ch!r}"))
            continue
        files = sorted((SUBMITTED / sid / ch).glob("*.ipynb"))
        (release_nb,) = sorted((COURSE / ch).glob("*.ipynb"))
        (source_nb,) = sorted((SOLUTIONS / ch).glob("*.ipynb"))
        wanted = SUBMITTED / sid / ch / release_nb.name
        path = wanted if wanted.exists() else (files[0] if files else wanted)
        if not path.exists():
            results.append(grading.GradeResult(sid, ch, error=f"no notebook under submitted/{sid}/{ch}/"))
            continue
        job = parallel.Job(sid, ch, path, release_nb, source_nb)
        times[sid, ch] = submitted_at(sid, ch, path, rules)
        fingerprint = job.fingerprint()
        if not force and (before := previous_result(sid, ch, fingerprint)) is not None:
            skipped.append((before, release_nb.stem, job.submission_digest()))
            continue
        todo.append((job, fingerprint, release_nb.stem, path != wanted))
    with Recorder() as recorder:
        for result in results:
            recorder.record(result, None, "")
        for before, name, digest in skipped:  # a replaced or restored gradebook gets them back
            recorder.refresh(before, name, digest)
        for before, *_ in skipped:  # a re-submission of the same file: its new time
            note_time(recorder.gradebook, before.student, before.chapter, times[before.student, before.chapter])
        bar = parallel.Progress(len(todo), progress)
        try:
            todo.sort(key=lambda item: item[0].chapter)  # chapter by chapter: a worker's spare kernel fits the next
            payloads = [dict(job.payload(cell_timeout, submission_timeout, unsafe), all_cells=all_cells)
                        for job, *_ in todo]
            if not distributed:  # a cluster's workers take submissions in no order this process knows
                parallel.hint_upcoming(payloads, max(1, jobs))
            for i, outcome in parallel.run(payloads, make_executor):
                job, fingerprint, name, renamed = todo[i]
                result = grading.GradeResult.from_json(outcome["result"])
                if renamed:
                    result.notices.append(f"graded {job.submission.name} (expected {name}.ipynb)")
                graded_nb = nbformat.reads(outcome["notebook"], as_version=4) if outcome["notebook"] else None
                recorder.record(result, graded_nb, name, fingerprint, job.submission_digest(),
                                **{k: outcome[k] for k in ("worker", "grader_peak_mb", "kernel_peak_mb")
                                   if k in outcome}, **times[job.student, job.chapter])
                note_time(recorder.gradebook, job.student, job.chapter, times[job.student, job.chapter])
                results.append(result)
                bar.update(result)
        finally:
            bar.close()
    return results, [before for before, *_ in skipped]


# ---------------------------------------------------------------- roster, late policy, submission times


def load_roster() -> dict[str, dict[str, str]]:
    """The class roster ({} when there is none); a malformed one is a :class:`PipelineError`."""
    from autograder.bookkeeping import roster

    try:
        return roster.read(ROSTER)
    except roster.RosterError as err:
        raise PipelineError(str(err)) from None


def load_policy():
    """The late policy (policy.Policy) with the extensions beside the roster; a missing or malformed file is a
    :class:`PipelineError` that names it (a mistyped DLCOURSE_POLICY must not drop every late penalty quietly)."""
    from autograder.bookkeeping import policy

    if not POLICY.is_file():
        how = "DLCOURSE_POLICY names" if os.environ.get("DLCOURSE_POLICY") else "the course's policy is"
        raise PipelineError(f"no late policy at {POLICY} ({how} a file that is not there): correct the path, or "
                            "copy autograder/policy.toml there")
    try:
        return policy.load_all(POLICY, EXTENSIONS, chapters())
    except policy.PolicyError as err:
        raise PipelineError(str(err)) from None


def policy_lines(rules) -> list[str]:
    """What ``make grades`` says of the policy it applied: the file, each deadline, the extensions and where they
    came from."""
    due = [f"{ch} due {when.astimezone(rules.timezone):%Y-%m-%d %H:%M} {rules.timezone}"
           for ch, when in sorted(rules.deadlines.items())]
    lines = [f"late policy: {POLICY}: " + ("; ".join(due) if due else "no deadlines, so nothing is late")]
    beside = len(rules.extensions) - rules.named_here
    if beside:
        lines.append(f"{beside} extension(s) from {EXTENSIONS}")
    if rules.named_here:
        lines.append(f"warning: {POLICY} names students ({rules.named_here} extension(s)), and it is committed: "
                     f"move them to {EXTENSIONS}, which git ignores")
    return lines


def open_review(table) -> list[dict[str, str]]:
    """The review list's items that still wait for a person, by student, chapter and exercise."""
    return sorted((row for row in table.review if row.get("status") == "open"),
                  key=lambda r: (r["student"], r["chapter"], r["exercise"]))


def review_lines(rows: list[dict[str, str]], shown: int = 20) -> list[str]:
    """What an instructor reads about open review items before exporting or sending feedback."""
    if not rows:
        return ["no review item is open"]
    lines = [f"{len(rows)} review item(s) still open (review.csv lists them; grade them in formgrader, "
             "make formgrader):"]
    for row in rows[:shown]:
        reason = row.get("reason", "")
        lines.append(f"  {row['student']} {row['chapter']} {row['exercise']}: "
                     f"{reason[:110] + '…' if len(reason) > 110 else reason}")
    if len(rows) > shown:
        lines.append(f"  … and {len(rows) - shown} more")
    return lines


def _refuse_while_open(rows: list[dict[str, str]], what: str) -> None:
    if rows:
        raise PipelineError(f"{len(rows)} review item(s) are open, so {what} (--strict, STRICT=1): grade them in "
                            f"formgrader first; {GRADING / 'review.csv'} lists them (make grades)")


def _graded_here(folders: bool = False) -> None:
    """A :class:`PipelineError` when this grading folder holds no gradebook (``folders``: nor an autograded/
    folder): nothing was autograded there."""
    db_url = gradebook_url()
    missing = "no autograded/ folder" if folders and not AUTOGRADED.is_dir() else \
        "there is no gradebook" if db_url.startswith("sqlite:///") and \
        not Path(db_url.removeprefix("sqlite:///")).exists() else ""
    if missing:
        where = " (DLCOURSE_GRADING_DIR)" if os.environ.get("DLCOURSE_GRADING_DIR") else ""
        raise PipelineError(f"nothing was autograded in {GRADING}{where}: {missing}; run make autograde first")


def sync_roster(people: dict[str, dict[str, str]]) -> list[str]:
    """nbgrader's students table in step with the roster (names, e-mail, LMS id); returns who changed."""
    from autograder.bookkeeping import roster

    return roster.sync_url(gradebook_url(), people)


def submitted_at(student: str, chapter: str, notebook: Path, rules) -> dict[str, str]:
    """The results-JSON fields saying when a submission was handed in, and where that was read."""
    from autograder.bookkeeping import policy

    when, source = policy.submission_time(SUBMITTED / student / chapter, notebook, rules.timezone)
    return {"submitted": when.isoformat(), "submitted_from": source}


def note_time(gb, student: str, chapter: str, fields: dict[str, str]) -> None:
    """The submission time in its results JSON (when it changed: the same file handed in again) and as
    nbgrader's submission timestamp (what formgrader shows)."""
    import warnings
    from datetime import UTC, datetime

    from nbgrader.api import MissingEntry

    target = RESULTS / f"{student}__{chapter}.json"
    try:
        data = json.loads(target.read_text())
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict) and any(data.get(k) != v for k, v in fields.items()):
        partial = target.with_suffix(".json.partial")
        partial.write_text(json.dumps({**data, **fields}, indent=1) + "\n")
        partial.replace(target)
    stamp = datetime.fromisoformat(fields["submitted"]).astimezone(UTC).replace(tzinfo=None)  # nbgrader: naive UTC
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            submission = gb.find_submission(chapter, student)
        except MissingEntry:
            return
        if submission.timestamp != stamp:
            submission.timestamp = stamp
            gb.db.commit()


def feedback(strict: bool = False, notes: list[str] | None = None) -> int:
    """HTML feedback for every autograded submission, hidden tests removed, exercises named, and a line on
    the submission time against the late policy. What is still open for review goes to ``notes``; ``strict``
    refuses to write anything while an item is open. Returns how many submissions have feedback."""
    from autograder.bookkeeping import export

    load_policy()  # a malformed policy.toml: one clear error here rather than one per notebook from nbgrader
    _graded_here(folders=True)
    opened = open_review(export.read(gradebook_url(), RESULTS))
    if strict:
        _refuse_while_open(opened, "no feedback was written")
    for ch in chapters():
        if any((AUTOGRADED / sid / ch).exists() for sid, _ in submissions(chapter=ch)):
            nbgrader("generate_feedback", ch, "--force")
    if notes is not None:
        notes += review_lines(opened)
    return len(list(FEEDBACK.glob("*/*/*.html"))) if FEEDBACK.is_dir() else 0


def grades(fmt: str = "csv", out: Path | None = None, only: list[str] | None = None, missing: str = "blank",
           notes: list[str] | None = None, strict: bool = False) -> list[Path]:
    """Export the gradebook: per-exercise columns, days late and totals after the late penalty (``csv``), or
    Canvas's or Moodle's import file; ``review.csv`` beside it lists what needs a person. ``only``: the
    chapters to export (default: those with a submission); ``missing``: a chapter not handed in is ``blank``
    or ``zero``. What an instructor should know (students not on the roster, late submissions) is appended to
    ``notes``, with the policy applied and the review items still open; ``strict`` refuses to write anything
    while an item is open. Returns the files written."""
    from autograder.bookkeeping import export

    for chapter in only or []:
        chapters(chapter)  # a mistyped chapter: one line naming the chapters there are
    rules = load_policy()
    _graded_here()
    people = load_roster()
    sync_gradebook(only if only else {ch for _, ch in submissions()} | recorded_chapters())
    sync_due_dates(rules)
    sync_roster(people)
    out = out or (GRADES_CSV if fmt == "csv" else GRADING / f"grades-{fmt}.csv")
    table = export.read(gradebook_url(), RESULTS)
    notes = [] if notes is None else notes
    notes += policy_lines(rules)
    opened = open_review(table)
    if strict:
        _refuse_while_open(opened, "nothing was exported")
    if people:
        outsiders = export.merge_roster(table, people)
        if outsiders:
            notes.append(f"not on the roster (exported all the same): {', '.join(outsiders)}")
    else:
        notes.append(f"no roster at {ROSTER}: names and LMS ids come from the gradebook "
                     "(copy autograder/roster.example.csv)")
    try:
        written = export.write(table, out, fmt, only, missing, rules)
        chosen = export.select_chapters(table, only)
    except ValueError as err:
        raise PipelineError(str(err)) from None
    for sid, ch, got in export.late_marks(table, rules, chosen):
        source = table.submitted_from.get((sid, ch), "")
        notes.append(f"late: {sid} {ch}: {got.late.days:g} day(s), -{got.late.penalty:g} points "
                     f"({got.raw:g} -> {got.final:g}); time from {source or 'the results JSON'}")
    if not chosen:
        notes.append("no chapter has a submission: name some with --chapter")
    notes += review_lines(opened)
    try:  # where the class struggled: a page per chapter, beside the grades (informs a person, changes nothing)
        from autograder.bookkeeping import analytics

        pages = analytics.write_pages(table, chosen, RESULTS, GRADING / "analytics", rules)
        if pages:
            notes.append(f"class analytics: {', '.join(str(p) for p in pages)}")
    except Exception as error:  # noqa: BLE001 — the grades are written; a page that fails is a line
        notes.append(f"class analytics not written ({type(error).__name__}: {error})")
    return written


def zip_collect(chapter: str) -> list[str]:
    """An LMS's bulk download of ``chapter`` (zip files or notebooks in ``<grading folder>/downloaded/<chapter>/
    archive/``) extracted and filed under ``submitted/<student>/<chapter>/`` by nbgrader's zip_collect with the
    course's reader of Canvas, Moodle and Blackboard file names (lms_names.py). Returns the students filed."""
    chapters(chapter)
    archive = GRADING / "downloaded" / chapter / "archive"
    if not archive.is_dir() or not any(archive.iterdir()):
        raise PipelineError(f"nothing to collect: put the LMS's download (its zip file) in {archive}/")
    done = nbgrader("zip_collect", chapter, "--force")
    skipped = [ln.split("skipped: ", 1)[1] for ln in (done.stdout + done.stderr).splitlines() if "skipped: " in ln]
    for name in skipped:
        print(f"not a Canvas, Moodle or Blackboard file name, skipped: {name}")
    return [sid for sid, ch in submissions(chapter=chapter)]


def similarity_report(chapter: str, archive: Path | None = None, threshold: float = 0.7,
                      public: list[str] | None = None, out: Path | None = None) -> tuple[Any, Path] | None:
    """The similarity report of the chapter's submissions under the grading folder (:mod:`similarity`), written
    to ``out`` (default ``<grading folder>/similarity/<chapter>/``): (report, folder), or None with fewer than two
    submissions to compare."""
    from autograder.bookkeeping import similarity

    submitted = {s: SUBMITTED / s / c / f"{c}.ipynb" for s, c in submissions(chapter=chapter)}
    submitted = {s: p for s, p in submitted.items() if p.exists()}
    if len(submitted) < 2:
        return None
    solution = next(iter(sorted((SOLUTIONS / chapter).glob("*.ipynb"))), None)
    out = out or GRADING / "similarity" / chapter
    return similarity.run(chapter, submitted, out, solution, archive, threshold, public), out


def similarity_summary(chapters_graded: list[str]) -> list[str]:
    """After grading: per chapter, how many pairs of notebooks look alike, the most alike, and where the report is
    (``make similarity`` for its options). A report that cannot be made is a line, never an error: grading is
    done by then."""
    from autograder.bookkeeping import similarity

    lines = []
    for chapter in chapters_graded:
        try:
            made = similarity_report(chapter)
            lines.append(similarity.summary(*made) if made else "")
        except Exception as error:  # noqa: BLE001
            lines.append(f"similarity, {chapter}: no report ({type(error).__name__}: {error})")
    return [line for line in lines if line]


def bundle(out: Path | None = None) -> Path:
    """The student bundle: course/, the package, data, set-up files, the README and its guides. No solutions, no
    tests."""
    out = out or ROOT / "dist" / "dlcourse-student.zip"
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for item in BUNDLE_ITEMS:
            path = ROOT / item
            if not path.exists():
                continue
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            for f in files:
                if "__pycache__" in f.parts or f.suffix == ".pyc" or ".ipynb_checkpoints" in f.parts:
                    continue
                zf.write(f, Path("dlcourse-student") / f.relative_to(ROOT))
    return out


# ----------------------------------------------------------------------------------------------- main


def _number_from_env(name: str, kind: type, what: str) -> str | None:
    """The error line for an environment setting that is not a positive number (None when it is fine)."""
    value = os.environ.get(name)
    if not value:
        return None
    try:
        if kind(value) > 0:
            return None
    except ValueError:
        pass
    return f"{name}={value!r} is not {what}"


def main(argv: list[str] | None = None) -> int:
    bad = _number_from_env("DLCOURSE_CELL_TIMEOUT", float, "a number of seconds per cell")
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="pipeline.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("release", help="generate course/ from solutions/")
    p.add_argument("--chapter")
    sub.add_parser("check", help="course/ up to date, solutions/ clean, nbgrader metadata valid")
    p = sub.add_parser("autograde", help="grade every submission under autograder/submitted/")
    p.add_argument("--student")
    p.add_argument("--chapter")
    p.add_argument("--timeout", type=float, default=float(os.environ.get("DLCOURSE_CELL_TIMEOUT", "300")),
                   help="seconds per cell")
    p.add_argument("--submission-timeout", type=float, default=1800, help="seconds per submission")
    p.add_argument("--unsafe", action="store_true", help="grade without the sandbox (only where it cannot be had)")
    p.add_argument("--jobs", default=os.environ.get("JOBS") or str(os.cpu_count() or 1),
                   help="submissions graded at a time on this machine (default: the number of cores)")
    p.add_argument("--scheduler", default=os.environ.get("SCHEDULER") or None,
                   help="grade on this Dask cluster instead (e.g. tcp://host:8786)")
    p.add_argument("--force", action="store_true", help="grade again what was graded and has not changed")
    p.add_argument("--all-cells", action="store_true", default=bool(os.environ.get("ALL_CELLS")),
                   help="run every cell of the release, demos included (their outputs then appear in the "
                        "autograded notebooks; slower); grades everything again")
    p = sub.add_parser("feedback", help="HTML feedback under autograder/feedback/")
    p.add_argument("--strict", action="store_true", default=bool(os.environ.get("STRICT")),
                   help="write nothing while a review item is open")
    p = sub.add_parser("grades", help="export grades to autograder/grades.csv (or grades-canvas/-moodle.csv)")
    p.add_argument("--strict", action="store_true", default=bool(os.environ.get("STRICT")),
                   help="export nothing while a review item is open")
    p.add_argument("--format", default=os.environ.get("FORMAT") or "csv", choices=("csv", "canvas", "moodle"))
    p.add_argument("--chapter", action="append", dest="chapters", metavar="CH",
                   help="a chapter to export (repeat it for several; default: every chapter with a submission)")
    p.add_argument("--missing", default=os.environ.get("MISSING") or "blank", choices=("blank", "zero"),
                   help="a chapter a student did not hand in: left blank (default) or 0")
    sub.add_parser("bundle", help="dist/dlcourse-student.zip")
    p = sub.add_parser("similarity", help="which submissions look copied (similarity.py): a report per chapter")
    p.add_argument("chapter")
    p.add_argument("--archive", type=Path, help="earlier terms' submissions: <anything>/<chapter>.ipynb")
    p.add_argument("--threshold", type=float, default=0.7)
    p.add_argument("--public", action="append", help="a module whose code counts as given (repeatable; default: "
                                                     "the chapter's list in similarity.PUBLIC)")
    p.add_argument("--out", type=Path, help="default: <grading folder>/similarity/<chapter>/")
    p = sub.add_parser("zip-collect", help="file an LMS's bulk download under submitted/")
    p.add_argument("--chapter", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "release":
            for path in release(args.chapter):
                print(f"released {path.relative_to(ROOT)}")
        elif args.command == "check":
            problems = source_problems() + oracle_problems() + release_differences() + release_leaks(COURSE)
            for line in problems:
                print(line)
            if problems:
                print("fix the above (`make release` regenerates course/)")
                return 1
            print(f"notebooks ok: {len(chapters())} chapter(s), course/ matches solutions/")
        elif args.command == "autograde":
            if not (args.jobs.isdigit() and int(args.jobs) > 0):
                raise PipelineError(f"JOBS={args.jobs!r} is not a number of submissions to grade at a time (a "
                                    "whole number, 1 or more)")
            args.jobs = int(args.jobs)
            if args.chapter:
                chapters(args.chapter)  # a mistyped chapter: one line naming the chapters there are
            GRADING.mkdir(parents=True, exist_ok=True)  # a grading folder named for the first time
            results, skipped = autograde(args.student, args.chapter, args.timeout, args.submission_timeout,
                                         args.unsafe, args.jobs, args.scheduler, args.force,
                                         all_cells=args.all_cells)
            if args.unsafe:
                print("WARNING: grading WITHOUT the sandbox (--unsafe): submissions can read and write this machine")
            if not results and not skipped:
                print(f"no submissions under {SUBMITTED}/<student>/<chapter>/")
            review = []  # what still needs a person: a flag nobody graded by hand, a change since one did
            for r in sorted(results, key=lambda r: (r.student, r.chapter)):
                by_hand, changed = hand_graded(r)
                open_flags = [ex for ex in r.flagged if ex not in by_hand]
                if open_flags or changed:
                    review.append(r)
                status = "FAILED" if r.error else ("REVIEW" if open_flags or changed else "graded")
                print(f"{status:7} {r.student:20} {r.chapter:28} {r.score:5.1f}/{r.max_score:<5.1f} {r.seconds:6.1f} s")
                for exercise, reasons in r.flagged.items():
                    done = " (graded by hand since)" if exercise in by_hand else ""
                    print(f"        {exercise}: flagged for review: {'; '.join(reasons)}{done}")
                for line in r.notices + ([r.error] if r.error else []):
                    print("        " + line)
                for exercise in changed:
                    print(f"        {exercise}: {CHANGED_AFTER_MANUAL}")
            for r in sorted(skipped, key=lambda r: (r.student, r.chapter)):
                by_hand, changed = hand_graded(r)
                if [ex for ex in r.flagged if ex not in by_hand] or changed:
                    review.append(r)
                for exercise in changed:  # still waiting for a person since an earlier run
                    print(f"REVIEW  {r.student:20} {r.chapter:28} {exercise}: {CHANGED_AFTER_MANUAL}")
            failed = [r for r in results if r.error]
            print(f"{len(results) - len(failed)} graded, {len(failed)} failed, {len(review)} flagged for review, "
                  f"{len(skipped)} unchanged since they were graded (--force grades them again); "
                  f"results in {RESULTS}")
            for line in similarity_summary(sorted({r.chapter for r in [*results, *skipped]})):
                print(line)
            return 1 if failed else 0
        elif args.command == "feedback":
            notes: list[str] = []
            written = feedback(args.strict, notes)
            for line in notes:
                print(line)
            print(f"feedback written for {written} submission(s) under {FEEDBACK}/" if written else
                  "no feedback written: no autograded submission has a notebook to return")
        elif args.command == "grades":
            notes = []
            written = grades(args.format, only=args.chapters, missing=args.missing, notes=notes, strict=args.strict)
            for line in notes:
                print(line)
            print("written: " + ", ".join(str(p) for p in written if p.exists()))
        elif args.command == "zip-collect":
            filed = zip_collect(args.chapter)
            print(f"{len(filed)} submission(s) of {args.chapter} under {SUBMITTED}/ ({', '.join(filed)}); "
                  f"next: make autograde CH={args.chapter}")
        elif args.command == "similarity":
            from autograder.bookkeeping import similarity

            chapters(args.chapter)  # a mistyped chapter: one line, nothing written
            if args.archive and not args.archive.is_dir():
                raise PipelineError(f"ARCHIVE={args.archive} is not a folder")
            made = similarity_report(args.chapter, args.archive, args.threshold, args.public, args.out)
            if made is None:
                print(f"fewer than two submissions of {args.chapter} under {SUBMITTED}: nothing to compare")
            for line in similarity.lines(*made) if made else []:
                print(line)
        elif args.command == "bundle":
            print(f"student bundle: {bundle().relative_to(ROOT)}")
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
