"""The course's own pages against WCAG 2.1 AA, checked by axe-core (pinned; ``make setup`` fetches it with the
offline scripts, ``autograder/bookkeeping/offline.py``) in the system's Chromium.

Checked: every chapter's page as ``make html`` writes it (FAST mode; the students' and the instructor's copy, with
the widgets drawn from their saved state and the maths typeset), and the instructor's pages this course writes —
the similarity report, the class analytics and the index pages. A serious or critical violation fails; every
violation found is printed with its rule, so the lesser ones are seen too. On the chapters' pages every image must
carry a text alternative of its own (not nbconvert's "No description has been provided") and every formula its
MathML for screen readers.
"""

from __future__ import annotations

import pytest
from browser import axe_on, chromium, serious, unavailable
from conftest import CHAPTERS, ROOT
from test_analytics import _class
from test_similarity import report  # noqa: F401 — the planted class's similarity report (a fixture)

from autograder.bookkeeping import (
    analytics,  # the repository is on sys.path (see conftest)
    offline,
)

pytestmark = [pytest.mark.notebook, pytest.mark.xdist_group("accessibility")]


# a chapter's page is ready once every saved widget is drawn and MathJax has typeset the maths
READY_JS = """() => document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length
                 <= document.querySelectorAll('.jupyter-widgets').length
               && (!window.MathJax || (MathJax.startup && MathJax.startup.promise))"""
# what the page shows to a screen reader besides axe's rules: each image's alt, formulas and their MathML
SEEN_JS = """() => ({alts: Array.from(document.querySelectorAll('img')).map(i => i.getAttribute('alt')),
                     formulas: document.querySelectorAll('mjx-container').length,
                     mathml: document.querySelectorAll('mjx-container mjx-assistive-mml math').length})"""


def axe(path, seen: dict | None = None) -> list[dict]:
    """axe-core's violations on the page at ``path`` (rules of WCAG 2.0/2.1 A and AA), once its widgets are drawn
    and its maths typeset; ``seen``, when given, receives :data:`SEEN_JS`'s findings."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    script = offline.STORE / offline.AXE_JS
    if not script.is_file():
        pytest.skip(f"axe-core is not in {offline.STORE}: `make setup` fetches it with npm")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"file://{path}")
            page.wait_for_function(READY_JS, timeout=60_000)
            page.evaluate("window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
            page.wait_for_timeout(300)  # the slider handles are named as they are drawn
            if seen is not None:
                seen.update(page.evaluate(SEEN_JS))
            found = axe_on(page, script)
        finally:
            browser.close()
    for v in found:
        print(f"{path.name}: {v['impact']} {v['id']} ({v['nodes']} element(s)): {v['help']} — {v['first'][:120]}")
    return found


def test_the_similarity_report_has_no_serious_violation(report):  # noqa: F811
    _, root, _ = report
    assert not serious(axe(root / "similarity.html"))


def test_the_class_analytics_page_has_no_serious_violation(tmp_path):
    table, results, rules = _class(tmp_path)
    (page,) = analytics.write_pages(table, ["ch"], results, tmp_path / "analytics", rules)
    assert not serious(axe(page))


def test_the_engine_finds_what_it_should(tmp_path):
    """A page with an image without a text alternative, a button without a name, grey-on-white text and an
    unnamed slider: axe-core must report each (so a clean report above means something), and the page check
    reads the images' alternatives."""
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><html lang='en'><head><title>t</title></head><body><main>"
                    "<img src='data:image/png;base64,iVBORw0KGgo='><button></button>"
                    f"<img src='data:image/png;base64,iVBORw0KGgo=' alt='{PLACEHOLDER}'>"
                    "<div role='slider' tabindex='0' aria-valuenow='1' aria-valuemin='0' aria-valuemax='2'></div>"
                    "<p style='color:#bbb;background:#fff'>faint text</p></main></body></html>")
    seen: dict = {}
    found = {v["id"]: v["impact"] for v in axe(page, seen)}
    assert {"image-alt", "button-name", "color-contrast", "aria-input-field-name"} <= set(found), found
    assert found["image-alt"] == "critical" and found["color-contrast"] == "serious"
    assert seen["alts"] == [None, PLACEHOLDER] and seen["formulas"] == 0


PLACEHOLDER = "No description has been provided for this image"  # nbconvert's alt for an image without one


@pytest.mark.parametrize("chapter", [pytest.param(c, marks=pytest.mark.xdist_group(f"accessibility-{c}"))
                                     for c in CHAPTERS])
def test_every_chapters_page_has_no_serious_violation_and_every_figure_a_text_alternative(tmp_path, chapter):
    """The chapter executed in FAST mode and written by ``make html``'s renderer, both copies; and the index."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "autograder" / "bookkeeping" / "render.py"), "--chapter", chapter,
                           "--fast", "--out", str(tmp_path)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    problems = []
    for who in ("students", "instructor"):
        seen: dict = {}
        page = tmp_path / who / f"{chapter}.html"
        problems += [f"{who}: {v}" for v in serious(axe(page, seen))]
        without = [a for a in seen["alts"] if not (a or "").strip() or a == PLACEHOLDER]
        if without:
            problems.append(f"{who}: {len(without)} of {len(seen['alts'])} images without a text alternative")
        if seen["mathml"] != seen["formulas"]:
            problems.append(f"{who}: {seen['formulas'] - seen['mathml']} of {seen['formulas']} formulas without "
                            "MathML for screen readers")
        assert seen["alts"], f"{who}: no figure on the page: the check above checked nothing"
        if chapter == CHAPTERS[0]:
            assert axe(tmp_path / who / "index.html") == []
    assert not problems, f"{chapter}:\n" + "\n".join(problems)
