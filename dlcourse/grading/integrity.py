"""Whether the course's helpers and torch are still what the set-up cell imported: the kernel's side of a check the
grader makes before and after every test.

A hidden test may call into the student's kernel through course helpers (a factory that builds the networks and
optimizer a training step updates, a sampler a statistical test draws from). Replacing one of them in the kernel
(``gan.toy_gan = my_factory``) would make the test check the student's answer with the student's own helper.
The grader reads every answer's source for such assignments (``autograder/core/rewiring.py``); this module is the
second layer, for a replacement the source does not show (a helper passed to a function that patches it).

:func:`baseline` records, right after the release's set-up cell and before any cell of the student's runs, every
function, class and module bound at the top level of the course's modules and of torch's and NumPy's main
namespaces, and every method of their classes. :func:`changed` lists what is no longer the object recorded and puts
the recorded one back, so that the grader flags the exercise whose test found it and later tests run with the
course's own helpers. Modules first imported later are recorded when first seen. What this side reports is only
trusted as far as the kernel is: rewriting this module takes an escape hatch that the grader flags before the cell
runs.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable
from typing import Any

# torch's and NumPy's namespaces that hidden tests and the course's helpers reach (their classes' methods too).
LIBRARIES = ("torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils", "torch.optim",
             "torch.optim.lr_scheduler", "torch.linalg", "torch.special", "torch.autograd", "torch.distributions",
             "torch.testing", "numpy", "math", "safetensors.torch")
# Builtins that IPython and ipykernel themselves rebind around each cell.
_KERNEL_REBINDS = {"input", "raw_input", "getpass", "exit", "quit", "display", "get_ipython", "help", "copyright",
                   "credits", "license", "_", "__", "___"}
_KINDS = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
          type, types.ModuleType, staticmethod, classmethod, property)
# key -> (its owner (a module or class), the mapping it is read from, the attribute, the object, its code object or
# None). The mapping is the owner's own __dict__ (for a class a live view), so a lookup sees what the kernel sees.
_RECORDED: dict[str, tuple[Any, Any, str, Any, Any]] = {}
_MODULES: dict[str, types.ModuleType] = {}  # modules recorded so far
_PREPARED = {"on": False}  # whether prepare() recorded torch's namespaces before this process was forked
_MISSING = object()


def _tracked(name: str) -> bool:
    return name == "dlcourse" or name.startswith("dlcourse.") or name in LIBRARIES or name == "builtins"


def _entries(module_name: str, module: types.ModuleType) -> dict[str, tuple[Any, Any, str, Any]]:
    """``module.attr`` for the functions, classes and modules bound in ``module``, and ``module.Class.attr`` for the
    methods of its classes that come from the same package; each as (owner, mapping, attribute, object)."""
    found: dict[str, tuple[Any, Any, str, Any]] = {}
    try:
        namespace = vars(module)
        items = list(namespace.items())
    except TypeError:
        return found
    for attr, value in items:
        if attr.startswith("__") or (module_name == "builtins" and attr in _KERNEL_REBINDS):
            continue
        if not isinstance(value, _KINDS):
            continue
        key = f"{module_name}.{attr}"
        found[key] = (module, namespace, attr, value)
        owner = str(getattr(value, "__module__", None) or "")
        if isinstance(value, type) and owner.split(".")[0] == module_name.split(".")[0]:
            members = vars(value)
            for name, member in list(members.items()):
                if isinstance(member, _KINDS[:4] + (staticmethod, classmethod, property)) and \
                        not (name.startswith("__") and name not in ("__call__", "__init__", "__new__")):
                    found[f"{key}.{name}"] = (value, members, name, member)
    return found


def _record(names: Iterable[str]) -> None:
    for name in names:
        module = sys.modules.get(name)
        if name in _MODULES or not isinstance(module, types.ModuleType):
            continue
        _MODULES[name] = module
        for key, (owner, mapping, attr, value) in _entries(name, module).items():
            _RECORDED.setdefault(key, (owner, mapping, attr, value, getattr(value, "__code__", None)))


def _import(names: Iterable[str]) -> None:
    """Import the course's modules the tests name (``dlcourse.gan.train.toy_gan`` → ``dlcourse.gan.train``), so
    they are recorded before the student's code runs."""
    import importlib

    for dotted in names:
        parts = str(dotted).split(".")
        if parts[0] != "dlcourse":
            continue
        for end in range(len(parts), 0, -1):
            try:
                importlib.import_module(".".join(parts[:end]))
                break
            except Exception:  # noqa: BLE001, S112 - not a module: try the shorter name
                continue


def prepare() -> None:
    """Record torch's and NumPy's namespaces ahead of time (the fork server does, before it forks a kernel: a fork
    inherits the record, and :func:`baseline` then only confirms it)."""
    _record([n for n in LIBRARIES if n in sys.modules])
    _PREPARED["on"] = True


def baseline(modules: Iterable[str] = ()) -> None:
    """Record the current objects: call it after the set-up cell, before any of the student's code runs."""
    _import(modules)
    if not _PREPARED["on"]:
        _RECORDED.clear()
        _MODULES.clear()
    for key, (owner, mapping, attr, before, code) in list(_RECORDED.items()):  # recorded ahead: as they are now
        now = mapping.get(attr, _MISSING)
        if now is _MISSING:
            del _RECORDED[key]
        elif now is not before or (code is not None and before.__code__ is not code):
            _RECORDED[key] = (owner, mapping, attr, now, getattr(now, "__code__", None))
    for name, module in list(_MODULES.items()):
        if sys.modules.get(name) is not module:
            del _MODULES[name]
    _record([n for n in list(sys.modules) if _tracked(n)])


def _library_rewrap(now: Any, before: Any) -> bool:
    """``now`` wraps ``before`` with a library's own code (torch re-wraps a few functions when it imports
    torch._dynamo): code that lives in an installed package, not in the student's cells."""
    if getattr(now, "__wrapped__", None) is not before:
        return False
    code = getattr(now, "__code__", None)
    filename = getattr(code, "co_filename", "")
    return bool(filename) and os.path.isabs(filename) and ("site-packages" in filename or "dist-packages" in filename)


def _put_back(owner: Any, attr: str, value: Any) -> None:
    try:
        setattr(owner, attr, value)
    except (AttributeError, TypeError):
        pass


def changed() -> list[str]:
    """What was replaced or removed since :func:`baseline` (or the last call), or had its code swapped in place; empty
    when nothing was. Each is put back as recorded, so that only the test that finds it is affected. Modules first
    imported since are recorded as they are now."""
    if not _MODULES:
        return []
    found = []
    for name, module in _MODULES.items():
        if sys.modules.get(name) is not module:
            found.append(f"{name} (the module itself, in sys.modules)")
            sys.modules[name] = module
    for key, (owner, mapping, attr, before, code) in _RECORDED.items():
        now = mapping.get(attr, _MISSING)
        if now is before:
            if code is not None and before.__code__ is not code:
                found.append(f"{key} (its code)")
                before.__code__ = code
        elif now is _MISSING or not _library_rewrap(now, before):
            found.append(f"{key} (removed)" if now is _MISSING else key)
            _put_back(owner, attr, before)
    _record([n for n in list(sys.modules) if _tracked(n) and n not in _MODULES])
    return sorted(dict.fromkeys(found))
