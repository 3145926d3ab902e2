"""The checks that test cells call.

Every comparison says *what* is wrong — type, shape, dtype, how many elements are off, the largest
absolute difference and where it is, the first wrong element of an exact comparison — and states the
tolerance it used. Test cells go through this module only, never through ad-hoc ``assert``s, so that the
way answers are compared can change in one place.

Guards
------
* :func:`forbid` runs code under a :class:`torch.overrides.TorchFunctionMode` that refuses chosen torch
  functions. It sees every route to them (``torch.softmax``, ``F.softmax``, ``x.softmax``, an alias
  bound earlier), because the mode intercepts the call itself, not the name it was reached by.
* The module keeps its own references to the functions it compares with, taken at import (the locked
  set-up cell imports it before any answer cell runs), and :func:`assert_untampered` reports when an
  answer has replaced torch, NumPy or these checks (``torch.allclose = lambda *a, **k: True``).

One vocabulary
--------------
Every exercise names a failure with the same words, so a student learns them once:

* **in place**: "your function changed its argument #2 in place (key 'step' added to it)" — tensors, and the
  dicts and lists that hold them, checked before the result is (:func:`compare_with_oracle`, :func:`assert_fresh`);
* **aliasing**: "the result[1]['momentum_buffer'] shares its memory with argument #1" (:func:`assert_fresh`);
* **the global random state**: "the result depends on the global random state" (:func:`assert_seeded`);
* **dtype, device, shape**: "dtype torch.float32, expected torch.float64";
* **NaN and infinity**: where the first one is, and how many;
* **the kind of a difference** (:func:`difference_kinds`): one constant factor ("every value is 4.00× the
  expected one"), the opposite sign, a constant offset, two axes swapped, differences confined to some indices
  of an axis, float32 rounding for float64 inputs;
* **where in a module** (:func:`localise`, used by :func:`compare_modules` and :func:`compare_forward`): the first
  submodule whose output differs, whether its input already did, and what matched before it;
* **the case**: an error the student's code raises names the inputs it met ("raised RuntimeError when called
  with a float32 tensor of shape (2, 4), …"), here, in the grader (:mod:`dlcourse.grading.remote`) and in the
  notebook itself (:mod:`dlcourse.cases`).

A message says what is wrong and where, never the fix.

Every function here sets ``__tracebackhide__``: in a notebook, IPython then shows a failed check as the
student's own line, the check's message and the one frame that raised it, not a page of this module's frames.
"""

from __future__ import annotations

import builtins
import contextlib
import fnmatch
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from dlcourse.grading import guards
from dlcourse.grading.common import CheckFailure, ForbiddenCall, attribute_path, describe_case
from dlcourse.grading.common import aliases as _aliases
from dlcourse.grading.common import random_projection as _random_projection
from dlcourse.grading.remote import is_remote
from dlcourse.grading.wire import Record

__all__ = [
    "CheckFailure",
    "ForbiddenCall",
    "Tolerance",
    "FLOAT32",
    "FLOAT64",
    "assert_shape",
    "assert_dtype",
    "assert_close",
    "assert_equal",
    "assert_true",
    "expect_error",
    "forbid",
    "call",
    "build_in_kernel",
    "assert_fresh",
    "assert_seeded",
    "compare_with_oracle",
    "compare_gradients",
    "parameter_gradients",
    "load_weights",
    "fixed_tensor",
    "fixed_weights",
    "compare_modules",
    "compare_forward",
    "compare_attention",
    "stored_steps",
    "difference_kinds",
    "localise",
    "describe_case",
    "assert_same_object",
    "assert_untampered",
]


@dataclass(frozen=True)
class Tolerance:
    """``|actual - expected| <= atol + rtol * |expected|``, element by element (as in ``torch.isclose``)."""

    rtol: float
    atol: float

    def __str__(self) -> str:
        return f"rtol={self.rtol:g}, atol={self.atol:g}"


# Defaults for float32 results that went through a handful of reductions, and for float64 results.
FLOAT32 = Tolerance(rtol=1e-5, atol=1e-6)
FLOAT64 = Tolerance(rtol=1e-10, atol=1e-12)

# --------------------------------------------------------------------------------------------------
# References taken at import. An answer cell runs after the set-up cell has imported this module, so
# replacing torch.allclose (or any of these) later does not change what the checks compute with.
_ORIGINALS: dict[tuple[str, str], Any] = {}


def _keep(owner: Any, owner_name: str, attr: str) -> Any:
    __tracebackhide__ = True
    value = getattr(owner, attr)
    _ORIGINALS[(owner_name, attr)] = value
    return value


_OWNERS: dict[str, Any] = {"torch": torch, "torch.Tensor": torch.Tensor, "numpy": np, "builtins": builtins,
                           "torch.testing": torch.testing}
_keep(torch, "torch", "isclose")
_keep(torch, "torch", "allclose")
_t_equal = _keep(torch, "torch", "equal")
_keep(torch, "torch", "isfinite")
_t_isnan = _keep(torch, "torch", "isnan")
_keep(torch, "torch", "abs")
_keep(torch, "torch", "is_tensor")
_keep(torch.testing, "torch.testing", "assert_close")
_T_detach = _keep(torch.Tensor, "torch.Tensor", "detach")
_T_cpu = _keep(torch.Tensor, "torch.Tensor", "cpu")
_T_numpy = _keep(torch.Tensor, "torch.Tensor", "numpy")
_T_to = _keep(torch.Tensor, "torch.Tensor", "to")
_keep(torch.Tensor, "torch.Tensor", "__eq__")
_keep(torch.Tensor, "torch.Tensor", "all")
_keep(torch.Tensor, "torch.Tensor", "item")
_keep(torch.Tensor, "torch.Tensor", "backward")
_np_asarray = _keep(np, "numpy", "asarray")
_keep(np, "numpy", "allclose")
_keep(np, "numpy", "isclose")
_keep(builtins, "builtins", "isinstance")
_keep(builtins, "builtins", "print")
_keep(builtins, "builtins", "abs")
_keep(builtins, "builtins", "all")
_keep(builtins, "builtins", "any")
_TensorType = torch.Tensor


def _to_numpy(x: Any) -> np.ndarray:
    __tracebackhide__ = True
    if isinstance(x, _TensorType):
        x = _T_detach(x)
        x = _T_cpu(x)
        if x.dtype in (torch.bfloat16, torch.float16):
            x = _T_to(x, torch.float32)
        return _T_numpy(x)
    return _np_asarray(x)


def _where(index: tuple[int, ...]) -> str:
    __tracebackhide__ = True
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


# --------------------------------------------------------------------------------------------------
# Comparisons


def assert_true(condition: bool, message: str) -> None:
    """Fail with ``message`` when ``condition`` is false (for properties that are not comparisons)."""
    __tracebackhide__ = True
    try:
        holds = bool(condition)
    except Exception as err:  # e.g. a tensor of several booleans
        raise CheckFailure(f"{message} (the condition is not a single True/False: {err})") from err
    if not holds:
        raise CheckFailure(message)


def expect_error(fn: Callable, *args: Any, error: type[BaseException] = ValueError, name: str | None = None,
                 **kwargs: Any) -> None:
    """``fn(*args, **kwargs)`` raises ``error`` (bad input must be refused with a clear error)."""
    __tracebackhide__ = True
    label = name or f"{getattr(fn, '__name__', 'your function')}(...)"
    try:
        fn(*args, **kwargs)
    except error:
        return
    except NotImplementedError as err:
        raise CheckFailure(f"{label}: not implemented yet") from err
    except Exception as err:
        raise CheckFailure(f"{label} raised {type(err).__name__}: {err}; expected {error.__name__}") from err
    raise CheckFailure(f"{label} should raise {error.__name__} but returned normally")


def assert_shape(actual: Any, expected: Sequence[int], name: str = "output") -> None:
    """The tensor ``actual`` has exactly the shape ``expected``."""
    __tracebackhide__ = True
    if not isinstance(actual, _TensorType):
        raise CheckFailure(f"{name}: expected a torch.Tensor of shape {tuple(expected)}, got {type(actual).__name__}")
    if tuple(actual.shape) != tuple(expected):
        raise CheckFailure(f"{name}: shape {tuple(actual.shape)}, expected {tuple(expected)}")


def assert_dtype(actual: Any, expected: torch.dtype, name: str = "output") -> None:
    """The tensor ``actual`` has dtype ``expected``."""
    __tracebackhide__ = True
    if not isinstance(actual, _TensorType):
        raise CheckFailure(f"{name}: expected a torch.Tensor of dtype {expected}, got {type(actual).__name__}")
    if actual.dtype != expected:
        raise CheckFailure(f"{name}: dtype {actual.dtype}, expected {expected}")


def assert_close(
    actual: Any,
    expected: Any,
    *,
    tol: Tolerance | None = None,
    name: str = "output",
    check_dtype: bool = True,
    equal_nan: bool = False,
) -> None:
    """``actual`` equals ``expected`` within ``tol`` (default :data:`FLOAT32`).

    Tensors, NumPy arrays, numbers, and (nested) tuples, lists or dicts of them are accepted (a dict must
    have exactly the expected keys; ``None`` matches only ``None``). Types, shapes
    and (for tensors, unless ``check_dtype=False``) dtypes must agree exactly; integer and boolean
    tensors are compared exactly, complex ones on both parts. An expected ±inf must be matched exactly.
    With ``equal_nan`` a NaN is accepted where a NaN is expected.
    """
    __tracebackhide__ = True
    tol = tol or FLOAT32
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise CheckFailure(f"{name}: expected a dict with keys {sorted(map(repr, expected))}, "
                               f"got {type(actual).__name__}")
        if set(actual) != set(expected):
            missing = sorted(map(repr, set(expected) - set(actual)))
            extra = sorted(map(repr, set(actual) - set(expected)))
            raise CheckFailure(f"{name}: keys differ; missing {', '.join(missing) or 'none'}, "
                               f"not expected {', '.join(extra) or 'none'}")
        for key, e in expected.items():
            assert_close(actual[key], e, tol=tol, name=f"{name}[{key!r}]", check_dtype=check_dtype,
                         equal_nan=equal_nan)
        return
    if isinstance(expected, tuple | list):
        if not _same_container(actual, expected) or len(actual) != len(expected):
            got = f"{type(actual).__name__} of length {len(actual)}" if isinstance(actual, tuple | list) \
                else type(actual).__name__
            raise CheckFailure(f"{name}: expected a {type(expected).__name__} of {len(expected)} items, got {got}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_close(a, e, tol=tol, name=f"{name}[{i}]", check_dtype=check_dtype, equal_nan=equal_nan)
        return
    if isinstance(expected, _TensorType):
        if not isinstance(actual, _TensorType):
            raise CheckFailure(f"{name}: expected a torch.Tensor, got {type(actual).__name__}")
        if tuple(actual.shape) != tuple(expected.shape):
            raise CheckFailure(f"{name}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
        if check_dtype and actual.dtype != expected.dtype:
            raise CheckFailure(f"{name}: dtype {actual.dtype}, expected {expected.dtype}")
        if not (expected.is_floating_point() or expected.is_complex()):
            assert_equal(actual if actual.dtype == expected.dtype else _T_to(actual, expected.dtype), expected,
                         name=name)
            return
    elif not _is_numeric(expected):
        if actual != expected:
            raise CheckFailure(f"{name}: got {actual!r}, expected {expected!r}")
        return
    if not _is_numeric(actual):
        raise CheckFailure(f"{name}: expected a number or array, got {type(actual).__name__}")
    a, e = _to_numpy(actual), _to_numpy(expected)
    kind = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(e) else np.float64
    a, e = np.asarray(a, dtype=kind), np.asarray(e, dtype=kind)
    if a.shape != e.shape:
        raise CheckFailure(f"{name}: shape {a.shape}, expected {e.shape}")
    float64 = isinstance(expected, _TensorType) and expected.dtype == torch.float64 or (
        isinstance(expected, np.ndarray) and expected.dtype == np.float64)
    _compare_arrays(a, e, tol, name, equal_nan, float64=float64)


def _same_container(actual: Any, expected: Any) -> bool:
    """Same tuple/list type; a record from the student's kernel matches the named tuple it stands for."""
    __tracebackhide__ = True
    if type(actual) is type(expected):
        return True
    fields = getattr(type(expected), "_fields", None) if isinstance(expected, tuple) else None
    return isinstance(actual, Record) and fields is not None and tuple(fields) == actual._fields


def _is_numeric(x: Any) -> bool:
    __tracebackhide__ = True
    return isinstance(x, _TensorType | np.ndarray | int | float | complex | np.number) and not isinstance(x, bool)


def _fmt(x: Any) -> str:
    __tracebackhide__ = True
    return f"{x:.6g}"


def _compare_arrays(a: np.ndarray, e: np.ndarray, tol: Tolerance, name: str, equal_nan: bool,
                    float64: bool = False) -> None:
    __tracebackhide__ = True
    with np.errstate(invalid="ignore", over="ignore"):
        a_nan, e_nan = np.isnan(a), np.isnan(e)
        e_finite, e_inf = np.isfinite(e), np.isinf(e)
        diff = np.abs(a - e)
        ok = e_finite & (diff <= tol.atol + tol.rtol * np.abs(e))  # NaN in the answer compares False
        ok |= e_inf & (a == e)  # an infinity only matches the same infinity
        if equal_nan:
            ok |= a_nan & e_nan
    if ok.all():
        return
    bad = ~ok
    lines = [f"{name}: {int(bad.sum())} of {a.size} values differ from the expected ones ({tol})"]

    def first(mask: np.ndarray) -> tuple[int, ...]:
        __tracebackhide__ = True
        return tuple(int(i) for i in np.argwhere(mask)[0])

    nonfinite = bad & ~np.isfinite(a) & e_finite
    if nonfinite.any():
        idx = first(nonfinite)
        lines.append(f"  your answer has {a[idx]} at {_where(idx)} where {_fmt(e[idx])} is expected "
                     f"({int(nonfinite.sum())} such values): an overflow or a 0/0?")
    missed_inf = bad & e_inf
    if missed_inf.any():
        idx = first(missed_inf)
        lines.append(f"  expected {e[idx]} at {_where(idx)}, your answer has {a[idx]}")
    missed_nan = bad & e_nan & ~a_nan
    if missed_nan.any():
        idx = first(missed_nan)
        lines.append(f"  expected NaN at {_where(idx)}, your answer has {_fmt(a[idx])}")
    both_nan = bad & a_nan & e_nan
    if both_nan.any():
        idx = first(both_nan)
        lines.append(f"  NaN at {_where(idx)} in both, but NaN is not accepted here")
    finite_bad = bad & np.isfinite(a) & e_finite
    if finite_bad.any():
        masked = np.where(finite_bad, diff, -1.0)
        idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(masked)), a.shape)) if a.ndim else ()
        shown_a, shown_e = _fmt_pair(a[idx], e[idx])
        lines.append(f"  largest |actual - expected| = {diff[idx]:.3g} at {_where(idx)}: "
                     f"actual {shown_a}, expected {shown_e}")
    lines += ["  " + kind for kind in difference_kinds(a, e, bad, float64=float64)]
    raise CheckFailure("\n".join(lines))


def _fmt_pair(a: Any, e: Any) -> tuple[str, str]:
    """``a`` and ``e`` with as many significant digits as it takes to tell them apart (6 to 17)."""
    __tracebackhide__ = True
    for digits in (6, 9, 12, 17):
        shown = f"{a:.{digits}g}", f"{e:.{digits}g}"
        if shown[0] != shown[1]:
            return shown
    return shown


def _list(indices: Sequence[int], most: int = 8) -> str:
    __tracebackhide__ = True
    shown = ", ".join(str(int(i)) for i in indices[:most])
    return shown + (f", … ({len(indices)} in all)" if len(indices) > most else "")


def difference_kinds(a: np.ndarray, e: np.ndarray, bad: np.ndarray | None = None, float64: bool = False) -> list[str]:
    """What kind of difference separates ``a`` from the expected ``e`` (same shape), in the words every
    exercise uses: a constant factor or offset, the opposite sign, two axes swapped (a transposition), the
    differences confined to some indices of an axis, a difference at float32's rounding level. Says what is
    seen, never the fix; empty when none of these describes it."""
    __tracebackhide__ = True
    kinds: list[str] = []
    if a.shape != e.shape or a.size < 2 or np.iscomplexobj(a) or np.iscomplexobj(e):
        return kinds
    with np.errstate(all="ignore"):
        finite = np.isfinite(a) & np.isfinite(e)
        bad = ~np.isclose(a, e, rtol=1e-5, atol=1e-6) if bad is None else bad
        if not bad.any():
            return kinds
        if finite.all():
            scale = float(np.abs(e).max())
            nonzero = np.abs(e) > 1e-6 * scale
            if scale > 0 and nonzero.sum() >= 2:
                ratio = a[nonzero] / e[nonzero]
                r = float(np.median(ratio))
                steady = np.all(np.abs(ratio - r) <= 1e-3 * abs(r)) and np.all(np.abs(a[~nonzero]) <= 1e-5 * scale)
                if steady and abs(r + 1) < 1e-3:
                    kinds.append("every value has the opposite sign of the expected one")
                elif steady and abs(r - 1) > 1e-3 and abs(r) > 1e-6:
                    factor = f"{r:.2f}" if 0.01 <= abs(r) < 1000 else f"{r:.3g}"
                    kinds.append(f"every value is {factor}× the expected one (one constant factor throughout)")
            offset = a - e
            middle = float(np.median(offset))
            if abs(middle) > 1e-6 and np.all(np.abs(offset - middle) <= 1e-4 * max(abs(middle), 1e-12) + 1e-7):
                kinds.append(f"every value is off by the same amount, {middle:+.4g}")
            for i in range(a.ndim):
                for j in range(i + 1, a.ndim):
                    if a.shape[i] == a.shape[j] > 1 and np.allclose(np.swapaxes(a, i, j), e, rtol=1e-4, atol=1e-6):
                        kinds.append(f"your result is the expected one with axes {i} and {j} swapped (a transposition)")
        if a.ndim >= 1:
            confined = []
            for axis in range(a.ndim):
                if a.shape[axis] < 2:
                    continue
                other = tuple(k for k in range(a.ndim) if k != axis)
                rows = np.flatnonzero(bad.any(axis=other) if other else bad)
                if 0 < len(rows) < a.shape[axis]:
                    confined.append(f"index {_list(rows)} of axis {axis} (size {a.shape[axis]})")
            if confined:
                kinds.append("the differences lie only at " + "; and at ".join(confined[:2])
                             + "; everything else matches")
        if float64 and finite[bad].all():
            relative = np.abs(a - e)[bad] / np.maximum(np.abs(e)[bad], 1e-30)
            if float(relative.max()) < 1e-5:
                kinds.append(f"the differences are at float32's rounding level (largest relative {relative.max():.1e}) "
                             "for float64 inputs: part of the computation ran in float32")
    return kinds


def assert_equal(actual: Any, expected: Any, name: str = "output") -> None:
    """Exact equality (token ids, masks, integer tensors, lists); reports the first wrong element."""
    __tracebackhide__ = True
    if isinstance(expected, _TensorType | np.ndarray):
        kind = "torch.Tensor" if isinstance(expected, _TensorType) else "NumPy array"
        if type(actual) is not type(expected) and not (isinstance(expected, _TensorType)
                                                       and isinstance(actual, _TensorType)):
            raise CheckFailure(f"{name}: expected a {kind}, got {type(actual).__name__}")
        if tuple(actual.shape) != tuple(expected.shape):
            raise CheckFailure(f"{name}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
        if actual.dtype != expected.dtype:
            raise CheckFailure(f"{name}: dtype {actual.dtype}, expected {expected.dtype}")
        a, e = _to_numpy(actual), _to_numpy(expected)
        neq = a != e
        if a.dtype.kind in "fc":
            neq &= ~(np.isnan(a) & np.isnan(e))  # same NaN positions count as equal here
        if neq.any():
            idx = tuple(int(i) for i in np.argwhere(neq)[0])
            raise CheckFailure(f"{name}: {int(neq.sum())} of {a.size} elements differ; first at {_where(idx)}: "
                               f"got {a[idx].item()!r}, expected {e[idx].item()!r}")
        return
    if isinstance(expected, list | tuple):
        if not _same_container(actual, expected):
            raise CheckFailure(f"{name}: expected a {type(expected).__name__}, got {type(actual).__name__}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
            if isinstance(e, list | tuple | _TensorType | np.ndarray):
                assert_equal(a, e, name=f"{name}[{i}]")
            elif not _same_scalar(a, e):
                raise CheckFailure(f"{name}: first difference at position {i}: got {a!r}, expected {e!r}")
        if len(actual) != len(expected):
            raise CheckFailure(f"{name}: length {len(actual)}, expected {len(expected)}")
        return
    if not _same_scalar(actual, expected):
        raise CheckFailure(f"{name}: got {actual!r}, expected {expected!r}")


def _same_scalar(a: Any, e: Any) -> bool:
    __tracebackhide__ = True
    if isinstance(a, _TensorType | np.ndarray) and not isinstance(e, _TensorType | np.ndarray):
        return False  # a tensor where a plain value is expected
    try:
        return bool(a == e)
    except Exception:
        return False


# --------------------------------------------------------------------------------------------------
# Guards


def _public_name(func: Any) -> str:
    __tracebackhide__ = True
    name = getattr(func, "__name__", repr(func))
    qual = getattr(func, "__qualname__", name)
    module = getattr(func, "__module__", None) or ""
    if qual.startswith(("_VariableFunctionsClass.", "_VariableFunctions.")) or module == "torch":
        return f"torch.{name}"
    if qual.startswith(("TensorBase.", "Tensor.")):
        return f"Tensor.{name}"
    if module.startswith("torch."):
        return f"{module.replace('torch._C._nn', 'torch.nn.functional')}.{name}"
    return qual


def _forbidden_match(name: str, patterns: frozenset[str]) -> str | None:
    """The pattern that op/function ``name`` falls under: ``p``, ``p_*``, ``native_p``, ``special_p`` or a glob."""
    __tracebackhide__ = True
    bare = name.lstrip("_")
    for p in patterns:
        if p.startswith("="):  # exact name only: "=gru" refuses torch.gru but not torch.gru_cell
            if bare == p[1:]:
                return p[1:]
        elif "*" in p or "?" in p:
            if fnmatch.fnmatchcase(bare, p):
                return p
        elif bare in (p, f"native_{p}", f"special_{p}") or bare.startswith((f"{p}_", f"native_{p}_")):
            return p
    return None


class _ForbidFunctions(TorchFunctionMode):
    """Sees torch API calls however they are reached (names, aliases, Tensor methods)."""

    def __init__(self, patterns: frozenset[str], why: str) -> None:
        super().__init__()
        self.patterns, self.why = patterns, why

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: D105
        if _forbidden_match(getattr(func, "__name__", ""), self.patterns):
            raise ForbiddenCall(f"this exercise asks you to write it yourself, but your code called "
                                f"`{_public_name(func)}`{self.why}")
        return func(*args, **(kwargs or {}))


class _ForbidOps(TorchDispatchMode):
    """Sees the ATen operators underneath: calls hidden inside other functions, torch.ops, disabled modes."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in torch._disable_dynamo unless the class says no here, and that
        # wrapper imports torch._dynamo on the first operator (about 2 s of a 2-core machine's CPU, in every kernel
        # that runs a visible or hidden test). Nothing is compiled under this mode, so there is nothing to skip.
        return False

    def __init__(self, patterns: frozenset[str], why: str) -> None:
        super().__init__()
        self.patterns, self.why = patterns, why

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        op = func.overloadpacket.__name__
        if _forbidden_match(op, self.patterns):
            raise ForbiddenCall(f"this exercise asks you to write it yourself, but your code reached the "
                                f"built-in operator `aten.{op}` (through a library function that computes it)"
                                f"{self.why}")
        return func(*args, **(kwargs or {}))


FORBID = "dlcourse.checks.forbid"  # how a spec names the guard below (dlcourse.grading.guards)


@guards.travelling
@contextlib.contextmanager
def forbid(names: Iterable[str], why: str = "") -> Iterator[None]:
    """Inside the block, reaching a torch function or ATen operator named in ``names`` raises :class:`ForbiddenCall`.

    A name ``p`` matches ``p``, ``p_…``, ``native_p``, ``special_p`` (leading underscores ignored); glob
    patterns (``"scaled_dot_product_*"``) match as globs, and ``"=p"`` matches ``p`` alone. Two layers see
    every route: a TorchFunctionMode (``torch.softmax``, ``F.softmax``, ``x.softmax``, an alias bound earlier)
    and a TorchDispatchMode for the operators underneath (``F.softmin`` computing a softmax,
    ``torch.ops.aten._softmax``, code run with torch functions disabled).
    """
    __tracebackhide__ = True
    patterns = frozenset(names)
    with guards.pushed((FORBID, patterns, why)):
        if guards.is_trusted():  # the grader: the guard travels with each call into the student's kernel
            yield
            return
        why = f" ({why})" if why else ""
        with _ForbidFunctions(patterns, why), _ForbidOps(patterns, why):
            yield


def _clone(x: Any) -> Any:
    __tracebackhide__ = True
    if isinstance(x, _TensorType):
        return x.detach().clone().requires_grad_(x.requires_grad)
    if isinstance(x, Record):
        return x.with_values([_clone(v) for v in x])
    if isinstance(x, tuple | list):
        return type(x)(_clone(v) for v in x)
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    return x


def _call_student(fn: Callable, args: Sequence, kwargs: dict, forbidden: Iterable[str], label: str,
                  how: Callable | None = None) -> Any:
    """``fn(*args, **kwargs)`` (or ``how()``) under :func:`forbid`; the student's errors become CheckFailures."""
    __tracebackhide__ = True
    try:
        with forbid(forbidden) if forbidden else contextlib.nullcontext():
            return how() if how is not None else fn(*args, **kwargs)
    except CheckFailure:
        raise
    except NotImplementedError as err:
        raise CheckFailure(f"{label}: not implemented yet ({err or 'NotImplementedError'})") from err
    except Exception as err:  # the student's exception, reported as a failed check, with the case it met
        kind = getattr(err, "remote_type", "") or type(err).__name__
        case = "" if getattr(err, "case_named", False) else describe_case(args, kwargs)
        raise CheckFailure(f"{label} raised {kind}" + (f" when called with {case}" if case else "") + f": {err}") \
            from err


def call(student: Callable, *args: Any, name: str | None = None, forbidden: Iterable[str] = (),
         **kwargs: Any) -> Any:
    """``student(*args, **kwargs)`` under :func:`forbid` with ``forbidden``; returns what it returned.

    For a test that then compares more than a return value (e.g. the weights a training step left): an
    exception the student's code raises becomes a :class:`CheckFailure` that names ``name``.
    """
    __tracebackhide__ = True
    label = name or f"{getattr(student, '__name__', 'your function')}(...)"
    return _call_student(student, args, kwargs, forbidden, label)


def assert_fresh(student: Callable, *args: Any, name: str | None = None, forbidden: Iterable[str] = (),
                 **kwargs: Any) -> None:
    """``student(*args, **kwargs)`` leaves its arguments as they were (tensors, and the dicts and lists that hold
    them) and returns none of them: no returned dict or list is an argument's, no returned tensor shares memory
    with a tensor argument (a state that aliases its input). In the grader both questions are asked in the
    student's kernel, where the objects are."""
    __tracebackhide__ = True
    label = name or f"{getattr(student, '__name__', 'your function')}(...)"
    s_args, s_kwargs = _clone(list(args)), _clone(kwargs)
    if is_remote(student):  # one call in the kernel answers both questions
        reply = _call_student(student, s_args, s_kwargs, forbidden, label,
                              how=lambda: student.aliases(s_args, s_kwargs))
        after_args, after_kwargs, found = list(reply["args"]), dict(reply["kwargs"]), list(reply["aliases"])
    else:
        result = _call_student(student, s_args, s_kwargs, forbidden, label)
        after_args, after_kwargs = s_args, s_kwargs
        found = _aliases(result, s_args, s_kwargs)
    _unchanged(label, args, kwargs, after_args, after_kwargs)
    if found:
        raise CheckFailure(f"{label}: " + "; ".join(found))


def _fresh_generators(x: Any) -> Any:
    """``x`` with every ``torch.Generator`` in it replaced by a new one in the same state."""
    __tracebackhide__ = True
    if isinstance(x, torch.Generator):
        copy = torch.Generator(device=x.device)
        copy.set_state(x.get_state())
        return copy
    if isinstance(x, tuple | list):
        return type(x)(_fresh_generators(v) for v in x)
    if isinstance(x, dict):
        return {k: _fresh_generators(v) for k, v in x.items()}
    return x


def assert_seeded(student: Callable, *args: Any, name: str | None = None, forbidden: Iterable[str] = (),
                  **kwargs: Any) -> None:
    """``student(*args, **kwargs)`` gives the same result whatever the global random state: called twice, with
    generators in the same state but ``torch.manual_seed`` 1 and then 2 before each call, it must return the
    same values (every random number comes from the generator it was given)."""
    __tracebackhide__ = True
    label = name or f"{getattr(student, '__name__', 'your function')}(...)"
    results = []
    for global_seed in (1, 2):
        if is_remote(student):
            build_in_kernel("dlcourse.runtime.seed_everything", global_seed)  # the kernel's global state
        else:
            torch.manual_seed(global_seed)
        results.append(_call_student(student, _fresh_generators(_clone(list(args))),
                                     _fresh_generators(_clone(kwargs)), forbidden, label))
    try:
        assert_equal(*results, name=label)
    except CheckFailure as failure:
        raise CheckFailure(f"{label}: the result depends on the global random state (two calls with the same "
                           f"generator, after torch.manual_seed(1) and torch.manual_seed(2), differ: "
                           f"{str(failure).removeprefix(label + ': ')}); take every random number from the "
                           "generator you are given") from None


def build_in_kernel(factory: str, *args: Any, **kwargs: Any) -> Any:
    """Call the course package's ``factory`` (a dotted path, ``"dlcourse.gan.train.toy_gan"``) where the answers run.

    In the grader the objects it returns (modules, optimizers) are built in the student's kernel and come
    back as proxies, so that a student's function can change them there; a test then reads back what they
    hold (``state_dict()``) and compares it here. Elsewhere it is a plain call. Only ``dlcourse.`` paths.
    """
    __tracebackhide__ = True
    if not factory.startswith("dlcourse."):
        raise ValueError(f"build_in_kernel builds the course package's objects only, not {factory!r}")
    if guards.is_trusted():
        from dlcourse.grading import remote

        return remote.build(factory, args, kwargs)
    import importlib

    module_name, _, attr = factory.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)(*args, **kwargs)


def compare_with_oracle(
    student: Callable,
    oracle: Callable,
    *args: Any,
    tol: Tolerance | None = None,
    name: str | None = None,
    forbidden: Iterable[str] = (),
    check_dtype: bool = True,
    equal_nan: bool = False,
    exact: bool = False,
    no_grad: bool = False,
    **kwargs: Any,
) -> None:
    """Call ``student`` and ``oracle`` on copies of the same inputs and compare the results.

    With ``no_grad`` the student's function runs with autograd off (an exercise that computes gradients
    by hand cannot then call ``backward``).

    The student's function runs under :func:`forbid` with ``forbidden``; its inputs must come back
    unchanged (an answer that writes into its arguments, or into a dict or list it was given, fails — and is
    told so before any difference in its result). Returns nothing: a value left as a test
    cell's last expression would be read by nbgrader as a partial-credit score.
    """
    __tracebackhide__ = True
    label = name or f"{getattr(student, '__name__', 'your function')}(...)"
    s_args, s_kwargs = _clone(list(args)), _clone(kwargs)
    if is_remote(student):  # the grader: the kernel sends back the result and its arguments after the call
        reply = _call_student(student, s_args, s_kwargs, forbidden, label,
                              how=lambda: student.call(s_args, s_kwargs, echo=True, no_grad=no_grad))
        got, s_args, s_kwargs = reply["value"], list(reply["args"]), dict(reply["kwargs"])
    else:
        with torch.no_grad() if no_grad else contextlib.nullcontext():
            got = _call_student(student, s_args, s_kwargs, forbidden, label)
    _unchanged(label, args, kwargs, s_args, s_kwargs)  # first: a changed argument explains a wrong result too
    want = oracle(*_clone(list(args)), **_clone(kwargs))
    if exact:
        assert_equal(got, want, name=label)
    else:
        assert_close(got, want, tol=tol, name=label, check_dtype=check_dtype, equal_nan=equal_nan)


def _unchanged(label: str, args: Sequence[Any], kwargs: dict, after_args: Sequence[Any], after_kwargs: dict) -> None:
    """The arguments after the call (``after_*``) are what was passed: no tensor, dict or list changed in place."""
    __tracebackhide__ = True
    inputs = list(enumerate(args)) + list(kwargs.items())
    copies = list(enumerate(after_args)) + list(after_kwargs.items())
    for (which, before), (_, after) in zip(inputs, copies, strict=True):
        where = f"argument #{which}" if isinstance(which, int) else f"argument {which!r}"
        if isinstance(before, _TensorType) and not _same_tensor(before, after):
            raise CheckFailure(f"{label}: your function changed its {where} in place; return a new tensor instead")
        changed = _changed_inside(before, after, "") if isinstance(before, dict | list) else ""
        if changed:
            raise CheckFailure(f"{label}: your function changed its {where} in place ({changed}); leave the "
                               f"caller's {type(before).__name__} as it was and return a new one")


def _changed_inside(before: Any, after: Any, path: str) -> str:
    """How a dict or list argument (and the tensors in it) differs after the call: "" when it does not."""
    __tracebackhide__ = True
    if isinstance(before, dict):
        if not isinstance(after, dict):
            return f"{path or 'it'} is no longer a dict"
        if set(before) != set(after):
            added, gone = sorted(map(repr, set(after) - set(before))), sorted(map(repr, set(before) - set(after)))
            return "; ".join(filter(None, [f"key {', '.join(added)} added to {path or 'it'}" if added else "",
                                           f"key {', '.join(gone)} removed from {path or 'it'}" if gone else ""]))
        for key in before:
            found = _changed_inside(before[key], after[key], f"{path}[{key!r}]")
            if found:
                return found
        return ""
    if isinstance(before, list | tuple):
        if not isinstance(after, list | tuple) or len(after) != len(before):
            return f"{path or 'it'} changed length"
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            found = _changed_inside(b, a, f"{path}[{i}]")
            if found:
                return found
        return ""
    if isinstance(before, _TensorType):
        return "" if isinstance(after, _TensorType) and _same_tensor(before, after) else f"{path} was overwritten"
    return "" if _same_scalar_safe(before, after) else f"{path} changed"


def _same_scalar_safe(a: Any, b: Any) -> bool:
    """Plain numbers, strings and None must come back equal; any other object is not judged here."""
    __tracebackhide__ = True
    if not isinstance(a, bool | int | float | str | type(None)):
        return True
    return type(a) is type(b) and (a == b or a != a and b != b)  # NaN stays NaN


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    __tracebackhide__ = True
    a, b = _T_detach(a), _T_detach(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        nan_a, nan_b = _t_isnan(a), _t_isnan(b)
        return _t_equal(nan_a, nan_b) and _t_equal(torch.where(nan_a, 0, a), torch.where(nan_b, 0, b))
    return _t_equal(a, b)


_DISCONNECTED = ("{label}: the result is not connected to the inputs in the autograd graph "
                 "(did you call .detach(), .item() or build a new tensor from numbers?)")


def compare_gradients(
    student: Callable,
    oracle: Callable,
    *args: Any,
    wrt: Sequence[int] | None = None,
    tol: Tolerance | None = None,
    name: str | None = None,
    forbidden: Iterable[str] = (),
    seed: int = 0,
    **kwargs: Any,
) -> None:
    """Gradients of ``<f(args), R>`` for a fixed random ``R`` agree for the student's ``f`` and the oracle's.

    ``wrt`` lists the positions of the floating-point tensor arguments to differentiate (default: all of
    them). Outputs that are tuples contribute every floating-point tensor they hold.
    """
    __tracebackhide__ = True
    label = name or f"gradient of {getattr(student, '__name__', 'your function')}(...)"
    positions = list(wrt) if wrt is not None else [
        i for i, a in enumerate(args) if isinstance(a, _TensorType) and a.is_floating_point()]

    def grads(fn: Callable, is_student: bool) -> list[torch.Tensor]:
        __tracebackhide__ = True
        if is_student and is_remote(fn):
            reply = _call_student(fn, args, kwargs, forbidden, label,
                                  how=lambda: fn.backward(args, kwargs, wrt=positions, seed=seed))
            if not reply["connected"]:
                raise CheckFailure(_DISCONNECTED.format(label=label))
            return [torch.zeros_like(args[i]) if g is None else g
                    for i, g in zip(positions, reply["input_grads"], strict=True)]
        xs = [(_T_detach(a).clone().requires_grad_(i in positions) if isinstance(a, _TensorType) else a)
              for i, a in enumerate(args)]
        out = (_call_student(fn, xs, _clone(kwargs), forbidden, label) if is_student
               else fn(*xs, **_clone(kwargs)))
        total = _random_projection(out, seed)
        if not isinstance(total, _TensorType) or not total.requires_grad:
            raise CheckFailure(_DISCONNECTED.format(label=label))
        got = torch.autograd.grad(total, [xs[i] for i in positions], allow_unused=True)
        return [torch.zeros_like(xs[i]) if g is None else g for i, g in zip(positions, got, strict=True)]

    for i, g_s, g_o in zip(positions, grads(student, True), grads(oracle, False), strict=True):
        assert_close(g_s, g_o, tol=tol, name=f"{label}: d/d(argument #{i})")


def parameter_gradients(
    module: torch.nn.Module,
    *inputs: Any,
    output: Callable[[Any], Any] | None = None,
    name: str | None = None,
    forbidden: Iterable[str] = (),
    seed: int = 0,
    **kwargs: Any,
) -> dict[str, torch.Tensor]:
    """Gradients of ``<module(*inputs), R>`` with respect to each of ``module``'s parameters, by name.

    ``R`` is the fixed random tensor of :func:`compare_gradients` and :func:`compare_modules` (one per
    floating-point tensor of the output, or of its top-level tuple items, for ``seed``), so two modules
    whose outputs agree in shape get comparable gradients. A parameter that gets no gradient (unused, or
    frozen) gets zeros. ``output`` selects what to project from the module's result (e.g.
    ``lambda out: out.logits`` for a Hugging Face model); it applies to the grader's own modules only.
    Works for a module in the student's kernel (:class:`~dlcourse.grading.remote.Remote`): the gradients
    are computed there, under :func:`forbid` with ``forbidden``, and come back as data. The module's
    ``.grad`` fields are left as they were.
    """
    __tracebackhide__ = True
    label = name or f"gradients of {getattr(module, '__name__', type(module).__name__)}"
    if is_remote(module):
        if output is not None:
            raise TypeError("parameter_gradients: `output` selects locally; a student's module is projected whole")
        reply = _call_student(module, inputs, kwargs, forbidden, label,
                              how=lambda: module.backward(inputs, kwargs, wrt=[], seed=seed, params=True))
        if not reply["connected"]:
            raise CheckFailure(f"{label}: the output is not connected to the parameters in the autograd graph")
        return dict(reply["param_grads"])
    out = _call_student(module, _clone(list(inputs)), _clone(kwargs), forbidden, label)
    total = _random_projection(out if output is None else output(out), seed)
    if not isinstance(total, _TensorType) or not total.requires_grad:
        raise CheckFailure(f"{label}: the output is not connected to the parameters in the autograd graph")
    named = list(module.named_parameters())
    trained = [p for _, p in named if p.requires_grad]
    got = iter(torch.autograd.grad(total, trained, allow_unused=True) if trained else ())
    grads = {}
    for key, p in named:
        g = next(got) if p.requires_grad else None
        grads[key] = torch.zeros_like(p) if g is None else _T_detach(g)
    return grads


def load_weights(student: torch.nn.Module, source: torch.nn.Module | dict[str, torch.Tensor],
                 rename: dict[str, str] | None = None, name: str = "your module") -> None:
    """Copy ``source``'s parameters and buffers into ``student``, whose names must match exactly.

    ``rename`` maps a prefix of the source's names to the student's (``{"linear1.": "ff.linear1."}``).
    The failure message lists missing, unexpected and wrongly shaped entries.
    """
    __tracebackhide__ = True
    state = _renamed(source.state_dict() if isinstance(source, torch.nn.Module) else dict(source), rename)
    own = student.state_dict()
    missing = sorted(set(state) - set(own))
    unexpected = sorted(set(own) - set(state))
    wrong = [f"{k}: yours {tuple(own[k].shape)}, expected {tuple(v.shape)}" for k, v in state.items()
             if k in own and own[k].shape != v.shape]
    if missing or unexpected or wrong:
        lines = [f"{name}: its parameters do not match the reference's (keep the names set up in __init__)"]
        if missing:
            lines.append("  missing: " + ", ".join(missing))
        if unexpected:
            lines.append("  not in the reference: " + ", ".join(unexpected))
        lines += ["  shape " + w for w in wrong]
        raise CheckFailure("\n".join(lines))
    student.load_state_dict(state)


def fixed_tensor(shape: Sequence[int], phase: float = 0.0, scale: float = 1.0) -> torch.Tensor:
    """A float32 tensor of ``shape`` whose values are the same on every machine: ``scale·sin(1.3·k + phase)``
    for k = 1, 2, … in row-major order. Visible tests use it to compare an answer with numbers written in the
    test, without a random generator (whose stream may differ between versions) and without the reference."""
    __tracebackhide__ = True
    n = int(np.prod(tuple(shape))) if len(shape) else 1
    k = torch.arange(1, n + 1, dtype=torch.float64)
    return (scale * torch.sin(1.3 * k + phase)).to(torch.float32).reshape(tuple(shape))


def fixed_weights(module: torch.nn.Module, scale: float = 0.5, name: str = "your module") -> None:
    """Set every floating-point parameter and buffer of ``module`` to a :func:`fixed_tensor`, each with its own
    phase (so that two matrices of one shape still differ; phases follow the sorted names); integer buffers
    are kept."""
    __tracebackhide__ = True
    state = {key: (fixed_tensor(value.shape, phase=0.7 * i, scale=scale) if value.is_floating_point() else value)
             for i, (key, value) in enumerate(sorted(module.state_dict().items()))}
    load_weights(module, state, name=name)


def compare_modules(
    student: torch.nn.Module,
    oracle: torch.nn.Module,
    *inputs: Any,
    rename: dict[str, str] | None = None,
    tol: Tolerance | None = None,
    grad_tol: Tolerance | None = None,
    name: str | None = None,
    forbidden: Iterable[str] = (),
    output: Callable[[Any], Any] = lambda out: out,
    output_names: Sequence[str] | None = None,
    seed: int = 0,
    **kwargs: Any,
) -> None:
    """Give ``student`` the oracle's weights, run both on the same inputs, compare outputs and gradients.

    ``output`` selects what to compare from each module's result (e.g. ``lambda r: r[0]``). Gradients of
    ``<output, R>`` for a fixed random ``R`` are compared for every floating-point input tensor and every
    parameter. The student's forward pass runs under :func:`forbid` with ``forbidden``. Inputs are named
    after the parameters of ``student.forward``; ``output_names`` names the items of a tuple result.
    """
    __tracebackhide__ = True
    label = name or type(student).__name__
    load_weights(student, oracle, rename, name=label)
    grad_tol = grad_tol or tol

    def run(module: torch.nn.Module, is_student: bool):
        __tracebackhide__ = True
        if is_student and is_remote(module):
            if output(_SELF) is not _SELF:
                raise TypeError("compare_modules: `output` selects locally; against a student's kernel compare the "
                                "whole output")
            wrt = [i for i, x in enumerate(inputs) if isinstance(x, _TensorType) and x.is_floating_point()]
            reply = _call_student(module, inputs, kwargs, forbidden, label,
                                  how=lambda: module.backward(inputs, kwargs, wrt=wrt, seed=seed, params=True))
            if not reply["connected"]:
                raise CheckFailure(f"{label}: the output is not connected to the inputs in the autograd graph")
            return reply["output"], list(reply["input_grads"]), dict(reply["param_grads"])
        xs = [(_T_detach(x).clone().requires_grad_(x.is_floating_point()) if isinstance(x, _TensorType) else x)
              for x in inputs]
        module.zero_grad(set_to_none=True)
        out = (_call_student(module, xs, _clone(kwargs), forbidden, label) if is_student
               else module(*xs, **_clone(kwargs)))
        picked = output(out)
        total = _random_projection(picked, seed)
        if is_student and (not isinstance(total, _TensorType) or not total.requires_grad):
            raise CheckFailure(f"{label}: the output is not connected to the inputs in the autograd graph")
        total.backward()
        input_grads = [x.grad for x in xs if isinstance(x, _TensorType) and x.is_floating_point()]
        param_grads = {k: p.grad for k, p in module.named_parameters()}
        module.zero_grad(set_to_none=True)  # as in the student's kernel: no gradient is left behind
        return picked, input_grads, param_grads

    got, got_in, got_params = run(student, True)
    want, want_in, want_params = run(oracle, False)
    try:
        if output_names and isinstance(want, tuple | list):
            if not isinstance(got, tuple | list) or len(got) != len(want):
                raise CheckFailure(f"{label}: expected a tuple ({', '.join(output_names)}), got {type(got).__name__}")
            for what, g, w in zip(output_names, got, want, strict=False):
                assert_close(_detach_all(g), _detach_all(w), tol=tol, name=f"{label}: {what}")
        else:
            assert_close(_detach_all(got), _detach_all(want), tol=tol, name=f"{label} output")
    except CheckFailure as failure:
        raise _located(failure, student, oracle, inputs, kwargs, rename, tol, label) from None
    names = _input_names(student, inputs)
    for name_i, g, w in zip(names, got_in, want_in, strict=True):
        assert_close(*_zeros_for_none(g, w), tol=grad_tol, name=f"{label}: gradient of {name_i}")
    for (k, g), (_, w) in zip(sorted(got_params.items()), sorted(_renamed(want_params, rename).items()),
                              strict=True):
        assert_close(*_zeros_for_none(g, w), tol=grad_tol, name=f"{label}: gradient of {k}")


def _located(failure: CheckFailure, student: Any, oracle: torch.nn.Module, inputs: Sequence[Any], kwargs: dict,
             rename: dict[str, str] | None, tol: Tolerance | None, label: str) -> CheckFailure:
    """``failure`` with :func:`localise`'s lines added: where the student's module first parts from the oracle."""
    __tracebackhide__ = True
    where = localise(student, oracle, inputs, kwargs, rename=rename, tol=tol, name=label)
    return CheckFailure(f"{failure}\n" + "\n".join(where)) if where else failure


def _differs(a: Any, e: Any, tol: Tolerance) -> str | None:
    """"" when ``a`` matches ``e`` within ``tol``; the kind of difference in a few words when it does not; None when
    the two cannot be compared (one missing, or laid out in other shapes)."""
    __tracebackhide__ = True
    if a is None or e is None:
        return "" if a is None and e is None else None
    if tuple(a.shape) != tuple(e.shape):
        if a.dim() >= 2 and tuple(a.transpose(0, 1).shape) == tuple(e.shape):  # sequence-first against batch-first
            a = a.transpose(0, 1)
        elif tuple(a.squeeze().shape) == tuple(e.squeeze().shape):  # (10, 32) and (1, 10, 32) hold the same values
            a, e = a.squeeze(), e.squeeze()
        else:
            return None  # laid out differently (a convolution's map against a linear layer's tokens): not compared
    x, y = _to_numpy(a).astype(np.float64), _to_numpy(e).astype(np.float64)
    with np.errstate(all="ignore"):
        bad = ~(np.abs(x - y) <= tol.atol + tol.rtol * np.abs(y))
    if not bad.any():
        return ""
    kinds = difference_kinds(x, y, bad)
    return f"{int(bad.sum())} of {bad.size} values differ" + (f"; {kinds[0]}" if kinds else "")


def _oracle_to_student(name: str, rename: dict[str, str] | None) -> str:
    """The student's name for the oracle's submodule ``name``: the longest prefix of ``rename`` that fits."""
    __tracebackhide__ = True
    fits = [source for source in (rename or {}) if (name + ".").startswith(source)]
    if not fits:
        return name
    source = max(fits, key=len)
    target = rename[source]
    return target + (name + ".")[len(source):-1] if (name + ".") != source else target.rstrip(".")


def _trace_tolerance(tol: Tolerance) -> Tolerance:
    """The tolerance a trace's submodule outputs are compared with: the check's own, no tighter than rtol 1e-4 and
    atol 1e-5 (a float32 path through many submodules rounds differently from the oracle's)."""
    __tracebackhide__ = True
    return Tolerance(rtol=max(tol.rtol, 1e-4), atol=max(tol.atol, 1e-5))


def _student_trace(student: Any, inputs: Sequence[Any], kwargs: dict) -> list:
    """What each submodule of the student's module computed on copies of ``inputs``
    (:func:`dlcourse.grading.trace.submodule_trace`; in the grader, in the student's kernel)."""
    __tracebackhide__ = True
    from dlcourse.grading.trace import submodule_trace

    if is_remote(student):
        return student.trace(list(inputs), dict(kwargs))
    return submodule_trace(student, _clone(list(inputs)), _clone(kwargs))


def localise(student: Any, oracle: torch.nn.Module, inputs: Sequence[Any], kwargs: dict, *,  # noqa: PLR0913
             rename: dict[str, str] | None = None, tol: Tolerance | None = None,
             name: str = "your module") -> list[str]:
    """Where ``student``'s forward pass first parts from ``oracle``'s: lines for a failure message, or none.

    Both modules run again with a hook on every submodule (:mod:`dlcourse.grading.trace`); submodules are paired
    by name (the oracle's through ``rename``, as the weights are), and in the order they finished the first pair
    whose outputs differ is named, with whether its input already differed — then the difference arises in the
    code that feeds it — and which submodules before it match. Says where and what kind, never the fix. Empty
    when the modules have no submodules in common or the trace fails (the comparison's own message stands).
    """
    __tracebackhide__ = True
    from dlcourse.grading.trace import submodule_trace

    tol = _trace_tolerance(tol or FLOAT32)
    whose = "your module" if is_remote(student) else type(student).__name__
    try:
        theirs = _student_trace(student, inputs, kwargs)
        ours = submodule_trace(oracle, _clone(list(inputs)), _clone(kwargs))
    except Exception:  # a trace is a courtesy: the comparison has already failed and says so
        return []
    counts: dict[str, int] = {}
    student_calls: dict[tuple[str, int], tuple[Any, Any]] = {}
    for sub, seen_in, seen_out in theirs:
        counts[sub] = counts.get(sub, 0) + 1
        student_calls[(sub, counts[sub])] = (seen_in, seen_out)
    counts.clear()
    keys = []  # each oracle call as the student's (name, call number)
    for sub, _, _ in ours:
        name = _oracle_to_student(sub, rename)
        counts[name] = counts.get(name, 0) + 1
        keys.append((name, counts[name]))
    matched: list[str] = []
    for index, (key, (_, seen_in, seen_out)) in enumerate(zip(keys, ours, strict=True)):
        if key not in student_calls:
            continue
        call = _call_name(key)
        their_in, their_out = student_calls[key]
        out_kind = _differs(their_out, seen_out, tol)
        if out_kind is None:
            continue
        if not out_kind:
            matched.append(call)
            continue
        in_kind = _differs(their_in, seen_in, tol)
        lines = [f"  where it first differs: the output of `{call}` ({out_kind})"]
        if in_kind:
            # the outermost call around this one whose input already differs: the code that feeds it is the place
            fed, fed_kind = key, in_kind
            for later, (_, later_in, _) in zip(keys[index + 1:], ours[index + 1:], strict=True):
                if not (fed[0] + ".").startswith(later[0] + ".") or later not in student_calls:
                    continue
                kind = _differs(student_calls[later][0], later_in, tol)
                if not kind:
                    break
                fed, fed_kind = later, kind
            parent = _parent(fed[0])
            owner = f"`{parent}`" if parent else f"{whose}"
            before = [m for m in matched if _parent(m.split(" (")[0]) == parent]
            after = f", after `{before[-1]}`" if before else ""
            if fed == key:
                lines.append(f"  its input already differs ({in_kind}), while everything computed before it matches: "
                             f"look at the code in {owner}'s forward that computes that input{after}, and at what "
                             f"{owner} itself was given besides its first input (a mask, a state)")
            else:
                lines.append(f"  its input already differs, and so does the input of `{_call_name(fed)}` around it "
                             f"({fed_kind}), while everything computed before it matches: look at the code in "
                             f"{owner}'s forward that computes the input of `{_call_name(fed)}`{after}, and at what "
                             f"{owner} itself was given besides its first input (a mask, a state)")
        elif any(m.startswith(key[0] + ".") for m in matched):
            lines.append(f"  its input matches the oracle's, and so do the outputs of its own submodules: the "
                         f"difference arises in `{call}`'s own forward code")
        else:
            lines.append(f"  its input matches the oracle's: the difference arises inside `{call}`")
        if matched:
            lines.append("  before it, these match: " + _names(matched))
        return lines
    if not matched:
        return []
    return [f"  every submodule's output matches the oracle's ({_names(matched)}): the difference arises in "
            f"{whose}'s own forward code, outside its submodules"]


def _call_name(key: tuple[str, int]) -> str:
    """A submodule call as a message names it: ``layers.0``, or ``layers.0 (call 2)`` for its second call."""
    __tracebackhide__ = True
    return key[0] + (f" (call {key[1]})" if key[1] > 1 else "")


def _parent(name: str) -> str:
    """The module whose forward calls submodule ``name``: its name less the last part, and less the index of a
    ModuleList or Sequential (``h.1``'s is the model, not ``h``)."""
    __tracebackhide__ = True
    parts = name.split(".")
    last = parts.pop()
    while last.isdigit() and parts:  # an item of a container: the container's owner calls it
        last = parts.pop()
    return ".".join(parts)


def _names(calls: list[str], most: int = 6) -> str:
    __tracebackhide__ = True
    if len(calls) <= most:
        return ", ".join(f"`{c}`" for c in calls)
    return ", ".join(f"`{c}`" for c in calls[:2]) + f", … ({len(calls) - 3} more), " + f"`{calls[-1]}`"


@contextlib.contextmanager
def stored_steps(student: Any, *inputs: Any, steps: dict[str, Any], given: dict[str, Any] | None = None,
                 tol: Tolerance | None = None, **kwargs: Any) -> Iterator[None]:
    """Around checks of a module's results against stored numbers: when one fails, say which step went wrong.

    ``steps`` maps submodule names, in the order the forward pass calls them, to the stored output of each one's
    first call on ``inputs`` (its first floating-point output: an attention's context, not its weights);
    ``given`` optionally maps some of them to the first input they should receive. On a failure inside the
    ``with`` block the student's module runs again with a hook on every submodule and the message names the
    first step whose output differs from the stored one (and whether its input already did), a step the
    forward pass never calls, or — every step matching — the module's own code between them. For a visible
    test whose oracle is stored numbers (the answer's wiring must not be written out in the test).
    """
    __tracebackhide__ = True
    try:
        yield
    except CheckFailure as failure:
        where = _stored_lines(student, inputs, kwargs, steps, given or {}, tol or FLOAT32)
        raise (CheckFailure(f"{failure}\n" + "\n".join(where)) if where else failure) from None


def _stored_lines(student: Any, inputs: Sequence[Any], kwargs: dict, steps: dict[str, Any], given: dict[str, Any],
                  tol: Tolerance) -> list[str]:
    """:func:`stored_steps`' lines: the first of ``steps`` whose output parts from the stored numbers."""
    __tracebackhide__ = True
    tol = _trace_tolerance(tol)
    whose = "your module" if is_remote(student) else type(student).__name__
    try:
        trace = _student_trace(student, inputs, kwargs)
    except Exception:  # the check has already failed and says so; these lines are a courtesy
        return []
    first = {}
    for sub, seen_in, seen_out in trace:
        first.setdefault(sub, (seen_in, seen_out))
    matched: list[str] = []
    for step, want in steps.items():
        if step not in first:
            return [f"  where it first differs: your forward pass never calls `{step}`"
                    + (f" (before it, these match: {_names(matched)})" if matched else "")]
        seen_in, seen_out = first[step]
        kind = _differs(seen_out, _as_tensor(want), tol)
        if kind == "":
            matched.append(step)
            continue
        lines = [f"  where it first differs: the output of `{step}` ("
                 + (kind or f"shape {tuple(seen_out.shape) if seen_out is not None else None}, "
                            f"expected {tuple(_as_tensor(want).shape)}") + ")"]
        if step in given:
            in_kind = _differs(seen_in, _as_tensor(given[step]), tol)
            if in_kind:
                lines.append(f"  its first input already differs ({in_kind}): look at what {whose}'s forward "
                             f"gives `{step}`")
            elif in_kind == "":
                lines.append(f"  its first input is the expected one: look at its other inputs, and at `{step}` "
                             "itself")
        else:
            lines.append(f"  look at what {whose}'s forward gives `{step}` (every input), and at `{step}` itself")
        if matched:
            lines.append("  before it, these match: " + _names(matched))
        return lines
    return [f"  every step's output matches ({_names(matched)}): the difference arises in {whose}'s own forward "
            "code, between and after them"] if matched else []


def _as_tensor(value: Any) -> Any:
    __tracebackhide__ = True
    return value if isinstance(value, _TensorType) else torch.as_tensor(value)


def compare_attention(
    student: torch.nn.Module,
    oracle: torch.nn.Module,
    query: Any,
    key: Any,
    value: Any,
    *,
    tol: Tolerance | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> None:
    """Compare a multi-head attention module with ``oracle`` (``nn.MultiheadAttention``'s call, the same weights):
    the output, then the weights. On a difference the message also says at which stage the two part: whether
    the per-head weights already differ (then the scores or the softmax: before the values are used) or match
    (then after the softmax), and, where the student's module applies its ``out_proj`` as a submodule, whether
    what goes into it — the heads, merged — gives the oracle's output through the oracle's output projection.
    Where, and what kind; never the fix.
    """
    __tracebackhide__ = True
    label = name or type(student).__name__
    got = _call_student(student, _clone([query, key, value]), _clone(kwargs), (), label)
    want = oracle(*_clone([query, key, value]), **_clone(kwargs))
    try:
        assert_close(_detach_all(got[0]), _detach_all(want[0]), tol=tol, name=f"output, {label}")
        if want[1] is not None:
            assert_close(_detach_all(got[1]), _detach_all(want[1]), tol=tol, name=f"weights, {label}")
    except CheckFailure as failure:
        where = _attention_stages(student, oracle, (query, key, value), kwargs, tol or FLOAT32)
        raise CheckFailure(f"{failure}\n" + "\n".join(where)) if where else failure from None


def _attention_stages(student: Any, oracle: torch.nn.Module, qkv: tuple, kwargs: dict, tol: Tolerance) -> list[str]:
    """:func:`compare_attention`'s lines: the stage at which the student's attention first parts from the oracle's."""
    __tracebackhide__ = True
    per_head = dict(kwargs, need_weights=True, average_attn_weights=False)
    try:
        theirs = _detach_all(student(*_clone(list(qkv)), **_clone(per_head)))
        ours = _detach_all(oracle(*_clone(list(qkv)), **_clone(per_head)))
        kind = _differs(theirs[1], ours[1], tol)
    except Exception:  # the comparison has already failed and says so; these lines are a courtesy
        return []
    if kind is None:
        return []
    if kind:
        return [f"  at which stage: the per-head weights (average_attn_weights=False) already differ ({kind}): "
                "the difference arises before the values are used — in the scores (the query and key "
                "projections, the scaling, the masks) or in the softmax"]
    lines = ["  at which stage: the per-head weights (average_attn_weights=False) match the oracle's: the "
             "difference arises after the softmax — in the values' projection, the weighted sum, how the heads "
             "are merged, or the output projection"]
    projection = getattr(oracle, "out_proj", None)
    try:
        trace = _student_trace(student, qkv, kwargs)
        fed = [seen_in for sub, seen_in, _ in trace if sub == "out_proj" or sub.endswith(".out_proj")]
        if not fed or projection is None:
            return lines
        with torch.no_grad():  # what the oracle's projection makes of it (no inverse: a test's weights may be
            projected = projection(fed[0].to(ours[0].dtype))  # nearly singular)
        kind = _differs(projected.reshape(ours[0].shape), ours[0], tol)
    except Exception:
        return lines
    if kind:
        lines.append(f"  what goes into your `out_proj` — the heads, merged — already differs (through the oracle's "
                     f"output projection: {kind}): the values' projection, the weighted sum or the merge of the "
                     "heads")
    elif kind is not None:
        lines.append("  what goes into your `out_proj` — the heads, merged — matches the oracle's: the difference "
                     "arises in how the output projection is applied")
    return lines


def compare_forward(
    student: torch.nn.Module,
    oracle: torch.nn.Module,
    *inputs: Any,
    rename: dict[str, str] | None = None,
    tol: Tolerance | None = None,
    name: str | None = None,
    forbidden: Iterable[str] = (),
    output: Callable[[Any], Any] = lambda out: out,
    **kwargs: Any,
) -> None:
    """Run two modules that already hold the same weights on copies of the same inputs and compare their outputs.

    For a visible test that checks a whole module's forward pass: when the outputs differ, the message also says
    where the student's forward pass first parts from the oracle's (:func:`localise`; ``rename`` pairs the
    oracle's submodule names with the student's, as for :func:`load_weights`). ``output`` picks what to compare
    from each result (``lambda out: out.logits``). An error the student's code raises names the inputs it met.
    """
    __tracebackhide__ = True
    label = name or type(student).__name__
    got = _call_student(student, _clone(list(inputs)), _clone(kwargs), forbidden, label)
    want = oracle(*_clone(list(inputs)), **_clone(kwargs))
    try:
        assert_close(_detach_all(output(got)), _detach_all(output(want)), tol=tol, name=label)
    except CheckFailure as failure:
        raise _located(failure, student, oracle, inputs, kwargs, rename, tol, label) from None


def _input_names(module: torch.nn.Module, inputs: Sequence[Any]) -> list[str]:
    """Names of the floating-point tensor inputs, from the parameters of ``module.forward``."""
    __tracebackhide__ = True
    import inspect

    try:
        params = (module.parameter_names() if is_remote(module)
                  else [p for p in inspect.signature(module.forward).parameters if p != "self"])
    except (TypeError, ValueError):
        params = []
    return [f"input {params[i]!r}" if i < len(params) else f"input #{i}"
            for i, x in enumerate(inputs) if isinstance(x, _TensorType) and x.is_floating_point()]


def _renamed(params: dict[str, Any], rename: dict[str, str] | None) -> dict[str, Any]:
    """``params`` with each key prefix ``old`` of ``rename`` replaced by ``new``."""
    __tracebackhide__ = True
    for old, new in (rename or {}).items():
        params = {(new + k[len(old):] if k.startswith(old) else k): v for k, v in params.items()}
    return params


def _zeros_for_none(got: torch.Tensor | None, want: torch.Tensor | None) -> tuple[Any, Any]:
    """A gradient that is None (a parameter the output does not use) as zeros shaped like the other one, on
    either side: the student's kernel sends unused parameters' gradients back as zeros."""
    __tracebackhide__ = True
    if got is None and want is not None:
        got = torch.zeros_like(want)
    if want is None and got is not None:
        want = torch.zeros_like(got)
    return got, want


def _detach_all(x: Any) -> Any:
    __tracebackhide__ = True
    if isinstance(x, _TensorType):
        return _T_detach(x)
    if isinstance(x, Record):
        return x.with_values([_detach_all(v) for v in x])
    if isinstance(x, tuple | list):
        return type(x)(_detach_all(v) for v in x)
    return x


class _Self:
    """Stands for a module's output when asking whether ``output=`` selects anything."""


_SELF = _Self()


def assert_same_object(obj: Any, a: str, b: str, message: str) -> None:
    """Attribute paths ``a`` and ``b`` of ``obj`` lead to one object (e.g. tied weights), else fail with ``message``."""
    __tracebackhide__ = True

    if is_remote(obj):
        same = obj.same(a, b)
    else:
        try:
            same = attribute_path(obj, a) is attribute_path(obj, b)
        except AttributeError as err:
            raise CheckFailure(f"{message} ({err})") from err
    if not same:
        raise CheckFailure(message)


# --------------------------------------------------------------------------------------------------
# Tampering


def _current(owner_name: str, attr: str) -> Any:
    __tracebackhide__ = True
    owner = _OWNERS[owner_name]
    return getattr(owner, attr, None)


# Every function of torch and torch.nn.functional is an oracle somewhere; snapshot them all. torch._dynamo,
# imported lazily by torch itself, re-wraps a few (functools.wraps keeps the original as __wrapped__).
_OWNERS["torch.nn.functional"] = torch.nn.functional
for _owner_name in ("torch", "torch.nn.functional"):
    for _attr, _value in list(vars(_OWNERS[_owner_name]).items()):
        if callable(_value) and not _attr.startswith("__") and not isinstance(_value, type):
            _ORIGINALS.setdefault((_owner_name, _attr), _value)
_REWRAPPED_BY_TORCH = {("torch", "manual_seed")}


def _replaced(owner: str, attr: str, original: Any) -> bool:
    __tracebackhide__ = True
    now = _current(owner, attr)
    if now is original:
        return False
    return not ((owner, attr) in _REWRAPPED_BY_TORCH and getattr(now, "__wrapped__", None) is original)


def assert_untampered() -> None:
    """Fail when torch, NumPy, builtins or this module's checks were replaced after the set-up cell.

    Replacing a function object and swapping its ``__code__`` are both detected.
    """
    __tracebackhide__ = True
    changed = [f"{owner}.{attr}" for (owner, attr), value in _ORIGINALS.items() if _replaced(owner, attr, value)]
    module = sys.modules[__name__]
    changed += [f"dlcourse.checks.{n}" for n, (fn, code) in _OWN_FUNCTIONS.items()
                if getattr(module, n, None) is not fn or fn.__code__ is not code]
    if changed:
        raise CheckFailure("these functions were replaced after the set-up cell, which the grader does not "
                           "accept: " + ", ".join(sorted(changed)))


# Taken last, when every public check is defined; assert_untampered compares against it. The helpers taken from
# dlcourse.grading.common count as the module's own.
_OWN_FUNCTIONS = {name: (fn, fn.__code__) for name, fn in list(globals().items())
                  if isinstance(fn, types.FunctionType) and fn.__module__ in (__name__, "dlcourse.grading.common")}
