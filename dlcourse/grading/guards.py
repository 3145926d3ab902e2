"""Guards that travel with a call into the student's kernel.

A hidden test writes ``with checks.forbid(["softmax"]): y = softmax(x)``. In the student's own kernel the
guard is installed right there. In the grader, ``softmax`` is a proxy: the guard is recorded here instead,
and every call the proxy makes inside the block carries it, so the kernel runs the student's code under
the same guard.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
from collections.abc import Callable, Iterator

_ACTIVE: contextvars.ContextVar[tuple[tuple, ...]] = contextvars.ContextVar("dlcourse_guards", default=())
_TRUSTED = {"on": False}


def set_trusted(on: bool = True) -> None:
    """Mark this process as the grader: guards are recorded and sent, not installed locally."""
    _TRUSTED["on"] = on


def is_trusted() -> bool:
    """True in the grader process."""
    return _TRUSTED["on"]


def travelling(guard: Callable) -> Callable:
    """Mark a context manager as a guard that may travel into the kernel: a spec names it by its module and
    name (``"dlcourse.checks.forbid"``), followed by its arguments, and the kernel calls it with them."""
    guard._dlcourse_guard = True
    return guard


def resolve(name: str) -> Callable:
    """The guard a spec names: a :func:`travelling` context manager of a module of the course (its module is
    imported when it is not yet); ValueError for any other name."""
    module, _, attr = str(name).rpartition(".")
    if not module.startswith("dlcourse."):
        raise ValueError(f"not a guard of the course: {name!r}")
    guard = getattr(importlib.import_module(module), attr, None)
    if not getattr(guard, "_dlcourse_guard", False):
        raise ValueError(f"not a guard of the course: {name!r}")
    return guard


@contextlib.contextmanager
def pushed(spec: tuple) -> Iterator[None]:
    """Record ``spec`` (a :func:`travelling` guard's name and its arguments, e.g. ``("dlcourse.checks.forbid",
    patterns, why)``) for the block."""
    token = _ACTIVE.set(_ACTIVE.get() + (spec,))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active() -> list[list]:
    """The guards in force, as data to send."""
    return [[spec[0], *(sorted(a) if isinstance(a, frozenset) else a for a in spec[1:])] for spec in _ACTIVE.get()]
