"""Where code runs and how long it may take: device choice, seeds, and the FAST switch.

FAST mode shrinks every training budget so that a whole notebook runs in seconds. It is on when

* ``DLCOURSE_FAST`` is set to a true value (``1``, ``true``, ``yes``, ``on``) — the test suite sets it;
* nbgrader is executing the notebook (it sets ``NBGRADER_EXECUTION`` while autograding or validating).

``DLCOURSE_FAST=0`` forces full mode even under nbgrader. ``DLCOURSE_PRESENTATION=1.6`` scales every
figure and widget for a projector (:mod:`dlcourse.presentation`).

A demo whose full training would not fit a chapter's time budget ships its trained checkpoint in ``data/``
and, in full mode, loads it unless asked to retrain (:func:`retraining`): a ``RETRAIN = True`` switch in the
notebook, ``DLCOURSE_RETRAIN=1``, or ``make checkpoints``.
"""

from __future__ import annotations

import os
import platform
import random
import sys
import time
import warnings
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import torch

from dlcourse import presentation as _presentation

T = TypeVar("T")

_TRUE, _FALSE = _presentation._TRUE, _presentation._FALSE


def is_fast() -> bool:
    """Return True when notebooks should use their small (FAST) budgets: ``DLCOURSE_FAST`` when it says,
    otherwise in lecture mode (:func:`lecture`) and under nbgrader."""
    flag = os.environ.get("DLCOURSE_FAST", "").strip().lower()
    if flag in _TRUE:
        return True
    if flag in _FALSE:
        return False
    return lecture() or bool(os.environ.get("NBGRADER_EXECUTION"))


def lecture() -> bool:
    """True in a lecture copy (``make lecture`` sets ``DLCOURSE_LECTURE``): every widget should answer within
    seconds of Run All, so FAST budgets apply, shipped results stand in for training, and a long demo runs only
    when its cell's switch is on (:func:`live`)."""
    return os.environ.get("DLCOURSE_LECTURE", "").strip().lower() in _TRUE


def live(switch: bool = False) -> bool:
    """Whether a long demo (a training run, a benchmark, a sweep) runs here: always, except in lecture mode,
    where it runs only when the cell's own switch (``RUN_LIVE = True``) is on and otherwise shows the result
    recorded by ``make checkpoints``."""
    return bool(switch) or not lecture()


def budget(full: T, fast: T) -> T:
    """Pick a budget (steps, epochs, sample count...): ``fast`` in FAST mode, ``full`` otherwise."""
    return fast if is_fast() else full


def retraining(switch: bool = False) -> bool:
    """Whether a demo that ships a checkpoint trains in full instead of loading it.

    True when the notebook's own switch is on, when ``DLCOURSE_RETRAIN`` is true, or while ``make
    checkpoints`` refreshes the shipped files (``DLCOURSE_SAVE_CHECKPOINTS=1``). FAST mode always trains (for
    seconds, to exercise the code) whatever this says; see :func:`trains`.
    """
    env = os.environ.get("DLCOURSE_RETRAIN", "").strip().lower() in _TRUE
    return bool(switch) or env or os.environ.get("DLCOURSE_SAVE_CHECKPOINTS", "").strip() == "1"


def trains(switch: bool = False) -> bool:
    """Whether a demo's training cell runs: always in FAST mode (a few seconds), in full mode only when
    :func:`retraining`; otherwise the shipped checkpoint stands in for the run. In lecture mode only when the
    cell's switch is on (:func:`live`)."""
    if lecture():
        return bool(switch)
    return is_fast() or retraining(switch)


def loads_shipped(switch: bool = False) -> bool:
    """Whether what follows a demo uses its shipped checkpoint rather than what the notebook trained: always
    in FAST mode (its seconds-long run only exercised the code), in full mode unless :func:`retraining`."""
    return is_fast() or not retraining(switch)


def get_device(prefer: str | None = None) -> torch.device:
    """The best available device: CUDA, then Apple MPS, then CPU.

    ``prefer`` (or the ``DLCOURSE_DEVICE`` environment variable) forces one, e.g. ``"cpu"`` to reproduce
    a CPU result on a GPU machine. Asking for a device that is not present raises ``RuntimeError``.
    """
    choice = prefer or os.environ.get("DLCOURSE_DEVICE")
    if choice:
        device = torch.device(choice)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("CUDA was requested but torch.cuda.is_available() is False")
        if device.type == "mps" and not _mps_available():
            raise RuntimeError("MPS was requested but this machine has no usable MPS backend")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def best_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of ``repeats`` runs of ``fn()``, in seconds (the least disturbed by other work)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


SEED_SHIFT = "DLCOURSE_SEED"  # moves every training seed: `make bench`'s full runs under a second seed


def shifted(seed: int) -> int:
    """``seed`` moved by ``DLCOURSE_SEED`` (an integer, 0 when unset): the seeds a chapter's training uses —
    :func:`seed_everything` and the batch orders of the package's training loops — so a whole run can be
    repeated under other seeds without editing a notebook. Data splits and test inputs keep their seeds."""
    raw = os.environ.get(SEED_SHIFT, "").strip()
    try:
        return seed + (int(raw) if raw else 0)
    except ValueError:
        raise ValueError(f"{SEED_SHIFT} must be an integer, got {raw!r}") from None


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and PyTorch (every device) and return a CPU generator seeded the same way (the seed
    moved by ``DLCOURSE_SEED`` when set: :func:`shifted`)."""
    seed = shifted(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    return torch.Generator().manual_seed(seed)


def _warning_to_stdout(message, category, filename, lineno, file=None, line=None) -> None:
    # nbgrader scores a test cell 0 when anything reaches stderr, so warnings are printed to stdout,
    # where students still see them.
    print(f"[{category.__name__}] {message}", file=sys.stdout)


class GradingTimeout(BaseException):
    """Raised in a graded kernel when a cell runs past the grader's time limit.

    It derives from BaseException, not KeyboardInterrupt, so ``except KeyboardInterrupt`` and
    ``except Exception`` in an answer cannot swallow it and hang the grading of the whole notebook.
    """


def cell_time_limit() -> float:
    """Seconds a cell may run under the grader (``DLCOURSE_CELL_TIMEOUT``, read by the nbgrader config too)."""
    return float(os.environ.get("DLCOURSE_CELL_TIMEOUT", "300"))


class _CellWatchdog:
    """Stops a cell that runs longer than ``limit`` seconds by raising GradingTimeout in the main thread.

    nbgrader would interrupt such a cell with SIGINT; an answer that swallows KeyboardInterrupt then
    keeps the kernel busy, and nbgrader gives up on the whole notebook. The watchdog acts first, at 90 %
    of the grader's limit, and repeats once a second until the cell ends.
    """

    def __init__(self, limit: float) -> None:
        import threading

        self.limit = limit
        self.started: float | None = None
        self.main_id = threading.main_thread().ident
        self.lock = threading.Lock()
        threading.Thread(target=self._watch, name="dlcourse-cell-watchdog", daemon=True).start()

    def pre_run_cell(self, *_args) -> None:
        import time

        with self.lock:
            self.started = time.monotonic()

    def post_run_cell(self, *_args) -> None:
        with self.lock:
            self.started = None

    def _watch(self) -> None:
        import ctypes
        import time

        while True:
            time.sleep(0.5)
            with self.lock:
                overdue = self.started is not None and time.monotonic() - self.started > self.limit
            if overdue:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.main_id),
                                                           ctypes.py_object(GradingTimeout))
                time.sleep(0.5)


_watchdog: _CellWatchdog | None = None


def _install_grading_watchdog() -> None:
    global _watchdog
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or _watchdog is not None:
        return
    _watchdog = _CellWatchdog(0.9 * cell_time_limit())
    shell.events.register("pre_run_cell", _watchdog.pre_run_cell)
    shell.events.register("post_run_cell", _watchdog.post_run_cell)


def setup_notebook(seed: int = 0, device: str | None = None, quiet: bool = False) -> torch.device:
    """What every chapter's locked set-up cell calls: seeds, device, warnings to stdout, offline hub, errors
    that name the inputs they met (:mod:`dlcourse.cases`) and figures shown with a text alternative
    (:mod:`dlcourse.figures`).

    Under nbgrader, a cell that runs past the time limit is stopped with :class:`GradingTimeout`.
    Returns the device the chapter should use.
    """
    if os.environ.get("NBGRADER_EXECUTION"):
        _install_grading_watchdog()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.showwarning = _warning_to_stdout
    from dlcourse import cases

    cases.install()  # an error inside a function a cell defines names the inputs it met
    from dlcourse import figures

    figures.install()  # every figure shown with its text alternative
    seed_everything(seed)
    dev = get_device(device)
    projector = _presentation.from_environment()
    if projector is not None:
        _presentation.scale(projector)
    if not quiet:
        mode = "FAST" if is_fast() else "full"
        shown = f" | projector scale {projector:g}" if projector is not None else ""
        print(f"device: {dev} | mode: {mode} | seed: {seed} | torch {torch.__version__}{shown}")
    return dev


def presentation(scale: float = _presentation.DEFAULT) -> float:
    """Projector scale for figures and widgets (see :mod:`dlcourse.presentation`); returns the factor."""
    return _presentation.scale(scale)


def environment_report() -> dict[str, str]:
    """Versions, device and threads, as a flat dict of strings (the welcome chapter shows it as a table)."""
    import importlib.metadata as md

    def version(dist: str) -> str:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "not installed"

    report = {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "torch": torch.__version__,
        "device": str(get_device()),
        "cpu threads (torch)": str(torch.get_num_threads()),
        "cpu cores (os)": str(os.cpu_count()),
        "FAST mode": str(is_fast()),
        "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "unset"),
    }
    for dist in ("numpy", "transformers", "datasets", "tokenizers", "ipywidgets", "nbgrader", "jupyterlab"):
        report[dist] = version(dist)
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        report["gpu"] = f"{props.name}, {props.total_memory / 2**30:.1f} GiB, CUDA {torch.version.cuda}"
    else:
        report["gpu"] = "none"
    return report
