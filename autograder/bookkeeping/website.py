"""The course's website (``make site``): the students' chapters as ``make html`` executed them, with their
widgets drawn from the saved state, and the four guides, as one static site with navigation and search that
works from disk, offline.

Sphinx builds it (MyST-NB reads the notebooks and Markdown; the Book theme gives the sidebar, the page
outline and search). Nothing is executed while the site is built: each chapter is the executed students' copy
``make html`` keeps beside its page (``build/html/students/<chapter>.ipynb``); a chapter without one is
executed first, in FAST mode (``--full`` for full mode), the way ``make html`` executes it. The scripts the
pages need — RequireJS and the widgets' HTML manager, MathJax — are the pinned copies ``make setup`` fetched
(``autograder/bookkeeping/offline.py``), copied into the site: no page loads anything from the internet.

The front page is made from the chapters themselves: each one's title, what it builds on and how long it
takes, read from its first cell. The guides are ``docs/guides/*.md``; a link in a guide to a chapter of the
release (``../../course/<chapter>/<chapter>.ipynb``) becomes a link to that chapter's page.

    python autograder/bookkeeping/website.py [--chapter 00_welcome ...] [--full] [--executed build/html]
                                             [--out build/site]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: the `autograder` package is imported from the repository
    sys.path.insert(0, str(ROOT))

from autograder.bookkeeping import offline  # noqa: E402

COURSE = ROOT / "course"
GUIDES = ROOT / "docs" / "guides"
IMAGES = ROOT / "docs" / "images"
EXECUTED = ROOT / "build" / "html"  # make html's folder: students/<chapter>.ipynb beside students/<chapter>.html
OUT = ROOT / "build" / "site"
GUIDE_ORDER = ("students", "instructors", "lecturers", "maintainers")
VENDOR = "vendor"  # under _static/: the offline scripts
TITLE = "Deep Learning from Scratch"


class SiteError(RuntimeError):
    """The site cannot be built; the message says why."""


def chapters() -> list[str]:
    return sorted(p.name for p in COURSE.iterdir() if p.is_dir() and (p / f"{p.name}.ipynb").is_file())


def facts(chapter: str) -> dict[str, str]:
    """The chapter's title, what it builds on and how long it takes, from its first cell."""
    nb = nbformat.read(COURSE / chapter / f"{chapter}.ipynb", as_version=4)
    first = nb.cells[0].source

    def paragraph(label: str) -> str:
        found = re.search(rf"\*\*{label}\.\*\*\s*(.+?)(?:\n\s*\n|\n\*\*|\Z)", first, re.S)
        return " ".join(found.group(1).split()) if found else ""

    title = re.search(r"^#\s+(.+)$", first, re.M)
    return {"title": title.group(1).strip() if title else chapter, "builds_on": paragraph("Prerequisites"),
            "time": paragraph("Expected time")}


def front_page(names: list[str]) -> str:
    """index.md: what the course is, the guides, and one row per chapter."""
    readme = (ROOT / "README.md").read_text()
    intro = readme.split("\n\n", 2)[1]  # the paragraph under the title
    rows = []
    for name in names:
        f = facts(name)
        rows.append(f"| [{f['title']}](chapters/{name}.ipynb) | {f['builds_on']} | {f['time']} |")
    guides = "\n".join(f"- [{g.capitalize()}](guides/{g}.md)" for g in GUIDE_ORDER)
    toc = "\n".join(f"guides/{g}" for g in GUIDE_ORDER)
    chapter_toc = "\n".join(f"chapters/{name}" for name in names)
    return (f"# {TITLE}\n\n{intro}\n\n## Guides\n\n{guides}\n\n## Chapters\n\n"
            "| chapter | builds on | time |\n|---|---|---|\n" + "\n".join(rows) + "\n\n"
            f"```{{toctree}}\n:caption: Guides\n:hidden:\n\n{toc}\n```\n\n"
            f"```{{toctree}}\n:caption: Chapters\n:hidden:\n\n{chapter_toc}\n```\n")


CONF = '''# written by autograder/bookkeeping/website.py: the course's website, built offline from executed notebooks
project = {title!r}
author = "the course's authors"
extensions = ["myst_nb"]
exclude_patterns = ["_build"]
html_theme = "sphinx_book_theme"
html_title = {title!r}
html_static_path = ["_static"]
html_js_files = ["site.js"]
html_css_files = ["site.css"]
html_theme_options = {{"show_toc_level": 2, "use_download_button": False, "use_fullscreen_button": False,
                      "search_bar_text": "Search the course…"}}
html_last_updated_fmt = None
html_show_search_summary = False  # a summary fetches each hit's page: a page opened from disk may not fetch
nb_execution_mode = "off"  # the notebooks come executed (make html); the site only reads them
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type", "misc.highlighting_failure"]
# the widgets drawn from their saved state and the maths typeset, by the scripts copied into _static/{vendor}/
nb_ipywidgets_js = {{"{vendor}/{require}": {{}},
                    "{vendor}/{widgets}": {{"data-jupyter-widgets-cdn-only": "true"}}}}
mathjax_path = "{vendor}/{mathjax}"
'''

# html-manager loads its fonts and its own pieces through RequireJS; tell it where they are on any page
# html-manager 1.0 typesets a widget's label with MathJax 2's MathJax.Hub.Queue; the site loads MathJax 3, so the
# page gives it that one call, done by MathJax 3's typesetPromise
SITE_JS = '''// written by autograder/bookkeeping/website.py
if (window.require) {
  window.require.config({baseUrl: document.documentElement.dataset.content_root + "_static/VENDOR/html-manager/dist/"});
}
(function () {
  function hub() {
    var mj = window.MathJax;
    if (mj && !mj.Hub) {
      mj.Hub = {Queue: function () { return mj.typesetPromise ? mj.typesetPromise() : null; }};
    }
  }
  var tries = 0;
  var wait = setInterval(function () {  // until MathJax has loaded (pages without maths never load it)
    hub();
    if ((window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) || ++tries > 500) {
      if (window.MathJax && window.MathJax.startup) { window.MathJax.startup.promise.then(hub); }
      clearInterval(wait);
    }
  }, 20);
})();
'''.replace("VENDOR", VENDOR)


# WCAG 2.1 AA on the site's pages, as on make html's (tests/test_site.py runs axe-core on them): a primary widget
# button's white text on a blue dark enough to read, a visible focus
SITE_CSS = """/* written by autograder/bookkeeping/website.py */
.jupyter-widgets .widget-button.mod-primary, .jupyter-button.mod-primary { background-color: #1565c0; }
:focus-visible { outline: 2px solid #0b57d0; outline-offset: 2px; }
"""

# each slider handle named after its widget's label as it is drawn (ipywidgets draws it without a name), and the
# theme's search button named by the text it shows (its label, "Search", leaves out the shortcut it shows)
NAMES_JS = """
(function () {
  function name(root) {
    root.querySelectorAll('.noUi-handle[role="slider"]:not([aria-label])').forEach(function (handle) {
      var box = handle.closest('.widget-slider, .widget-hslider, .widget-vslider, .jupyter-widgets');
      var label = box && box.querySelector('.widget-label');
      var text = label && label.textContent.trim();
      if (text) handle.setAttribute('aria-label', text);
    });
    root.querySelectorAll('button.search-button__button[aria-label]').forEach(function (button) {
      button.removeAttribute('aria-label');
    });
  }
  new MutationObserver(function () { name(document); })
    .observe(document.documentElement, {childList: true, subtree: true});
  document.addEventListener('DOMContentLoaded', function () { name(document); });
})();
"""


def stage(names: list[str], executed: Path, source: Path) -> Path:
    """The Sphinx project: conf.py, the front page, the guides and the images, the executed chapters and the
    offline scripts, under ``source``."""
    shutil.rmtree(source, ignore_errors=True)
    (source / "chapters").mkdir(parents=True)
    (source / "guides").mkdir()
    (source / "conf.py").write_text(CONF.format(title=TITLE, vendor=VENDOR, require=offline.REQUIRE_JS,
                                                widgets=offline.WIDGETS_JS, mathjax=offline.MATHJAX_JS))
    (source / "index.md").write_text(front_page(names))
    chapter_link = re.compile(r"\]\(\.\./\.\./course/([0-9A-Za-z_]+)/\1\.ipynb\)")
    for guide in GUIDE_ORDER:
        text = (GUIDES / f"{guide}.md").read_text()
        (source / "guides" / f"{guide}.md").write_text(chapter_link.sub(r"](../chapters/\1.ipynb)", text))
    shutil.copytree(IMAGES, source / "images")
    for name in names:
        shutil.copy2(executed / "students" / f"{name}.ipynb", source / "chapters" / f"{name}.ipynb")
    static = source / "_static"
    offline.install(static / VENDOR)
    (static / "site.js").write_text(SITE_JS + NAMES_JS)
    (static / "site.css").write_text(SITE_CSS)
    return source


def stale(names: list[str], executed: Path) -> list[str]:
    """The chapters whose executed copy no longer has the release's cells (the chapter changed since make html)."""
    def cells(path: Path) -> list[str]:
        return [c.source for c in nbformat.read(path, as_version=4).cells]

    return [n for n in names if (executed / "students" / f"{n}.ipynb").is_file()
            and cells(executed / "students" / f"{n}.ipynb") != cells(COURSE / n / f"{n}.ipynb")]


def build(names: list[str], executed: Path = EXECUTED, out: Path = OUT, full: bool = False) -> Path:
    """Execute the chapters make html has not (FAST mode unless ``full``), stage the project, run Sphinx;
    returns the folder with index.html."""
    missing = [n for n in names if not (executed / "students" / f"{n}.ipynb").is_file()]
    if missing:
        from autograder.bookkeeping import render  # the same execution as make html's

        print(f"executing {len(missing)} chapter(s) make html has not ({'full' if full else 'FAST'} mode): "
              + " ".join(missing), flush=True)
        try:
            render.render(missing, executed, fast=not full)
        except render.RenderError as err:  # a chapter that did not execute: the site is not built without it
            raise SiteError(f"{err}\nthe site needs every chapter it lists: fix it, or leave it out with "
                            "--chapter") from None
    for name in stale(names, executed):
        print(f"warning: the executed copy of {name} is older than course/ (its cells differ): the site shows the "
              f"old text; `make html CH={name}` (FAST=1 for FAST mode) executes it again", file=sys.stderr)
    source = stage(names, executed, out.parent / f"{out.name}-source")
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", "auto", str(source), str(out)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SiteError(f"sphinx-build failed:\n{done.stderr[-3000:]}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapter", nargs="*", help="only these chapters (default: all)")
    parser.add_argument("--full", action="store_true", help="execute missing chapters in full mode, not FAST")
    parser.add_argument("--executed", type=Path, default=EXECUTED, help="make html's output folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    known = chapters()
    names = args.chapter or known
    unknown = [name for name in names if name not in known]
    if unknown:
        print(f"no chapter {', '.join(unknown)} under course/ (the chapters: {', '.join(known)})", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        out = build(names, args.executed, args.out, args.full)
    except (SiteError, offline.OfflineError) as err:
        print(err, file=sys.stderr)
        return 1
    print(f"site written to {out / 'index.html'} ({len(names)} chapters, {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
