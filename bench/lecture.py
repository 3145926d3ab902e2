"""How soon a lecturer can use the widgets: Run All on a chapter's lecture copy (``make lecture``), in
JupyterLab in headless Chromium, in lecture mode (``DLCOURSE_LECTURE=1``, as ``make lecture`` runs it: FAST
budgets, shipped results, long demos off) unless ``--mode full`` or ``--mode fast`` says otherwise.

Run All queues every cell; a widget drawn early still cannot answer until the kernel has worked through the
cells queued before the control's message. So "usable" is measured, not inferred: as soon as the first view
with a control appears, its first control is moved and the time until its new picture is on screen is taken
(``first_usable_s``, from the Run All). ``last_usable_s`` is when every cell has run (the kernel is free and
every view drawn). The lecture-mode targets are 15 s and 60 s.

On two cores the browser's renderer and the kernel share the CPU, and one Run All differs from the next by a
second or two; each chapter is measured ``--repeat`` times (default 3, the chapters taken in turn) and the
median is reported, with every run kept (``runs``) and the slowest beside it.

    .venv/bin/python bench/lecture.py [CHAPTER ...] [--mode lecture|fast|full] [--projector 1.6] [--repeat 3]

Results: bench/results/lecture.json; naming chapters measures those again and keeps the others' results.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from browser import Lab, NotebookPage, lab_in_browser, unavailable  # noqa: E402

from autograder.bookkeeping import lecture  # noqa: E402

OUT = ROOT / "bench" / "results" / "lecture.json"
TARGETS_S = {"first_usable_s": 15.0, "last_usable_s": 60.0}
MODES = {"lecture": {"DLCOURSE_LECTURE": "1", "DLCOURSE_FAST": ""},
         "fast": {"DLCOURSE_LECTURE": "0", "DLCOURSE_FAST": "1"},
         "full": {"DLCOURSE_LECTURE": "0", "DLCOURSE_FAST": "0"}}


def chapters() -> list[str]:
    return sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


def measure_one(browser, lab: Lab, chapter: str, timeout_s: float = 1800) -> dict:
    page = NotebookPage(browser, lab, f"{chapter}/{chapter}.ipynb", viewport=(1920, 1080))
    try:
        start = time.monotonic()
        page.page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        first_view = first_usable = None
        moved = ""
        while time.monotonic() - start < timeout_s:
            if first_view is None:
                for v, view in enumerate(page.views()):
                    usable = [c for c in range(len(view["controls"])) if not page.is_on_demand(v, c)]
                    drawn = page.page.evaluate(f"!window.__dlcourse.blank(window.__dlcourse.views()[{v}])")
                    if usable and drawn:  # (a first picture arriving is not taken for an answer to the move)
                        first_view = time.monotonic() - start
                        el = page._control(v, usable[0])
                        el.scroll_into_view_if_needed()
                        moved = f"{view['title'] or 'view'} · {view['controls'][usable[0]]}"
                        page._act(el, lambda v=v: page._arm(v))
                        page.page.wait_for_function("window.__dlcourse.state.t1 !== null",
                                                    timeout=(timeout_s - (time.monotonic() - start)) * 1000)
                        first_usable = time.monotonic() - start
                        break
            if page.all_ran():
                break
            page.page.wait_for_timeout(200)
        done = time.monotonic() - start
        cells = page.page.evaluate("window.__dlcourse.cellStates()")
        errors = [f"cell {c['index']}: {e}" for c in cells for e in c["errors"]]
        return {"first_view_s": None if first_view is None else round(first_view, 1),
                "first_usable_s": None if first_usable is None else round(first_usable, 1),
                "control_moved": moved, "last_usable_s": round(done, 1), "views": len(page.views()),
                "errors": errors}
    finally:
        page.close()


def summary(runs: list[dict]) -> dict:
    """One chapter's runs: the median of each time (None when a run never got there), the slowest first use,
    every run's errors, and the runs themselves."""
    import statistics

    def median(key: str) -> float | None:
        values = [r[key] for r in runs]
        return None if None in values else round(statistics.median(values), 1)

    return {"first_view_s": median("first_view_s"), "first_usable_s": median("first_usable_s"),
            "first_usable_slowest_s": max((r["first_usable_s"] for r in runs if r["first_usable_s"] is not None),
                                          default=None),
            "last_usable_s": median("last_usable_s"), "control_moved": runs[0]["control_moved"],
            "views": runs[0]["views"], "errors": sorted({e for r in runs for e in r["errors"]}),
            "runs": [{k: r[k] for k in ("first_usable_s", "last_usable_s")} for r in runs]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--mode", choices=sorted(MODES), default="lecture",
                        help="lecture (as make lecture runs it), fast, or full (every demo trains in full)")
    parser.add_argument("--projector", default="", help="DLCOURSE_PRESENTATION for the kernels (e.g. 1.6)")
    parser.add_argument("--repeat", type=int, default=3, help="Run All this many times per chapter (median)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    reason = unavailable()
    if reason:
        print(f"lecture timings skipped: {reason}")
        return 0
    runs_of: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "lecture"
        for chapter in args.chapters or chapters():
            lecture.prepare(chapter, root)
        env = {**MODES[args.mode], "DLCOURSE_PRESENTATION": args.projector}
        with lab_in_browser(root, env=env) as (lab, browser):
            for _ in range(args.repeat):
                for chapter in args.chapters or chapters():
                    runs_of.setdefault(chapter, []).append(result := measure_one(browser, lab, chapter))
                    lab.shut_down_kernels(f"{chapter}/{chapter}.ipynb")
                    print(chapter, json.dumps(result), flush=True)
    measured = {chapter: summary(runs) for chapter, runs in runs_of.items()}
    mode = {"fast": "FAST"}.get(args.mode, args.mode)
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    runs = old.get(mode, {}).get("chapters", {}) if args.chapters else {}
    old[mode] = {"machine": platform.node(), "date": time.strftime("%Y-%m-%d %H:%M"), "targets_s": TARGETS_S,
                 "projector": args.projector or None, "measured_now": sorted(measured),
                 "chapters": dict(sorted({**runs, **measured}.items()))}
    OUT.write_text(json.dumps(old, indent=1, ensure_ascii=False) + "\n")
    for chapter, r in sorted(old[mode]["chapters"].items()):
        late = [k for k, limit in TARGETS_S.items() if r.get(k) is None or r[k] > limit]
        print(f"{chapter:28} first usable {r['first_usable_s']} s (slowest {r.get('first_usable_slowest_s')} s), "
              f"last {r['last_usable_s']} s"
              + (f"  OVER: {', '.join(late)}" if late else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
