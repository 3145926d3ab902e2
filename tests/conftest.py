"""Shared fixtures: the chapters, and one kernel per chapter that has run its solution notebook."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "autograder"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel import Kernel, code_cells  # noqa: E402

CHAPTERS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


def solution_notebook(chapter: str) -> Path:
    (path,) = sorted((ROOT / "solutions" / chapter).glob("*.ipynb"))
    return path


class ChapterSession:
    """A kernel that executed every code cell of a chapter's solution notebook, in order."""

    def __init__(self, chapter: str) -> None:
        self.chapter = chapter
        self.path = solution_notebook(chapter)
        self.cells = code_cells(self.path)
        self.kernel = Kernel(self.path.parent)
        self.runs = [self.kernel.run(cell.source) for cell in self.cells]


_sessions: dict[str, ChapterSession] = {}


@pytest.fixture(scope="session")
def chapter_session():
    """``chapter_session(name)`` → the (cached) executed session of that chapter."""

    def get(chapter: str) -> ChapterSession:
        if chapter not in _sessions:
            _sessions[chapter] = ChapterSession(chapter)
        return _sessions[chapter]

    yield get
    for session in _sessions.values():
        session.kernel.close()
    _sessions.clear()
