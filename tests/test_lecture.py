"""make lecture: a lecture copy of a chapter with every answer and slide metadata, refreshed without ever
losing a lecturer's edits, and never written back into solutions/."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import CHAPTERS, ROOT

from autograder.bookkeeping import lecture  # the repository is on sys.path (see conftest)

CHAPTER = "00_welcome"


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_copy_has_the_answers_and_slides_and_solutions_stay_untouched(tmp_path):
    source = ROOT / "solutions" / CHAPTER / f"{CHAPTER}.ipynb"
    before = _sha(source)
    done = subprocess.run([sys.executable, str(ROOT / "autograder" / "bookkeeping" / "lecture.py"), "prepare",
                           "--chapter", CHAPTER,
                           "--root", str(tmp_path / "lecture")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "a lecture copy was made" in done.stdout, done.stdout + done.stderr
    copy = nbformat.read(tmp_path / "lecture" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    assert _sha(source) == before
    assert any("### BEGIN SOLUTION" in c.source for c in copy.cells), "the answers are in"
    kinds = [c.metadata.get("slideshow", {}).get("slide_type", "-") for c in copy.cells]
    assert kinds[0] == "slide" and kinds.count("slide") >= 4 and set(kinds) <= {"slide", "subslide", "skip", "-"}
    # a cell on the slide before carries no type: jupyterlab-deck leaves a "-" cell off the slides
    assert all(c.metadata.get("slideshow", {}).get("slide_type") != "-" for c in copy.cells)
    for cell, kind in zip(copy.cells, kinds, strict=True):
        assert not lecture.is_hidden_test(cell), "hidden tests are grading machinery, not lecture material"
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            assert kind == "slide"
    hidden = [c for c in nbformat.read(source, as_version=4).cells if lecture.is_hidden_test(c)]
    assert hidden and len(copy.cells) == len(nbformat.read(source, as_version=4).cells) - len(hidden)
    unknown = subprocess.run([sys.executable, str(ROOT / "autograder" / "bookkeeping" / "lecture.py"), "prepare",
                              "--chapter",
                              "99_nothing", "--root", str(tmp_path / "lecture")], capture_output=True, text=True)
    assert unknown.returncode != 0 and CHAPTER in unknown.stderr


def test_preparing_again_never_loses_a_lecturers_edits(tmp_path):
    solutions = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions" / CHAPTER, solutions / CHAPTER)
    root = tmp_path / "lecture"
    source = solutions / CHAPTER / f"{CHAPTER}.ipynb"
    copy, said = lecture.prepare(CHAPTER, root, solutions)
    assert said == "a lecture copy was made"
    assert lecture.prepare(CHAPTER, root, solutions)[1] == "the lecture copy is up to date"

    nb = nbformat.read(copy, as_version=4)  # the lecturer runs a cell and saves
    nb.cells[0].source += "\n\nA note for today's class."
    nbformat.write(nb, copy)
    assert "kept" in lecture.prepare(CHAPTER, root, solutions)[1]
    assert "A note for today's class." in copy.read_text()

    chapter = nbformat.read(source, as_version=4)  # the chapter changes too
    chapter.cells[-1].source += "\n\nA corrected sentence."
    nbformat.write(chapter, source)
    said = lecture.prepare(CHAPTER, root, solutions)[1]
    assert "refreshed" in said and "saved as" in said
    (kept,) = [p for p in copy.parent.glob(f"{CHAPTER}.*.ipynb")]
    assert kept.name in said and "A note for today's class." in kept.read_text()
    assert "A corrected sentence." in copy.read_text() and "A note for today's class." not in copy.read_text()

    chapter.cells[-1].source += " Again."  # changed once more, the copy untouched since: refreshed, no backup
    nbformat.write(chapter, source)
    said = lecture.prepare(CHAPTER, root, solutions)[1]
    assert "refreshed" in said and "saved as" not in said and len(list(copy.parent.glob(f"{CHAPTER}.*.ipynb"))) == 1


def test_a_copy_made_under_an_older_slide_layout_is_refreshed(tmp_path, monkeypatch):
    solutions = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions" / CHAPTER, solutions / CHAPTER)
    root = tmp_path / "lecture"
    monkeypatch.setattr(lecture, "LAYOUT", lecture.LAYOUT - 1)  # a copy from before the layout changed
    copy, _ = lecture.prepare(CHAPTER, root, solutions)
    monkeypatch.setattr(lecture, "LAYOUT", lecture.LAYOUT + 1)
    assert "refreshed" in lecture.prepare(CHAPTER, root, solutions)[1]
    assert lecture.prepare(CHAPTER, root, solutions)[1] == "the lecture copy is up to date"


SMOLLM2_PROBE = 'print("SmolLM2 loaded:", any(x.built for x in (smol, smol_tok, smol_lm)))'


def lecture_copy_to_run(chapter: str, root: Path) -> Path:
    """make lecture's copy of ``chapter`` under ``root``; chapter 04's gets a last cell that says whether Run All
    loaded SmolLM2 (its demos are switched off and nothing picked it, so it must not have)."""
    copy, _ = lecture.prepare(chapter, root)
    if chapter == "04_gpt_decoding":
        nb = nbformat.read(copy, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(SMOLLM2_PROBE))
        nbformat.write(nb, copy)
    return copy


def lecture_run_problems(chapter: str, cells: list[tuple[str, list[tuple[str, str]]]]) -> list[str]:
    """What is wrong with a lecture-mode Run All of :func:`lecture_copy_to_run`'s copy, given each code cell's
    source and its stream outputs as (stream name, text): something on stderr, budgets that are not FAST, a demo
    behind a RUN_LIVE switch that did not say it was switched off, SmolLM2 loaded."""
    problems, printed, switched = [], [], 0
    for source, streams in cells:
        for name, text in streams:
            if name == "stderr":
                problems.append(f"{chapter}: {source.strip().splitlines()[0]!r} wrote to stderr: {text[-400:]!r}")
            elif name == "stdout":
                printed.append(text)
        switched += "runtime.live(RUN_LIVE)" in source
    text = "".join(printed)
    if "mode: FAST" not in text:
        problems.append(f"{chapter}: lecture mode should run FAST budgets (no 'mode: FAST' printed)")
    if text.count("RUN_LIVE = False") < switched:
        problems.append(f"{chapter}: {switched} demos have a RUN_LIVE switch, but only {text.count('RUN_LIVE = False')}"
                        " said they were switched off: a switched-off demo ran anyway")
    if chapter == "04_gpt_decoding" and "SmolLM2 loaded: False" not in text:
        problems.append(f"{chapter}: lecture mode loaded SmolLM2 at Run All")
    return problems


@pytest.mark.parametrize("chapter", [pytest.param(c, marks=pytest.mark.xdist_group(f"lecture-{c}")) for c in CHAPTERS])
def test_every_chapter_runs_in_lecture_mode_with_its_long_demos_switched_off(tmp_path, monkeypatch, chapter):
    """make lecture's copy, run top to bottom as a lecturer's Run All runs it (DLCOURSE_LECTURE=1): no error, nothing
    on stderr, and each demo behind a RUN_LIVE switch shows its recorded result instead of running (FAST and full
    mode, which run those demos, are covered by test_notebooks and make checkpoints). Where Chromium is available
    test_browser.py runs the same copy in JupyterLab and checks the same (lecture_run_problems), so it is not run
    twice."""
    import browser

    if browser.unavailable() is None:
        pytest.skip("run and checked in JupyterLab by tests/test_browser.py::"
                    "test_chapter_runs_in_the_browser_and_every_widget_responds")
    from autograder.bookkeeping.kernels import run_notebook

    for name in ("DLCOURSE_FAST", "NBGRADER_EXECUTION", "DLCOURSE_RETRAIN", "DLCOURSE_SAVE_CHECKPOINTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DLCOURSE_LECTURE", "1")  # the kernel inherits this process's environment
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # correctness is checked here; one thread spares the other worker
    copy = lecture_copy_to_run(chapter, tmp_path / "lecture")
    nb, _ = run_notebook(copy, timeout=120)
    cells = [(cell.source, [(out.name, out.text) for out in cell.outputs if out.output_type == "stream"])
             for cell in nb.cells if cell.cell_type == "code"]
    problems = lecture_run_problems(chapter, cells)
    assert not problems, "\n".join(problems)


def test_the_lecture_run_check_reports_stderr_a_demo_that_ran_and_smollm2_loaded():
    setup = ("print('mode: FAST')", [("stdout", "mode: FAST\n")])
    switched = ("RUN_LIVE = False\nif runtime.live(RUN_LIVE):\n    train()", [("stdout", "trained\n")])
    assert lecture_run_problems("00_welcome", [setup]) == []
    assert "ran anyway" in " ".join(lecture_run_problems("00_welcome", [setup, switched]))
    said = (switched[0], [("stdout", "not trained here (RUN_LIVE = False)\n")])
    assert lecture_run_problems("00_welcome", [setup, said]) == []
    assert "stderr" in " ".join(lecture_run_problems("00_welcome", [setup, ("x = 1", [("stderr", "Warning")])]))
    assert "FAST" in " ".join(lecture_run_problems("00_welcome", [("x = 1", [])]))
    assert "SmolLM2" in " ".join(lecture_run_problems("04_gpt_decoding", [setup]))
    probe = (SMOLLM2_PROBE, [("stdout", "SmolLM2 loaded: False\n")])
    assert lecture_run_problems("04_gpt_decoding", [setup, probe]) == []


# --- the slideshow, in a real browser ---------------------------------------------------------------------------

_SLIDES_JS = """() => { const nb = window.jupyterapp.shell.currentWidget.content;
    return nb.widgets.map((c, i) => [i, ((c.model.getMetadata('slideshow') || {}).slide_type) || null])
      .filter(([i, kind]) => kind === 'slide' || kind === 'subslide').map(([i]) => i); }"""
_SHOWN_JS = """() => window.jupyterapp.shell.currentWidget.content.widgets.map((c, i) =>
    c.node.classList.contains('jp-deck-mod-onscreen') ? i : -1).filter(i => i >= 0)"""


def _start_deck(page) -> None:
    page.evaluate("() => { const p = window.jupyterapp.shell.currentWidget; p.content.activeCellIndex = 0; "
                  "p.content.mode = 'command'; }")
    page.evaluate("window.jupyterapp.commands.execute('deck:start')")
    page.wait_for_function("() => document.body.dataset.jpDeckMode === 'presenting'", timeout=30_000)
    try:  # the title's slide on screen (the caller's assertion says what is, if it never comes)
        page.wait_for_function(f"() => ({_SHOWN_JS})().includes(0)", timeout=10_000)
    except Exception:
        pass


def _show(page, cell: int) -> list[int]:
    """Go to the slide that holds ``cell`` (as the deck does when a cell becomes active); the cells on screen."""
    page.evaluate(f"() => {{ window.jupyterapp.shell.currentWidget.content.activeCellIndex = {cell}; }}")
    try:
        page.wait_for_function(f"() => ({_SHOWN_JS})().includes({cell})", timeout=10_000)
    except Exception:  # not shown: the caller's assertion says which cells are
        pass
    return page.evaluate(_SHOWN_JS)


@pytest.fixture(scope="module")
def lecture_lab(tmp_path_factory):
    from browser import lab_in_browser, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("slides") / "lecture"
    for chapter in dict.fromkeys([*CHAPTERS, CHAPTER]):  # the projector test's chapter 00 even when CHAPTERS
        lecture.prepare(chapter, root)                    # is narrowed (DLCOURSE_TEST_CHAPTERS)
    env = {"DLCOURSE_LECTURE": "1", "DLCOURSE_PRESENTATION": "1.6", "OMP_NUM_THREADS": "1"}
    with lab_in_browser(root, env=env) as lab_and_browser:
        yield lab_and_browser


@pytest.mark.browser
@pytest.mark.notebook
@pytest.mark.xdist_group("lecture-slides")
def test_every_chapter_opens_as_a_slideshow_in_jupyterlab(lecture_lab):
    """The deck starts on every lecture copy, opens on the title, and every slide and sub-slide of the chapter
    can be shown, the cells after its heading with it. (One page; each chapter after the first opened in it
    without a kernel, as *Open With → Notebook (no kernel)* does: the slides need none, and the projector test
    below runs one; then closed.)"""
    from browser import NotebookPage

    lab, browser = lecture_lab
    page = NotebookPage(browser, lab, f"{CHAPTERS[0]}/{CHAPTERS[0]}.ipynb", viewport=(1920, 1080))
    try:
        for k, chapter in enumerate(CHAPTERS):
            if k:
                page.page.evaluate("""async path => { const app = window.jupyterapp;
                    const w = await app.commands.execute('docmanager:open',
                        {path, kernelPreference: {shouldStart: false, shouldReuse: false}});
                    await w.context.ready; app.shell.activateById(w.id); }""", f"{chapter}/{chapter}.ipynb")
                page.page.wait_for_function(
                    "p => { const w = window.jupyterapp.shell.currentWidget; "
                    "return w.context.path === p && w.content.widgets.length > 0; }",
                    arg=f"{chapter}/{chapter}.ipynb", timeout=60_000)
            _start_deck(page.page)
            assert page.page.evaluate(_SHOWN_JS)[:1] == [0], f"{chapter}: the deck does not open on the title"
            starts = page.page.evaluate(_SLIDES_JS)
            assert len(starts) >= 6, f"{chapter}: {len(starts)} slides"
            # every slide in turn, its last cell made active (one page-side loop: a round trip per slide is slow)
            shown = page.page.evaluate("""async starts => {
                const nb = window.jupyterapp.shell.currentWidget.content;
                const ends = starts.slice(1).map(s => s - 1).concat([nb.widgets.length - 1]);
                const out = [];
                for (const [k, start] of starts.entries()) {
                    nb.activeCellIndex = ends[k];
                    const on = () => nb.widgets[ends[k]].node.classList.contains('jp-deck-mod-onscreen');
                    for (let t = 0; t < 100 && !on(); t++) await new Promise(r => setTimeout(r, 20));
                    out.push([start, ends[k], (SHOWN)()]);
                }
                return out; }""".replace("SHOWN", _SHOWN_JS), starts)
            for start, last, cells in shown:
                assert start in cells and last in cells, f"{chapter}: the slide at cell {start} shows cells {cells}"
            page.page.evaluate("async () => { await window.jupyterapp.commands.execute('deck:stop'); "
                               "const w = window.jupyterapp.shell.currentWidget; "
                               "await w.sessionContext.shutdown(); w.dispose(); }")
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.notebook
@pytest.mark.xdist_group("lecture-slides")
def test_a_widget_moves_on_its_slide_at_projector_scale(lecture_lab):
    """Chapter 00 as a lecturer gives it: Run All in lecture mode at the projector scale, the deck started, the
    slide with the temperature widget shown, its slider moved, and a new picture drawn on the slide. At
    1920×1080 the widget's labels and the figure's smallest text are at least 18 px high."""
    from browser import NotebookPage

    lab, browser = lecture_lab
    page = NotebookPage(browser, lab, f"{CHAPTER}/{CHAPTER}.ipynb", viewport=(1920, 1080))
    try:
        report = page.run_all(timeout_s=300)
        assert not report.errors and not report.not_run, report.errors + report.not_run
        _start_deck(page.page)
        (where,) = page.page.evaluate(
            "() => { const D = window.__dlcourse; const cells = D.notebook().content.widgets.map(w => w.node); "
            "return D.views().map(v => cells.indexOf(v.closest('.jp-Cell'))); }")
        shown = _show(page.page, where)
        assert where in shown and len(shown) >= 2, f"the widget's slide shows cells {shown}"
        box = page.page.evaluate("() => { const r = window.__dlcourse.views()[0].getBoundingClientRect(); "
                                 "return [r.top, r.bottom, r.width]; }")
        assert box[2] > 0 and 0 <= box[0] < 1080, f"the widget is not on the screen: {box}"
        change = page.change(0, 0)
        assert change.responded, change
        label_px = page.page.evaluate(
            "() => parseFloat(getComputedStyle(window.__dlcourse.views()[0].querySelector('.widget-label'))"
            ".fontSize)")
        assert label_px >= 18, f"widget labels {label_px} px at the projector scale"
        # The figure: its smallest text in points at the figure's dpi (asked of the kernel that drew it: every
        # figure it holds, the widgets' included), times the scale at which the browser shows the image.
        shown_scale = page.page.evaluate(
            "() => { const img = window.__dlcourse.views()[0].querySelector('.widget-output img'); "
            "return img.getBoundingClientRect().width / img.naturalWidth; }")
        text_px = _kernel_value(page.page, (
            "import gc, warnings, matplotlib.figure\n"
            "with warnings.catch_warnings():\n"
            "    warnings.simplefilter('ignore')  # touching every object wakes deprecated torch aliases\n"
            "    _figures = [f for f in gc.get_objects() if isinstance(f, matplotlib.figure.Figure)]\n"
            "print(min(t.get_fontsize() * f.dpi / 72 for f in _figures"
            " for t in f.findobj(lambda a: hasattr(a, 'get_text') and hasattr(a, 'get_fontsize'))"
            " if t.get_visible() and t.get_text().strip()))")).splitlines()[-1]
        assert float(text_px) * shown_scale >= 18, f"figure text {float(text_px) * shown_scale:.1f} px on screen"
    finally:
        page.close()


def _kernel_value(page, code: str) -> str:
    """What ``code`` prints when run in the page's kernel (outside the notebook's cells)."""
    return page.evaluate("""async code => {
        const kernel = window.__dlcourse.notebook().sessionContext.session.kernel;
        let text = '';
        const future = kernel.requestExecute({code, silent: false, store_history: false});
        future.onIOPub = msg => {
            if (msg.header.msg_type === 'stream' && msg.content.name === 'stdout') text += msg.content.text;
                                  if (msg.header.msg_type === 'error') text += msg.content.evalue; };
        await future.done;
        return text.trim(); }""", code)
