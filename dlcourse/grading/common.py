"""What the checks, the kernel's agent and the grader's proxies all use: the failures a check raises and three
helpers on values. It imports nothing of the course, so each of them can import it.
"""

from __future__ import annotations

from typing import Any

import torch


class CheckFailure(AssertionError):
    """A check failed; the message says what was expected and what was found."""


class ForbiddenCall(CheckFailure):
    """An answer called a function that the exercise asks you to write yourself."""


def attribute_path(obj: Any, path: str) -> Any:
    """``obj.a.b`` for ``path == "a.b"`` (``obj`` itself for an empty path)."""
    for part in path.split(".") if path else []:
        obj = getattr(obj, part)
    return obj


def float_tensors(obj: Any) -> list[torch.Tensor]:
    """Floating-point (and complex) tensors in ``obj`` (tuples, lists, dicts, records), in order."""
    if isinstance(obj, torch.Tensor):
        return [obj] if obj.is_floating_point() or obj.is_complex() else []
    if isinstance(obj, tuple | list):
        return [t for v in obj for t in float_tensors(v)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in float_tensors(v)]
    if hasattr(obj, "keys") and hasattr(obj, "values") and not isinstance(obj, torch.nn.Module):
        try:
            return [t for v in obj.values() for t in float_tensors(v)]
        except Exception:  # noqa: BLE001
            return []
    return []


_TensorType = torch.Tensor  # kept at import: the student's code may rebind torch.Tensor later


def describe_value(value: Any) -> str:
    """One value in a few words: "a float32 tensor of shape (2, 4)", "True", "a dict"."""
    if isinstance(value, _TensorType):
        return f"a {str(value.dtype).replace('torch.', '')} tensor of shape {tuple(value.shape)}"
    if isinstance(value, tuple | list) and value and all(isinstance(v, _TensorType) for v in value):
        return f"a {type(value).__name__} of {len(value)} tensors"
    if isinstance(value, bool | int | float | str | type(None)):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "…"
    return f"a {type(value).__name__}"


def describe_case(args: Any, kwargs: dict) -> str:
    """The inputs of a call in a few words ("a float32 tensor of shape (2, 4), a float32 tensor of shape
    (2, 3), causal=True"): what a failure message names before the library's own message."""
    __tracebackhide__ = True
    parts = [describe_value(a) for a in args] + [f"{k}={describe_value(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def random_projection(out: Any, seed: int) -> Any:
    """``<out, R>`` summed over the floating-point tensors in ``out``, for a fixed random ``R`` (NaN as 0).

    Its gradient is a vector-Jacobian product with a random vector, which tests every output direction. The checks
    use it in the grader's process and the kernel's agent in the student's, so both project alike.
    """
    __tracebackhide__ = True
    outs = [o for o in (out if isinstance(out, tuple | list) else (out,))
            if isinstance(o, _TensorType) and o.is_floating_point()]
    gen = torch.Generator().manual_seed(seed)
    return sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype).to(o.device)).nan_to_num().sum()
               for o in outs)


def _walk(value: Any, path: str):
    """(path, object) for ``value`` and every dict, list, tuple and tensor inside it."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}[{key!r}]")
    elif isinstance(value, tuple | list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]")


def _storage(t: torch.Tensor) -> int | None:
    try:
        return t.untyped_storage().data_ptr() if t.numel() else None
    except Exception:  # noqa: BLE001 - a tensor without storage (meta, fake) aliases nothing
        return None


def aliases(result: Any, args: Any, kwargs: dict) -> list[str]:
    """Where a function's ``result`` holds one of its arguments: a returned dict or list that *is* an argument's
    (the caller's object, changed with it), or a returned tensor that shares memory with a tensor argument (a
    later in-place change to one changes the other). Tensors inside an argument's dict (state handed over from
    the previous step) may be returned as they are; the arguments themselves may not."""
    named = [(f"argument #{i}", a) for i, a in enumerate(args)] + [(f"argument {k!r}", v) for k, v in kwargs.items()]
    containers = {id(obj): f"{where}{path}" for where, arg in named for path, obj in _walk(arg, "")
                  if isinstance(obj, dict | list)}
    memory = {_storage(arg): where for where, arg in named if isinstance(arg, _TensorType) and _storage(arg)}
    found = []
    for path, obj in _walk(result, "the result"):
        if isinstance(obj, dict | list) and id(obj) in containers:
            found.append(f"{path} is {containers[id(obj)]} itself, not a new {type(obj).__name__}: the caller's "
                         "object changes with it")
        elif isinstance(obj, _TensorType) and _storage(obj) in memory:
            found.append(f"{path} shares its memory with {memory[_storage(obj)]}: an in-place change to one "
                         "(an optimizer zeroing its gradients, say) changes the other")
    return found

