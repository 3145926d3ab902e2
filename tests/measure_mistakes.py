"""Measure a catalogue of mistakes kept outside the repository: how many the visible tests show, and with what.

    python tests/measure_mistakes.py DIR [CHAPTER ...] [--report FILE.md] [--json FILE.json]

``DIR/<chapter>.py`` holds ``MISTAKES`` in the form of ``tests/mistakes/`` (exercise → [(the mistake, the answer
cell as written)]). Each mistake is graded as ``tests/test_mistakes.py`` grades the course's own catalogue (the
wrong answer in the sandboxed kernel, the visible and hidden tests in the grader). Printed: per chapter, the
share caught by the visible tests and by visible and hidden together. The report lists, per mistake, the first
lines of the visible message a student would read — never the mistake's code, so a catalogue written to test
the course can be measured without being read.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import CHAPTERS, TrustedSession  # noqa: E402
from test_mistakes import try_mistake  # noqa: E402


def _load(path: Path) -> dict[str, list[tuple[str, str]]]:
    spec = importlib.util.spec_from_file_location(f"outside_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MISTAKES


def _first_lines(message: str | None, lines: int = 4, width: int = 400) -> str:
    text = "\n".join((message or "").strip().splitlines()[:lines])
    return text if len(text) <= width else text[:width] + " …"


def measure(chapter: str, mistakes: dict[str, list[tuple[str, str]]]) -> list[dict]:
    """Each mistake's verdicts: visible caught, hidden caught, the messages (or why it could not be graded)."""
    rows = []
    session = TrustedSession(chapter, skip=True)
    try:
        for exercise, wrongs in mistakes.items():
            for what, wrong in wrongs:
                row = {"exercise": exercise, "mistake": what}
                try:
                    shown, graded = try_mistake(session, chapter, exercise, wrong)
                except AssertionError as error:  # it does not even run: the student sees that in the answer cell
                    row.update(broken=_first_lines(str(error), 2), visible=True, hidden=True)
                else:
                    row.update(visible=not shown.passed, hidden=not graded.passed,
                               visible_message=_first_lines(shown.message), hidden_kind=graded.error_type)
                rows.append(row)
    finally:
        session.kernel.close()
    return rows


def summary(chapter: str, rows: list[dict]) -> str:
    n = len(rows)
    shown = sum(r["visible"] for r in rows)
    either = sum(r["visible"] or r["hidden"] for r in rows)
    broken = sum("broken" in r for r in rows)
    return (f"{chapter}: {n} mistakes, {shown} shown by the visible tests ({100 * shown / max(n, 1):.0f} %), "
            f"{either} by visible or hidden ({100 * either / max(n, 1):.0f} %)" + (f", {broken} do not run" if broken
                                                                                   else ""))


def report(results: dict[str, list[dict]]) -> str:
    lines = ["# Mistakes written outside the repository, against the visible tests", ""]
    for chapter, rows in results.items():
        lines += [f"## {summary(chapter, rows)}", ""]
        for r in rows:
            if "broken" in r:
                verdict, said = "does not run", r["broken"]
            else:
                verdict = ("shown" if r["visible"] else "NOT SHOWN") + (", graded" if r["hidden"] else ", NOT GRADED")
                said = r.get("visible_message") or "(the visible tests pass)"
            lines += [f"- **{r['exercise']} / {r['mistake']}** — {verdict}", "", "  ```",
                      *("  " + x for x in said.splitlines()), "  ```", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--report", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = {}
    for chapter in args.chapters or CHAPTERS:
        path = args.folder / f"{chapter}.py"
        if not path.exists():
            continue
        results[chapter] = measure(chapter, _load(path))
        print(summary(chapter, results[chapter]), flush=True)
    if args.report:
        args.report.write_text(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
