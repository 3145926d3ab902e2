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
