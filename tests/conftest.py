"""Shared fixtures: the chapters, and per chapter a sandboxed kernel that ran its solution notebook as the grader runs
it (every cell, or only the cells grading runs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = ROOT / "autograder" / "bookkeeping" / "pipeline.py"  # the instructor's pipeline, run as make runs it

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Each test worker (pytest -n) gets its share of the cores for its own torch and BLAS work (the hidden tests and
# their oracles run here, in the grader's place), as the grader's worker processes do (autograder/core/parallel.py): two
# workers with two threads each on two cores make OpenMP's waiting threads spin against the other worker's, and
# measured that way chapter 04's tests took more than twice the CPU time. Where a test asks for more threads
# (tests/test_pipeline_chapters.py grades with two), OpenMP's idle threads sleep instead of spinning: the same
# numbers, and beside a busy core the chapter 04 tests then took 42.6 s of CPU with two threads, not 65.8 s.
# Processes a test starts inherit both settings unless the test says otherwise; a run without workers, or a
# setting made outside, is left alone.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    from autograder.core.parallel import threads_per_job

    os.environ.setdefault("OMP_NUM_THREADS", str(threads_per_job(int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


# Every chapter; DLCOURSE_TEST_CHAPTERS="00_welcome 03_bert_mlm" narrows a run to some (keep 00: the pipeline
# tests grade a class on it).
_ONLY = os.environ.get("DLCOURSE_TEST_CHAPTERS", "").split()
CHAPTERS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir() and (not _ONLY or p.name in _ONLY))


def solution_notebook(chapter: str) -> Path:
    (path,) = sorted((ROOT / "solutions" / chapter).glob("*.ipynb"))
    return path


class TrustedSession:
    """A chapter's solution notebook as the grader runs it: cells in a sandboxed kernel, tests in this process.

    Every code cell runs (``skip`` False), or only those grading runs: the cells the release does not mark as
    ones nothing graded needs (autograder/core/needs.py; ``skip`` True, the grader's default). ``runs`` holds
    (cell, what the kernel reported) for each cell the kernel ran, in order: its errors and its stderr.
    """

    def __init__(self, chapter: str, skip: bool = False) -> None:
        import nbformat

        from autograder.core import needs, sandbox
        from autograder.core.trusted import GradingKernel, prelude_of

        self.chapter = chapter
        source = nbformat.read(solution_notebook(chapter), as_version=4)
        self.skipped = needs.skippable(source) if skip else set()
        cells = [c for i, c in enumerate(source.cells) if c.cell_type == "code" and i not in self.skipped]
        ok, _ = sandbox.bwrap_available()
        # warnings shown as a student's kernel shows them (the set-up cell sends them to stdout)
        self.kernel = GradingKernel(sandbox.Sandbox(unsafe=not ok), env={"OMP_NUM_THREADS": "1",
                                                                         "PYTHONWARNINGS": "default"})
        self.kernel.start()
        self.prelude = prelude_of(cells)
        self.tests: dict[str, str] = {}
        self.runs: list[tuple[nbformat.NotebookNode, object]] = []
        for cell in cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                self.tests[meta["grade_id"]] = cell.source
            else:
                run = self.kernel.run_cell(cell.source, 600, keep=False)
                self.runs.append((cell, run))
                assert run.status == "ok", f"{chapter}: cell {meta.get('grade_id')} failed: {run.error}"

    def test(self, grade_id: str):
        """Run one test cell in the grader against the kernel's current state."""
        return self.kernel.run_test(self.tests[grade_id], self.prelude, 600, grade_id)


def _cached(factory):
    """``get(chapter)`` building each session once; every kernel is closed when the tests end."""
    made: dict[str, object] = {}

    def get(chapter: str):
        if chapter not in made:
            made[chapter] = factory(chapter)
        return made[chapter]

    yield get
    for session in made.values():
        session.kernel.close()


@pytest.fixture(scope="session")
def trusted_session():
    """``trusted_session(name)`` → the (cached) chapter run in the grader's sandbox, every cell run."""
    yield from _cached(TrustedSession)


@pytest.fixture(scope="session")
def grading_session():
    """``grading_session(name)`` → the (cached) chapter run as grading runs it: the skippable cells left out."""
    yield from _cached(lambda chapter: TrustedSession(chapter, skip=True))


# Scheduling under `make test` (pytest -n N --dist loadgroup): with DLCOURSE_TEST_ORDER=longest, the longest unit
# first, from the durations a recorded run measured; each distributed run's own go to build/test-durations.json
# (tests/schedule.py).
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup" or os.environ.get("DLCOURSE_TEST_ORDER") != "longest":
        return None  # pytest-xdist's own order (see tests/schedule.py for why longest-first is opt-in)
    import schedule

    return schedule.make_scheduler(config, log)


_recorder = None


def pytest_runtest_logreport(report):
    global _recorder
    if getattr(report, "node", None) is not None:  # the controller of a distributed run
        import schedule

        _recorder = _recorder or schedule.Recorder()
        _recorder.add(report)


def pytest_sessionfinish(session):
    if _recorder is not None:
        _recorder.write()
