"""Running a function on a module the moment it is imported, without importing it now.

The course wraps a few library functions so that they refuse to run inside a check (chapter 05's Hugging Face
T5 layers, chapter 04's ``generate``). Importing those libraries takes seconds; a graded kernel whose answers
never touch them should not pay that. :func:`when_imported` runs the wrapping at once if the module is already
there, and otherwise right after the module's own code has run, whichever way it gets imported (``import``,
``from … import``, ``importlib``, a library's lazy attribute).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

Hook = Callable[[ModuleType], None]

_pending: dict[str, list[Hook]] = {}


class _RunHooksAfter:
    """The loader that found a module, and the hooks to run once that module's code has run; everything else
    (its source, its resources) is the inner loader's."""

    def __init__(self, inner: Any, name: str) -> None:
        self._inner, self._name = inner, name

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        for hook in _pending.pop(self._name, []):
            hook(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Finder:
    """First on ``sys.meta_path``, it finds nothing itself: for a module with pending hooks it asks the other
    finders and hands back their spec with a loader that runs the hooks."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not _pending.get(fullname):
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if isinstance(finder, _Finder) or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _RunHooksAfter(spec.loader, fullname)
                return spec
        return None

    def invalidate_caches(self) -> None:
        pass


def when_imported(name: str, hook: Hook) -> Callable[[], None]:
    """Call ``hook(module)`` now if the module ``name`` is imported, else right after it is; returns a function
    that cancels a hook not yet called."""
    module = sys.modules.get(name)
    if module is not None:
        hook(module)
        return lambda: None
    _pending.setdefault(name, []).append(hook)
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())

    def cancel() -> None:
        hooks = _pending.get(name, [])
        if hook in hooks:
            hooks.remove(hook)

    return cancel
