"""Grading many submissions (autograder/core/parallel.py): failures stay with their submission, workers that die
are replaced, and a Dask cluster grades exactly as this machine does."""

from __future__ import annotations

import concurrent.futures as cf
import json
import shutil
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool

import nbformat
import pytest
from conftest import ROOT
from test_pipeline import CHAPTER, _env, _run

from autograder.core import parallel  # noqa: E402  (the repository is on sys.path, see conftest)


def _payload(student, **extra):
    return {"student": student, "chapter": CHAPTER, **extra}


def _fake_grader(payload):
    if payload.get("raises"):
        raise ValueError("a bug in the grader")
    if payload.get("breaks"):
        raise BrokenProcessPool("the worker died")
    return {"result": {"student": payload["student"], "chapter": CHAPTER, "tests": [], "error": ""},
            "notebook": "{}"}


@pytest.fixture
def fake_grader(monkeypatch):
    monkeypatch.setattr(parallel, "grade_payload", _fake_grader)


def test_a_grader_exception_fails_only_its_submission(fake_grader):
    payloads = [_payload("a"), _payload("b", raises=True), _payload("c")]
    got = dict(parallel.run(payloads, parallel.InProcess))
    assert sorted(got) == [0, 1, 2]
    assert got[0]["result"]["error"] == got[2]["result"]["error"] == ""
    assert "ValueError: a bug in the grader" in got[1]["result"]["error"]
    assert got[1]["notebook"] is None


def test_a_dying_worker_is_retried_then_reported(fake_grader):
    made = []

    def factory():
        made.append(1)
        return parallel.InProcess()

    payloads = [_payload("a"), _payload("dies", breaks=True), _payload("c")]
    got = dict(parallel.run(payloads, factory, retries=1))
    assert sorted(got) == [0, 1, 2]
    assert len(made) == 3  # a new pool for the retry, and one for "c", which no dead pool had started
    assert "died" in got[1]["result"]["error"] and "2 times" in got[1]["result"]["error"]
    assert got[0]["result"]["error"] == got[2]["result"]["error"] == ""


def test_one_at_a_time_each_result_arrives_before_the_next_is_graded(monkeypatch):
    """With JOBS=1 a result is handed over (and recorded) as soon as it is graded: a run stopped half-way
    keeps what it graded."""
    graded = []

    def grader(payload):
        graded.append(payload["student"])
        return _fake_grader(payload)

    monkeypatch.setattr(parallel, "grade_payload", grader)
    seen = []
    for _, outcome in parallel.run([_payload(s) for s in "abc"], parallel.InProcess):
        seen.append((outcome["result"]["student"], list(graded)))
    assert seen == [("a", ["a"]), ("b", ["a", "b"]), ("c", ["a", "b", "c"])]


def test_every_result_arrives_exactly_once_from_a_process_pool():
    """Real worker processes (spawned), with payloads that fail before any kernel starts."""
    payloads = [_payload(f"s{i}", name="x.ipynb", submission=b"{}", release=b"not json", source=b"{}",
                         cell_timeout=5, submission_timeout=5, unsafe=True) for i in range(4)]
    got = list(parallel.run(payloads, parallel.local_pool(2)))
    assert sorted(i for i, _ in got) == [0, 1, 2, 3]
    assert all("the grader failed on this submission" in out["result"]["error"] for _, out in got)


@pytest.fixture(scope="module")
def small_class(tmp_path_factory):
    """Three chapter-00 submissions: right, one that hangs and one whose kernel runs out of memory."""
    from test_pipeline import _save, answers_from_solution, submission

    root = tmp_path_factory.mktemp("class")
    good = answers_from_solution(CHAPTER)
    _save(root, "right", CHAPTER, submission(CHAPTER, good))
    _save(root, "hangs", CHAPTER, submission(CHAPTER, dict(good, ce_answer=good["ce_answer"] + (
        "\nimport time\nwhile True:\n    time.sleep(0.05)"))))
    _save(root, "eats_memory", CHAPTER, submission(CHAPTER, dict(good, sgd_answer=good["sgd_answer"] + (
        "\n_hoard = [torch.ones(2 ** 27) for _ in range(400)]"))))  # 200 GB, past the sandbox's limit
    return root


def _scores(root):
    out = {}
    for path in (root / "results").glob("*.json"):
        data = json.loads(path.read_text())
        out[data["student"]] = {t["grade_id"]: t["score"] for t in data["tests"]}
    return out


def test_dask_grades_as_this_machine_does(small_class, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(small_class / "submitted", copy / "submitted")
    # 20 s a cell: a hang is still cut off, and an honest cell does not run out of time while the rest of the
    # suite loads both cores (at 10 s, the set-up cell of a restarted kernel timed out under a load of 10)
    # 3 GiB a kernel (chapter 00 needs about 0.35): the hoarder reaches the limit in seconds, not after 8 GiB
    limits = {"DLCOURSE_CELL_TIMEOUT": "20", "DLCOURSE_GRADING_MEMORY": str(3 << 30)}
    # both at once, in folders of their own: most of each run is a hang waiting out its 20 s
    with cf.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(_run, small_class, "autograde", "--jobs", "1", **limits),
                pool.submit(_run, copy, "autograde", "--scheduler", "local", "--jobs", "2", **limits)]
        local, dask = (run.result() for run in runs)
    assert local.returncode == 0, local.stdout + local.stderr
    assert dask.returncode == 0, dask.stdout + dask.stderr
    assert "3 graded, 0 failed" in dask.stdout, dask.stdout
    serial, distributed = _scores(small_class), _scores(copy)
    assert serial == distributed and len(serial) == 3, (serial, distributed)
    assert all(score > 0 for gid, score in serial["right"].items() if not gid.endswith("_answer"))
    assert serial["hangs"]["ce_hidden"] == 0 and serial["hangs"]["sgd_hidden"] > 0  # only its exercise lost
    assert serial["eats_memory"]["sgd_hidden"] == 0 and serial["eats_memory"]["softmax_hidden"] > 0
    graded = nbformat.read(copy / "autograded" / "right" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    assert graded.cells, "the autograded notebook came back from the worker"
    data = json.loads((copy / "results" / f"right__{CHAPTER}.json").read_text())
    assert data["grader_peak_mb"] > 0 and data["kernel_peak_mb"] > 0 and data["fingerprint"]


def test_the_gradebook_records_a_chapter_again_only_when_it_changed(small_class):
    """Each make autograde recorded all chapters (about 25 s); now only those whose notebooks changed (of the
    chapters it grades: here chapter 00, which the class above was graded on)."""
    code = f"from autograder.bookkeeping import pipeline; print(pipeline.sync_gradebook([{CHAPTER!r}]))"

    def sync():
        done = subprocess.run([sys.executable, "-c", code], env=_env(small_class), cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    sync()  # whatever the tests before left
    assert sync() == "[]"
    stamp = small_class / ".gradebook-sync.json"
    stamps = json.loads(stamp.read_text())
    (db,) = stamps
    stamps[db][CHAPTER] = "an older release"
    stamp.write_text(json.dumps(stamps))
    assert sync() == f"[{CHAPTER!r}]"
    assert sync() == "[]"


def test_unknown_scheduler_is_a_clear_error(small_class):
    result = _run(small_class, "autograde", "--scheduler", "tcp://127.0.0.1:9", "--force", timeout=120,
                  DLCOURSE_SCHEDULER_TIMEOUT="3")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "scheduler" in (result.stdout + result.stderr).lower(), \
        result.stderr[-2000:]


def test_executor_interface_is_concurrent_futures():
    assert isinstance(parallel.InProcess(), cf.Executor)
