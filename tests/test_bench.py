"""`make bench` reports every training demo: a run that records itself in the kernel reaches the results."""

from __future__ import annotations

import importlib.util
import os

import nbformat
import pytest
from conftest import ROOT

from dlcourse import training

pytestmark = pytest.mark.notebook


def _bench():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_full_mode_run_returns_the_training_runs_of_its_notebook(tmp_path):
    bench = _bench()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from dlcourse import runtime, training\n"
        "assert not runtime.is_fast()\n"
        "training.record_run('toy', steps=4, seconds=2.0, metric_name='accuracy', metric=0.75, items=40)\n"
        "training.record_run('toy, no eval', steps=1, seconds=1.0, metric_name='accuracy', metric=float('nan'))")])
    path = tmp_path / "99_toy.ipynb"
    nbformat.write(nb, path)
    seconds, runs = bench.full_mode_run(path)
    assert seconds > 0
    assert runs == {
        "99_toy · toy": {"steps": 4, "seconds": 2.0, "metric": "accuracy", "value": 0.75, "tokens_per_s": 20.0},
        "99_toy · toy, no eval": {"steps": 1, "seconds": 1.0, "metric": "accuracy", "value": None}}
    assert bench.RUN_LOG == training.RUN_LOG
    assert bench.RUN_LOG not in os.environ  # later notebooks of the benchmark do not record into a stale file
