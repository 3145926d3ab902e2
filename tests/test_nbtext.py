"""The text form of a source notebook converts back to the very same notebook."""

import json
import sys

import nbformat
import pytest
from conftest import CHAPTERS, ROOT, solution_notebook

sys.path.insert(0, str(ROOT / "autograder"))
import nbtext  # noqa: E402


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_round_trip_is_exact(chapter):
    path = solution_notebook(chapter)
    original = nbformat.read(path, as_version=4)
    back = nbtext.to_notebook(nbtext.to_text(original))
    assert json.loads(nbformat.writes(back)) == json.loads(path.read_text())


def test_markers_set_the_grading_metadata_and_bad_text_is_refused():
    nb = nbtext.to_notebook("#%% md [id=intro locked]\n# Title\n\n#%% code [id=ex_answer solution]\nx = 1\n"
                            "#%% code [id=ex_hidden tests points=3]\nassert x\n#%% code [id=demo hide]\nx\n")
    meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
    assert meta[0]["locked"] and not meta[0]["grade"]
    assert meta[1]["solution"] and meta[1]["grade_id"] == "ex_answer"
    assert meta[2]["grade"] and meta[2]["points"] == 3
    assert nb.cells[3].metadata["jupyter"]["source_hidden"] and "nbgrader" not in nb.cells[3].metadata
    with pytest.raises(ValueError, match="before the first cell marker"):
        nbtext.to_notebook("stray\n#%% md [id=a]\nx\n")
    with pytest.raises(ValueError, match="without an id"):
        nbtext.to_notebook("#%% md [locked]\nx\n")
