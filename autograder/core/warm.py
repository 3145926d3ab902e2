"""Kernels started ahead of the submission that will use them.

A new submission should not wait for Python to start and for ``import torch``. While one submission is
graded, the next one's kernel is started in the sandbox, loads the modules its chapter's set-up cell imports
(``importlib.import_module`` of release code, in a silent cell that binds no name and leaves no history) and
then runs that set-up cell itself, as grading runs it first (its outputs kept in ``setup_run``). Nothing of
any student has run in it. Each kernel still serves one submission only: :meth:`WarmKernels.take` hands it
out and never takes it back.
"""

from __future__ import annotations

import ast
import atexit
import threading
from collections.abc import Callable, Iterable

from autograder.core.sandbox import Sandbox
from autograder.core.trusted import CellRun, GradingKernel

WARM_TIMEOUT = 300.0
# What every submission's tests load in the kernel: the agent the grader talks to (run_test imports it on the
# first test). Not torch._dynamo (1.5-4 s on a 2-core machine): checks.forbid's operator mode no longer makes torch
# import it, and a test that needs it (an optimizer's zero_grad) loads it where it is used.
ALWAYS = ("dlcourse.grading.agent",)


def setup_source(cells: Iterable[dict]) -> str:
    """The source of the set-up cell (grade id ``setup``) among a notebook's cells, nbformat's or the raw
    JSON's (whose source may be a list of lines); "" when there is none."""
    for cell in cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "setup":
            source = cell["source"]
            return "".join(source) if isinstance(source, list) else source
    return ""


def modules_of(sources: Iterable[str]) -> list[str]:
    """The modules the import statements of ``sources`` load (``from a import b`` gives ``a`` and ``a.b``,
    which may be a module; the warm cell passes over it when it is not)."""
    found: list[str] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                found += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module)
                found += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    return list(dict.fromkeys(found))


class WarmKernels:
    """One spare kernel, made ready in a thread while the caller grades with the previous one.

    The spare loads the modules of the set-up cell it was asked for last: submissions come chapter by
    chapter (the pipeline orders them so), and a chapter-00 kernel need not load what chapter 04 imports.
    """

    def __init__(self, make_sandbox: Callable[[], Sandbox], env: dict[str, str] | None = None) -> None:
        self.make_sandbox, self.env = make_sandbox, env
        self._spare: tuple[str, GradingKernel, threading.Thread, list] | None = None
        self._lock = threading.Lock()
        atexit.register(self.close)

    def _prepare(self, setup: str) -> None:
        kernel = GradingKernel(self.make_sandbox(), env=self.env)
        code = _warm_cell([*modules_of([setup]), *ALWAYS])
        outcome: list[CellRun] = []

        def ready() -> None:
            try:
                kernel.wait_ready()
                outcome.append(kernel.run_cell(code, WARM_TIMEOUT, keep=False, silent=True))
                if outcome[0].ok and setup:  # the release's own set-up cell, as grading would run it first
                    kernel.setup_run = (setup, kernel.run_cell(setup, WARM_TIMEOUT))
            except Exception as err:  # noqa: BLE001 - KernelDied, or closed meanwhile: the spare is not used
                outcome.append(CellRun(status="died", error=(type(err).__name__, str(err))))

        try:
            kernel.launch()  # here: the kernel lives as long as this thread (bubblewrap's --die-with-parent)
        except OSError:
            kernel.close()
            return
        thread = threading.Thread(target=ready, name="warm-kernel", daemon=True)
        thread.start()
        self._spare = (setup, kernel, thread, outcome)

    def take(self, setup: str, upcoming: str | None = "") -> GradingKernel | None:
        """A started kernel that has loaded the modules ``setup`` (a set-up cell's source) imports; None when
        there is no such spare (the first call, another chapter's, or one that failed): then start a kernel
        the usual way. A spare for the next submission is started meanwhile: for ``upcoming`` (its set-up
        cell; "" when not known: the same as this one), none when ``upcoming`` is None (nothing comes next)."""
        with self._lock:
            spare, self._spare = self._spare, None
            if upcoming is not None:
                self._prepare(upcoming or setup)
        if spare is None:
            return None
        made_for, kernel, thread, outcome = spare
        if made_for != setup:
            kernel.close()
            return None
        thread.join()
        ran = kernel.setup_run
        if not outcome or not outcome[0].ok or not kernel.alive() or setup and (ran is None or not ran[1].ok):
            kernel.close()
            return None
        return kernel

    def close(self) -> None:
        """End the spare (at exit, and whenever grading is over)."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            _, kernel, thread, _ = spare
            kernel.close()
            thread.join(timeout=30)


def _warm_cell(modules: Iterable[str]) -> str:
    """The silent cell a spare kernel runs: every module imported, nothing left in the namespace."""
    names = sorted(set(modules))
    return (f"for __dlcourse_module in {names!r}:\n"
            "    try:\n"
            "        __import__('importlib').import_module(__dlcourse_module)\n"
            "    except ImportError:\n"
            "        pass\n"
            "del __dlcourse_module\n")
