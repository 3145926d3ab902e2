"""The rendered copy (make html): outputs and widget state kept, and the students' copy gives nothing away."""

from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest
from conftest import ROOT

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("render")]

CHAPTER = "00_welcome"


def test_a_chapter_renders_for_instructors_and_for_students_without_solutions(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "autograder" / "render.py"), "--chapter", CHAPTER, "--fast",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    students = (tmp_path / "students" / f"{CHAPTER}.html").read_text(encoding="utf-8")
    instructor = (tmp_path / "instructor" / f"{CHAPTER}.html").read_text(encoding="utf-8")
    source = nbformat.read(ROOT / "solutions" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    # lines only the instructor may see: solution code, hidden tests, model answers
    secret = []
    for cell in source.cells:
        text = cell.source
        if "### BEGIN SOLUTION" in text:
            secret.append(text.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0])
        if "### BEGIN HIDDEN TESTS" in text:
            secret.append(text.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0])
        if "model-answer" in cell.metadata.get("tags", []):
            secret.append(text)
    lines = {line.strip() for block in secret for line in block.splitlines() if len(line.strip()) > 25}
    assert lines, "the chapter has solution lines to look for"
    import html

    shown = [line for line in lines if html.escape(line) in students or line in students]
    assert not shown, f"the students' copy shows instructor-only lines: {shown[:3]}"
    assert any(html.escape(line) in instructor or line in instructor for line in lines)
    for page in (students, instructor):
        assert page.count("visible tests passed") >= 3, "the outputs of the executed notebook are kept"
        assert "application/vnd.jupyter.widget-state+json" in page, "the widget state is kept"
    assert (tmp_path / "students" / "index.html").exists() and (tmp_path / "instructor" / "index.html").exists()
