"""The rendered copy (make html): outputs and widget state kept, the students' copy gives nothing away, and the
pages work offline: their scripts load from beside them, and in a browser with the network cut off a widget
is drawn from its saved state and the maths is typeset."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import time

import nbformat
import pytest
from conftest import ROOT

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("render")]

CHAPTER = "00_welcome"
from autograder.bookkeeping import offline, render  # noqa: E402  (the repository is on sys.path, see conftest)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    done = subprocess.run([sys.executable, str(ROOT / "autograder" / "bookkeeping" / "render.py"), "--chapter",
                           CHAPTER, "--fast", "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_a_chapter_renders_for_instructors_and_for_students_without_solutions(rendered):
    tmp_path = rendered
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
    shown = [line for line in lines if html.escape(line) in students or line in students]
    assert not shown, f"the students' copy shows instructor-only lines: {shown[:3]}"
    assert any(html.escape(line) in instructor or line in instructor for line in lines)
    for page in (students, instructor):
        assert page.count("visible tests passed") >= 3, "the outputs of the executed notebook are kept"
        assert "application/vnd.jupyter.widget-state+json" in page, "the widget state is kept"
    assert (tmp_path / "students" / "index.html").exists() and (tmp_path / "instructor" / "index.html").exists()


def test_the_pages_load_every_script_from_beside_them(rendered):
    for who in ("students", "instructor"):
        page = (rendered / who / f"{CHAPTER}.html").read_text(encoding="utf-8")
        sources = re.findall(r"""(?:src=|widgetRendererSrc = )["']([^"']+)["']""", page)
        sources = [s for s in sources if not s.startswith("data:")]  # images are inside the page
        assert sources and not [s for s in sources if "//" in s], sources  # no http(s):// nor //cdn...
        for script in (offline.REQUIRE_JS, offline.WIDGETS_JS, offline.MATHJAX_JS):
            assert f"../{render.STATIC}/{script}" in page, script
            assert (rendered / render.STATIC / script).is_file(), script
    assert "MathJax.Hub" not in page  # MathJax 3's configuration, not 2's
    # and a page for the CDNs, when asked for one
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("$x$")])
    assert "cdnjs.cloudflare.com" in render.to_html(nb) and "cdnjs" not in render.to_html(nb, "../static")


def test_offline_a_widget_is_drawn_from_its_saved_state_and_the_maths_is_typeset(rendered):
    from browser import launch, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    blocked: list[str] = []

    def only_files(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.route("**/*", only_files)
            page.goto((rendered / "students" / f"{CHAPTER}.html").as_uri())
            page.wait_for_function("document.querySelectorAll('.jp-OutputArea .widget-slider, "
                                   ".jp-OutputArea .widget-dropdown, .jp-OutputArea .widget-toggle-buttons').length "
                                   "> 0 && document.querySelectorAll('mjx-container').length > 0", timeout=60_000)
            time.sleep(0.5)
            errors = page.evaluate("Array.from(document.querySelectorAll('.jp-OutputArea')).filter(e => "
                                   "e.textContent.includes('Error displaying widget')).length")
            drawn = page.evaluate("document.querySelectorAll('.widget-output img, .jp-OutputArea .widget-html')"
                                  ".length")
        finally:
            browser.close()
    assert not blocked, f"the page asked the network for {blocked[:5]}"
    assert errors == 0 and drawn > 0, (errors, drawn)


def test_a_cell_that_hangs_is_named_and_the_other_chapters_are_written(tmp_path, monkeypatch):
    solutions = tmp_path / "solutions"
    for name, source in (("a_hangs", "import time\ntime.sleep(60)"), ("b_fine", "print('fine')")):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(source)])
        nb.metadata["kernelspec"] = {"name": "dlcourse", "display_name": "dlcourse", "language": "python"}
        (solutions / name).mkdir(parents=True)
        nbformat.write(nb, solutions / name / f"{name}.ipynb")
    monkeypatch.setenv("DLCOURSE_FAST", "1")  # render sets it for its kernels; restored after the test
    monkeypatch.setattr(render, "SOLUTIONS", solutions)
    monkeypatch.setattr(render, "student_copy", lambda executed, chapter: executed)
    with pytest.raises(render.RenderError, match=r"a_hangs: code cell 2 of 2 \('import time'\) ran past 3 s"):
        render.render(["a_hangs", "b_fine"], tmp_path / "out", fast=True, cdn=True, cell_timeout=3)
    assert (tmp_path / "out" / "students" / "b_fine.html").is_file()
    assert not (tmp_path / "out" / "students" / "a_hangs.html").exists()


def test_a_chapter_make_html_does_not_know_is_one_line(capsys):
    assert render.main(["--chapter", "00_welcom", "--out", "/nonexistent"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("no chapter '00_welcom'") and "00_welcome" in said and "Traceback" not in said
