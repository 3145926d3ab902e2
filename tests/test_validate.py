"""`make validate` / `python -m dlcourse.validate`: what a student runs before submitting says the result in
its exit status, with the failing test named, and needs no nbgrader configuration."""

from __future__ import annotations

import io
import subprocess
import sys

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
    assert (ROOT / "Makefile").read_text().count("dlcourse.validate") == 1
