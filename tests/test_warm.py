"""Kernels started ahead of time (autograder/core/warm.py): they have loaded the set-up cell's modules and nothing
else, each serves one submission, and a spare made for another chapter is not used."""

from __future__ import annotations

import json

import pytest

from autograder.core import sandbox, warm

pytestmark = pytest.mark.notebook

SETUP = "import torch\nfrom dlcourse import checks\nfrom dlcourse.checks import assert_close\n"
NAMES = "print(sorted(k for k in globals() if not k.startswith('_') and k not in ('In', 'Out', 'exit', 'quit', " \
        "'get_ipython', 'open')))"


def _sandbox():
    ok, _ = sandbox.bwrap_available()
    return sandbox.Sandbox(unsafe=not ok)


@pytest.fixture
def kernels():
    pool = warm.WarmKernels(_sandbox)
    yield pool
    pool.close()


def test_the_modules_of_a_setup_cell():
    assert warm.modules_of([SETUP, "import numpy as np\nfrom . import x", "import scipy\nsyntax error("]) == [
        "torch", "dlcourse", "dlcourse.checks", "dlcourse.checks.assert_close", "numpy"]


def test_a_warm_kernel_has_the_modules_and_no_names(kernels):
    assert kernels.take(SETUP) is None  # nothing was ready for the first submission
    kernel = kernels.take(SETUP)
    assert kernel is not None
    try:
        seen = kernel.run_cell("import sys, json\nprint(json.dumps(['torch' in sys.modules, "
                               "'dlcourse.checks' in sys.modules, 'dlcourse.grading.agent' in sys.modules]))", 60)
        assert seen.ok and json.loads(seen.stdout) == [True, True, True], seen
        names = kernel.run_cell(NAMES, 60)
        # what the set-up cell (run ahead, as grading runs it first) and this cell bound, nothing else
        assert names.ok and names.stdout.strip() == "['assert_close', 'checks', 'json', 'sys', 'torch']", names
        count = kernel.run_cell("print(get_ipython().execution_count)", 60)
        assert count.stdout.strip() == "5", count.stdout  # as after the set-up cell: the warm-up left no history
        assert kernel.setup_run[0] == SETUP and kernel.setup_run[1].ok
    finally:
        kernel.close()


def test_each_kernel_serves_one_submission(kernels):
    kernels.take(SETUP)
    first = kernels.take(SETUP)
    first.run_cell("import builtins\nbuiltins.LEFT_BEHIND = 1", 60)
    second = kernels.take(SETUP)
    try:
        assert second is not first and second.proc.pid != first.proc.pid
        seen = second.run_cell("import builtins\nprint(hasattr(builtins, 'LEFT_BEHIND'))", 60)
        assert seen.stdout.strip() == "False"
    finally:
        first.close()
        second.close()


def test_a_spare_made_for_another_chapter_is_not_used(kernels):
    kernels.take(SETUP)
    assert kernels.take("import math\n") is None
    other = kernels.take("import math\n")
    assert other is not None
    other.close()


def test_no_spare_is_started_when_nothing_comes_next(kernels):
    assert kernels.take(SETUP, upcoming=None) is None
    assert kernels._spare is None  # no kernel started for nobody
    kernels.take(SETUP, upcoming="import math\n")
    other = kernels.take("import math\n", upcoming=None)
    assert other is not None and kernels._spare is None
    other.close()


def test_each_payload_is_told_what_its_worker_grades_next():
    from autograder.core import parallel

    def payload(chapter: str) -> dict:
        cell = {"cell_type": "code", "source": f"import {chapter}", "metadata": {"nbgrader": {"grade_id": "setup"}}}
        return {"release": json.dumps({"cells": [cell]}).encode()}

    payloads = [payload("a"), payload("a"), payload("b"), payload("b")]
    parallel.hint_upcoming(payloads, jobs=2)
    assert [p["upcoming"] for p in payloads] == ["import b", "import b", None, None]
    parallel.hint_upcoming(payloads, jobs=1)
    assert [p["upcoming"] for p in payloads] == ["import a", "import b", "import b", None]
