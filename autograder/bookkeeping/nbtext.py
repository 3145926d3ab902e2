"""A chapter's nbgrader source notebook as text and back, for editing and reviewing in any editor.

The text is jupytext's percent format: each cell starts with a ``# %%`` line that carries its metadata (the
nbgrader settings as JSON, tags, a hidden source), then its source, markdown as ``#`` comments::

    # %% [markdown] id="title" nbgrader={"grade": false, "grade_id": "title", "locked": true, ...}
    # %% id="softmax_answer" nbgrader={"grade": false, "grade_id": "softmax_answer", ..., "solution": true}
    # %% id="softmax_hidden" nbgrader={"grade": true, "grade_id": "softmax_hidden", ..., "points": 3, ...}

jupytext converts; this module adds only what jupytext's text formats do not keep:

* the cells' ids (nbformat's ``id``; the release, the diffs and the lecture copies rely on them staying put):
  written as an ``id`` entry on the cell's line and put back. A cell typed without one gets a new id;
* the notebook's own metadata as it was (kernel and language), without a jupytext section.

Converting a notebook to text and back gives the same notebook (tests/test_nbtext.py, every chapter).

    python autograder/bookkeeping/nbtext.py text solutions/04_gpt_decoding/04_gpt_decoding.ipynb > ch04.py
    python autograder/bookkeeping/nbtext.py notebook ch04.py solutions/04_gpt_decoding/04_gpt_decoding.ipynb
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import jupytext
import nbformat

FORMAT = "py:percent"
ID = "id"  # the cell-line entry that carries the cell's id
# kept in the text's header: the kernel and the language; jupytext's own section is left out
NOTEBOOK_METADATA = "kernelspec,language_info,-jupytext"


def to_text(notebook: nbformat.NotebookNode) -> str:
    """The notebook as percent-format text, each cell's id and metadata on its ``# %%`` line."""
    nb = copy.deepcopy(notebook)
    for cell in nb.cells:
        if ID in cell.metadata:
            raise ValueError(f"cell {cell.id} has an {ID!r} metadata entry, which the text uses for the cell's id")
        cell.metadata = {ID: cell.id, **cell.metadata}
    nb.metadata["jupytext"] = {"notebook_metadata_filter": NOTEBOOK_METADATA, "cell_metadata_filter": "all"}
    return jupytext.writes(nb, fmt=FORMAT)


def to_notebook(text: str) -> nbformat.NotebookNode:
    """Percent-format text → a validated nbgrader source notebook (no outputs)."""
    nb = jupytext.reads(text, fmt=FORMAT)
    nb.metadata.pop("jupytext", None)
    seen: set[str] = set()
    for cell in nb.cells:
        given = cell.metadata.pop(ID, None)
        if given is not None:
            cell.id = str(given)
        if cell.id in seen:
            raise ValueError(f"two cells have the id {cell.id!r}")
        seen.add(cell.id)
    nbformat.validate(nb)
    return nb


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "text":
        sys.stdout.write(to_text(nbformat.read(argv[1], as_version=4)))
        return 0
    if len(argv) == 3 and argv[0] == "notebook":
        nbformat.write(to_notebook(Path(argv[1]).read_text()), argv[2])
        return 0
    print("usage: nbtext.py text NOTEBOOK  |  nbtext.py notebook TEXT NOTEBOOK", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
