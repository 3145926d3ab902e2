"""The text form of a source notebook (jupytext's percent format, autograder/bookkeeping/nbtext.py) converts back
to the very same notebook, and text a person writes becomes the notebook it says."""

import json
import subprocess
import sys

import nbformat
import pytest
from conftest import CHAPTERS, ROOT, solution_notebook

sys.path.insert(0, str(ROOT))
from autograder.bookkeeping import nbtext  # noqa: E402


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_round_trip_is_exact(chapter):
    path = solution_notebook(chapter)
    original = nbformat.read(path, as_version=4)
    text = nbtext.to_text(original)
    assert text.count("\n# %%") + text.startswith("# %%") == len(original.cells)
    assert "jupytext" not in text
    assert json.loads(nbformat.writes(nbtext.to_notebook(text))) == json.loads(path.read_text())


def _grading(gid: str, **kinds) -> str:
    """The ``nbgrader=...`` entry of a cell line, as a person would type it."""
    meta = {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3, "solution": False, **kinds}
    return "nbgrader=" + json.dumps(dict(sorted(meta.items())))


TYPED = f"""# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (dlcourse)
#     language: python
#     name: dlcourse
# ---

# %% [markdown] id="intro" {_grading("intro", locked=True)}
# # Title

# %% id="ex_answer" {_grading("ex_answer", solution=True)}
x = 1

# %% id="ex_hidden" {_grading("ex_hidden", grade=True, locked=True, points=3)}
assert x

# %% jupyter={{"source_hidden": true}} tags=["model-answer"]
x
"""


def test_typed_text_sets_ids_grading_metadata_and_tags():
    nb = nbtext.to_notebook(TYPED)
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code", "code"]
    assert [c.id for c in nb.cells[:3]] == ["intro", "ex_answer", "ex_hidden"]
    meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
    assert meta[0]["locked"] and not meta[0]["grade"] and nb.cells[0].source == "# Title"
    assert meta[1]["solution"] and meta[1]["grade_id"] == "ex_answer" and nb.cells[1].source == "x = 1"
    assert meta[2]["grade"] and meta[2]["points"] == 3
    assert nb.cells[3].metadata == {"jupyter": {"source_hidden": True}, "tags": ["model-answer"]}
    assert nb.cells[3].id and nb.cells[3].id not in {"intro", "ex_answer", "ex_hidden"}  # a new id of its own
    assert nb.metadata == {"kernelspec": {"display_name": "Python 3 (dlcourse)", "language": "python",
                                          "name": "dlcourse"}}
    assert all("id" not in c.metadata for c in nb.cells)


def test_an_edit_in_the_text_reaches_the_notebook_and_bad_text_is_refused():
    edited = TYPED.replace('"points": 3', '"points": 2')
    assert nbtext.to_notebook(edited).cells[2].metadata["nbgrader"]["points"] == 2
    with pytest.raises(ValueError, match="two cells have the id 'intro'"):
        nbtext.to_notebook(TYPED.replace('id="ex_answer"', 'id="intro"'))
    nb = nbtext.to_notebook(TYPED)
    nb.cells[1].metadata["id"] = "clash"
    with pytest.raises(ValueError, match="uses for the cell's id"):
        nbtext.to_text(nb)


def test_the_command_line_round_trip(tmp_path):
    source = solution_notebook(CHAPTERS[0])
    text = subprocess.run([sys.executable, str(ROOT / "autograder" / "bookkeeping" / "nbtext.py"), "text", str(source)],
                          capture_output=True, text=True, check=True).stdout
    (tmp_path / "ch.py").write_text(text)
    subprocess.run([sys.executable, str(ROOT / "autograder" / "bookkeeping" / "nbtext.py"), "notebook",
                    str(tmp_path / "ch.py"),
                    str(tmp_path / "ch.ipynb")], check=True)
    assert json.loads((tmp_path / "ch.ipynb").read_text()) == json.loads(source.read_text())
    bad = subprocess.run([sys.executable, str(ROOT / "autograder" / "bookkeeping" / "nbtext.py"), "text"],
                         capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr
