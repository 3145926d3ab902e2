"""An error raised inside a function the notebook defines names the inputs that function was called with.

When a test cell calls a student's function directly and PyTorch refuses an operation inside it ("mat1 and mat2
shapes cannot be multiplied (32x12 and 48x16)"), the library's message says what failed but not for which
case. :func:`install` (called by every chapter's set-up cell through :func:`dlcourse.runtime.setup_notebook`)
adds one note to such an error, shown under IPython's usual traceback::

    RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)
    raised in your GRUCell.forward, where x = a float32 tensor of shape (2, 4), h = a float32 tensor of shape (2, 3)

The function named is the first one a notebook cell defines on the way from the cell that ran to the error, and
its arguments are shown as they were when the error arose.
Failed checks (which say their case themselves) and errors raised in the cell's own code get no note. In the
grader the same information comes from the calls it makes (:mod:`dlcourse.grading.remote`).
"""

from __future__ import annotations

import inspect
import sys
from types import FrameType, TracebackType
from typing import Any

from dlcourse.grading.common import CheckFailure, describe_value

_NOTED = "_dlcourse_case_noted"


def _is_cell(filename: str) -> bool:
    """Whether code comes from a notebook cell (ipykernel names them /tmp/ipykernel_<pid>/<hash>.py)."""
    return "ipykernel_" in filename or filename.startswith("<ipython-input")


def _first_defined_in_a_cell(tb: TracebackType | None) -> FrameType | None:
    """The outermost frame of a function (not a cell's top level) whose code a cell defined."""
    while tb is not None:
        code = tb.tb_frame.f_code
        if _is_cell(code.co_filename) and code.co_name != "<module>":
            return tb.tb_frame
        tb = tb.tb_next
    return None


def case_note(value: BaseException, tb: TracebackType | None) -> str | None:
    """The note for ``value``: the first notebook-defined function on the way to it and its arguments."""
    if isinstance(value, CheckFailure) or getattr(value, _NOTED, False):
        return None
    frame = _first_defined_in_a_cell(tb)
    if frame is None:
        return None
    code, seen = frame.f_code, frame.f_locals
    names = list(code.co_varnames[:code.co_argcount])  # in the order of the signature: positional, *args,
    extra = code.co_argcount + code.co_kwonlyargcount  # keyword-only, **kwargs
    if code.co_flags & inspect.CO_VARARGS:
        names.append(code.co_varnames[extra])
    names += list(code.co_varnames[code.co_argcount:extra])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append(code.co_varnames[extra + bool(code.co_flags & inspect.CO_VARARGS)])
    shown = ", ".join(f"{n} = {describe_value(seen[n])}" for n in names if n != "self" and n in seen)
    where = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    return f"raised in your {where}, where {shown}" if shown else f"raised in your {where}"


def _handler(shell: Any, etype: type, value: BaseException, tb: TracebackType, tb_offset: int | None = None) -> None:
    note = case_note(value, tb)
    if note is not None:
        try:
            value.add_note(note)
            setattr(value, _NOTED, True)
        except Exception:  # noqa: BLE001 - an exception that takes no note is shown as it is
            pass
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)


def install() -> bool:
    """Add the note to errors in this IPython kernel; False outside IPython (a script, the grader)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return False
    shell.set_custom_exc((Exception,), _handler)
    return True
