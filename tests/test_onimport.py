"""dlcourse/onimport.py: a hook runs on a module right after its code has run, once, whichever way it is
imported; at once for a module already imported; never once cancelled."""

from __future__ import annotations

import importlib
import inspect
import sys

from dlcourse import onimport


def _module(tmp_path, monkeypatch, name: str) -> None:
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n\ndef f():\n    return VALUE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_hook_runs_once_right_after_the_module_runs(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "dlz_hooked")
    seen = []
    onimport.when_imported("dlz_hooked", lambda m: seen.append(m.VALUE) or setattr(m, "VALUE", 2))
    assert seen == [] and "dlz_hooked" not in sys.modules  # nothing imported for it
    module = importlib.import_module("dlz_hooked")
    assert seen == [1] and module.f() == 2
    assert "def f()" in inspect.getsource(module)  # the loader that found it still serves its source
    importlib.reload(module)  # a hook runs once
    assert seen == [1]


def test_a_module_already_imported_is_hooked_at_once(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "dlz_there")
    import dlz_there  # noqa: F401

    seen = []
    cancel = onimport.when_imported("dlz_there", lambda m: seen.append(m.__name__))
    assert seen == ["dlz_there"]
    cancel()  # nothing left to cancel


def test_a_cancelled_hook_never_runs(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "dlz_cancelled")
    seen = []
    cancel = onimport.when_imported("dlz_cancelled", seen.append)
    kept = onimport.when_imported("dlz_cancelled", lambda m: seen.append("kept"))
    cancel()
    from dlz_cancelled import f  # noqa: F401

    assert seen == ["kept"]
    kept()
