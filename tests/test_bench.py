"""`make bench` reports every training demo: a run that records itself in the kernel reaches the results."""

from __future__ import annotations

import importlib.util
import json
import os

import nbformat
import pytest
from conftest import ROOT

from dlcourse import training
from dlcourse.vae import train as vae
from dlcourse.vit import train as vision


def _script(name: str):
    """``bench/<name>.py`` as a module (the benchmarks are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bench():
    return _script("run")


@pytest.mark.notebook
def test_a_full_mode_run_returns_the_training_runs_of_its_notebook(tmp_path):
    bench = _bench()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from dlcourse import runtime, training\n"
        "assert not runtime.is_fast()\n"
        "training.record_run('toy', steps=4, seconds=2.0, metric_name='accuracy', metric=0.75, items=40)\n"
        "training.record_run('toy, no eval', steps=1, seconds=1.0, metric_name='accuracy', metric=float('nan'))\n"
        "training.record_run('toy', steps=2, seconds=1.0, metric_name='accuracy', metric=0.5)")])
    path = tmp_path / "99_toy.ipynb"
    nbformat.write(nb, path)
    os.environ.pop(training.RUN_LOG, None)
    was = os.environ.get("DLCOURSE_FAST")
    seconds, runs = bench.full_mode_run(path)
    assert seconds > 0
    assert runs == {
        "99_toy · toy": {"steps": 4, "seconds": 2.0, "metric": "accuracy", "value": 0.75, "tokens_per_s": 20.0},
        "99_toy · toy, no eval": {"steps": 1, "seconds": 1.0, "metric": "accuracy", "value": None},
        "99_toy · toy #2": {"steps": 2, "seconds": 1.0, "metric": "accuracy", "value": 0.5}}
    assert bench.RUN_LOG == training.RUN_LOG
    # the environment is as it was: later notebooks of the benchmark do not record into a stale file, and later
    # tests in this process do not inherit full mode
    assert bench.RUN_LOG not in os.environ and os.environ.get("DLCOURSE_FAST") == was


def test_the_course_training_loops_record_their_runs(tmp_path, monkeypatch):
    """Chapters 03 and 05-08 train with loops of the package; each records steps, time, throughput, result."""
    import torch

    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv(training.RUN_LOG, str(log))
    torch.manual_seed(0)
    x = torch.rand(32, 6)
    vae.train_autoencoder(vae.Autoencoder(2, data_dim=6, hidden=(4,)), x, steps=3, batch_size=8)
    labels = (x[:, 0] > 0.5).long()
    vision.fit_for(torch.nn.Linear(6, 2), x, labels, seconds=60, max_steps=4, test=(x, labels), batch_size=8)
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["run"] for r in runs] == ["Autoencoder", "Linear, 14 parameters"], runs
    assert runs[0]["steps"] == 3 and runs[0]["images_per_s"] > 0 and runs[0]["value"] > 0
    assert runs[1]["steps"] == 4 and runs[1]["metric"] == "held-out accuracy" and 0 <= runs[1]["value"] <= 1



def _full_runs():
    return _script("full_runs")


@pytest.mark.notebook
def test_a_full_run_records_errors_stderr_and_claims_and_goes_on_past_an_error(tmp_path, monkeypatch):
    full_runs = _full_runs()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in (
        "import os, sys\nfrom dlcourse import claims, runtime\nassert not runtime.is_fast()",
        "raise ValueError('the demo broke')",
        "print('careful', file=sys.stderr)",
        "claims.claim('seed shift', runtime.shifted(0), '1', 0)\n"
        "claims.claim('threads', float(os.environ['OMP_NUM_THREADS']), '2', 0)")])
    path = tmp_path / "99_toy.ipynb"
    nbformat.write(nb, path)
    for name in ("DLCOURSE_FAST", "DLCOURSE_SEED", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, os.environ.get(name, ""))  # run_one sets them for its kernel; put them back after
    record = full_runs.run_one(path, seed=1, threads=2, timeout=120)
    assert record["seconds"] > 0
    assert record["errors"] == ["code cell 2: ValueError: the demo broke"]
    assert record["stderr"] == ["code cell 3: careful"]
    assert [(c["what"], c["value"]) for c in record["claims"]] == [("seed shift", 1.0), ("threads", 2.0)]
    again = {**record, "claims": [{**c, "measured": c["measured"] + 0.5} for c in record["claims"]]}
    table = full_runs.spread({"a": record, "b": again})
    assert table["seed shift"] == {"stated": "1", "tolerance": 0, "values": {"a": 1.0, "b": 1.5}, "min": 1.0,
                                   "max": 1.5, "spread": 0.5, "median": 1.25}


def test_the_spread_table_lists_what_moved_and_counts_what_did_not():
    full_runs = _full_runs()

    def claim(what, stated, measured):
        return {"what": what, "stated": stated, "value": measured, "tolerance": 0.01, "measured": measured,
                "source": "measured here"}

    runs = {"a": {"claims": [claim("accuracy", "96.0 %", 0.945), claim("count", "121", 121.0)]},
            "b": {"claims": [claim("accuracy", "96.0 %", 0.972), claim("count", "121", 121.0)]}}
    table = full_runs.spread_table({"chapters": {"02_transformer_blocks": {"runs": runs,
                                                                           "claims": full_runs.spread(runs)}}})
    assert "| 02 | accuracy | 96.0 % | 94.5 % – 97.2 % | 2 |" in table
    assert "count" not in table.split("\n\n")[0] and table.rstrip().endswith("02: 1.")


def test_the_maintainers_guide_shows_the_spread_the_full_runs_recorded():
    full_runs = _full_runs()
    recorded = json.loads((ROOT / "bench" / "results" / "full-runs.json").read_text())
    guide = (ROOT / "docs" / "guides" / "maintainers.md").read_text()
    shown = guide.split("<!-- full-runs table:", 1)[1].split("-->", 1)[1]
    shown = shown.split("<!-- end of the full-runs table -->")[0]
    assert shown.strip() == full_runs.spread_table(recorded).strip(), \
        "the Maintainers' guide's spread table is not bench/results/full-runs.json's: run `bench/full_runs.py --table`"
    assert all(not run["errors"] for entry in recorded["chapters"].values() for run in entry["runs"].values()), \
        "a full-mode run recorded an error"


def test_gpu_check_says_there_is_no_gpu_and_writes_nothing(capsys, tmp_path, monkeypatch):
    gpu = _script("gpu")
    monkeypatch.setattr(gpu, "RESULTS", tmp_path / "gpu.json")
    assert gpu.main([], cuda=False) == 0
    assert "no CUDA device here" in capsys.readouterr().out and not (tmp_path / "gpu.json").exists()


@pytest.mark.notebook
def test_gpu_check_measures_and_records_a_chapter(capsys, tmp_path, monkeypatch):
    """The GPU run's logic, on the CPU: chapter 00 in full mode and graded, with DLCOURSE_DEVICE=cpu."""
    gpu = _script("gpu")
    monkeypatch.setattr(gpu, "RESULTS", tmp_path / "gpu.json")
    for name in ("DLCOURSE_FAST", "DLCOURSE_DEVICE"):
        monkeypatch.setenv(name, os.environ.get(name, ""))  # the runs set them for their kernels; put them back
    monkeypatch.setattr(gpu, "full_mode_on_gpu", lambda ch, real=gpu.full_mode_on_gpu: real(ch, device="cpu"))
    monkeypatch.setattr(gpu, "graded_on_gpu", lambda ch, real=gpu.graded_on_gpu: real(ch, device="cpu"))
    import torch

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "no GPU (a test)")
    assert gpu.main(["00_welcome"], cuda=True) == 0
    entry = json.loads((tmp_path / "gpu.json").read_text())["chapters"]["00_welcome"]
    run, graded = entry["full mode"], entry["graded"]
    assert run["seconds"] > 0 and run["errors"] == [] and run["peak_gpu_mib"] is None  # no GPU, no peak
    assert [c["stated"] for c in run["claims"]] == ["1,797", "64"]
    assert graded["tests lost"] == [] and graded["error"] == ""
    assert "00_welcome: full mode" in capsys.readouterr().out
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(gpu.READ_PEAK)])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{gpu.PEAK} 3145728\n")]
    assert gpu.peak_bytes(nb) == 3 * 2**20
