"""make site: the course's website, opened from disk in Chromium with the network cut — the front page lists every
chapter with what it builds on and its time, search finds a chapter, a link in the Students' guide leads to the
chapter's page, a widget drawn from its saved state moves, the maths is typeset, nothing is fetched from anywhere
but the disk, and axe-core finds no serious WCAG 2.1 A/AA violation on the pages visited."""

from __future__ import annotations

import shutil

import pytest
from browser import axe_on, chromium, serious, unavailable
from conftest import ROOT

pytestmark = [pytest.mark.notebook, pytest.mark.xdist_group("site")]


def test_the_front_page_is_made_from_the_chapters():
    from autograder.bookkeeping import website

    names = website.chapters()
    assert len(names) == 12 and names[0] == "00_welcome"
    page = website.front_page(names)
    for name in names:
        facts = website.facts(name)
        assert facts["builds_on"] and facts["time"], f"{name}: no Prerequisites or Expected time in its first cell"
        assert f"](chapters/{name}.ipynb)" in page and facts["builds_on"] in page
    assert all(f"](guides/{g}.md)" in page for g in website.GUIDE_ORDER)


def test_a_guide_s_link_to_a_chapter_becomes_a_link_to_its_page(tmp_path):
    from autograder.bookkeeping import website

    executed = tmp_path / "html" / "students"
    executed.mkdir(parents=True)
    for name in website.chapters():
        shutil.copy2(ROOT / "course" / name / f"{name}.ipynb", executed / f"{name}.ipynb")
    assert website.stale(website.chapters(), tmp_path / "html") == []
    import nbformat

    changed = nbformat.read(executed / "03_bert_mlm.ipynb", as_version=4)
    changed.cells[0].source += "\nA sentence the release no longer has."
    nbformat.write(changed, executed / "03_bert_mlm.ipynb")
    assert website.stale(website.chapters(), tmp_path / "html") == ["03_bert_mlm"]  # make html ran before an edit
    source = website.stage(website.chapters(), tmp_path / "html", tmp_path / "source")
    students = (source / "guides" / "students.md").read_text()
    assert "](../chapters/00_welcome.ipynb)" in students and "../../course/" not in students
    assert (source / "_static" / website.VENDOR / "requirejs").is_dir()


def test_the_site_works_from_disk_offline(tmp_path):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from autograder.bookkeeping import offline, render, website

    if not offline.present() or not (offline.STORE / offline.AXE_JS).is_file():
        pytest.skip(f"the offline scripts are not in {offline.STORE}: `make setup` fetches them with npm")
    html = tmp_path / "html"
    render.render(["00_welcome"], html, fast=True)  # as make html FAST=1 writes it, with the executed copy
    assert (html / "students" / "00_welcome.ipynb").is_file()
    others = [n for n in website.chapters() if n != "00_welcome"]
    for name in others:  # the other chapters as released, unexecuted: the build reads, it never executes them
        shutil.copy2(ROOT / "course" / name / f"{name}.ipynb", html / "students" / f"{name}.ipynb")
    site = website.build(website.chapters(), html, tmp_path / "site")
    from playwright.sync_api import sync_playwright

    fetched, errors, barriers = [], [], {}
    axe_js = offline.STORE / offline.AXE_JS
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
            page = context.new_page()
            page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"file://{site}/index.html")
            rows = page.locator("table tbody tr")
            assert rows.count() == 12, rows.count()
            assert "Chapter 02" in rows.nth(4).inner_text()  # chapter 04 builds on chapter 02
            barriers["front page"] = serious(axe_on(page, axe_js))
            # the Students' guide links to a chapter in its text; following it opens the chapter's page
            page.goto(f"file://{site}/guides/students.html")
            barriers["Students' guide"] = serious(axe_on(page, axe_js))
            page.locator("article a[href$='chapters/00_welcome.html']").first.click()
            page.wait_for_url("**/chapters/00_welcome.html")
            # the temperature slider, drawn from the saved widget state, moves from the keyboard
            page.wait_for_selector(".widget-hslider .noUi-handle, .widget-hslider .ui-slider-handle", timeout=60_000)
            readout = page.locator(".widget-hslider .widget-readout").first
            before = readout.inner_text()
            page.locator(".widget-hslider .noUi-handle, .widget-hslider .ui-slider-handle").first.focus()
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowRight")
            page.wait_for_function("([el, old]) => el.innerText !== old", arg=[readout.element_handle(), before])
            assert readout.inner_text() != before
            page.evaluate("window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
            assert page.locator("mjx-container").count() > 0, "the maths is not typeset"
            barriers["chapter 00"] = serious(axe_on(page, axe_js))
            # search, from the search page the theme's box opens
            page.goto(f"file://{site}/search.html?q=temperature")
            page.wait_for_selector("ul.search li a", timeout=30_000)
            hits = [a.get_attribute("href") for a in page.locator("ul.search li a").all()]
            assert any("chapters/00_welcome" in h for h in hits), hits
        finally:
            browser.close()
    assert not fetched, f"the site asked the network for {fetched[:5]}"
    assert not errors, errors
    assert not any(barriers.values()), barriers
