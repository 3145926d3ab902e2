"""What each submodule of a module computed in one forward pass, for feedback that says where two modules part.

:func:`submodule_trace` runs a module once with a forward hook on every named submodule and keeps, in the order
the submodules finished, each one's first floating-point input and output. Run on a student's module and on
the oracle it is compared with (whose submodules carry the same names, as their weights do), the two traces
show the first submodule whose output differs, and whether its input already did
(:func:`dlcourse.checks.compare_modules` says so when the outputs disagree). The trace is only ever read for a
message: nothing here decides a score.
"""

from __future__ import annotations

from typing import Any

import torch

MAX_ELEMENTS = 2_000_000  # a trace larger than this is cut short (a message never needs more)


def _first_float(value: Any, floats: bool = True) -> torch.Tensor | None:
    """The first tensor in ``value`` (tuples, lists, dicts, a Hugging Face output): floating-point only, unless
    ``floats`` is False (an embedding's input is its integer ids)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone() if value.is_floating_point() or not floats else None
    if isinstance(value, tuple | list):
        for item in value:
            found = _first_float(item, floats)
            if found is not None:
                return found
    if isinstance(value, dict):
        return _first_float(list(value.values()), floats)
    hidden = getattr(value, "last_hidden_state", None)  # a Hugging Face output record
    return _first_float(hidden, floats) if hidden is not None else None


def traced_submodules(module: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """The submodules a trace hooks, under the names it reports: ``module.traced_submodules()`` where the module
    says (a course layout wrapped around a Hugging Face model names that model's layers in the course's terms),
    otherwise every named submodule."""
    own = getattr(module, "traced_submodules", None)
    return list(own()) if callable(own) else [(name, sub) for name, sub in module.named_modules() if name]


def submodule_trace(module: torch.nn.Module, args: Any, kwargs: dict) -> list[tuple[str, Any, Any]]:
    """``module(*args, **kwargs)`` without gradients, with a hook on each submodule :func:`traced_submodules`
    lists: ``(name, first input tensor, first float output)`` for each submodule call, in the order the calls
    finished. A submodule called twice appears twice. The hooks are removed afterwards, also when the forward
    pass raises."""
    records: list[tuple[str, Any, Any]] = []
    budget = [MAX_ELEMENTS]

    def hook(name: str):
        def record(_module: Any, inputs: Any, kwargs_in: Any, output: Any) -> None:
            if budget[0] <= 0:
                return
            seen_in = _first_float(inputs, floats=False)
            seen_in = seen_in if seen_in is not None else _first_float(kwargs_in, floats=False)
            seen_out = _first_float(output)
            budget[0] -= sum(t.numel() for t in (seen_in, seen_out) if t is not None)
            records.append((name, seen_in, seen_out))
        return record

    handles = [sub.register_forward_hook(hook(name), with_kwargs=True) for name, sub in traced_submodules(module)]
    try:
        with torch.no_grad():
            module(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return records
