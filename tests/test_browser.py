"""Every chapter as a lecturer runs it, in a real browser: JupyterLab in headless Chromium, ``make lecture``'s copy
(every answer in), Run All in lecture mode (``DLCOURSE_LECTURE=1``: FAST budgets, and the long demos behind their
``RUN_LIVE`` switches show the shipped results). No cell may fail, write to stderr or run a switched-off demo
(test_lecture's checks, made here on the page's outputs), and no widget may fail to render; then every enabled
control of every widget is moved and moved back, and each time its picture must change without an error. The
widget cells are the students' too: the release keeps them as they are.

Lecture mode draws the same widgets as FAST mode (:data:`VIEWS`: one view per chapter in 00-02, 09 and 11,
two in 04 and 10, three elsewhere, in both; counted in FAST mode's last browser run) in a third of the time;
the switched-off demos' FAST-mode training runs are ``test_notebooks``' to check, through the kernel, and
chapter 00's short training still draws its live loss plot here.

Then, from the keyboard alone, each view's first control reachable with Tab is moved (arrows, Space, Enter as
:meth:`browser.NotebookPage.by_keyboard` says) and the picture must change, with the focus visible; and axe-core
(pinned, ``autograder/bookkeeping/offline.py``) checks the page against WCAG 2.1 A/AA with every widget drawn. The
course's content — cell outputs and Markdown — may have no serious or critical violation but those in
:data:`COURSE_KNOWN`; JupyterLab's own interface only those in :data:`JUPYTERLAB_KNOWN`; each entry says why, and
anything else fails, so a new violation is seen.

Screenshots of every widget and the measured input → new-picture latencies go to ``build/browser/`` for
people to look at (the latency budget itself is a benchmark: ``bench/browser.py``). The last test proves the
checks can fail: a notebook with a failing cell, a widget that cannot render, a widget that redraws the same
picture and one whose redraw raises.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from browser import WCAG_TAGS, NotebookPage, in_a_page, lab_in_browser, unavailable
from conftest import CHAPTERS, ROOT
from jupyter_core.paths import jupyter_runtime_dir
from test_lecture import lecture_copy_to_run, lecture_run_problems

from autograder.bookkeeping import offline  # the repository is on sys.path (see conftest)

pytestmark = [pytest.mark.notebook, pytest.mark.browser, pytest.mark.xdist_group("browser")]
SHOTS = ROOT / "build" / "browser"
# the interactive views (controls above a picture) each chapter shows, in lecture and in FAST mode alike
VIEWS = {"00_welcome": 1, "01_seq2seq_attention": 1, "02_transformer_blocks": 1, "03_bert_mlm": 3,
         "04_gpt_decoding": 2, "05_t5": 3, "06_vit": 3, "07_gan": 3, "08_vae": 3, "09_sparse_attention": 1,
         "10_optimizers_schedulers": 2, "11_self_supervised": 1}

# Serious or critical violations that are not the course's to fix, by rule, with the reason (reviewed).
JUPYTERLAB_KNOWN = {
    "aria-allowed-attr": "JupyterLab 4.6's toolbar buttons (jp-button) carry aria-pressed, which their role does "
                         "not allow",
    "aria-required-children": "the notebook's windowed list of cells has the role feed, its cells not article",
    "button-name": "the collapse button beside a Markdown heading has no text",
    "aria-input-field-name": "the cells' code editors (CodeMirror's contenteditable) have no name",
}
# (rule, a class of the element) inside the course's content, with the reason
COURSE_KNOWN = {
    ("aria-input-field-name", "noUi-handle"): "ipywidgets 8.1.9 draws a slider's handle with its value but no name "
    "(the description is the label beside it) and gives Python no way to add one; make html's pages name it "
    "(autograder/bookkeeping/templates/html/offline)",
}


def accessibility_problems(found: list[dict]) -> list[str]:
    """The serious or critical violations axe-core found that neither list allows, one line each."""
    problems = []
    for v in found:
        if v["impact"] not in ("serious", "critical"):
            continue
        for node in v["nodes"]:
            if node["course"]:
                if not any(rule == v["id"] and cls in node["html"].split(">")[0] for rule, cls in COURSE_KNOWN):
                    problems.append(f"course content: {v['impact']} {v['id']} ({v['help']}): {node['html'][:160]}")
            elif v["id"] not in JUPYTERLAB_KNOWN:
                problems.append(f"JupyterLab: {v['impact']} {v['id']} ({v['help']}): {node['html'][:160]}")
    return problems


@pytest.fixture(scope="module")
def lab_browser(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("browser") / "notebooks"
    root.mkdir()
    for chapter in CHAPTERS:  # make lecture's copies: what a lecturer runs, every answer in
        lecture_copy_to_run(chapter, root)
    _selftest_notebook(root / "selftest" / "selftest.ipynb")
    # One BLAS thread: the suite runs two workers on two cores (as the other notebook tests do).
    with lab_in_browser(root, env={"DLCOURSE_LECTURE": "1", "OMP_NUM_THREADS": "1"}) as lab_and_browser:
        yield lab_and_browser


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_in_the_browser_and_every_widget_responds(lab_browser, chapter):
    lab, browser = lab_browser
    crash = SHOTS / f"{chapter}-renderer-crash.txt"
    crash.unlink(missing_ok=True)

    def check(page: NotebookPage) -> None:
        report = page.run_all(timeout_s=900)
        assert not report.errors, f"{chapter}: cells failed in the browser:\n" + "\n".join(report.errors)
        assert not report.not_run, f"{chapter}: cells never ran: {report.not_run}"
        problems = lecture_run_problems(chapter, page.streams())  # before any widget is touched
        assert not problems, "\n".join(problems)
        assert not page.widget_errors(), f"{chapter}: widgets failed to render: {page.widget_errors()}"
        views = page.views()
        assert len(views) == VIEWS[chapter], f"{chapter}: {len(views)} interactive widgets, not {VIEWS[chapter]}"
        folder = SHOTS / chapter
        shutil.rmtree(folder, ignore_errors=True)
        changes = page.exercise(shots=folder)
        (folder / "latency.json").write_text(json.dumps(
            {"run_all_s": round(report.seconds, 1), "changes": [c.__dict__ for c in changes]}, indent=1))
        problems = []
        for c in changes:
            where = f"{c.title or 'widget'} (view {c.view}), control {c.control!r}"
            if not c.responded:
                problems.append(f"{where}: the picture did not change within 60 s")
            elif "Traceback" in c.output_text:
                problems.append(f"{where}: the widget showed an error: {c.output_text[-400:]}")
        assert not problems, f"{chapter}:\n" + "\n".join(problems)
        keyboard = [page.by_keyboard(i) for i in range(len(views))]
        found = page.accessibility(offline.STORE / offline.AXE_JS, WCAG_TAGS)
        (folder / "accessibility.json").write_text(json.dumps(
            {"keyboard": [c.__dict__ for c in keyboard], "axe": found}, indent=1))
        for c in keyboard:
            where = f"{c.title or 'widget'} (view {c.view}), control {c.control!r}"
            if not c.responded:
                problems.append(f"{where}: from the keyboard alone the picture did not change ({c.output_text})")
            elif not c.output_text.startswith("focus shown"):
                problems.append(f"{where}: the focused control does not show its focus")
        problems += accessibility_problems(found)
        assert not problems, f"{chapter}:\n" + "\n".join(problems)

    assert (offline.STORE / offline.AXE_JS).is_file(), "axe-core is missing: make setup fetches it"
    in_a_page(browser, lab, f"{chapter}/{chapter}.ipynb", check, record=crash)


def _selftest_notebook(path: Path) -> None:
    """Planted defects the browser checks must each report."""
    path.parent.mkdir(parents=True)
    cells = [
        # a widget whose front-end class does not exist: "Error displaying widget"
        "import ipywidgets as W\n"
        "from traitlets import Unicode\n"
        "class Missing(W.DOMWidget):\n"
        "    _view_module = Unicode('no-such-widget-module').tag(sync=True)\n"
        "    _view_name = Unicode('NoSuchView').tag(sync=True)\n"
        "    _model_module = Unicode('no-such-widget-module').tag(sync=True)\n"
        "    _model_name = Unicode('NoSuchModel').tag(sync=True)\n"
        "Missing()",
        # a view whose slider is not wired to its output: it never redraws
        "from dlcourse.widgets.base import InteractiveView\n"
        "frozen = InteractiveView({'x': W.IntSlider(value=1, min=0, max=5, description='x')}, lambda x: 'x is 1')",
        "frozen",
        # a view that redraws, one whose redraw fails at x = 2, and a cell that fails after them
        "live = InteractiveView({'x': W.IntSlider(value=1, min=0, max=5, description='x')}, lambda x: f'x is {x}')\n"
        "live",
        "broken = InteractiveView({'x': W.IntSlider(value=1, min=0, max=5, description='x')},\n"
        "                         lambda x: f'x is {1 / (x - 2)}')\n"
        "broken",
        # a button and a list without names, in the course's content (an image without alt would not do:
        # JupyterLab gives it the alt "Image")
        "from IPython.display import HTML\n"
        "HTML('<button></button><select><option>a</option></select>')",
        "raise ValueError('planted')",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "dlcourse", "display_name": "Python 3 (dlcourse)", "language": "python"}
    nbformat.write(nb, path)


def test_the_browser_checks_catch_a_failing_cell_a_broken_widget_a_frozen_one_and_a_failing_redraw(lab_browser):
    """... and, from the keyboard, the frozen view; and axe-core a nameless button and list."""
    lab, browser = lab_browser
    in_a_page(browser, lab, "selftest/selftest.ipynb", _selftest_checks, record=SHOTS / "selftest-renderer-crash.txt")


def _selftest_checks(page: NotebookPage) -> None:
    report = page.run_all(timeout_s=300)
    assert len(report.errors) == 1 and "ValueError: planted" in report.errors[0], report.errors
    assert page.widget_errors(wait_s=30), "a widget without its front-end class was not reported"
    views = page.views()
    assert len(views) == 3, views
    frozen, live, broken = page.change(0, 0, timeout_s=5), page.change(1, 0), page.change(2, 0)
    assert not frozen.responded, "a view that redrew the same picture was taken for one that responded"
    assert live.responded and "x is 2" in live.output_text, live
    assert broken.responded and "Traceback" in broken.output_text and "ZeroDivisionError" in broken.output_text
    assert page.change(2, 0).responded  # moved back: the picture again
    frozen, live = page.by_keyboard(0, timeout_s=5), page.by_keyboard(1)
    assert not frozen.responded and live.responded and live.output_text.startswith("focus shown"), (frozen, live)
    problems = accessibility_problems(page.accessibility(offline.STORE / offline.AXE_JS, WCAG_TAGS))
    assert any("course content: critical button-name" in p for p in problems), problems
    assert any("course content: critical select-name" in p for p in problems), problems
    assert not [p for p in problems if p.startswith("JupyterLab")], problems


def _crash(page: NotebookPage) -> None:
    """Kill the page's renderer the way Chromium's own crash URL does, then touch the page."""
    try:
        page.page.goto("chrome://crash", timeout=10_000)
    except Exception:  # the navigation is aborted by the crash itself
        pass
    page.page.evaluate("1")


def test_a_renderer_crash_is_recorded_and_the_notebook_checked_once_more_in_a_new_page(lab_browser, tmp_path):
    lab, browser = lab_browser
    pages = []

    def crash_first(page: NotebookPage) -> str:
        pages.append(page)
        if len(pages) == 1:
            _crash(page)
        kernel = page.page.evaluate("window.__dlcourse.notebook().sessionContext.session.kernel.id")
        return json.loads((Path(jupyter_runtime_dir()) / f"kernel-{kernel}.json").read_text())

    record = tmp_path / "crash.txt"
    connection = in_a_page(browser, lab, "selftest/selftest.ipynb", crash_first, record=record)
    assert len(pages) == 2 and pages[0] is not pages[1]
    assert "renderer crashed" in record.read_text() and "Target crashed" in record.read_text()
    # the second page has a live kernel, on Unix sockets (a TCP port picked at random can be taken first)
    assert connection["transport"] == "ipc", connection
    with pytest.raises(Exception, match="crashed"):  # a second crash fails the check
        in_a_page(browser, lab, "selftest/selftest.ipynb", _crash, record=tmp_path / "again.txt")
    with pytest.raises(AssertionError, match="planted"):  # a failed check is never retried
        in_a_page(browser, lab, "selftest/selftest.ipynb", lambda page: pages.append(page) or _fail())
    assert len(pages) == 3


def _fail() -> None:
    raise AssertionError("planted")
