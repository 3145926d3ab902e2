"""Grading many submissions at once: on this machine's cores or on a Dask cluster, with a single writer.

Each submission is graded by :func:`grade_payload`, a pure step: the submitted file, the release and the
source notebook go in as bytes; the scores, the messages and the autograded notebook come back as JSON-able
data. It runs in a worker process on this machine (``make autograde JOBS=N``) or on any Dask worker started
from a set-up checkout of this repository (``make autograde SCHEDULER=tcp://host:8786``). Only the
instructor's process writes results and the gradebook (:mod:`pipeline`), in whatever order they arrive, so
nothing is lost or overwritten.

A worker that dies while grading (killed for memory, a crash in the grader itself) costs a retry, then that
submission alone: it is reported as failed with the reason and the other submissions are graded.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the repository: workers import `autograder` from it


@dataclass(frozen=True)
class Job:
    """One submission to grade, as paths on the instructor's machine."""

    student: str
    chapter: str
    submission: Path
    release: Path
    source: Path

    def fingerprint(self) -> str:
        """Changes when the submission, the release or the tests change (and only then)."""
        digest = hashlib.sha256()
        for path in (self.submission, self.release, self.source):
            digest.update(path.read_bytes())
            digest.update(b"\0")
        digest.update(self.oracles().encode())
        return digest.hexdigest()

    def submission_digest(self) -> str:
        """Changes when the submitted file does (and only then): what a manual grade was given against."""
        return hashlib.sha256(self.submission.read_bytes()).hexdigest()

    def oracles(self) -> str:
        """The chapter's oracle declarations (:mod:`oracles`), as text."""
        from autograder.core import oracles

        return oracles.chapter_text(self.chapter)

    def payload(self, cell_timeout: float, submission_timeout: float, unsafe: bool) -> dict[str, Any]:
        """Everything a worker needs, as plain data: no path on this machine has to exist there."""
        return {"student": self.student, "chapter": self.chapter, "name": self.submission.name,
                "submission": self.submission.read_bytes(), "release": self.release.read_bytes(),
                "source": self.source.read_bytes(), "oracles": self.oracles(), "cell_timeout": cell_timeout,
                "submission_timeout": submission_timeout, "unsafe": unsafe}


def _peak_mb(who: int) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)  # Linux reports KiB


_WARM: dict[bool, Any] = {}  # unsafe → this process's warm.WarmKernels


def warm_kernels(unsafe: bool):  # noqa: ANN201 - warm.WarmKernels, imported late
    """This process's source of kernels started ahead of time (one spare, made ready while it grades)."""
    if unsafe not in _WARM:
        from autograder.core import sandbox, warm

        _WARM[unsafe] = warm.WarmKernels(lambda: sandbox.Sandbox(unsafe=unsafe))
    return _WARM[unsafe]


def grade_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Grade one submission anywhere this repository's code can be imported; returns plain data.

    The kernel comes warm (:mod:`warm`) unless the payload says ``"warm": False``; ``"upcoming"`` is the set-up
    cell of the submission this worker will likely grade next (None: none comes), for the kernel it starts
    meanwhile."""
    import nbformat

    from autograder.core import grade, oracles, sandbox

    with tempfile.TemporaryDirectory(prefix="dlcourse-job-") as tmp:
        paths = {}
        for key, name in (("release", "release.ipynb"), ("source", "source.ipynb"),
                          ("submission", Path(payload["name"]).name or "submission.ipynb")):
            paths[key] = Path(tmp) / key / name
            paths[key].parent.mkdir()
            paths[key].write_bytes(payload[key])
        result, notebook = grade.grade(
            paths["release"], paths["submission"], paths["source"], student=payload["student"],
            chapter=payload["chapter"], sandbox=sandbox.Sandbox(unsafe=payload["unsafe"]),
            declarations=({ex: o for (_, ex), o in oracles.parse(payload["oracles"]).items()}
                          if "oracles" in payload else None),
            cell_timeout=payload["cell_timeout"], submission_timeout=payload["submission_timeout"],
            all_cells=payload.get("all_cells", False), upcoming=payload.get("upcoming", ""),
            kernels=warm_kernels(payload["unsafe"]) if payload.get("warm", True) else None)
    return {"result": result.to_json(), "notebook": nbformat.writes(notebook), "worker": platform.node(),
            "grader_peak_mb": _peak_mb(resource.RUSAGE_SELF), "kernel_peak_mb": result.kernel_peak_mb}


def failure(payload: dict[str, Any], why: str) -> dict[str, Any]:
    """What comes back for a submission whose grading could not finish: no scores, the reason."""
    return {"result": {"student": payload["student"], "chapter": payload["chapter"], "tests": [],
                       "error": why}, "notebook": None}


# ------------------------------------------------------------------------------------------- executors


class InProcess(cf.Executor):
    """``JOBS=1``: grade here, one submission after the other (the same interface as a pool; ``submit``
    grades at once, so :func:`run` gives it one submission at a time)."""

    window = 1

    def submit(self, fn, /, *args, **kwargs):  # noqa: ANN001, ANN201 - cf.Executor's signature
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(err)
        return future


def threads_per_job(jobs: int) -> int:
    """This machine's cores shared among ``jobs`` processes at a time: each one's thread count (at least one)."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def _init_worker(threads: int) -> None:
    """Each worker (and the kernels it starts) uses its share of the cores, not all of them."""
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[key] = str(threads)
    import torch

    torch.set_num_threads(threads)


def local_pool(jobs: int) -> Callable[[], cf.Executor]:
    """A factory of executors for ``jobs`` submissions at a time on this machine."""
    if jobs <= 1:
        return InProcess
    threads = threads_per_job(jobs)
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing inherited from this one
    return lambda: cf.ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker, initargs=(threads,))


def dask_pool(scheduler: Any, jobs: int = 1) -> tuple[Callable[[], cf.Executor], Callable[[], None]]:
    """Executors on a Dask cluster, and the function that closes the connection.

    ``scheduler`` is an address (``tcp://host:8786``), a cluster object, or ``"local"`` for a
    ``LocalCluster`` of ``jobs`` single-threaded workers on this machine (the path the tests take).
    """
    from distributed import Client, LocalCluster

    if scheduler == "local":
        threads = str(threads_per_job(jobs))
        env = {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                               dashboard_address=None, env=env)
        client = Client(cluster)
        return (lambda: client.get_executor(pure=False)), (lambda: (client.close(), cluster.close()))
    try:
        client = Client(scheduler, timeout=float(os.environ.get("DLCOURSE_SCHEDULER_TIMEOUT", "30")))
    except (OSError, TimeoutError) as err:
        raise ConnectionError(f"no Dask scheduler answered at {scheduler}: {err}") from err
    return (lambda: client.get_executor(pure=False)), client.close


# ------------------------------------------------------------------------------------------------ run


def setup_cell(release: bytes) -> str:
    """The set-up cell's source of a release notebook (its bytes); "" when it has none."""
    from autograder.core import warm

    return warm.setup_source(json.loads(release).get("cells", []))


def hint_upcoming(payloads: list[dict[str, Any]], jobs: int) -> None:
    """Tell each payload what its worker will likely grade next: the payload ``jobs`` places on (workers take
    them in order), or nothing for the last ``jobs`` — so that no worker starts a kernel nobody will use."""
    setups: dict[bytes, str] = {}
    for i, payload in enumerate(payloads):
        later = payloads[i + jobs] if i + jobs < len(payloads) else None
        if later is not None and later["release"] not in setups:
            setups[later["release"]] = setup_cell(later["release"])
        payload["upcoming"] = setups[later["release"]] if later is not None else None


def run(payloads: list[dict[str, Any]], make_executor: Callable[[], cf.Executor], retries: int = 1,
        ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Grade every payload; yields ``(index, outcome)`` as each finishes, in no particular order.

    A grader exception becomes that submission's failure. When a local worker dies, the pool is rebuilt and
    the submissions it was grading are sent again, at most ``retries`` times each. An executor with a
    ``window`` (``InProcess``: 1) is given that many submissions at a time, so each result is recorded
    (and a stopped run keeps it) before the next is graded.
    """
    pending = dict(enumerate(payloads))
    tries = dict.fromkeys(pending, 0)
    while pending:
        executor = make_executor()
        waiting = iter(list(pending))
        window = getattr(executor, "window", None) or len(pending)
        futures: dict[cf.Future, int] = {}
        broken: set[int] = set()
        try:
            while True:
                while not broken and len(futures) < window and (i := next(waiting, None)) is not None:
                    futures[executor.submit(grade_payload, pending[i])] = i
                if not futures:
                    break
                done, _ = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    i = futures.pop(future)
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        broken.add(i)
                        continue
                    except Exception as err:  # noqa: BLE001 - one submission's failure, not the run's
                        outcome = failure(pending[i], f"the grader failed on this submission: "
                                                      f"{type(err).__name__}: {err}"[:2000])
                    del pending[i]
                    yield i, outcome
        finally:
            try:
                executor.shutdown(wait=not broken, cancel_futures=True)
            except TypeError:  # Dask's executor has no cancel_futures
                executor.shutdown(wait=not broken)
        for i in broken:  # only what the dead pool was grading counts a try
            tries[i] += 1
            if tries[i] > retries:
                yield i, failure(pending.pop(i), f"a grading worker died while this submission was being "
                                                 f"graded ({tries[i]} times); it was not graded")


class Progress:
    """Counts, rate and time left on stderr (tqdm); a line per hundredth when stderr is not a terminal."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="submission", disable=not enabled or total == 0, file=sys.stderr,
                        mininterval=0.5 if sys.stderr.isatty() else 30, dynamic_ncols=True, smoothing=0.1)
        self.failed = self.review = 0
        self.start = time.monotonic()

    def update(self, result: Any) -> None:
        self.failed += bool(result.error)
        self.review += bool(result.flagged)
        self.bar.set_postfix(failed=self.failed, review=self.review, refresh=False)
        self.bar.update(1)

    def close(self) -> float:
        self.bar.close()
        return time.monotonic() - self.start
