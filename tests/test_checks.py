"""The checks API: messages say what is wrong, guards catch every alias, tampering is reported."""

import math

import pytest
import torch
import torch.nn.functional as F

from dlcourse import checks
from dlcourse.checks import CheckFailure, ForbiddenCall


def test_assert_close_accepts_within_tolerance_and_states_it():
    checks.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
    with pytest.raises(CheckFailure, match=r"rtol=1e-05, atol=1e-06"):
        checks.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1]))


def test_assert_close_reports_count_largest_difference_and_where():
    actual = torch.zeros(3, 4)
    expected = torch.zeros(3, 4)
    expected[2, 1] = 0.5
    expected[0, 3] = 0.1
    with pytest.raises(CheckFailure) as err:
        checks.assert_close(actual, expected, name="scores")
    msg = str(err.value)
    assert "scores: 2 of 12 values differ" in msg
    assert "0.5 at [2, 1]" in msg and "expected 0.5" in msg


@pytest.mark.parametrize(("actual", "expected", "needle"), [
    (torch.zeros(2, 3), torch.zeros(3, 2), "shape (2, 3), expected (3, 2)"),
    (torch.zeros(2, dtype=torch.float64), torch.zeros(2), "dtype torch.float64, expected torch.float32"),
    ([1.0], torch.zeros(1), "expected a torch.Tensor, got list"),
    ((torch.zeros(1),), (torch.zeros(1), torch.zeros(1)), "expected a tuple of 2 items"),
])
def test_assert_close_reports_structure_errors(actual, expected, needle):
    with pytest.raises(CheckFailure, match=None) as err:
        checks.assert_close(actual, expected)
    assert needle in str(err.value)


def test_assert_close_names_overflow_and_nan_handling():
    with pytest.raises(CheckFailure, match="overflow or a 0/0"):
        checks.assert_close(torch.tensor([math.nan, 1.0]), torch.tensor([0.5, 1.0]))
    with pytest.raises(CheckFailure, match="expected NaN"):
        checks.assert_close(torch.tensor([0.0]), torch.tensor([math.nan]))
    with pytest.raises(CheckFailure):
        checks.assert_close(torch.tensor([math.nan]), torch.tensor([math.nan]))
    checks.assert_close(torch.tensor([math.nan]), torch.tensor([math.nan]), equal_nan=True)
    checks.assert_close(torch.tensor([-math.inf]), torch.tensor([-math.inf]))


def test_assert_equal_reports_first_wrong_token():
    checks.assert_equal(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3]))
    with pytest.raises(CheckFailure, match=r"first at \[1, 0\]: got 7, expected 5"):
        checks.assert_equal(torch.tensor([[1, 2], [7, 4]]), torch.tensor([[1, 2], [5, 4]]))
    with pytest.raises(CheckFailure, match="first difference at position 2: got 9, expected 3"):
        checks.assert_equal([1, 2, 9], [1, 2, 3], name="tokens")
    with pytest.raises(CheckFailure, match="length 2, expected 3"):
        checks.assert_equal([1, 2], [1, 2, 3])


@pytest.mark.parametrize("call", [
    lambda x: torch.softmax(x, -1),
    lambda x: F.softmax(x, -1),
    lambda x: x.softmax(-1),
    lambda x: torch.special.softmax(x, -1),
    lambda x: torch.nn.Softmax(dim=-1)(x),
])
def test_forbid_catches_every_route_to_a_builtin(call):
    with pytest.raises(ForbiddenCall, match="write it yourself"), checks.forbid({"softmax"}):
        call(torch.randn(2, 3))


def test_forbid_allows_everything_else_and_ends_with_the_block():
    with checks.forbid({"softmax"}):
        y = (torch.randn(2, 3).exp() / 2).sum()
    assert torch.isfinite(y)
    torch.softmax(torch.randn(2), -1)  # allowed again


def test_compare_with_oracle_reports_exceptions_not_implemented_and_in_place_writes():
    def todo(x):
        raise NotImplementedError()

    with pytest.raises(CheckFailure, match="not implemented yet"):
        checks.compare_with_oracle(todo, torch.exp, torch.randn(3))

    def broken(x):
        return x[10]

    with pytest.raises(CheckFailure, match="raised IndexError"):
        checks.compare_with_oracle(broken, torch.exp, torch.randn(3))

    def in_place(x):
        return x.exp_()

    with pytest.raises(CheckFailure, match="changed its argument #0 in place"):
        checks.compare_with_oracle(in_place, torch.exp, torch.randn(3))
    assert checks.compare_with_oracle(torch.exp, torch.exp, torch.randn(3)) is None  # no partial-credit value


def test_compare_gradients_detects_wrong_and_detached_gradients():
    x = torch.randn(4, 3)
    checks.compare_gradients(lambda t: t.exp(), torch.exp, x)
    with pytest.raises(CheckFailure, match="d/d\\(argument #0\\)"):
        checks.compare_gradients(lambda t: t.exp() + t.detach() * 0 + (t * 1e-3), torch.exp, x)
    with pytest.raises(CheckFailure, match="not connected to the inputs"):
        checks.compare_gradients(lambda t: t.exp().detach(), torch.exp, x)


def test_tampering_with_torch_or_the_checks_is_reported(monkeypatch):
    checks.assert_untampered()
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    with pytest.raises(CheckFailure, match="torch.allclose"):
        checks.assert_untampered()
    monkeypatch.undo()
    monkeypatch.setattr(checks, "assert_close", lambda *a, **k: None)
    with pytest.raises(CheckFailure, match="dlcourse.checks.assert_close"):
        checks.assert_untampered()


def test_comparisons_do_not_use_patched_torch(monkeypatch):
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "equal", lambda *a, **k: True)
    with pytest.raises(CheckFailure):
        checks.assert_close(torch.zeros(2), torch.ones(2))
    with pytest.raises(CheckFailure):
        checks.assert_equal(torch.zeros(2, dtype=torch.long), torch.ones(2, dtype=torch.long))
