"""The package's import graph: no cycle, no chapter's package importing a later chapter's, and the grading
machinery importing no chapter's module nor the checks.

Every import statement counts, those inside functions too (a cycle through a late import still ties the
modules together). Guards a chapter needs travel into the kernel by name (dlcourse.grading.guards).
"""

from __future__ import annotations

import ast

import pytest
import torch
from conftest import ROOT

import dlcourse
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


def floor(module: str) -> int:
    """Where a module stands: 0 the ground floor, 1 the shared data sets, 2 + k chapter k's package."""
    packages = list(dlcourse.CHAPTERS.values())
    for k, package in enumerate(packages):
        if module == package or module.startswith(package + "."):
            return 2 + k
    return 1 if module == "dlcourse.datasets" or module.startswith("dlcourse.datasets.") else 0


def upward(graph: dict[str, set[str]]) -> list[str]:
    """The imports that reach a floor above the importing module's."""
    return sorted(f"{a} -> {b}" for a, imported in graph.items() for b in imported if floor(b) > floor(a))


def test_no_module_imports_a_later_chapter_and_the_ground_floor_imports_no_chapter():
    assert not upward(import_graph())


def test_the_floor_check_finds_an_import_of_a_later_chapter():
    assert upward({"dlcourse.gan.train": {"dlcourse.vae.train", "dlcourse.vit.train"}}) == [
        "dlcourse.gan.train -> dlcourse.vae.train"]
    assert upward({"dlcourse.training": {"dlcourse.datasets.dates"}}) == [
        "dlcourse.training -> dlcourse.datasets.dates"]
    assert upward({"dlcourse.datasets.dates": {"dlcourse.welcome.widgets"}}) != []


def test_every_chapter_has_its_package_and_every_package_is_a_chapters():
    chapters = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())
    assert sorted(dlcourse.CHAPTERS) == chapters
    ground = {"grading", "widgets", "datasets"}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} - ground
    assert packages == {name.removeprefix("dlcourse.") for name in dlcourse.CHAPTERS.values()}
    for package in PACKAGE.rglob("*.py"):  # every module says what it is for
        assert ast.get_docstring(ast.parse(package.read_text())), package


def test_the_grading_machinery_imports_no_chapter_and_not_the_checks():
    graph = import_graph()
    shared = {"dlcourse", "dlcourse.assets"}  # below everything else but where the repository is: not the checks
    for name, imported in graph.items():
        if name.startswith("dlcourse.grading"):
            stray = {m for m in imported if not m.startswith("dlcourse.grading") and m not in shared}
            assert not stray, f"{name} imports {sorted(stray)}"


def test_a_guard_travels_by_name_and_only_a_marked_guard_of_the_course_resolves():
    assert guards.resolve(checks.FORBID) is checks.forbid
    assert guards.resolve("dlcourse.gpt.lm.generation_refused").__name__ == "generation_refused"
    for name in ("os.system", "dlcourse.checks.assert_close", "dlcourse.checks.nothing", "forbid",
                 "dlcourse.no_such_module.forbid"):
        with pytest.raises((ValueError, ModuleNotFoundError)):
            guards.resolve(name)
    with agent._guards([[checks.FORBID, ["softmax"], "why"]]), pytest.raises(checks.ForbiddenCall):
        torch.softmax(torch.ones(3), 0)
    with pytest.raises(ValueError), agent._guards([["builtins.print", "x"]]):
        pass
