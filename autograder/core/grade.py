"""Grade one submission: a pure step from (release notebook, submitted file) to scores and messages.

What is run is assembled from the release, not from the submission: the release gives every cell, its
order, its kind and its points; the submission gives only the answer cells (by grade id) and the code cells
the student added. Copy-pasted or renamed test cells, edited metadata, new graded cells, reordered or
deleted cells change nothing. An answer cell that uses an escape hatch (:mod:`flags`) is not run and
costs its exercise, which is listed for review. A kernel that dies or hangs costs the cell it happened in:
the kernel is restarted, the cells before it are run again, and grading goes on.

Nothing here writes the gradebook; :mod:`pipeline` records results, one writer for all submissions.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from autograder.core import needs, oracles
from autograder.core.flags import escape_hatches, to_python
from autograder.core.rewiring import bindings_after, parses
from autograder.core.sandbox import Sandbox
from autograder.core.trusted import GradingKernel, TestRun, prelude_of
from autograder.core.warm import WarmKernels, setup_source

CELL_TIMEOUT = 300.0
SUBMISSION_TIMEOUT = 1800.0
ROLES = ("answer", "visible", "hidden")
ADDED_CELLS = "(cells the student added)"  # where escape hatches outside any exercise are listed for review
SKIPPED_NOTE = "[not run by the grader: nothing graded reads what this cell makes]\n"


@dataclass
class TestScore:
    grade_id: str
    exercise: str
    points: float
    score: float
    message: str = ""
    seconds: float = 0.0  # how long the test ran (in the grader, with the calls into the kernel it made)


@dataclass
class GradeResult:
    """Everything one submission's grading produced (JSON-able with :meth:`to_json`)."""

    student: str
    chapter: str
    tests: list[TestScore] = field(default_factory=list)
    flagged: dict[str, list[str]] = field(default_factory=dict)  # exercise -> reasons
    notices: list[str] = field(default_factory=list)  # what was recovered or tolerated
    restarts: int = 0
    seconds: float = 0.0
    kernel_peak_mb: float = 0.0  # memory the sandboxed kernel used at most (summed over its processes)
    # Where the time went, in seconds: reading and planning, starting the kernel (0 when it came warm), the
    # release's cells (set-up, and any demo a test needs) and the student's in the kernel, the tests in the
    # grader, restarts after a crash or hang (with replays), and ending the kernel; the instructor's process
    # adds the time it took to record the result ("recording").
    timings: dict[str, float] = field(default_factory=dict)
    skipped_cells: int = 0  # release cells not run: nothing graded needs them (:mod:`needs`)
    error: str = ""  # set when the submission could not be graded at all
    damaged: str = ""  # what was wrong with the file itself (not valid JSON or UTF-8), when it was damaged

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests)

    def to_json(self) -> dict:
        data = asdict(self)
        data["score"], data["max_score"] = self.score, self.max_score
        return data

    @classmethod
    def from_json(cls, data: dict) -> GradeResult:
        """The inverse of :meth:`to_json` (extra keys, such as a fingerprint, are ignored)."""
        keys = ("student", "chapter", "flagged", "notices", "restarts", "seconds", "kernel_peak_mb", "timings",
                "skipped_cells", "error", "damaged")
        known = {k: data[k] for k in keys if k in data}
        return cls(tests=[TestScore(**t) for t in data.get("tests", [])], **known)


# --------------------------------------------------------------------------------------------- reading


def clean_text(text: str) -> str:
    """Lone surrogates and other unencodable characters replaced, so the text can be sent anywhere."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if _has_surrogates(text) else text


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _source(cell: Any) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return clean_text(src) if isinstance(src, str) else ""


DAMAGE = ("the notebook is not valid JSON", "the file is not valid UTF-8")  # notices that the file was damaged
MISSING_ANSWER = re.compile(r"^the answer cell '(?P<gid>[^']+)' is missing; the empty stub was run$")
LOST_ANSWER = ("the submitted file was damaged and this answer was not among the cells recovered: the empty stub "
               "was run")


def lost_answers(notices: list[str]) -> list[str]:
    """The exercises whose answer cell a submission lacked (from :func:`plan`'s notices)."""
    return [exercise_of(m["gid"]) for n in notices if (m := MISSING_ANSWER.match(n))]


def read_submission(path: Path) -> tuple[list[dict], list[str]]:
    """The submission's cells as dicts, recovering what it can from a damaged file; and what happened."""
    notices = []
    try:
        raw = path.read_bytes()
    except OSError as err:
        return [], [f"the submission could not be read: {err}"]
    text = raw.decode("utf-8", errors="replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
        notices.append("the file is not valid UTF-8; undecodable bytes were replaced")
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise ValueError("no list of cells")
        cells = [c for c in data["cells"] if isinstance(c, dict)]
    except (ValueError, RecursionError) as err:
        cells = _recover_cells(text)
        notices.append(f"the notebook is not valid JSON ({str(err)[:120]}); {len(cells)} cell(s) recovered")
    return cells, notices


def _recover_cells(text: str) -> list[dict]:
    """Cells decodable one by one from a truncated or damaged notebook."""
    start = text.find('"cells"')
    if start < 0:
        return []
    start = text.find("[", start)
    decoder = json.JSONDecoder()
    cells, pos = [], start + 1
    while pos < len(text):
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            cell, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        if isinstance(cell, dict):
            cells.append(cell)
    return cells


def _meta(cell: Any) -> dict:
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    nb = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return nb if isinstance(nb, dict) else {}


def _defined_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)}


def exercise_of(grade_id: str) -> str:
    """``softmax_hidden`` → ``softmax``: an exercise is an answer cell and the test cells named after it."""
    for role in ROLES:
        if grade_id.endswith("_" + role):
            return grade_id.removesuffix("_" + role)
    return grade_id


# -------------------------------------------------------------------------------------------- planning


@dataclass
class Step:
    kind: str  # "kernel" (run in the kernel) or "test" (run in the grader)
    release_index: int | None
    source: str
    grade_id: str = ""
    exercise: str = ""
    points: float = 0.0
    student: bool = False  # the source is the student's (answer or added cell)
    flags: list[str] = field(default_factory=list)
    skip: bool = False  # a release cell nothing graded needs (:mod:`needs`): not run


def plan(release: nbformat.NotebookNode, cells: list[dict], notices: list[str]) -> list[Step]:
    """The cells to run, in the release's order, with the student's answers and added cells in place."""
    release_ids = {}
    for i, cell in enumerate(release.cells):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid:
            release_ids[gid] = i
    answers: dict[str, list[str]] = {}
    extras_after: dict[int, list[str]] = {}
    last_release = -1
    stubs = {i: _source(c) for i, c in enumerate(release.cells)}
    for cell in cells:
        gid = _meta(cell).get("grade_id")
        ctype = cell.get("cell_type")
        if isinstance(gid, str) and gid in release_ids:
            idx = release_ids[gid]
            rel = release.cells[idx]
            if rel.metadata.get("nbgrader", {}).get("solution") and rel.cell_type == "code" and ctype == "code":
                answers.setdefault(gid, []).append(_source(cell))
            last_release = max(last_release, idx)
            continue
        if ctype != "code":
            continue
        src = _source(cell)
        if not src.strip() or any(src == s for s in stubs.values()):
            continue  # a release cell without grade id (demo) or an empty scratch cell
        # a renamed answer cell: it defines what a missing answer's stub defines
        renamed = None
        for gid2, idx in release_ids.items():
            rel = release.cells[idx]
            if rel.metadata.get("nbgrader", {}).get("solution") and rel.cell_type == "code" and gid2 not in answers:
                wanted = _defined_names(stubs[idx])
                if wanted and wanted <= _defined_names(src):
                    renamed = gid2
                    break
        if renamed is not None:
            answers[renamed] = [src]
            notices.append(f"the answer cell {renamed!r} had lost its grade id; it was found by what it defines")
            last_release = max(last_release, release_ids[renamed])
            continue
        extras_after.setdefault(last_release, []).append(src)
    for gid, sources in answers.items():
        if len(sources) > 1:
            edited = [s for s in sources if s != stubs[release_ids[gid]]]
            answers[gid] = [edited[-1] if edited else sources[-1]]
            notices.append(f"the answer cell {gid!r} appears {len(sources)} times; the last edited copy was used")
    steps: list[Step] = []
    # What names stand for imported modules, classes and functions as the kernel runs the cells in this order: a
    # student's cell is read with the bindings of every cell before it (the set-up cell's `gan`, `t5`, `optim` …).
    names: dict[str, str] = {}

    def kernel_step(step: Step) -> None:
        nonlocal names
        if step.student:
            step.flags = escape_hatches(step.source, names)
        # the release's own cells are plain Python but for a rare magic: IPython's transforms only when needed
        python = step.source if not step.student and parses(step.source) else to_python(step.source)[0]
        names = bindings_after(python, names)
        steps.append(step)

    def add_extras(after: int) -> None:
        for src in extras_after.pop(after, []):
            kernel_step(Step("kernel", None, src, student=True))

    add_extras(-1)
    for i, cell in enumerate(release.cells):
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id", "")
        if cell.cell_type == "code":
            if meta.get("solution"):
                src = answers.get(gid, [stubs[i]])[0]
                if gid not in answers:
                    notices.append(f"the answer cell {gid!r} is missing; the empty stub was run")
                kernel_step(Step("kernel", i, src, gid, exercise_of(gid), student=True))
            elif meta.get("grade"):
                steps.append(Step("test", i, stubs[i], gid, exercise_of(gid), float(meta.get("points", 0) or 0)))
            else:
                kernel_step(Step("kernel", i, stubs[i], gid))
        add_extras(i)
    for rest in list(extras_after):
        add_extras(rest)
    return steps


def oracle_flags(steps: list[Step], chapter: str, declarations: dict | None = None) -> dict[str, list[str]]:
    """Exercises whose answer (or the student's code it depends on) calls the exercise's declared oracle.

    Read from the sources alone (:mod:`oracles`), so nothing the kernel does can hide a call: the answer
    still runs (later exercises may build on it) but its exercise scores 0 and is listed for review.
    """
    declared = oracles.for_chapter(chapter) if declarations is None else declarations
    student = [s for s in steps if s.kind == "kernel" and s.student]
    given = [s.source for s in steps if s.kind == "kernel" and not s.student]
    found: dict[str, list[str]] = {}
    for step in student:
        oracle = declared.get(step.exercise) if step.exercise else None
        if oracle is None:
            continue
        others = [s.source for s in student if s is not step]
        reasons = oracles.oracle_uses(step.source, oracle, others, given)
        if reasons:
            found.setdefault(step.exercise, []).extend(reasons)
    return found


def mark_skipped(steps: list[Step], release: nbformat.NotebookNode, source: nbformat.NotebookNode | None) -> int:
    """Set ``skip`` on the release's cells that the release marks as skippable and that nothing of this
    submission needs (the student's answers and added cells may read what a demo cell binds: then it runs).
    Returns how many cells are skipped."""
    cells = []
    for step in steps:
        cell = release.cells[step.release_index] if step.release_index is not None else None
        meta = cell.metadata.get("nbgrader", {}) if cell is not None else {}
        if step.kind == "test":
            cells.append(needs.Cell(hidden_source(step.source, source, step.grade_id), runs=False, test=True))
        else:
            runs = step.student or cell is None or not needs.marked_skip(cell)
            cells.append(needs.Cell(step.source, runs=runs, setup=bool(meta.get("locked")) and runs))
    for step, keep in zip(steps, needs.needed(cells), strict=True):
        step.skip = not keep and step.kind == "kernel"
    return sum(step.skip for step in steps)


# ------------------------------------------------------------------------------------------- grading


def hidden_source(release_source: str, source_notebook: nbformat.NotebookNode | None, grade_id: str) -> str:
    """The test code to run: the source notebook's (hidden tests included) when given, else the release's."""
    if source_notebook is None:
        return release_source
    for cell in source_notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            return cell.source
    return release_source


def strip_markers(source: str) -> str:
    return re.sub(r"^\s*### (BEGIN|END) HIDDEN TESTS\s*$", "", source, flags=re.MULTILINE)


def grade(release_path: Path, submission_path: Path, source_path: Path, *, student: str = "", chapter: str = "",
          sandbox: Sandbox | None = None, cell_timeout: float = CELL_TIMEOUT,
          submission_timeout: float = SUBMISSION_TIMEOUT, declarations: dict[str, oracles.Oracle] | None = None,
          all_cells: bool = False, kernels: WarmKernels | None = None,
          upcoming: str | None = "") -> tuple[GradeResult, nbformat.NotebookNode]:
    """Grade ``submission_path`` against the release; returns the result and the autograded notebook.

    ``declarations`` are the chapter's oracles by exercise (default: read from ``oracles.toml``). The release's
    cells that nothing graded needs are not run (:mod:`needs`) unless ``all_cells``. ``kernels``: where a kernel
    started ahead of time comes from (:mod:`warm`; else one is started here, in ``sandbox``), and ``upcoming``
    what the next submission's set-up cell is, for the kernel ``kernels`` starts meanwhile (:meth:`take`).
    """
    start = time.monotonic()
    release = nbformat.read(release_path, as_version=4)
    source = nbformat.read(source_path, as_version=4)
    result = GradeResult(student, chapter or release_path.parent.name)
    cells, notices = read_submission(submission_path)
    result.notices += notices
    result.damaged = "; ".join(n for n in notices if n.startswith(DAMAGE))
    steps = plan(release, cells, result.notices)
    lost = lost_answers(result.notices) if result.damaged else []
    for exercise in lost:  # what a damaged file lost goes to a person, exercise by exercise, and the student is told
        result.flagged.setdefault(exercise, []).append(LOST_ANSWER)
    if not all_cells:
        result.skipped_cells = mark_skipped(steps, release, source)
    declared = oracles.for_chapter(result.chapter) if declarations is None else declarations
    for exercise, reasons in oracle_flags(steps, result.chapter, declared).items():
        result.flagged.setdefault(exercise, []).extend(reasons)
    for step in steps:
        if step.flags and step.exercise:
            result.flagged.setdefault(step.exercise, []).extend(step.flags)
        elif step.flags:  # costs no exercise, but a person should see it
            result.notices.append("a cell the student added was not run: " + "; ".join(step.flags))
            result.flagged.setdefault(ADDED_CELLS, []).extend(step.flags)
    prelude = prelude_of(release.cells)
    graded = copy.deepcopy(release)
    if result.damaged:
        graded.metadata.setdefault("dlcourse", {})["damaged"] = (
            f"This submission was damaged: {result.damaged}." + (
                f" The answers to {', '.join(lost)} were not in what could be recovered: the empty stubs were run, "
                "and these exercises wait for your instructor." if lost else ""))
    tested_modules = course_modules([hidden_source(s.source, source, s.grade_id) for s in steps if s.kind == "test"])
    recorded = False  # whether the kernel has recorded the course's objects (before the student's first cell)
    spent = dict.fromkeys(("planning", "kernel start", "release cells", "student cells", "tests", "restarts"), 0.0)
    spent["planning"] = time.monotonic() - start
    clock = time.monotonic()
    setup = setup_source(release.cells)
    kernel = kernels.take(setup, upcoming) if kernels is not None else None  # waits for a spare still warming
    first = next((s for s in steps if s.kind == "kernel" and not s.skip and not s.flags), None)
    if kernel is not None and kernel.setup_run and (first is None or first.student or first.source != setup):
        kernel.close()  # it ran the set-up cell, but something else must run first (a cell added above it)
        kernel = None
    warm, kernel = kernel is not None, kernel or GradingKernel(sandbox or Sandbox())
    ahead = kernel.setup_run if warm else None  # (source, run) of the set-up cell the warm kernel ran

    def lap(what: str) -> None:
        nonlocal clock
        now = time.monotonic()
        spent[what] += now - clock
        clock = now

    ran: list[str] = []  # kernel sources that completed, for replay after a restart
    deadline = start + submission_timeout
    try:
        if not warm:
            kernel.start()
        lap("kernel start")
        for step in steps:
            cell = graded.cells[step.release_index] if step.release_index is not None else None
            left = deadline - time.monotonic()
            if step.kind == "kernel":
                if step.skip:
                    if cell is not None:
                        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=SKIPPED_NOTE)]
                    continue
                if step.student and not recorded:
                    ran.append(kernel.record_integrity(tested_modules))
                    recorded = True
                if step.flags:
                    if cell is not None:
                        cell.source = step.source
                        cell.outputs = [_error_output("not run by the grader: " + "; ".join(step.flags))]
                    continue
                if left <= 0:
                    continue
                if ahead is not None and step is first:
                    run = ahead[1]
                else:
                    run = kernel.run_cell(step.source, min(cell_timeout, left))
                lap("student cells" if step.student else "release cells")
                if cell is not None:
                    cell.source = step.source
                    cell.outputs = run.outputs
                if run.status in ("died", "timeout"):
                    what = "ended the kernel" if run.status == "died" else f"ran past {min(cell_timeout, left):.0f} s"
                    result.notices.append(f"cell {step.grade_id or '(added by the student)'} {what}; the kernel "
                                          "was restarted and the cells before it run again")
                    if cell is not None:
                        cell.outputs = run.outputs + [_error_output(f"the grader stopped this cell: it {what}")]
                    _restart(kernel, ran, cell_timeout, deadline)
                    lap("restarts")
                    result.restarts += 1
                else:
                    ran.append(step.source)
                continue
            test_source = strip_markers(hidden_source(step.source, source, step.grade_id))
            if step.exercise in result.flagged:
                score = TestScore(step.grade_id, step.exercise, step.points, 0.0,
                                  "flagged for review: " + "; ".join(result.flagged[step.exercise]))
            elif left <= 0:
                score = TestScore(step.grade_id, step.exercise, step.points, 0.0,
                                  "not run: the submission used up its time limit")
            else:
                began = time.monotonic()
                oracle = declared.get(step.exercise)
                test = kernel.run_test(test_source, prelude, min(cell_timeout, left), step.grade_id,
                                       refuse=oracle.operators if oracle else (),
                                       why=f"{oracle.why}; the grader refuses the operators that compute the "
                                           f"oracle, {oracle.oracle}" if oracle else "")
                lap("tests")
                for reason in run_flags(test, oracle):
                    result.flagged.setdefault(step.exercise, []).append(reason)
                score = TestScore(step.grade_id, step.exercise, step.points, step.points if test.passed else 0.0,
                                  "passed" if test.passed else test.message[:4000],
                                  round(time.monotonic() - began, 3))
                if test.kernel_lost:
                    result.notices.append(f"the kernel {'died' if test.kernel_lost == 'died' else 'hung'} during "
                                          f"{step.grade_id}; it was restarted and the cells before it run again")
                    _restart(kernel, ran, cell_timeout, deadline)
                    lap("restarts")
                    result.restarts += 1
                if test.passed and step.grade_id.endswith("_visible") and test.stdout.strip():
                    score.message = test.stdout.strip()[:2000]
            result.tests.append(score)
            if cell is not None:
                cell.outputs = [_test_output(score)]
    except Exception as err:  # noqa: BLE001 - the grader itself failed: say so, keep the other submissions going
        result.error = f"{type(err).__name__}: {err}"
    finally:
        clock = time.monotonic()
        kernel.close()
        spent["closing"] = time.monotonic() - clock
        result.kernel_peak_mb = kernel.peak_mb
    for score in result.tests:  # an exercise flagged while its tests ran: every test of it says so and scores 0
        if score.exercise in result.flagged:
            score.score, score.message = 0.0, "flagged for review: " + "; ".join(result.flagged[score.exercise])
            for cell in graded.cells:
                if cell.metadata.get("nbgrader", {}).get("grade_id") == score.grade_id:
                    cell.outputs = [_test_output(score)]
    graded_ids = {t.grade_id for t in result.tests}
    for step in steps:  # tests never reached (a grader failure) score 0 with the reason
        if step.kind == "test" and step.grade_id not in graded_ids:
            result.tests.append(TestScore(step.grade_id, step.exercise, step.points, 0.0,
                                          result.error or "not graded"))
    result.seconds = time.monotonic() - start
    result.timings = {k: round(v, 3) for k, v in spent.items()}
    return result, graded


def course_modules(sources: list[str]) -> set[str]:
    """The course's factories that test code builds in the kernel (``checks.build_in_kernel("dlcourse.gan.train.
    toy_gan", …)``): the kernel imports their modules, which it would at the test anyway, and records them before
    the student's code runs. Other modules are recorded when the kernel first has them."""
    return set(re.findall(r"build_in_kernel\(\s*[\"'](dlcourse(?:\.[A-Za-z_]\w*)+)[\"']", "\n".join(sources)))


_REFUSED = re.compile(r"(?:called|operator) `(?:aten\.)?([\w.]+)`")


def run_flags(test: TestRun, oracle: oracles.Oracle | None) -> list[str]:
    """Why a test's run sends its exercise to a person: the course's helpers or torch replaced in the kernel, or the
    answer reaching an operator that computes the exercise's oracle (``operators`` in ``oracles.toml``)."""
    found = [f"tampering: {what} was replaced in the kernel after the set-up cell" for what in test.tampered]
    if oracle is not None and oracle.operators and test.error_type == "ForbiddenCall":
        from dlcourse.checks import _forbidden_match

        hit = _REFUSED.search(test.message)
        name = hit.group(1).rsplit(".", 1)[-1] if hit else ""
        if name and _forbidden_match(name, frozenset(oracle.operators)):
            found.append(f"its oracle ({oracle.oracle}): the answer reached `{hit.group(1)}`, which computes it, "
                         f"through a route its source does not name — {oracle.why}")
    return found


def _restart(kernel: GradingKernel, ran: list[str], cell_timeout: float, deadline: float) -> None:
    kernel.kill()
    kernel.start()
    for src in ran:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        run = kernel.run_cell(src, min(cell_timeout, left), keep=False)
        if run.status in ("died", "timeout"):  # should not happen: it completed before
            kernel.kill()
            kernel.start()


def _error_output(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("error", ename="GraderNote", evalue=text, traceback=[f"GraderNote: {text}"])


def _test_output(score: TestScore) -> nbformat.NotebookNode:
    if score.score >= score.points:
        return nbformat.v4.new_output("stream", name="stdout", text=f"{score.message}\n")
    return nbformat.v4.new_output("error", ename="TestFailed", evalue=score.message,
                                  traceback=[f"TestFailed: {score.message}"])
