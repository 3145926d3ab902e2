"""Every chapter's further reading links to where each entry can be read (make check enforces it)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from conftest import CHAPTERS, solution_notebook

from autograder.bookkeeping import pipeline  # noqa: E402  (the repository is on sys.path, see conftest)


def _notebook(reading: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Recap\n\n1. A question?\n\n## Further reading\n\n" + reading)]
    return nb


def test_an_entry_without_a_link_is_reported_and_linked_entries_pass():
    where = Path("x.ipynb")
    linked = "* Someone, *[A paper](https://arxiv.org/abs/1706.03762)*, 2017.\n* Docs: [`f`](https://example.org/f).\n"
    assert pipeline._reading_problems(_notebook(linked), where) == []
    bare = linked + "* Someone else, *Another paper*, spread over\n  two lines, 2018.\n"
    (problem,) = pipeline._reading_problems(_notebook(bare), where)
    assert "Another paper" in problem
    assert pipeline._reading_problems(nbformat.v4.new_notebook(), where), "a missing section is reported"


def test_every_chapter_links_its_reading():
    for chapter in CHAPTERS:
        nb = nbformat.read(solution_notebook(chapter), as_version=4)
        assert pipeline._reading_problems(nb, Path(chapter)) == []
