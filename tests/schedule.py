"""`make test` can hand the longest work first to whichever worker is free, and records how long each unit took.

Under ``pytest -n N --dist loadgroup`` a *unit* is an ``xdist_group`` (every test of it runs on one worker, after
one shared set-up) or an ungrouped test. pytest-xdist queues the units largest first by *number of tests*, and
the number of tests says little about time here: the browser group holds a dozen tests of half a minute to a
minute each, the Gradescope group spends three minutes in one fixture. When a long unit starts last, one worker
runs it alone while the others wait. Longest processing time first (LPT: the classic rule for sharing jobs among
machines) keeps the workers' ends close.

Durations come from ``tests/durations.json``: seconds per unit, kept from a full run. Every distributed run
records its own in ``build/test-durations.json``, with each worker's timeline (when each unit started and ended
on it); after a full ``make test``, ``python tests/schedule.py keep`` copies its units of at least
:data:`UNKNOWN_SECONDS_PER_TEST` seconds into ``tests/durations.json``. A unit not listed there is guessed at
:data:`UNKNOWN_SECONDS_PER_TEST` per test. Stale numbers only change the order, never which tests run.

    python tests/schedule.py keep [--note "what run this was"]

The order is opt-in: ``DLCOURSE_TEST_ORDER=longest make test``. In xdist's own order the workers already end
close together (two workers 12 s apart, three workers 25 s apart on 2 cores), so the suite's time is its work.
The one full run in the longest-first order took 28:57 because ``tests/test_validate.py``, run last, waited 600 s
on an idle kernel, most likely nbgrader's validator missing the reply of a cell that draws into an Output widget
(chapter 00's explorer) and sleeping out the cell's 600-s limit: the failure :mod:`dlcourse.kernelio` describes.
nbgrader's client does it on 40 such cells at a 20-s limit (62 and 82 s, against 2 s); ``dlcourse.validate`` now
polls in slices. The recorder runs either way.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DURATIONS = ROOT / "tests" / "durations.json"
RECORD = ROOT / "build" / "test-durations.json"
UNKNOWN_SECONDS_PER_TEST = 2.0


def unit_of(nodeid: str) -> str:
    """The unit a test belongs to under loadgroup: its group's name after the last ``@``, else its node id (as
    pytest-xdist's ``LoadGroupScheduling._split_scope``)."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return nodeid.split("@")[-1]
    return nodeid


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per unit from a recorded run; empty when there is none or it cannot be read."""
    try:
        units = json.loads(path.read_text())["units"]
        return {str(k): float(v) for k, v in units.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def expected_seconds(unit: str, tests: int, durations: dict[str, float]) -> float:
    return durations.get(unit, UNKNOWN_SECONDS_PER_TEST * tests)


def longest_first(units: dict[str, int], durations: dict[str, float]) -> list[str]:
    """Units (name → number of tests) in the order to hand them out: longest expected first; ties keep their
    order."""
    return sorted(units, key=lambda u: -expected_seconds(u, units[u], durations))  # a stable sort keeps ties


def make_scheduler(config, log, durations: dict[str, float] | None = None):
    """A pytest-xdist ``LoadGroupScheduling`` that always hands out the longest unit left (by ``durations``,
    default: :func:`load_durations`)."""
    from xdist.scheduler import LoadGroupScheduling

    durations = load_durations() if durations is None else durations

    class LongestFirst(LoadGroupScheduling):
        def _assign_work_unit(self, node) -> None:
            longest = max(self.workqueue, key=lambda scope: expected_seconds(  # the first of equals, as sorted
                scope, len(self.workqueue[scope]), durations))
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


class Recorder:
    """On the controller of a distributed run: seconds per unit (set-up, call and tear-down of its tests) and,
    per worker, when each unit started and ended; written to :data:`RECORD` at the end of the session."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.spans: dict[tuple[str, str], list[float]] = {}

    def add(self, report) -> None:
        node = getattr(report, "node", None)
        if node is None:  # not from a worker
            return
        unit = unit_of(report.nodeid)
        self.seconds[unit] += report.duration
        worker = getattr(getattr(node, "gateway", None), "id", "?")
        span = self.spans.setdefault((worker, unit), [report.start, report.stop])
        span[0], span[1] = min(span[0], report.start), max(span[1], report.stop)

    def write(self, path: Path = RECORD) -> None:
        if not self.seconds:
            return
        begin = min(start for start, _ in self.spans.values())
        timeline: dict[str, list] = defaultdict(list)
        for (worker, unit), (start, stop) in sorted(self.spans.items(), key=lambda kv: kv[1][0]):
            timeline[worker].append([unit, round(start - begin, 1), round(stop - begin, 1)])
        ends = {worker: max(stop for _, _, stop in spans) for worker, spans in timeline.items()}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "units": {u: round(s, 1) for u, s in sorted(self.seconds.items(), key=lambda kv: -kv[1])},
            "worker_ends": ends, "timeline": timeline}, indent=1) + "\n")


def keep(record: Path = RECORD, out: Path = DURATIONS, note: str = "") -> dict:
    """``tests/durations.json`` from a recorded run: its units of at least :data:`UNKNOWN_SECONDS_PER_TEST`
    seconds (the shorter ones are guessed at that much anyway) and when each worker finished."""
    recorded = json.loads(record.read_text())
    units = {u: s for u, s in recorded["units"].items() if s >= UNKNOWN_SECONDS_PER_TEST}
    kept = {"measured": note, "worker_ends": recorded.get("worker_ends", {}), "units": units,
            "note": f"units under {UNKNOWN_SECONDS_PER_TEST:g} s are left out ({len(recorded['units']) - len(units)} "
                    "of them): the scheduler guesses that much a test for any unit not listed"}
    out.write_text(json.dumps(kept, indent=1) + "\n")
    return kept


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="keep the last recorded run's durations for the scheduler")
    parser.add_argument("command", choices=["keep"])
    parser.add_argument("--note", default="", help="what run it was (machine, suite time)")
    args = parser.parse_args()
    kept = keep(note=args.note)
    print(f"{DURATIONS.relative_to(ROOT)}: {len(kept['units'])} units, workers ended at {kept['worker_ends']}")
