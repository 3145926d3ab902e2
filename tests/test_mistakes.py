"""The mistakes students make, and whether the notebook shows them before the grade does.

``tests/mistakes/<chapter>.py`` is a catalogue of typical student mistakes, at least six per exercise and
none of them one of the planted wrong answers of ``tests/mutants/`` (those prove the hidden tests; these are
what a student who read the text too quickly writes). For each one:

* the exercise's **hidden** tests fail it with a check failure (it never earns the points);
* its **visible** test fails it too, so the student sees the mistake in the notebook, unless the catalogue
  lists it in ``PASSES_VISIBLE`` with the reason that is acceptable; and a listed one must really pass the
  visible test (the list never goes stale);
* at most 10 % of a chapter's catalogue may pass the visible tests.

And no visible test contains its exercise's solution: a student must not be able to read the answer off
the test. ``build/mistakes/<chapter>.md`` lists the mistakes only the grade reports, and why;
``build/mistakes/<chapter>-messages.md`` what the visible tests told each mistake, for a reader to judge.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import textwrap

import pytest
from conftest import CHAPTERS, ROOT
from test_notebooks import CHECK_ERRORS, _in_session, exercises, load_mutants

pytestmark = pytest.mark.notebook

MIN_PER_EXERCISE = 6
MAX_PASSING_VISIBLE = 0.10
REPORT = ROOT / "build" / "mistakes"


def _catalogue(chapter: str):
    path = ROOT / "tests" / "mistakes" / f"{chapter}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"mistakes_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_mistakes(chapter: str) -> dict[str, list[tuple[str, str]]]:
    module = _catalogue(chapter)
    return module.MISTAKES if module else {}


def passes_visible(chapter: str) -> dict[tuple[str, str], str]:
    """(exercise, mistake) → why it is acceptable that the visible test passes it."""
    module = _catalogue(chapter)
    return getattr(module, "PASSES_VISIBLE", {}) if module else {}


def _shape(source: str) -> str:
    """The code's syntax tree without names of locals' formatting: two answers that differ only in layout or
    comments compare equal."""
    return ast.dump(ast.parse(source.strip()))


class _Anonymous(ast.NodeTransformer):
    """Every name and number becomes ``_`` (and ``-_`` becomes ``_``): the expression's form, whatever the
    test calls its variables and whichever sizes it uses."""

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id="_", ctx=ast.Load()), node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            return node
        return ast.copy_location(ast.Name(id="_", ctx=ast.Load()), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        return node.operand if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Name) else node


LEAK_WEIGHT = 4  # operations (calls, attributes, arithmetic, slices) an expression needs to count as a solution


def _forms(source: str) -> dict[str, str]:
    """form → code of every expression in ``source`` with at least LEAK_WEIGHT operations in it."""
    tree = _Anonymous().visit(ast.parse(textwrap.dedent(source)))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and not isinstance(node, ast.Lambda):
            weight = sum(1 for sub in ast.walk(node) if isinstance(sub, ast.expr) and not isinstance(sub, ast.Name))
            if weight >= LEAK_WEIGHT:
                found[ast.dump(node)] = ast.unparse(node)
    return found


def solution_in(answer: str, test: str) -> list[str]:
    """The solution's expressions (between BEGIN and END SOLUTION) that ``test`` contains in the same form,
    whatever the names and numbers: the test shows the student the answer."""
    parts = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", answer, re.S)
    solution = _forms("\n".join(textwrap.dedent(part) for part in parts))
    shown = _forms(test)
    return sorted(solution[form] for form in set(solution) & set(shown))


def mistake_cases():
    for chapter in CHAPTERS:
        for exercise, wrongs in load_mistakes(chapter).items():
            for what, _ in wrongs:
                yield pytest.param(chapter, exercise, what, id=f"{chapter}-{exercise}-{what}",
                                   marks=pytest.mark.xdist_group(chapter))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_catalogue_covers_every_exercise_with_its_own_mistakes(chapter):
    found = exercises(chapter)
    mistakes = load_mistakes(chapter)
    assert mistakes, f"{chapter}: no catalogue of typical mistakes (tests/mistakes/{chapter}.py)"
    assert set(mistakes) == set(found), (f"{chapter}: exercises without a catalogue {set(found) - set(mistakes)}, "
                                         f"catalogues of unknown exercises {set(mistakes) - set(found)}")
    planted = {_shape(src) for wrongs in load_mutants(chapter).values() for _, src in wrongs}
    for exercise, wrongs in mistakes.items():
        names = [what for what, _ in wrongs]
        assert len(names) >= MIN_PER_EXERCISE, f"{chapter}/{exercise}: {len(names)} mistakes, at least 6 wanted"
        assert len(set(names)) == len(names), f"{chapter}/{exercise}: two mistakes share a name"
        reference = _shape(found[exercise]["answer"].replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""))
        for what, source in wrongs:
            shape = _shape(source)
            assert shape != reference, f"{chapter}/{exercise} ({what}): this is the reference answer"
            assert shape not in planted, f"{chapter}/{exercise} ({what}): already a planted answer in tests/mutants/"
    listed = passes_visible(chapter)
    known = {(exercise, what) for exercise, wrongs in mistakes.items() for what, _ in wrongs}
    assert set(listed) <= known, f"{chapter}: PASSES_VISIBLE names unknown mistakes {set(listed) - known}"
    assert all(reason.strip() for reason in listed.values()), f"{chapter}: every PASSES_VISIBLE entry needs a reason"
    total = len(known)
    assert len(listed) <= MAX_PASSING_VISIBLE * total, (
        f"{chapter}: {len(listed)} of {total} typical mistakes pass the visible tests; at most "
        f"{MAX_PASSING_VISIBLE:.0%} may")
    _write_report(chapter, total, listed)


def _write_report(chapter: str, total: int, listed: dict[tuple[str, str], str]) -> None:
    """``build/mistakes/<chapter>.md``: how many typical mistakes the visible tests show, and the others with
    the reason (one file per chapter: the suite's workers write them side by side)."""
    lines = [f"# {chapter}: typical mistakes and the visible tests", "",
             f"{total - len(listed)} of {total} typical mistakes fail a visible test."]
    if listed:
        lines += ["", "Only the grade reports:", ""]
        lines += [f"- {exercise}: {what} — {reason}" for (exercise, what), reason in sorted(listed.items())]
    REPORT.mkdir(parents=True, exist_ok=True)
    (REPORT / f"{chapter}.md").write_text("\n".join(lines) + "\n")


def _record_message(chapter: str, exercise: str, what: str, shown) -> None:
    """Keep what the visible test told this mistake, and rewrite ``build/mistakes/<chapter>-messages.md`` from every
    message kept so far: a reader judges the feedback by reading it (the chapter's cases run on one worker)."""
    folder = REPORT / "messages" / chapter
    folder.mkdir(parents=True, exist_ok=True)
    said = "(the visible test passes)" if shown.passed else (shown.message or "").strip()
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{exercise}-{what}").strip("-")[:120]
    partial = folder / f".{slug}.{os.getpid()}.part"  # written whole, then renamed: a reader never meets half a file
    partial.write_text(json.dumps({"exercise": exercise, "mistake": what, "said": said}))
    os.replace(partial, folder / f"{slug}.json")
    rows = sorted((json.loads(f.read_text()) for f in folder.glob("*.json")),
                  key=lambda r: (r["exercise"], r["mistake"]))
    lines = [f"# {chapter}: what the visible tests tell each typical mistake", ""]
    for row in rows:
        lines += [f"- **{row['exercise']} / {row['mistake']}**", "", "  ```",
                  *("  " + line for line in row["said"].splitlines()[:8]), "  ```", ""]
    (REPORT / f"{chapter}-messages.md").write_text("\n".join(lines))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_visible_test_contains_its_solution(chapter):
    leaks = [f"{exercise}: {form}" for exercise, parts in exercises(chapter).items()
             for form in solution_in(parts["answer"], parts["visible"])]
    assert not leaks, (f"{chapter}: visible tests that contain the solution (names and numbers aside):\n"
                       + "\n".join(leaks))


def test_a_solution_is_found_in_a_test_under_other_names_and_numbers():
    answer = ("def reparameterize(mu, logvar, eps):\n    ### BEGIN SOLUTION\n"
              "    return mu + torch.exp(0.5 * logvar) * eps  # z\n    ### END SOLUTION\n")
    leaking = "checks.compare(reparameterize, lambda m, lv, e: m + torch.exp(lv / 2) * e)"
    assert solution_in(answer, leaking) == []  # lv / 2 is another form: not flagged
    leaking = "checks.compare(reparameterize, lambda m, lv, e: m + torch.exp(0.25 * lv) * e)"
    assert solution_in(answer, leaking) == ["_ + _.exp(_ * _) * _", "_.exp(_ * _) * _"]
    assert solution_in(answer, "checks.assert_close(reparameterize(mu, lv, e), torch.tensor([0.5, -1.0]))") == []


def try_mistake(session, chapter: str, exercise: str, wrong: str):
    """Define ``wrong`` as the exercise's answer in the session's sandboxed kernel, run the visible and the hidden
    tests in the grader, restore the reference answer; (visible result, hidden result)."""
    reference = exercises(chapter)[exercise]["answer"]
    shown, graded = _in_session(session, exercise, wrong, reference, "visible", "hidden")
    return shown, graded


@pytest.mark.parametrize(("chapter", "exercise", "what"), list(mistake_cases()))
def test_a_typical_mistake_fails_the_hidden_tests_and_shows_in_the_visible_ones(grading_session, chapter, exercise,
                                                                               what):
    """Graded as the grader grades: the mistake in the sandboxed kernel, the tests in this process, the cells
    grading leaves out left out."""
    wrong = dict(load_mistakes(chapter)[exercise])[what]
    shown, graded = try_mistake(grading_session(chapter), chapter, exercise, wrong)
    assert not graded.passed, f"{chapter}/{exercise}: the hidden tests PASSED a typical mistake ({what})"
    assert graded.error_type in CHECK_ERRORS, (
        f"{chapter}/{exercise} ({what}): the hidden tests failed with {graded.error_type}, not a check failure: "
        f"{graded.message}")
    _record_message(chapter, exercise, what, shown)
    reason = passes_visible(chapter).get((exercise, what))
    if reason is None:
        assert not shown.passed, (f"{chapter}/{exercise}: the visible test PASSED a typical mistake ({what}); "
                                  "catch it, or list it in PASSES_VISIBLE with the reason")
    else:
        assert shown.passed, (f"{chapter}/{exercise} ({what}) is listed as passing the visible test, but it fails "
                              f"it: {shown.message}")


def main(argv: list[str]) -> None:
    """``python tests/test_mistakes.py CHAPTER [EXERCISE ...]``: every catalogued mistake of the chapter (or of
    those exercises) against the visible and the hidden tests, one line each, in one kernel."""
    from conftest import TrustedSession

    chapter, only = argv[0], set(argv[1:])
    session = TrustedSession(chapter, skip=True)
    try:
        listed = passes_visible(chapter)
        for exercise, wrongs in load_mistakes(chapter).items():
            if only and exercise not in only:
                continue
            for what, wrong in wrongs:
                try:
                    shown, graded = try_mistake(session, chapter, exercise, wrong)
                except AssertionError as error:
                    print(f"BROKEN  {exercise} / {what}: {error}")
                    continue
                ok = (not graded.passed and graded.error_type in CHECK_ERRORS
                      and shown.passed == ((exercise, what) in listed))
                seen = "PASSED" if shown.passed else "failed: " + (shown.message or "")[:300]
                hidden = "PASSED" if graded.passed else f"{graded.error_type}: {(graded.message or '')[:300]}"
                verdict = "ok     " if ok else "PROBLEM"
                print(f"{verdict} {exercise} / {what}\n    visible: {seen}\n    hidden:  {hidden}")
    finally:
        session.kernel.close()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])


def test_the_students_guide_counts_the_catalogue_as_it_is():
    total = sum(len(wrongs) for chapter in CHAPTERS for wrongs in load_mistakes(chapter).values())
    guide = (ROOT / "docs" / "guides" / "students.md").read_text()
    said = re.search(r"Every one of the\s+([\d,]+)\s+typical mistakes", guide)
    assert said, "the Students' guide no longer says how many typical mistakes the catalogue holds"
    assert int(said.group(1).replace(",", "")) == total, (f"the Students' guide says {said.group(1)}, the catalogue "
                                                         f"holds {total}")
