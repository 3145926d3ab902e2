"""Class analytics (``autograder/bookkeeping/analytics.py``): the numbers on each chapter's page are the class's own."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime

from autograder.bookkeeping import (
    analytics,  # the repository is on sys.path (see conftest)
    export,
    policy,
)


def _class(tmp_path):
    table = export.Table(chapters={"ch": {"softmax": 2.0, "sgd": 1.0}})
    scores = {"ada": {"softmax": 2.0, "sgd": 1.0}, "bob": {"softmax": 0.0, "sgd": 1.0},
              "cy": {"softmax": 1.0, "sgd": 0.0}, "dee": {"softmax": 0.0, "sgd": 0.0}}
    for sid, got in scores.items():
        table.students[sid] = {"first_name": sid.title(), "last_name": "Student", "email": "", "lms_id": "",
                               "section": ""}
        table.scores[(sid, "ch")] = got
        table.submitted[(sid, "ch")] = datetime(2026, 10, 12 if sid != "cy" else 14, 12, 0, tzinfo=UTC)
    table.students["eve"] = {"first_name": "Eve", "last_name": "", "email": "", "lms_id": "", "section": ""}
    table.review = [{"student": "bob", "chapter": "ch", "exercise": "softmax", "reason": "calls torch.softmax",
                     "status": "open"},
                    {"student": "dee", "chapter": "ch", "exercise": "softmax", "reason": "reads sys.modules",
                     "status": "resolved"}]
    results = tmp_path / "results"
    results.mkdir()
    failing = {"bob": [("softmax_hidden", "softmax", 2, 0, "softmax(x, dim=0): 12 of 20 values differ\n  more")],
               "cy": [("softmax_hidden", "softmax", 2, 1, "softmax(x, dim=0): 3 of 20 values differ"),
                      ("sgd_hidden", "sgd", 1, 0, "SGD step raised RuntimeError: 'mat1' and 'mat2'")],
               "dee": [("softmax_hidden", "softmax", 2, 0, "softmax of a fully masked row: expected NaN"),
                       ("sgd_hidden", "sgd", 1, 0, "SGD step raised RuntimeError: 'x' and 'y'")]}
    for sid, tests in failing.items():
        data = {"student": sid, "chapter": "ch", "tests": [
            {"grade_id": g, "exercise": ex, "points": p, "score": s, "message": m} for g, ex, p, s, m in tests]}
        (results / f"{sid}__ch.json").write_text(json.dumps(data))
    rules = policy.parse({"late": {"grace_minutes": 0, "per_day": 0.5, "unit": "points", "max_penalty": 1.0},
                          "chapters": {"ch": {"deadline": datetime(2026, 10, 13, 0, 0)}}}, ["ch"])
    return table, results, rules


def test_a_chapter_page_counts_what_the_class_did(tmp_path):
    table, results, rules = _class(tmp_path)
    page = analytics.chapter_page(table, "ch", results, rules)
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    # softmax: 2, 0, 1, 0 of 2 points -> mean 0.75, one full mark in four, two zeros; one flag open, one resolved
    assert re.search(r"softmax\s+2\s+0\.75\s+25%\s+50%\s+2\s+1", text), text[:2000]
    assert re.search(r"sgd\s+1\s+0\.50\s+50%\s+50%\s+0\s+0", text)
    assert "4 submission(s) of 5 student(s)" in page
    # the two "values differ" messages are one kind; the two RuntimeErrors are one kind
    assert re.search(r"2\s+softmax_hidden\s+softmax\(x, dim=#\): # of # values differ", text)
    assert re.search(r"2\s+sgd_hidden\s+SGD step raised RuntimeError: '…' and '…'", text)
    # cy handed in 36 hours late: two started days, 0.5 points each (1 → 0)
    assert "cy: 2 day(s) late, −1 points (1 → 0)" in page
    assert "not submitted" in page  # eve's row
    assert page.count("<img ") == 2 and "data:image/png;base64," in page
    assert "softmax: scores: 2 student(s) with 0–0.5 points" in page  # each figure's text alternative
    assert "<script src" not in page and "http" not in page  # nothing fetched


def test_make_grades_writes_a_page_per_chapter(tmp_path):
    table, results, rules = _class(tmp_path)
    written = analytics.write_pages(table, ["ch"], results, tmp_path / "analytics", rules)
    assert [p.name for p in written] == ["ch.html"] and written[0].read_text().startswith("<!doctype html>")


def test_the_instructors_guide_shows_both_pages():
    from conftest import ROOT

    guide = (ROOT / "docs" / "guides" / "instructors.md").read_text()
    for image in ("similarity.png", "similarity-side-by-side.png", "analytics.png"):
        assert f"(../images/{image})" in guide and (ROOT / "docs" / "images" / image).stat().st_size > 10_000
