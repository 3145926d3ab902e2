"""The checks API: messages say what is wrong, guards catch every alias, tampering is reported."""

import math
import re

import numpy as np
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


# Reported by review: each of these once passed or crashed with the wrong error.


def test_an_expected_infinity_must_be_matched_exactly():
    with pytest.raises(CheckFailure, match="expected inf at \\[0\\], your answer has 1.0"):
        checks.assert_close(torch.tensor([1.0]), torch.tensor([math.inf]))
    with pytest.raises(CheckFailure, match="expected -inf"):
        checks.assert_close(torch.tensor([math.inf]), torch.tensor([-math.inf]))


def test_integers_are_exact_and_complex_numbers_compare_both_parts():
    with pytest.raises(CheckFailure, match="first at \\[0\\]"):
        checks.assert_close(torch.tensor([2**60 + 1]), torch.tensor([2**60]))
    with pytest.raises(CheckFailure, match="1 of 1 values differ"):
        checks.assert_close(torch.tensor([1 + 1j]), torch.tensor([1 + 5j]))
    checks.assert_close(torch.tensor([1 + 1j]), torch.tensor([1 + 1j]))


def test_wrong_types_are_check_failures_not_crashes():
    with pytest.raises(CheckFailure, match="expected a number or array, got NoneType"):
        checks.assert_close(None, 1.0)
    with pytest.raises(CheckFailure, match="expected a tuple of 2 items, got list"):
        checks.assert_close([torch.zeros(1), torch.zeros(1)], (torch.zeros(1), torch.zeros(1)))
    with pytest.raises(CheckFailure, match="elements differ"):
        checks.assert_equal(np.array([1, 2]), np.array([1, 3]))
    with pytest.raises(CheckFailure, match="got tensor"):
        checks.assert_equal(torch.tensor([1, 2]), 1)
    with pytest.raises(CheckFailure, match="not a single True/False"):
        checks.assert_true(torch.tensor([True, False]), "all positive")
    with pytest.raises(CheckFailure, match="NaN is not accepted"):
        checks.assert_close(torch.tensor([math.nan]), torch.tensor([math.nan]))


@pytest.mark.parametrize("call", [
    lambda x: F.softmin(-x, dim=-1),
    lambda x: torch.ops.aten._softmax.default(x, -1, False),
    lambda x: _with_torch_functions_disabled(lambda: F.softmax(x, -1)),
])
def test_forbid_sees_operators_reached_indirectly(call):
    with pytest.raises(ForbiddenCall, match="aten._softmax"), checks.forbid({"softmax"}):
        call(torch.randn(2, 3))


def _with_torch_functions_disabled(fn):
    with torch._C.DisableTorchFunction():
        return fn()


def test_forbid_names_the_public_function_and_matches_globs():
    with pytest.raises(ForbiddenCall, match="`torch.softmax`"), checks.forbid({"softmax"}):
        torch.softmax(torch.randn(2), -1)
    q = torch.randn(1, 2, 3, 4)
    with pytest.raises(ForbiddenCall), checks.forbid({"scaled_dot_product_*"}):
        F.scaled_dot_product_attention(q, q, q)
    with pytest.raises(ForbiddenCall, match="cross_entropy"), checks.forbid({"cross_entropy", "nll_loss"}):
        F.cross_entropy(torch.randn(3, 4), torch.tensor([0, 1, 2]))


def test_no_grad_stops_an_answer_from_using_autograd():
    def by_autograd(w):
        w = w.clone().requires_grad_(True)
        (w ** 2).sum().backward()
        return w.grad

    with pytest.raises(CheckFailure, match="raised RuntimeError"):
        checks.compare_with_oracle(by_autograd, lambda w: 2 * w, torch.randn(3), no_grad=True)


def test_in_place_writes_are_caught_in_keyword_arguments_and_nan_inputs():
    def scale(x, *, y):
        y.mul_(2)
        return x + y

    with pytest.raises(CheckFailure, match="argument 'y' in place"):
        checks.compare_with_oracle(scale, lambda x, *, y: x + 2 * y, torch.randn(2), y=torch.randn(2))

    def zero_nans(x):
        x[0] = 0.0
        return x

    with pytest.raises(CheckFailure, match="in place"):
        checks.compare_with_oracle(zero_nans, lambda x: torch.cat([torch.zeros(1), x[1:]]),
                                   torch.tensor([math.nan, 1.0]))


def test_swapping_code_or_replacing_functional_oracles_is_reported(monkeypatch):
    monkeypatch.setattr(F, "cross_entropy", lambda *a, **k: torch.tensor(0.0))
    with pytest.raises(CheckFailure, match="torch.nn.functional.cross_entropy"):
        checks.assert_untampered()
    monkeypatch.undo()
    original = checks._compare_arrays.__code__
    try:
        checks._compare_arrays.__code__ = (lambda a, e, tol, name, equal_nan: None).__code__
        with pytest.raises(CheckFailure, match="_compare_arrays"):
            checks.assert_untampered()
    finally:
        checks._compare_arrays.__code__ = original
    checks.assert_untampered()


def test_torch_rewrapping_its_own_functions_is_not_tampering():
    import torch._dynamo  # noqa: F401  (wraps torch.manual_seed on import)

    checks.assert_untampered()


def test_an_exact_name_spares_longer_ones():
    with checks.forbid({"=gru"}):
        torch.nn.GRUCell(3, 2)(torch.randn(1, 3))  # torch.gru_cell is allowed
    with pytest.raises(ForbiddenCall), checks.forbid({"=gru"}):
        torch.nn.GRU(3, 2)(torch.randn(1, 4, 3))


class _WithSpare(torch.nn.Module):
    """A linear layer and a spare parameter that adds nothing to the output but ``spare_weight`` to the
    gradient (None: not used at all)."""

    def __init__(self, spare_weight: float | None) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.spare = torch.nn.Parameter(torch.ones(2))
        self.spare_weight = spare_weight

    def forward(self, x):
        y = self.lin(x)
        return y if self.spare_weight is None else y + self.spare_weight * (self.spare - self.spare.detach())


def test_an_unused_parameter_compares_as_a_zero_gradient_on_either_side():
    x = torch.randn(4, 3)
    checks.compare_modules(_WithSpare(0.0), _WithSpare(None), x)  # zeros (as the kernel sends) against None
    checks.compare_modules(_WithSpare(None), _WithSpare(0.0), x)
    with pytest.raises(checks.CheckFailure, match="gradient of spare"):
        checks.compare_modules(_WithSpare(1.0), _WithSpare(None), x)  # a parameter the oracle does not use


def test_fixed_weights_are_the_same_whatever_the_order_and_differ_between_parameters():
    a, b = torch.nn.Bilinear(3, 3, 2), torch.nn.Bilinear(3, 3, 2)
    checks.fixed_weights(a)
    reordered = torch.nn.Module()  # the same names registered in another order
    reordered.register_parameter("bias", torch.nn.Parameter(torch.zeros(2)))
    reordered.register_parameter("weight", torch.nn.Parameter(torch.zeros(2, 3, 3)))
    checks.fixed_weights(reordered)
    checks.fixed_weights(b)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.weight, reordered.weight)
    assert torch.equal(a.bias, reordered.bias)
    q, k = torch.nn.Linear(4, 4, bias=False), torch.nn.Module()
    k.W_q, k.W_k = torch.nn.Linear(4, 4, bias=False), torch.nn.Linear(4, 4, bias=False)
    checks.fixed_weights(k)
    assert not torch.equal(k.W_q.weight, k.W_k.weight), "two matrices of one shape must differ"
    checks.fixed_weights(q, scale=0.0)
    assert not q.weight.any()
    assert float(checks.fixed_tensor((1,))[0]) == pytest.approx(math.sin(1.3))
    assert checks.fixed_tensor((2, 3), phase=0.5).shape == (2, 3)


def test_a_failed_check_shows_the_students_line_not_the_checks_frames():
    """IPython hides frames whose locals hold ``__tracebackhide__``; every check function sets it."""
    import inspect

    from IPython.core.ultratb import VerboseTB

    from dlcourse import checks

    missing = [name for name, fn in inspect.getmembers(checks, inspect.isfunction)
               if fn.__module__ == checks.__name__
               and "__tracebackhide__" not in inspect.unwrap(fn).__code__.co_varnames]
    assert not missing, f"check functions without __tracebackhide__: {missing}"

    def student_cell():
        checks.compare_with_oracle(lambda x: x + 1, lambda x: x, torch.zeros(3), name="my function")

    try:
        student_cell()
    except checks.CheckFailure:
        import sys

        text = "".join(VerboseTB(theme_name="nocolor").structured_traceback(*sys.exc_info()))
    assert "student_cell()" in text and "my function" in text
    assert "skipping hidden" in text and "_call_student" not in text


@pytest.mark.parametrize(("wrong", "kind"), [
    (lambda e: 4 * e, "every value is 4.00× the expected one"),
    (lambda e: -e, "every value has the opposite sign"),
    (lambda e: e + 0.5, "every value is off by the same amount, +0.5"),
    (lambda e: e.transpose(0, 1), "axes 0 and 1 swapped (a transposition)"),
    (lambda e: torch.cat([e[:2], e[2:] + 1]), "the differences lie only at index 2, 3 of axis 0 (size 4)"),
])
def test_a_difference_is_named_by_its_kind(wrong, kind):
    expected = checks.fixed_tensor((4, 4), phase=0.3)
    with pytest.raises(CheckFailure, match=re.escape(kind)):
        checks.assert_close(wrong(expected), expected)


def test_no_kind_is_named_for_an_unrelated_result_and_float32_rounding_is_named_for_float64():
    expected = checks.fixed_tensor((3, 5), phase=0.3).double()
    assert checks.difference_kinds(checks.fixed_tensor((3, 5), phase=2.0).double().numpy(), expected.numpy()) == []
    with pytest.raises(CheckFailure) as err:
        checks.assert_close(expected.float().double() * (1 + 1e-7), expected, tol=checks.FLOAT64)
    assert "float32's rounding level" in str(err.value) and "part of the computation ran in float32" in str(err.value)
    # the two numbers shown differ in the digits shown
    line = next(x for x in str(err.value).splitlines() if "largest" in x)
    shown = re.findall(r"actual (\S+), expected (\S+)", line)[0]
    assert shown[0] != shown[1]


class _Block(torch.nn.Module):
    def __init__(self, skip_residual: bool = False, scale_out: float = 1.0, inner_bug: bool = False) -> None:
        super().__init__()
        self.first, self.second, self.norm = torch.nn.Linear(6, 6), torch.nn.Linear(6, 6), torch.nn.LayerNorm(6)
        self.skip_residual, self.scale_out, self.inner_bug = skip_residual, scale_out, inner_bug
        if inner_bug:  # a sub-layer of its own whose forward is wrong
            self.second = _Doubled(self.second)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.first(x))
        h = h if self.skip_residual else x + h
        return self.norm(self.second(h)) * self.scale_out


class _Doubled(torch.nn.Module):
    def __init__(self, inner: torch.nn.Linear) -> None:
        super().__init__()
        self.weight, self.bias = inner.weight, inner.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * F.linear(x, self.weight, self.bias)


@pytest.mark.parametrize(("student", "said"), [
    (_Block(skip_residual=True), ["where it first differs: the output of `second`",
                                  "its input already differs", "in _Block's forward that computes that input, "
                                  "after `first`", "before it, these match: `first`"]),
    (_Block(inner_bug=True), ["the output of `second`", "its input matches the oracle's: the difference arises "
                                                        "inside `second`"]),
    (_Block(scale_out=3.0), ["every value is 3.00× the expected one", "every submodule's output matches the "
                             "oracle's (`first`, `second`, `norm`): the difference arises in _Block's own forward"]),
])
def test_a_module_that_differs_is_told_where_it_first_parts_from_the_oracle(student, said):
    oracle = _Block()
    checks.load_weights(student, oracle)
    x = checks.fixed_tensor((2, 3, 6), phase=0.4)
    for compare in (checks.compare_forward, checks.compare_modules):
        with pytest.raises(CheckFailure) as err:
            compare(student, oracle, x, name="block")
        for words in said:
            assert words in str(err.value), str(err.value)


def test_submodules_are_paired_through_rename_and_calls_by_their_order():
    class Wrapped(torch.nn.Module):
        def __init__(self, bug: bool) -> None:
            super().__init__()
            self.inner, self.bug = _Block(skip_residual=bug), bug

        def forward(self, x):
            return self.inner(self.inner(x))  # the same submodule called twice

    oracle, student = _Block(), Wrapped(bug=True)
    checks.load_weights(student, oracle, rename={"first.": "inner.first.", "second.": "inner.second.",
                                                 "norm.": "inner.norm."})
    x = checks.fixed_tensor((2, 6), phase=0.4)
    where = checks.localise(student, torch.nn.Sequential(oracle, oracle), [x], {},
                            rename={"0.": "inner.", "1.": "inner."})
    assert where[0].startswith("  where it first differs: the output of `inner.second`"), where
    other = checks.localise(oracle, _Block(), [x], {})  # other weights: the first sub-layer already differs
    assert other[1] == "  its input matches the oracle's: the difference arises inside `first`", other
    assert checks.localise(torch.nn.Linear(6, 6), torch.nn.Linear(6, 6), [x], {}) == []  # no submodules


class _Stack(torch.nn.Module):
    def __init__(self, top_down: bool = False, transposed: bool = False, scale_out: float = 1.0) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([_Block(), _Block()])
        self.top_down, self.transposed, self.scale_out = top_down, transposed, scale_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.transposed:  # sequence-first inside, as some libraries lay a batch out
            x = x.transpose(0, 1)
        for block in (reversed(self.blocks) if self.top_down else self.blocks):
            x = block(x)
        return (x.transpose(0, 1) if self.transposed else x) * self.scale_out


def test_a_wrong_input_is_traced_out_to_the_outermost_call_that_receives_it():
    oracle, student = _Stack(), _Stack(top_down=True)
    checks.load_weights(student, oracle)
    where = checks.localise(student, oracle, [checks.fixed_tensor((2, 3, 6), phase=0.4)], {})
    said = "\n".join(where)
    assert "where it first differs: the output of `blocks.0.first`" in said, said
    assert ("its input already differs, and so does the input of `blocks.0` around it" in said
            and "look at the code in _Stack's forward that computes the input of `blocks.0`" in said), said


def test_submodules_of_a_sequence_first_oracle_are_paired_with_a_batch_first_student():
    oracle, student = _Stack(transposed=True), _Stack(scale_out=2.0)
    checks.load_weights(student, oracle)
    where = checks.localise(student, oracle, [checks.fixed_tensor((2, 3, 6), phase=0.4)], {})
    assert where and "every submodule's output matches the oracle's" in where[0], where  # (3, 2, 6) vs (2, 3, 6)


class _TwoSteps(torch.nn.Module):
    def __init__(self, wrong_input: bool = False, skip_second: bool = False, scale_out: float = 1.0) -> None:
        super().__init__()
        self.first, self.second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 3)
        self.wrong_input, self.skip_second, self.scale_out = wrong_input, skip_second, scale_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.first(x))
        if self.skip_second:
            return F.linear(h, self.second.weight, self.second.bias) + 1  # and off by one
        return self.second(-h if self.wrong_input else h) * self.scale_out


@pytest.mark.parametrize(("student", "said"), [
    (_TwoSteps(wrong_input=True), ["where it first differs: the output of `second`", "its first input already "
                                   "differs", "look at what _TwoSteps's forward gives `second`",
                                   "before it, these match: `first`"]),
    (_TwoSteps(skip_second=True), ["your forward pass never calls `second` (before it, these match: `first`)"]),
    (_TwoSteps(scale_out=3.0), ["every step's output matches (`first`, `second`): the difference arises in "
                                "_TwoSteps's own forward code"]),
])
def test_stored_numbers_name_the_first_step_that_goes_wrong(student, said):
    oracle = _TwoSteps()
    checks.fixed_weights(oracle)
    checks.load_weights(student, oracle)
    x = checks.fixed_tensor((2, 4), phase=0.3)
    h = torch.tanh(oracle.first(x)).detach()
    steps = {"first": oracle.first(x).detach(), "second": oracle(x).detach()}
    with pytest.raises(CheckFailure) as err, checks.stored_steps(student, x, steps=steps, given={"second": h}):
        checks.assert_close(student(x), oracle(x), name="result")
    assert str(err.value).startswith("result: ")
    for words in said:
        assert words in str(err.value), str(err.value)
    with checks.stored_steps(oracle, x, steps=steps):  # nothing fails: nothing is added, nothing raised
        checks.assert_close(oracle(x), steps["second"])


class _Attention(torch.nn.Module):
    """The package's multi-head attention with one planted mistake."""

    def __init__(self, mistake: str) -> None:
        super().__init__()
        from dlcourse.transformer.model import MultiHeadAttention

        self.inner, self.mistake = MultiHeadAttention(8, 2), mistake
        self.out_proj = self.inner.out_proj

    def forward(self, query, key, value, **kwargs):
        if self.mistake == "scale":
            query = query * 2
        if self.mistake == "values":
            value = key
        out, weights = self.inner(query, key, value, **kwargs)
        return (out + 1 if self.mistake == "after" else out), weights

    def load_state_dict(self, state, strict=True, assign=False):
        return self.inner.load_state_dict(state, strict, assign)


@pytest.mark.parametrize(("mistake", "said"), [
    ("scale", ["the per-head weights (average_attn_weights=False) already differ", "in the scores"]),
    ("values", ["the per-head weights (average_attn_weights=False) match", "what goes into your `out_proj` — the "
                "heads, merged — already differs"]),
    ("after", ["the per-head weights (average_attn_weights=False) match", "what goes into your `out_proj` — the "
               "heads, merged — matches the oracle's"]),
])
def test_an_attention_that_differs_is_told_at_which_stage(mistake, said):
    oracle = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    checks.fixed_weights(oracle)
    student = _Attention(mistake)
    student.load_state_dict(oracle.state_dict())
    q, kv = checks.fixed_tensor((2, 3, 8), phase=0.2), checks.fixed_tensor((2, 5, 8), phase=1.1)
    with pytest.raises(CheckFailure) as err:
        checks.compare_attention(student, oracle, q, kv, checks.fixed_tensor((2, 5, 8), phase=2.0), name="cross")
    for words in said:
        assert words in str(err.value), str(err.value)


def test_an_attention_that_matches_passes():
    oracle = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    checks.fixed_weights(oracle)
    student = _Attention("none")
    student.load_state_dict(oracle.state_dict())
    q, k, v = (checks.fixed_tensor((2, n, 8), phase=p) for n, p in ((3, 0.2), (5, 1.1), (5, 2.0)))
    checks.compare_attention(student, oracle, q, k, v, tol=checks.Tolerance(rtol=1e-5, atol=2e-5), name="cross")


def test_a_hugging_face_model_in_the_course_layout_names_its_layers_in_the_course_terms():
    from transformers import BertModel

    from dlcourse.bert import model as bert_models

    layout = bert_models.InCourseLayout(BertModel(bert_models.hf_config(depth=2), add_pooling_layer=False))
    names = [name for name, _ in layout.traced_submodules()]
    for course in ("embeddings", "embeddings.norm", "layers.0", "layers.1.self_attn.out_proj", "layers.0.norm1",
                   "layers.0.ff.linear1", "layers.0.ff.linear2", "layers.1.norm2"):
        assert course in names, names
    assert not [n for n in names if n.endswith((".query", ".key", ".value"))]  # stacked in the course: no pair


def test_a_raised_error_names_the_case_it_met():
    def answer(x, h, causal=False):
        return F.linear(x, torch.ones(3, 5))

    with pytest.raises(CheckFailure) as err:
        checks.call(answer, torch.zeros(2, 4), torch.zeros(2, 3, dtype=torch.float64), causal=True, name="answer")
    assert str(err.value).startswith("answer raised RuntimeError when called with a float32 tensor of shape (2, 4), "
                                     "a float64 tensor of shape (2, 3), causal=True: mat1 and mat2")
    from dlcourse.grading.channel import rebuild_error
    from dlcourse.grading.remote import with_case

    remote = rebuild_error({"type": "RuntimeError", "bases": ["RuntimeError"], "message": "index out of range"})
    named = with_case(remote, [torch.zeros(3, dtype=torch.long)], {})
    assert isinstance(named, RuntimeError) and named.case_named
    assert str(named) == "when called with a int64 tensor of shape (3,): index out of range"
    assert with_case(named, [1], {}) is named  # named once
    with pytest.raises(CheckFailure) as err:
        checks.call(lambda: (_ for _ in ()).throw(named), name="answer")
    assert str(err.value) == ("answer raised RuntimeError: when called with a int64 tensor of shape (3,): "
                              "index out of range")
