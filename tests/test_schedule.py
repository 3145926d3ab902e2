"""tests/schedule.py: the longest unit of tests goes first, and each distributed run records its units' times."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import schedule


def test_a_unit_is_the_group_else_the_test():
    assert schedule.unit_of("tests/test_hub.py::test_x@hub") == "hub"
    assert schedule.unit_of("tests/test_a.py::test_b[x@y]") == "tests/test_a.py::test_b[x@y]"
    assert schedule.unit_of("tests/test_a.py::test_b[x@y]@group") == "group"
    assert schedule.unit_of("tests/test_a.py::test_b") == "tests/test_a.py::test_b"


def test_longest_first_uses_recorded_seconds_then_a_guess_per_test():
    units = {"many": 5, "long": 1, "quick": 1, "unknown": 3, "tie": 1}
    order = schedule.longest_first(units, {"many": 10.0, "long": 300.0, "quick": 0.5, "tie": 0.5})
    assert order == ["long", "many", "unknown", "quick", "tie"]  # unknown: 3 tests × 2 s; ties keep their order


class _Node:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indexes) -> None:
        self.sent.append(list(indexes))

    def shutdown(self) -> None:
        self.shutting_down = True


def _scheduled(durations: dict[str, float]) -> tuple[list[str], _Node, _Node]:
    config = SimpleNamespace(getvalue=lambda name: ["2*popen"] if name == "tx" else None,
                             option=SimpleNamespace(loadscopereorder=True))
    collection = [f"t.py::m{i}@many" for i in range(5)] + ["t.py::l@long", "t.py::free"]
    sched = schedule.make_scheduler(config, None, durations)
    first, second = _Node("gw0"), _Node("gw1")
    for node in (first, second):
        sched.add_node(node)
    for node in (first, second):
        sched.add_node_collection(node, collection)
    sched.schedule()
    return collection, first, second


def test_the_scheduler_hands_the_longest_unit_out_first():
    collection, first, second = _scheduled({"many": 20.0, "long": 400.0, "t.py::free": 1.0})
    assert [collection[i] for i in first.sent[0]] == ["t.py::l@long"]
    assert [collection[i] for i in second.sent[0]] == [f"t.py::m{i}@many" for i in range(5)]
    # without recorded times pytest-xdist's own order (most tests first) is kept
    collection, first, _ = _scheduled({})
    assert [collection[i] for i in first.sent[0]] == [f"t.py::m{i}@many" for i in range(5)]


def test_the_recorder_sums_each_unit_and_keeps_each_worker_s_timeline(tmp_path):
    recorder = schedule.Recorder()
    node = SimpleNamespace(gateway=SimpleNamespace(id="gw1"))
    for nodeid, start, stop in [("t.py::a@g", 100.0, 110.0), ("t.py::b@g", 110.0, 112.0), ("t.py::c", 112.0, 113.5)]:
        recorder.add(SimpleNamespace(node=node, nodeid=nodeid, duration=stop - start, start=start, stop=stop))
    recorder.add(SimpleNamespace(nodeid="t.py::d", duration=9.0, start=0.0, stop=9.0))  # not from a worker
    path = tmp_path / "durations.json"
    recorder.write(path)
    written = json.loads(path.read_text())
    assert written["units"] == {"g": 12.0, "t.py::c": 1.5}
    assert written["timeline"] == {"gw1": [["g", 0.0, 12.0], ["t.py::c", 12.0, 13.5]]}
    assert written["worker_ends"] == {"gw1": 13.5}
    assert schedule.load_durations(path) == {"g": 12.0, "t.py::c": 1.5}
    assert schedule.load_durations(tmp_path / "missing.json") == {}


@pytest.mark.parametrize("text", ["", "[]", '{"units": 3}', '{"units": {"a": "x"}}'])
def test_an_unreadable_record_means_no_durations(tmp_path, text):
    path = tmp_path / "durations.json"
    path.write_text(text)
    assert schedule.load_durations(path) == {}


def test_keep_writes_the_long_units_for_the_scheduler(tmp_path):
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"units": {"browser": 510.4, "t.py::a": 2.0, "t.py::b": 0.3},
                                  "worker_ends": {"gw0": 1.0}, "timeline": {}}))
    out = tmp_path / "durations.json"
    schedule.keep(record, out, note="a run")
    assert schedule.load_durations(out) == {"browser": 510.4, "t.py::a": 2.0}
    kept = json.loads(out.read_text())
    assert kept["measured"] == "a run" and kept["worker_ends"] == {"gw0": 1.0} and "1 of them" in kept["note"]


def test_the_kept_durations_load():
    durations = schedule.load_durations()
    assert durations and all(seconds >= schedule.UNKNOWN_SECONDS_PER_TEST for seconds in durations.values())


def test_longest_first_is_opt_in(monkeypatch):
    import conftest

    config = SimpleNamespace(getvalue=lambda name: {"tx": ["2*popen"], "dist": "loadgroup"}.get(name),
                             option=SimpleNamespace(loadscopereorder=True))
    monkeypatch.delenv("DLCOURSE_TEST_ORDER", raising=False)
    assert conftest.pytest_xdist_make_scheduler(config, None) is None  # pytest-xdist's own order
    monkeypatch.setenv("DLCOURSE_TEST_ORDER", "longest")
    assert type(conftest.pytest_xdist_make_scheduler(config, None)).__name__ == "LongestFirst"
