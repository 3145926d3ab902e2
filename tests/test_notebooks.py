"""Every solution notebook runs top to bottom in FAST mode, and every exercise's hidden tests fail each
planted wrong answer (tests/mutants/<chapter>.py) while passing the reference answer.

One kernel per chapter runs the notebook once; each wrong answer is then defined in that kernel, the
exercise's hidden test cell is run against it, and the reference answer is restored.
"""

from __future__ import annotations

import importlib.util

import pytest
from conftest import CHAPTERS, ROOT, solution_notebook
from kernel import code_cells, grade_id

pytestmark = pytest.mark.notebook

CHECK_ERRORS = {"CheckFailure", "ForbiddenCall"}


def _mutant_module(chapter: str):
    path = ROOT / "tests" / "mutants" / f"{chapter}.py"
    spec = importlib.util.spec_from_file_location(f"mutants_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_mutants(chapter: str) -> dict[str, list[tuple[str, str]]]:
    return _mutant_module(chapter).MUTANTS


def load_visible_catches(chapter: str) -> dict[str, list[str]]:
    """exercise → the planted wrong answers its *visible* test must fail (``VISIBLE`` in the mutant file):
    those a shape-only visible test used to pass."""
    return getattr(_mutant_module(chapter), "VISIBLE", {})


def exercises(chapter: str) -> dict[str, dict[str, str]]:
    """exercise name → {"answer": source, "hidden": source, "visible": source}, read from the solution notebook."""
    found: dict[str, dict[str, str]] = {}
    for cell in code_cells(solution_notebook(chapter)):
        gid = grade_id(cell) or ""
        for role in ("answer", "hidden", "visible"):
            if gid.endswith("_" + role):
                found.setdefault(gid.removesuffix("_" + role), {})[role] = cell.source
    return found


def mutant_cases():
    for chapter in CHAPTERS:
        for exercise, wrongs in load_mutants(chapter).items():
            for what, _ in wrongs:
                yield pytest.param(chapter, exercise, what, id=f"{chapter}-{exercise}-{what}",
                                   marks=pytest.mark.xdist_group(chapter))


@pytest.mark.parametrize("chapter", [pytest.param(c, marks=pytest.mark.xdist_group(c)) for c in CHAPTERS])
def test_solution_runs_top_to_bottom_without_errors_or_stderr(trusted_session, chapter):
    """Every code cell, in order, in the kernel of the chapter's trusted session (the tests that use it run the
    test cells, in the grader: test_reference_answers_pass_every_test_in_the_grader last). The same notebook in
    a student's kernel, test cells included, is run by tests/test_browser.py."""
    session = trusted_session(chapter)
    assert len(session.runs) + len(session.tests) == len(code_cells(solution_notebook(chapter)))
    for cell, run in session.runs:
        where = grade_id(cell) or cell.source.splitlines()[0]
        assert run.ok, f"{chapter}: cell {where!r} raised {run.error}"
        assert not run.stderr.strip(), f"{chapter}: cell {where!r} wrote to stderr:\n{run.stderr}"


@pytest.mark.parametrize("chapter", [pytest.param(c, marks=pytest.mark.xdist_group(c)) for c in CHAPTERS])
def test_every_exercise_has_hidden_tests_and_planted_wrong_answers(chapter):
    found = exercises(chapter)
    mutants = load_mutants(chapter)
    assert found, f"{chapter} has no exercise"
    for name, parts in found.items():
        assert {"answer", "hidden", "visible"} <= parts.keys(), f"{chapter}/{name}: missing {parts.keys()}"
        assert len(mutants.get(name, [])) >= 2, f"{chapter}/{name}: plant at least two wrong answers"
    assert set(mutants) <= set(found), f"mutants for unknown exercises: {set(mutants) - set(found)}"


def _in_session(session, exercise: str, wrong: str, reference: str, *roles: str) -> list:
    """Define the wrong answer in the session's sandboxed kernel, run the exercise's test cells of each of
    ``roles`` ("hidden", "visible") in this process as the grader does, then restore the reference answer.
    Returns the wrong answer's test results, one per role.

    A wrong answer that leaves the kernel broken for the reference would not go unseen: each chapter's
    reference answers pass every test after all its wrong answers (the last test of the chapter's group,
    test_reference_answers_pass_every_test_in_the_grader)."""
    kernel = session.kernel
    try:
        defined = kernel.run_cell(wrong, 120)
        assert defined.ok, f"the wrong answer itself does not run: {defined.error}"
        results = [session.test(f"{exercise}_{role}") for role in roles]
    finally:
        restored = kernel.run_cell(reference, 120)
    assert restored.ok, f"the reference answer could not be restored: {restored.error}"
    return results


def _grading_leaves_out(chapter: str, exercise: str, wrong: str) -> set[int]:
    """The cells grading leaves out of a submission with this one wrong answer (autograder/core/needs.py)."""
    import nbformat

    from autograder.core import needs

    nb = nbformat.read(solution_notebook(chapter), as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == f"{exercise}_answer":
            cell.source = wrong
    cells = needs.release_cells(nb)
    keep = needs.needed([c for _, c in cells])
    return {i for (i, _), k in zip(cells, keep, strict=True) if not k}


def _test_with_wrong_answer(trusted_session, grading_session, chapter: str, exercise: str, what: str, role: str):
    """The wrong answer's ``role`` test, graded twice: in a kernel that ran every cell of the chapter and in one
    that ran only what grading runs (the cells needs.py marks left out). Both must give the same verdict: that
    is the proof that leaving the cells out changes no score. Returns the result with every cell run."""
    parts = exercises(chapter)[exercise]
    wrong = dict(load_mutants(chapter)[exercise])[what]
    graded = grading_session(chapter)
    missing = graded.skipped - _grading_leaves_out(chapter, exercise, wrong)
    assert not missing, f"the wrong answer needs cells grading of the reference leaves out: {sorted(missing)}"
    (every_cell,) = _in_session(trusted_session(chapter), exercise, wrong, parts["answer"], role)
    (only_needed,) = _in_session(graded, exercise, wrong, parts["answer"], role)
    assert every_cell.passed == only_needed.passed, (
        f"{chapter}/{exercise} ({what}): {role} test {'passed' if every_cell.passed else 'failed'} with every cell "
        f"run but {'passed' if only_needed.passed else 'failed'} with the skippable cells left out "
        f"({every_cell.message!r} vs {only_needed.message!r})")
    return every_cell


@pytest.mark.parametrize(("chapter", "exercise", "what"), list(mutant_cases()))
def test_hidden_tests_fail_a_planted_wrong_answer(trusted_session, grading_session, chapter, exercise, what):
    """Graded the way the grader grades: the wrong answer in the sandboxed kernel, the tests in this process."""
    graded = _test_with_wrong_answer(trusted_session, grading_session, chapter, exercise, what, "hidden")
    assert not graded.passed, f"{chapter}/{exercise}: hidden tests PASSED a wrong answer ({what})"
    assert graded.error_type in CHECK_ERRORS, (
        f"{chapter}/{exercise}: hidden tests failed with {graded.error_type}, not a check failure: "
        f"{graded.message}")


def visible_cases():
    for chapter in CHAPTERS:
        for exercise, whats in load_visible_catches(chapter).items():
            for what in whats:
                yield pytest.param(chapter, exercise, what, id=f"{chapter}-{exercise}-visible-{what}",
                                   marks=pytest.mark.xdist_group(chapter))


def test_visible_catches_name_planted_wrong_answers():
    for chapter in CHAPTERS:
        mutants = load_mutants(chapter)
        for exercise, whats in load_visible_catches(chapter).items():
            known = {what for what, _ in mutants.get(exercise, [])}
            assert set(whats) <= known, f"{chapter}/{exercise}: VISIBLE names unknown mutants {set(whats) - known}"


@pytest.mark.parametrize(("chapter", "exercise", "what"), list(visible_cases()))
def test_visible_tests_fail_a_planted_wrong_answer(trusted_session, grading_session, chapter, exercise, what):
    """A visible test compares values, so a wrong answer does not look right to the student who runs it."""
    shown = _test_with_wrong_answer(trusted_session, grading_session, chapter, exercise, what, "visible")
    assert not shown.passed, f"{chapter}/{exercise}: the visible test PASSED a wrong answer ({what})"


@pytest.mark.parametrize("chapter", [pytest.param(c, marks=pytest.mark.xdist_group(c)) for c in CHAPTERS])
def test_reference_answers_pass_every_test_in_the_grader(trusted_session, grading_session, chapter):
    """With every cell run, and with only the cells grading runs (the release's skippable cells left out). Last
    of its chapter's group: it runs after every planted answer was tried and the reference restored."""
    for session in (trusted_session(chapter), grading_session(chapter)):
        failed = {gid: run.message for gid in session.tests if not (run := session.test(gid)).passed}
        assert not failed, (f"{chapter}: tests that fail the reference answers in the grader "
                            f"({len(session.skipped)} cells left out): {failed}")
