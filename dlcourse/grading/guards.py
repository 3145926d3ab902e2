"""Guards that travel with a call into the student's kernel.

A hidden test writes ``with checks.forbid(["softmax"]): y = softmax(x)``. In the student's own kernel the
guard is installed right there. In the grader, ``softmax`` is a proxy: the guard is recorded here instead,
and every call the proxy makes inside the block carries it, so the kernel runs the student's code under
the same guard.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_ACTIVE: contextvars.ContextVar[tuple[tuple, ...]] = contextvars.ContextVar("dlcourse_guards", default=())
_TRUSTED = {"on": False}


def set_trusted(on: bool = True) -> None:
    """Mark this process as the grader: guards are recorded and sent, not installed locally."""
    _TRUSTED["on"] = on


def is_trusted() -> bool:
    """True in the grader process."""
    return _TRUSTED["on"]


@contextlib.contextmanager
def pushed(spec: tuple) -> Iterator[None]:
    """Record ``spec`` (``("forbid", patterns, why)``, ``("no_generation", why)`` or
    ``("allocation_limit", max_elements, why)``) for the block."""
    token = _ACTIVE.set(_ACTIVE.get() + (spec,))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active() -> list[list]:
    """The guards in force, as data to send."""
    return [[spec[0], *(sorted(a) if isinstance(a, frozenset) else a for a in spec[1:])] for spec in _ACTIVE.get()]
