"""Widget latency in a real browser: input → new picture on screen, for every control of every widget.

Each chapter's student notebook (reference answers typed in) runs in JupyterLab in headless Chromium in FAST
mode; then every control is changed ``--repeats`` times (a slider a step, a dropdown to another option and
back, a text box a character shorter and back) and the time from the input event to the new picture decoded
and painted is recorded. The budget is 150 ms for widgets driven by the course's own models; a control that
only acts when a button is pressed (a sampler's seed: the time is then a whole generation) and runs with a
downloaded model (SmolLM2) are reported but not held to it.

    .venv/bin/python bench/browser.py [CHAPTER ...] [--repeats 6] [--label before]

Results: bench/results/latest-browser.json (and ``browser-<label>.json`` with ``--label``); naming chapters
measures those again and keeps the other chapters' last results in the file.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import NotebookPage, filled_notebook, lab_in_browser, unavailable  # noqa: E402

BUDGET_MS = 150.0
OUT = ROOT / "bench" / "results"


def chapters() -> list[str]:
    return sorted(p.name for p in (ROOT / "course").iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def held_to_budget(text: str, on_demand: bool) -> bool:
    """Whether a change counts against the budget: not a generation started by a button, not SmolLM2."""
    return not on_demand and "SmolLM2" not in text


def measure(chapter_list: list[str], repeats: int) -> dict:
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "notebooks"
        root.mkdir()
        for chapter in chapter_list:
            filled_notebook(chapter, root)
        with lab_in_browser(root, env={"DLCOURSE_FAST": "1"}) as (lab, browser):
            for chapter in chapter_list:
                page = NotebookPage(browser, lab, f"{chapter}/{chapter}.ipynb")
                try:
                    report = page.run_all(timeout_s=900)
                    if report.errors:
                        results[chapter] = {"error": report.errors}
                        continue
                    rows = []
                    for v, view in enumerate(page.views()):
                        for c, control in enumerate(view["controls"]):
                            demand = page.is_on_demand(v, c)
                            changes = [page.change(v, c) for _ in range(repeats)]
                            ms = [round(x.latency_ms, 1) for x in changes if x.responded]
                            held = [round(x.latency_ms, 1) for x in changes
                                    if x.responded and held_to_budget(x.output_text, demand)]
                            rows.append({
                                "view": view["title"], "control": control, "samples_ms": ms,
                                "missed": repeats - len(ms),
                                "median_ms": round(statistics.median(ms), 1) if ms else None,
                                "median_in_budget_ms": round(statistics.median(held), 1) if held else None,
                                "exempt": "on demand (a generation)" if demand else "SmolLM2" if ms and not held
                                else ""})
                    results[chapter] = {"run_all_s": round(report.seconds, 1), "controls": rows}
                    print(f"{chapter}: {len(rows)} controls measured", flush=True)
                finally:
                    page.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--repeats", type=int, default=6, help="changes per control (even: dropdowns and text "
                        "boxes end where they started)")
    parser.add_argument("--label", default="", help="also write bench/results/browser-<label>.json")
    args = parser.parse_args(argv)
    reason = unavailable()
    if reason:
        print(f"browser latency skipped: {reason}")
        return 0
    start = time.time()
    measured = measure(args.chapters or chapters(), args.repeats)
    results = dict(measured)
    latest = OUT / "latest-browser.json"
    if args.chapters and latest.exists():  # some chapters again: the others keep their last measurement
        results = {**json.loads(latest.read_text())["chapters"], **measured}
    over = []
    for chapter, result in sorted(results.items()):
        print(chapter, f"(Run All {result.get('run_all_s')} s)" if "controls" in result else result,
              "" if chapter in measured else "(earlier measurement)")
        for row in result.get("controls", []):
            median = row["median_in_budget_ms"]
            flag = "  OVER" if median is not None and median > BUDGET_MS else ""
            if flag:
                over.append(f"{chapter} · {row['view']} · {row['control']}: {median:.0f} ms")
            shown = f"{median:7.0f}" if median is not None else f"{row['median_ms'] or float('nan'):7.0f}"
            print(f"  {row['view'][:44]:44} {row['control'][:26]:26} {shown} ms  {row['exempt']}{flag}")
    payload = {"machine": platform.node(), "processor": platform.processor() or platform.machine(),
               "date": time.strftime("%Y-%m-%d %H:%M"), "budget_ms": BUDGET_MS, "repeats": args.repeats,
               "seconds": round(time.time() - start), "measured_now": sorted(measured), "over_budget": over,
               "chapters": dict(sorted(results.items()))}
    OUT.mkdir(exist_ok=True)
    names = ["latest-browser.json"] + ([f"browser-{args.label}.json"] if args.label else [])
    for name in names:
        (OUT / name).write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(over)} controls over the {BUDGET_MS:.0f}-ms budget" + (":\n  " + "\n  ".join(over) if over else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
