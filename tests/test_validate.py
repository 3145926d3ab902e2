"""`make validate` / `python -m dlcourse.validate`: what a student runs before submitting says the result in
its exit status, with the failing test named, and needs no nbgrader configuration."""

from __future__ import annotations

import io
import subprocess
import sys
import time

import nbformat
import pytest
from conftest import ROOT
from test_pipeline import answers_from_solution, submission

from dlcourse.validate import BROKEN, FAILED, validate

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("validate")]
CHAPTER = "00_welcome"


def _write(tmp_path, name, nb) -> str:
    path = tmp_path / name
    nbformat.write(nb, path)
    return str(path)


def test_a_correct_notebook_passes_and_a_wrong_answer_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("DLCOURSE_FAST", "1")
    good = answers_from_solution(CHAPTER)
    out = io.StringIO()
    assert validate(_write(tmp_path, "good.ipynb", submission(CHAPTER, good)), out=out) == 0, out.getvalue()
    assert "every test passed" in out.getvalue()
    wrong = dict(good, softmax_answer="def softmax(x, dim=-1):\n    return x.exp() / x.exp().sum(dim, keepdim=True)\n")
    out = io.StringIO()
    assert validate(_write(tmp_path, "wrong.ipynb", submission(CHAPTER, wrong)), out=out) == FAILED
    assert "This test failed" in out.getvalue() and "softmax" in out.getvalue()


def test_a_broken_file_is_reported_with_its_own_status_from_the_command_line(tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{ not json")
    run = subprocess.run([sys.executable, "-m", "dlcourse.validate", str(broken), str(tmp_path / "missing.ipynb")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == BROKEN, run.stdout + run.stderr
    assert "could not be validated" in run.stdout and "no such notebook" in run.stdout
    assert "nbgrader_config" not in run.stdout + run.stderr
    assert (ROOT / "Makefile").read_text().count("-m dlcourse validate") == 1


def _graded(source: str, grade_id: str):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "points": 1, "solution": False,
                                 "locked": False, "schema_version": 3}
    return cell


def test_output_widget_cells_do_not_wait_out_the_time_limit_and_the_kernel_listens_on_unix_sockets(tmp_path):
    """nbgrader's own client can miss a cell's reply while it sends an Output widget's state back to the kernel,
    and then waits until the cell's time limit for a reply that has come (tests/test_kernels.py: 15-s gaps in 40
    such cells at a 15-s limit; nbgrader's validator took 62 and 82 s on these 40 cells at a 20-s limit). The
    validator's client polls in slices: at a 60-s limit the 40 cells finish inside one limit (2 s on an idle
    machine), so a single missed reply fails the test. A graded cell checks that the kernel was started on Unix
    sockets, and a second notebook that a failing graded cell is still reported."""
    draw = ("o = W.Output()\ndisplay(o)\no.clear_output(wait=True)\nwith o:\n    display(HTML('<b>x</b>' * 2000))\n"
            "o.clear_output(wait=True)\nwith o:\n    print('y' * 5000)\n")
    cells = ([nbformat.v4.new_code_cell("import ipywidgets as W\nfrom IPython.display import HTML, display")]
             + [nbformat.v4.new_code_cell(draw) for _ in range(40)]
             + [_graded("import ipykernel, json\n"
                        "assert json.load(open(ipykernel.get_connection_file()))['transport'] == 'ipc'", "ipc")])
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "dlcourse", "display_name": "Python 3 (dlcourse)", "language": "python"}
    out = io.StringIO()
    start = time.monotonic()
    status = validate(_write(tmp_path, "widgets.ipynb", nb), timeout=60, out=out)
    seconds = time.monotonic() - start
    assert status == 0, out.getvalue()
    assert seconds < 60, f"validating took {seconds:.1f} s: a cell waited out its 60-s limit for its reply"
    nb.cells = [cells[0], _graded("assert False, 'planted'", "planted")]
    out = io.StringIO()
    assert validate(_write(tmp_path, "failing.ipynb", nb), timeout=20, out=out) == FAILED
    assert "planted" in out.getvalue()
