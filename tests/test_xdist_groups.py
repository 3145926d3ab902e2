"""`make test` relies on pytest-xdist's groups: a chapter's executed session, and the pipeline's graded class,
are built once, by the one worker that runs every test of the group. If a pytest or pytest-xdist upgrade
stops honouring ``xdist_group`` (pytest 9.2 with pytest-xdist 3.8 did, silently), each worker rebuilds them
and the suite takes far longer; these tests say so instead."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.xdist_group("grouping_check")


def _only_under_loadgroup(request) -> None:
    if not (os.environ.get("PYTEST_XDIST_WORKER") and getattr(request.config.option, "loadgroup", False)):
        pytest.skip("only meaningful under pytest -n N --dist loadgroup, as make test runs it")


def test_a_grouped_test_carries_its_group_under_loadgroup(request):
    _only_under_loadgroup(request)
    assert request.node.nodeid.endswith("@grouping_check"), (
        f"pytest-xdist did not apply the group to {request.node.nodeid!r}: tests of one group may run on different "
        "workers, each building the group's fixtures again (pin a pytest that pytest-xdist supports)")


@pytest.mark.parametrize("n", [1, 2])
def test_tests_of_one_group_run_on_one_worker(request, n, tmp_path_factory):
    _only_under_loadgroup(request)
    shared = tmp_path_factory.getbasetemp().parent / "grouping_check"
    shared.mkdir(exist_ok=True)
    (shared / f"{n}").write_text(os.environ.get("PYTEST_XDIST_WORKER", "controller"))
    seen = {p.read_text() for p in shared.iterdir()}
    assert len(seen) == 1, f"one group ran on several workers: {sorted(seen)}"
