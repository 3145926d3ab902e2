"""The package's import graph: no cycle, and the grading machinery imports no chapter's module.

Every import statement counts, those inside functions too (a cycle through a late import still ties the
modules together). Guards a chapter needs travel into the kernel by name (dlcourse.grading.guards).
"""

from __future__ import annotations

import ast

import pytest
import torch
from conftest import ROOT

from dlcourse import checks
from dlcourse.grading import agent, guards

PACKAGE = ROOT / "dlcourse"


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of the package it imports (anywhere in its code)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            found |= {m for t in targets if t.startswith("dlcourse") and (m := known(t)) and m != name}
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_imports_form_no_cycle():
    assert not cycles(import_graph())


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_grading_machinery_imports_no_chapter():
    graph = import_graph()
    shared = {"dlcourse", "dlcourse.checks", "dlcourse.assets"}  # (infrastructure, no chapter)
    for name, imported in graph.items():
        if name.startswith("dlcourse.grading"):
            stray = {m for m in imported if not m.startswith("dlcourse.grading") and m not in shared}
            assert not stray, f"{name} imports {sorted(stray)}"


def test_a_guard_travels_by_name_and_only_a_marked_guard_of_the_course_resolves():
    assert guards.resolve(checks.FORBID) is checks.forbid
    assert guards.resolve("dlcourse.lm.generation_refused").__name__ == "generation_refused"
    for name in ("os.system", "dlcourse.checks.assert_close", "dlcourse.checks.nothing", "forbid",
                 "dlcourse.no_such_module.forbid"):
        with pytest.raises((ValueError, ModuleNotFoundError)):
            guards.resolve(name)
    with agent._guards([[checks.FORBID, ["softmax"], "why"]]), pytest.raises(checks.ForbiddenCall):
        torch.softmax(torch.ones(3), 0)
    with pytest.raises(ValueError), agent._guards([["builtins.print", "x"]]):
        pass
