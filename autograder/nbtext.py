"""A chapter's nbgrader source notebook as plain text and back, for editing and reviewing in any editor.

Each cell starts with a marker line, then its source::

    #%% md [id=title locked]
    #%% code [id=softmax_answer solution]
    #%% code [id=softmax_hidden tests points=3]
    #%% code [id=demo hide]
    #%% md [id=recap_model_answers model-answer]

``locked``, ``solution`` and ``tests points=N`` set the nbgrader metadata (the id is then the grade id);
``hide`` collapses the cell's source; ``model-answer`` tags the instructor's answers to the recap questions,
which the release drops. Converting a notebook to text and back gives the same notebook.

    python autograder/nbtext.py text solutions/04_gpt_decoding/04_gpt_decoding.ipynb > ch04.txt
    python autograder/nbtext.py notebook ch04.txt solutions/04_gpt_decoding/04_gpt_decoding.ipynb
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
from course_preprocessors import MODEL_ANSWER_TAG
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

MARKER = re.compile(r"^#%% (md|code) \[([^\]]*)\]\n", flags=re.M)
KERNEL = {"name": "dlcourse", "display_name": "Python 3 (dlcourse)", "language": "python"}


def to_text(notebook: nbformat.NotebookNode) -> str:
    """The notebook's cells as marked text."""
    parts = []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader")
        attrs = [f"id={meta['grade_id'] if meta else cell.id.replace('-', '_')}"]
        if meta:
            if meta.get("solution"):
                attrs.append("solution")
            elif meta.get("grade"):
                attrs += ["tests", f"points={meta['points']}"]
            elif meta.get("locked"):
                attrs.append("locked")
        if cell.metadata.get("jupyter", {}).get("source_hidden"):
            attrs.append("hide")
        if MODEL_ANSWER_TAG in cell.metadata.get("tags", []):
            attrs.append(MODEL_ANSWER_TAG)
        kind = "md" if cell.cell_type == "markdown" else "code"
        parts.append(f"#%% {kind} [{' '.join(attrs)}]\n{cell.source}\n")
    return "\n".join(parts)


def to_notebook(text: str) -> nbformat.NotebookNode:
    """Marked text → a validated nbgrader source notebook (no outputs)."""
    pieces = MARKER.split(text)
    if pieces[0].strip():
        raise ValueError("text before the first cell marker: " + pieces[0].strip()[:60])
    cells = []
    for kind, attrs, body in zip(pieces[1::3], pieces[2::3], pieces[3::3], strict=True):
        opts = dict(a.split("=", 1) if "=" in a else (a, "") for a in attrs.split())
        if "id" not in opts:
            raise ValueError(f"a cell marker without an id: [{attrs}]")
        body = body.rstrip("\n")
        cell = new_markdown_cell(body) if kind == "md" else new_code_cell(body)
        cell.id = opts["id"].replace("_", "-")
        grading = None
        if "solution" in opts:
            grading = {"grade": False, "solution": True, "locked": False}
        elif "tests" in opts:
            grading = {"grade": True, "solution": False, "locked": True, "points": int(opts["points"])}
        elif "locked" in opts:
            grading = {"grade": False, "solution": False, "locked": True}
        if grading is not None:
            grading.update({"grade_id": opts["id"], "schema_version": 3})
            cell.metadata["nbgrader"] = grading
        if "hide" in opts:
            cell.metadata["jupyter"] = {"source_hidden": True}
        if MODEL_ANSWER_TAG in opts:
            cell.metadata["tags"] = [MODEL_ANSWER_TAG]
        cells.append(cell)
    notebook = new_notebook(cells=cells, metadata={"kernelspec": KERNEL, "language_info": {"name": "python"}})
    nbformat.validate(notebook)
    return notebook


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
