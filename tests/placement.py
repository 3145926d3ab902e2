"""A second device on a machine that has one: what finds a tensor created on the wrong device without a GPU.

A student's function that builds a tensor with ``torch.arange(n)`` and combines it with its inputs works on the
CPU and breaks the moment the inputs live on a GPU ("Expected all tensors to be on the same device"). This
machine has no GPU, so :class:`VirtualDevice` pretends: a tensor of the class :class:`OnDevice` keeps its data on
the CPU but says it is on ``cuda:0`` (``.device``, ``.is_cuda``). While the mode is active,

* a tensor asked for on that device (``torch.zeros(..., device=x.device)``, ``x.to("cuda")``, ``x.cuda()``,
  ``x.to(other)``) is made on the CPU and marked; everything computed from a marked tensor is marked;
* an operation that combines a marked tensor with an unmarked one of one element or more raises
  :class:`Misplaced`, as CUDA would — except the cases PyTorch accepts: a 0-dimensional CPU tensor (a scalar),
  and CPU indices into a tensor on the device;
* ``.numpy()`` of a marked tensor raises (a CUDA tensor cannot be converted), and so does a draw on the device
  from a CPU ``torch.Generator``.

:func:`on_the_device` runs a function that way: its tensor arguments and the parameters and buffers of the
modules it receives (or is) marked for the call, its results unmarked again, autograd intact
(``Tensor.as_subclass`` keeps the graph).

What it cannot see: code that never meets the inputs (a tensor created and used on the CPU alone is not an
error on a GPU either, only slower); a device chosen by name (``torch.device("cpu")`` written out); numerical
differences between devices; kernels that exist on the CPU only; and whatever runs outside the call (a
module built on the CPU before it and moved by the caller is the caller's business).
"""

from __future__ import annotations

import contextlib
from contextlib import contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

DEVICE = torch.device("cuda", 0)


class Misplaced(RuntimeError):
    """Two tensors on different devices met, or a tensor on the device went where only the CPU can go."""


class OnDevice(torch.Tensor):
    """A CPU tensor that says it lives on :data:`DEVICE`."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return DEVICE

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return True

    def __deepcopy__(self, memo: dict) -> OnDevice:
        plain = self.as_subclass(torch.Tensor)
        copied = plain.detach().clone()
        result = torch.Tensor._make_subclass(OnDevice, copied, plain.requires_grad)  # a leaf, as deepcopy's is
        memo[id(self)] = result
        return result

    def __format__(self, spec: str) -> str:  # f"{loss:.3f}" of a 0-dim tensor, as for a plain one
        return self.as_subclass(torch.Tensor).__format__(spec)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return f"OnDevice({self.as_subclass(torch.Tensor)!r}, device='{DEVICE}')"


def _is_device(value: Any) -> bool:
    """Whether ``value`` names the pretended device (``"cuda"``, ``"cuda:0"``, ``torch.device("cuda")``)."""
    if isinstance(value, torch.device):
        return value.type == "cuda"
    return isinstance(value, str) and value.split(":")[0] == "cuda"


def _is_cpu(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "cpu"
    return isinstance(value, str) and value.split(":")[0] == "cpu"


def mark(value: Any) -> Any:
    """``value`` with every tensor in it marked as on the device (the same data, the same autograd graph)."""
    return tree_map(lambda t: t.as_subclass(OnDevice) if isinstance(t, torch.Tensor) and not isinstance(t, OnDevice)
                    else t, value)


def unmark(value: Any) -> Any:
    return tree_map(lambda t: t.as_subclass(torch.Tensor) if isinstance(t, OnDevice) else t, value)


def _describe(t: torch.Tensor) -> str:
    return f"{t.dtype} {tuple(t.shape)}"


# calls that accept tensors on two devices: a copy across devices, the checks Module.to makes before one, and
# pack_padded_sequence, whose lengths must be on the CPU whatever the device of the sequences
ACROSS_DEVICES = {torch.Tensor.copy_, torch._has_compatible_shallow_copy_type, torch.Tensor.data.__set__,
                  torch.Tensor.__deepcopy__, torch._pack_padded_sequence}


# recurrent layers on a packed batch: its batch_sizes (int64) stay on the CPU
PACKED = {torch.gru, torch.lstm, torch.rnn_tanh, torch.rnn_relu, torch._pad_packed_sequence}


class Generator(torch.Generator):
    """``torch.Generator(device="cuda")`` on a machine without CUDA: a CPU generator that says it is on
    :data:`DEVICE` (the same numbers as a CPU generator with the same seed)."""

    def __new__(cls, device: Any = "cpu") -> Generator:
        made = super().__new__(cls, "cpu")
        made.on_device = _is_device(device) or (isinstance(device, int) and not isinstance(device, bool))
        return made

    def __init__(self, device: Any = "cpu") -> None:
        pass

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return DEVICE if self.on_device else torch.device("cpu")


def _on_device(generator: Any) -> bool:
    return bool(getattr(generator, "on_device", False))


class VirtualDevice(TorchFunctionMode):
    """The mode described in the module's docstring. ``seen`` counts the operations that met the device."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: C901 — one case per kind of call
        kwargs = dict(kwargs or {})
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", str(func))
        to_device = to_cpu = False
        if "device" in kwargs:
            if _is_device(kwargs["device"]):
                kwargs["device"], to_device = "cpu", True
            elif _is_cpu(kwargs["device"]):
                to_cpu = True
        if func in (torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu, torch.Tensor.type_as):
            rest = list(args[1:])
            for i, item in enumerate(rest):
                if _is_device(item):
                    rest[i], to_device = "cpu", True
                elif _is_cpu(item):
                    to_cpu = True
                elif isinstance(item, torch.Tensor):
                    to_device, to_cpu = isinstance(item, OnDevice), not isinstance(item, OnDevice)
            if func is torch.Tensor.cuda:
                func, rest, to_device = torch.Tensor.clone, [], True
                kwargs.pop("non_blocking", None)
                kwargs.pop("device", None)
            elif func is torch.Tensor.cpu:
                to_cpu = True
            args = (args[0], *rest)
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        marked = [t for t in tensors if isinstance(t, OnDevice)]
        generator = kwargs.get("generator")
        if isinstance(generator, torch.Generator) and (to_device or bool(marked)) != _on_device(generator):
            where = "device" if to_device or marked else "CPU"
            raise Misplaced(f"{name}: a draw on the {where} from a generator on the "
                            f"{'device' if _on_device(generator) else 'CPU'}")
        if marked:
            self.seen += 1
            if func is torch.Tensor.numpy:
                raise Misplaced(f"{name}: .numpy() of a tensor on the device (CUDA tensors cannot be converted; "
                                "call .cpu() first)")
            indexing = func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__, torch.Tensor.index_select,
                                torch.Tensor.index_put_, torch.Tensor.index_put)
            if indexing and not isinstance(args[0], OnDevice):
                raise Misplaced(f"{name}: a tensor on the CPU indexed with indices on the device")
            others = [t for t in tensors if not isinstance(t, OnDevice) and t.dim() > 0
                      and not (func in PACKED and not t.is_floating_point())]  # a packed batch's sizes
            if indexing:  # CPU indices into a tensor on the device are fine; a value to store there is not
                others = [t for t in ([args[2]] if func is torch.Tensor.__setitem__ and len(args) > 2 else [])
                          if isinstance(t, torch.Tensor) and not isinstance(t, OnDevice) and t.dim() > 0]
            if others and not to_cpu and func not in ACROSS_DEVICES:
                raise Misplaced(f"{name}: a tensor on the device ({_describe(marked[0])}) meets one on the CPU "
                                f"({_describe(others[0])}) — created without the inputs' device?")
        out = func(*args, **kwargs)
        if func in (torch._pack_padded_sequence, torch._pad_packed_sequence):  # the sizes stay on the CPU, as on a GPU
            return mark(out[0]), out[1]
        if (marked or to_device) and not to_cpu:
            return mark(out)
        return unmark(out) if to_cpu else out


def _modules(value: Any) -> list[torch.nn.Module]:
    found = []
    for item in tree_flatten(value)[0]:
        if isinstance(item, torch.nn.Module):
            found.append(item)
        elif isinstance(item, torch.optim.Optimizer):
            pass
    return found


@contextmanager
def _marked_modules(modules: list[torch.nn.Module]):
    """The parameters and buffers of ``modules`` marked as on the device for the block, then put back."""
    kept, marked = [], {}  # one marked view per tensor: a weight shared by two modules stays shared
    for module in modules:
        for sub in module.modules():
            for table in (sub._parameters, sub._buffers):
                for key, value in list(table.items()):
                    if isinstance(value, torch.Tensor) and not isinstance(value, OnDevice):
                        kept.append((table, key, value))
                        table[key] = marked.setdefault(id(value), value.as_subclass(OnDevice))
    try:
        yield
    finally:
        for table, key, value in reversed(kept):
            table[key] = value


def on_the_device(fn: Any, args: tuple, kwargs: dict, mode: VirtualDevice | None = None) -> Any:
    """``fn(*args, **kwargs)`` with every tensor argument, and the parameters and buffers of every module among
    ``fn`` and its arguments, on the pretended device; the result with its tensors back on the CPU."""
    mode = mode or VirtualDevice()
    modules = _modules([fn, args, kwargs])
    with _marked_modules(modules), mode:
        out = fn(*mark(args), **mark(kwargs))
    return unmark(out)


# ---------------------------------------------------------------------------------------------------------------
# A whole chapter on the pretended device: ``python tests/placement.py CHAPTER`` (one process per chapter: the
# patches below are not undone)


def _shim_cuda() -> None:
    """The CUDA calls a chapter makes when its device is a GPU (peak-memory counters, synchronisation) answer as
    an idle device would: this machine has none to ask."""
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.reset_peak_memory_stats = lambda device=None: None
    torch.cuda.memory_allocated = lambda device=None: 0
    torch.cuda.max_memory_allocated = lambda device=None: 0


def _place(module: torch.nn.Module, on_device: bool) -> None:
    """Every parameter and buffer of ``module`` replaced, in place, by a leaf on the device (or back on the CPU)
    that shares its storage; a tensor two modules share stays shared (a tied weight stays tied)."""
    done: dict[int, torch.Tensor] = {}
    kind = OnDevice if on_device else torch.Tensor
    for sub in module.modules():
        for table in (sub._parameters, sub._buffers):
            for key, value in list(table.items()):
                if value is None or isinstance(value, OnDevice) == on_device:
                    continue
                if id(value) not in done:
                    moved = torch.Tensor._make_subclass(kind, value.detach(), value.requires_grad)
                    if table is sub._parameters and on_device:
                        moved._is_param = True  # what nn.Parameter does for a tensor subclass
                    elif table is sub._parameters:
                        moved = torch.nn.Parameter(moved, value.requires_grad)
                    done[id(value)] = moved
                table[key] = done[id(value)]


def _patch_module_moves() -> None:
    """``module.to(device)``, ``.cuda()`` and ``.cpu()`` move parameters and buffers with :func:`_place`."""
    to, cuda, cpu = torch.nn.Module.to, torch.nn.Module.cuda, torch.nn.Module.cpu

    def moved_to(self, *args, **kwargs):
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if device is None:
            return to(self, *args, **kwargs)
        if dtype is not None:
            to(self, dtype)
        _place(self, _is_device(device))
        return self

    torch.nn.Module.to = moved_to
    torch.nn.Module.cuda = lambda self, device=None: moved_to(self, DEVICE)
    torch.nn.Module.cpu = lambda self: moved_to(self, "cpu")
    assert cuda and cpu


def run_chapter(chapter: str) -> dict:
    """The chapter's solution notebook in FAST mode with the device the set-up cell picks being :data:`DEVICE`:
    every code cell but the tests (the reference answers and the package's training, evaluation and widget
    code, as the chapter calls them) under :class:`VirtualDevice`, and every test cell with each call of the
    student's code made on the device — each in the notebook's order. The first error, and how many operations
    met the device."""
    import os
    import sys
    from pathlib import Path

    os.environ["DLCOURSE_FAST"] = "1"
    import matplotlib

    matplotlib.use("Agg")
    import nbformat

    from dlcourse import checks, runtime

    runtime.get_device = lambda prefer=None: DEVICE
    _patch_module_moves()  # module.to(device): its parameters and buffers on the device too
    torch.Generator = Generator
    _shim_cuda()
    root = Path(__file__).resolve().parent.parent
    (notebook,) = sorted((root / "solutions" / chapter).glob("*.ipynb"))
    cells = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    tests = [c for c in cells if c.metadata.get("nbgrader", {}).get("grade")
             and not c.metadata.get("nbgrader", {}).get("solution")]
    namespace: dict = {"__name__": "__main__"}
    mode = VirtualDevice()
    result = {"chapter": chapter, "error": None, "where": None}
    sys.argv = [str(notebook)]
    call_student = checks._call_student

    def on_device(fn, args, kwargs, forbidden, label, how=None):
        if how is not None:
            return call_student(fn, args, kwargs, forbidden, label, how)
        return call_student(lambda *a, **k: on_the_device(fn, a, k, mode), args, kwargs, forbidden, label)

    checks._call_student = on_device
    checks.assert_untampered = lambda: None
    try:
        for i, cell in enumerate(cells):  # in the notebook's order: a later cell may reuse a name
            test = cell in tests
            result["where"] = cell.metadata["nbgrader"]["grade_id"] if test else f"cell {i}"
            with contextlib.nullcontext() if test else mode:
                exec(compile(cell.source, f"{chapter} {result['where']}", "exec"), namespace)  # noqa: S102
        result["where"] = None
    except BaseException as error:  # noqa: BLE001 — reported, with where it happened
        result["error"] = f"{type(error).__name__}: {error}"[:2000]
    result["operations_on_device"] = mode.seen
    return result


if __name__ == "__main__":
    import json
    import sys

    print("PLACEMENT " + json.dumps(run_chapter(sys.argv[1])), flush=True)
