"""The grading side's three rooms (``autograder/__init__.py``): imports run downward only — platforms →
bookkeeping → core — so the trusted grader never depends on how a class is run or recorded."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT

AUTOGRADER = ROOT / "autograder"
RANK = {"core": 0, "bookkeeping": 1, "platforms": 2}  # a room may import from its own rank and below
TOP_FILES = {"__init__.py", "nbgrader_config.py"}  # above every room: the package's map, nbgrader's entry file
IMPORTERS = {"import_module", "__import__"}


def room_of(path: Path) -> str | None:
    """The room a file of autograder/ belongs to (None: the top of autograder/, above the rooms)."""
    parts = path.relative_to(AUTOGRADER).parts
    return parts[0] if len(parts) > 1 else None


def module_names() -> set[str]:
    """Every module's bare name in the rooms: a flat ``import grade`` would hide which room it comes from."""
    return {p.stem for room in RANK for p in (AUTOGRADER / room).rglob("*.py") if p.stem != "__init__"}


def imported(source: str, path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of everything the source imports: statements, relative imports resolved against
    ``path``'s package, and modules named by string to ``importlib.import_module`` or ``__import__``."""
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found += [(node.lineno, f"{module}.{alias.name}" if module else alias.name) for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in IMPORTERS:
                found.append((node.lineno, node.args[0].value))
    return found


def wrong_arrows(path: Path, source: str) -> list[str]:
    """What the file imports against the rule, one line each."""
    here = room_of(path)
    flat = module_names()
    wrong = []
    for line, name in imported(source, path):
        parts = name.split(".")
        where = f"{path.relative_to(ROOT)}:{line}"
        if parts[0] in flat:
            wrong.append(f"{where}: `{name}` imported by its bare name; import it as autograder.<room>.{parts[0]}")
        elif parts[0] == "autograder" and len(parts) > 1 and parts[1] in RANK and here in RANK \
                and RANK[parts[1]] > RANK[here]:
            wrong.append(f"{where}: {here} imports {name} from {parts[1]}, a room above it")
    return wrong


def python_files() -> list[Path]:
    return sorted(p for p in AUTOGRADER.rglob("*.py") if "__pycache__" not in p.parts
                  and not {"submitted", "autograded", "feedback"} & set(p.relative_to(AUTOGRADER).parts))


def test_every_arrow_runs_downward():
    wrong = [line for p in python_files() for line in wrong_arrows(p, p.read_text())]
    assert not wrong, "\n".join(wrong)


def test_every_file_is_in_a_room_and_every_room_says_what_it_may_import():
    strays = [str(p.relative_to(ROOT)) for p in python_files()
              if room_of(p) is None and p.name not in TOP_FILES or (room_of(p) not in (None, *RANK))]
    assert not strays, f"files of autograder/ outside its three rooms: {strays}"
    for room in RANK:
        said = ast.get_docstring(ast.parse((AUTOGRADER / room / "__init__.py").read_text())) or ""
        assert "May import" in said and ("Never" in said or room == "platforms"), room
    assert "tests/test_rooms.py" in (AUTOGRADER / "__init__.py").read_text()


def test_the_files_the_rooms_name_exist():
    """The rooms' own descriptions name files and folders (what else keeps grading honest, the suites to run):
    each is there, under autograder/ or the repository."""
    import re

    made_by_a_term = {"submitted/", "autograded/", "feedback/"}  # the grading folders, made when a term needs them
    missing, seen = [], 0
    for room in ("", *RANK):
        named = set(re.findall(r"``([\w./]+/[\w./]*|[\w/]+\.py)``", (AUTOGRADER / room / "__init__.py").read_text()))
        seen += len(named - made_by_a_term)
        missing += [f"{room or 'autograder'}: {n}" for n in sorted(named - made_by_a_term)
                    if not any((where / n).exists() for where in (AUTOGRADER / room, AUTOGRADER, ROOT))]
    assert seen > 10 and not missing, missing


def test_the_students_package_never_imports_the_grading_side():
    wrong = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in sorted((ROOT / "dlcourse").rglob("*.py"))
             for line, name in imported(p.read_text(), p) if name.split(".")[0] == "autograder"]
    assert not wrong, wrong


@pytest.mark.parametrize(("file", "source"), [
    ("core/grade.py", "from autograder.platforms import hub\n"),
    ("core/grade.py", "from autograder.bookkeeping.pipeline import GRADING\n"),
    ("core/sandbox.py", "def f():\n    import autograder.bookkeeping.export\n"),
    ("core/warm.py", "from ..bookkeeping import policy\n"),
    ("core/needs.py", "import importlib\nimportlib.import_module('autograder.platforms.gradescope')\n"),
    ("bookkeeping/pipeline.py", "from autograder.platforms.one_grader import install\n"),
    ("bookkeeping/render.py", "from ..platforms import hub\n"),
    ("bookkeeping/similarity.py", "import pipeline\n"),
    ("platforms/hub.py", "from grade import grade\n"),
])
def test_an_arrow_upward_or_a_bare_name_is_caught(file, source):
    assert len(wrong_arrows(AUTOGRADER / file, source)) == 1


@pytest.mark.parametrize(("file", "source"), [
    ("platforms/hub.py", "from autograder.bookkeeping import pipeline, roster\nfrom autograder.core import sandbox\n"),
    ("bookkeeping/pipeline.py", "from autograder.core.grade import exercise_of\nfrom . import similarity\n"),
    ("core/grade.py", "from autograder.core import flags\nfrom .sandbox import Sandbox\nimport nbformat\n"),
])
def test_an_arrow_downward_or_within_a_room_is_not(file, source):
    assert wrong_arrows(AUTOGRADER / file, source) == []
