"""Chapters' notebooks for the tests: code cells, grade ids, reference answers and filled-in releases."""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def code_cells(path: Path) -> list[nbformat.NotebookNode]:
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def reference_answers(chapter: str) -> dict[str, str]:
    """grade_id → the solution's answer as a student would type it (the solution without its markers)."""
    (solution,) = sorted((ROOT / "solutions" / chapter).glob("*.ipynb"))
    out = {}
    for cell in nbformat.read(solution, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            out[meta["grade_id"]] = "\n".join(
                line for line in cell.source.splitlines()
                if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
    return out


def solution_namespace(chapter: str, grade_ids: tuple[str, ...], **names: object) -> dict[str, object]:
    """What the solution's answer cells ``grade_ids`` define (:func:`reference_answers`), run in that order after
    the notebooks' usual imports (math, torch, nn, F) and ``names``: the chapter's own classes and functions for
    the benchmarks."""
    namespace: dict[str, object] = dict(names)
    exec("import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F", namespace)
    answers = reference_answers(chapter)
    for gid in grade_ids:
        exec(compile(answers[gid], f"{chapter}:{gid}", "exec"), namespace)
    return namespace


def released_notebook(chapter: str, answers: dict[str, str] | None = None, edit=None) -> nbformat.NotebookNode:
    """The released notebook with some answer cells replaced (``answers``) and an optional ``edit(nb)``."""
    (release,) = sorted((ROOT / "course" / chapter).glob("*.ipynb"))
    nb = nbformat.read(release, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if answers and gid in answers:
            cell.source = answers[gid]
    if edit:
        edit(nb)
    return nb
