"""The README is the front door (one screen of what the course is, the chapters, the two commands and a link into
each guide); the four guides under docs/guides/ hold everything the README once held, and every link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

GUIDES = ROOT / "docs" / "guides"
GUIDE_NAMES = ("students", "instructors", "lecturers", "maintainers")
# Every heading (and the bold paragraph titles that stood as headings) of the README before it was split into the
# guides: each must still be a heading of the README or of a guide, so nothing a reader looked up is lost.
OLD_HEADINGS = (
    "Deep Learning from Scratch — attention, Transformers and generative models", "Chapters", "Students",
    "Instructors", "Running a class on JupyterHub", "The repository and the commands",
    "Grading by hand: the review path", "Roster, deadlines and LMS export",
    "A term from the LMS's download: a late student, a damaged file, the open review", "Copying: `make similarity`",
    "Where the class struggled: class analytics", "Grading a large class", "Grading on Gradescope",
    "A class on Kubernetes (Zero to JupyterHub)", "Lecturers", "GPU and offline notes", "Accessibility",
    "Troubleshooting", "Repository layout", "FAST mode", "How much the numbers move", "Against public recipes")


def _pages() -> dict[str, str]:
    return {"README.md": (ROOT / "README.md").read_text(),
            **{f"docs/guides/{name}.md": (GUIDES / f"{name}.md").read_text() for name in GUIDE_NAMES}}


def _headings(text: str) -> set[str]:
    marked = {m.group(1).strip() for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}
    bold = {m.group(1).rstrip(".").strip() for m in re.finditer(r"^\*\*([^*]+)\*\*", text, re.MULTILINE)}
    return marked | bold


def test_the_readme_fits_on_a_screen_and_links_every_guide():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150, f"the README has {len(readme.splitlines())} lines: keep it at 150"
    for name in GUIDE_NAMES:
        assert f"](docs/guides/{name}.md)" in readme, f"the README does not link the {name}' guide"
    assert "make setup" in readme and "make test" in readme


def test_every_old_heading_is_still_a_heading_somewhere():
    found = set().union(*(_headings(text) for text in _pages().values()))
    lost = [heading for heading in OLD_HEADINGS if heading not in found]
    assert not lost, f"headings of the former README in no guide: {lost}"


def test_each_guide_has_one_title_and_its_sections():
    for name in GUIDE_NAMES:
        text = (GUIDES / f"{name}.md").read_text()
        titles = re.findall(r"^# .+$", text, re.MULTILINE)
        assert titles == [f"# {name.capitalize()}"], f"{name}.md: its titles are {titles}"
        assert len(text.splitlines()) > 20


@pytest.mark.parametrize("page", ["README.md", *(f"docs/guides/{name}.md" for name in GUIDE_NAMES)])
def test_every_relative_link_resolves(page):
    text = (ROOT / page).read_text()
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)]
    missing = [t for t in targets if t and not re.match(r"[a-z]+:", t)
               and not (ROOT / Path(page).parent / t).exists()]
    assert not missing, f"{page} links to files that are not there: {missing}"


def test_students_can_read_the_guides_where_they_read_the_readme():
    from autograder.bookkeeping import pipeline
    from autograder.platforms import hub

    assert "docs" in pipeline.BUNDLE_ITEMS and "docs" in hub.OPEN  # the student bundle and the hub's open paths
