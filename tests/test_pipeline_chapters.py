"""Every chapter through the instructor's pipeline: the reference answers earn every point and the untouched
release earns none, graded in the sandbox exactly as a class would be, and exported to the grades table.

The reference answers are graded with two threads in the kernel and the grader: float32 results round
differently with another thread count, and a tolerance must hold for both. The one-thread case is every
chapter's grading session (tests/test_notebooks.py: test_reference_answers_pass_every_test_in_the_grader)
and the chapter-00 classes of tests/test_pipeline.py and tests/test_semester.py.

Its own xdist group, so one test worker grades these while the other grades the chapter-00 class of
tests/test_pipeline.py."""

from __future__ import annotations

import csv

import pytest
from conftest import CHAPTERS
from test_pipeline import _run, _save, answers_from_solution, gradebook_scores, submission

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("pipeline_chapters")]


@pytest.fixture(scope="module")
def graded_chapters(tmp_path_factory):
    """Each chapter's reference answers ("full_marks": one at a time, two threads) and untouched release
    ("blank": two at a time, one thread each), autograded once; yields (root, the two autograde outputs,
    {(student, chapter): {grade id: (score, max score)}})."""
    root = tmp_path_factory.mktemp("grading_chapters")
    for chapter in CHAPTERS:
        _save(root, "full_marks", chapter, submission(chapter, answers_from_solution(chapter)))
    full = _run(root, "autograde", timeout=2400, JOBS="1", OMP_NUM_THREADS="2", MKL_NUM_THREADS="2")
    for chapter in CHAPTERS:
        _save(root, "blank", chapter, submission(chapter))
    blank = _run(root, "autograde", "--student", "blank", timeout=2400, JOBS="2")
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        scores = {(student, chapter): gradebook_scores(gb, student, chapter)
                  for student in ("full_marks", "blank") for chapter in CHAPTERS}
    yield root, (full, blank), scores


def test_every_submission_is_graded(graded_chapters):
    _, results, _ = graded_chapters
    for result in results:
        out = result.stdout + result.stderr
        assert result.returncode == 0, out
        assert f"{len(CHAPTERS)} graded, 0 failed" in out, out


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solution_gets_full_marks_with_two_threads(graded_chapters, chapter):
    _, _, scores = graded_chapters
    got = scores["full_marks", chapter]
    lost = {k: v for k, v in got.items() if v[0] != v[1]}
    assert got and not lost, f"{chapter}: points lost by the reference answers with two threads: {lost}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_blank_release_of_every_chapter_gets_zero(graded_chapters, chapter):
    _, _, scores = graded_chapters
    got = scores["blank", chapter]
    autograded = {k: v for k, v in got.items() if not k.endswith("_answer")}
    assert autograded and all(score == 0 for score, _ in autograded.values()), autograded


def test_the_grades_table_adds_up_over_every_chapter(graded_chapters):
    root, _, _ = graded_chapters
    result = _run(root, "grades")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {r["student_id"]: r for r in csv.DictReader((root / "grades.csv").open())}
    possible = rows["(points possible)"]
    for chapter in CHAPTERS:
        assert float(rows["full_marks"][f"{chapter}/total"]) == float(possible[f"{chapter}/total"]) > 0, chapter
        assert float(rows["blank"][f"{chapter}/total"]) == 0, chapter
    assert float(rows["full_marks"]["total"]) == sum(float(possible[f"{ch}/total"]) for ch in CHAPTERS)
    assert float(rows["blank"]["total"]) == 0
