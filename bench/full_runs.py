"""Every chapter's full mode, three times: under two seeds, on one thread and on two.

A student who presses Run All in full mode must never meet an error, and a number the text quotes from a
trained model is only worth quoting with the spread a re-run shows. For each chapter and each run this records
the wall time, every cell that raised, everything that reached stderr, and every claim the run showed
(:mod:`dlcourse.claims`); then, per claim, the values of the three runs and their spread.

    python bench/full_runs.py [CHAPTER ...] [--runs "seed 1, 1 thread" ...] [--jobs 2]

Results are merged into bench/results/full-runs.json after every run: a chapter and run measured again replace
their old entry, so the chapters can be measured a few at a time (``--runs`` picks the runs). With ``--jobs 2``
the two one-thread runs go side by side, one per core; the two-thread run always goes alone, and on a machine
doing nothing else: OpenMP's two threads wait for each other at every parallel region, so a core taken by other
work slows the run many times over (chapter 02 took more than 17 minutes so, against 5 on one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "full-runs.json"
RUNS = {"seed 0, 1 thread": (0, 1), "seed 1, 1 thread": (1, 1), "seed 0, 2 threads": (0, 2)}  # name: seed, threads
MARK = "CLAIMS-SHOWN:"
READ_BACK = ("import json as _json\nfrom dataclasses import asdict as _asdict\nfrom dlcourse import claims as _claims\n"
             f"print({MARK!r} + _json.dumps([_asdict(_c) for _c in _claims.SHOWN]))")
CELL_TIMEOUT_S = 1800


def chapters() -> list[str]:
    return sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())


def _first_line(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " …"


def read_run(nb: nbformat.NotebookNode) -> dict:
    """What an executed notebook (with :data:`READ_BACK` as its last cell) says: the cells that raised, what
    reached stderr, and the claims shown."""
    errors, stderr, shown = [], [], None
    code = [c for c in nb.cells if c.cell_type == "code"]
    for number, cell in enumerate(code[:-1], 1):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                errors.append(f"code cell {number}: {out.get('ename')}: {_first_line(out.get('evalue', ''))}")
            elif out.get("output_type") == "stream" and out.get("name") == "stderr" and out.get("text", "").strip():
                stderr.append(f"code cell {number}: {_first_line(out['text'])}")
        if cell.get("execution_count") is None and not errors:
            errors.append(f"code cell {number}: never ran")
    for out in code[-1].get("outputs", []) if code else []:
        if out.get("output_type") == "stream" and MARK in out.get("text", ""):
            shown = json.loads(out["text"].split(MARK, 1)[1].strip().splitlines()[0])
    if shown is None:
        errors.append("the claims could not be read back (the kernel stopped before the end)")
    return {"errors": errors, "stderr": stderr, "claims": shown or []}


def full_mode(path: Path, env: dict[str, str], timeout: float = CELL_TIMEOUT_S,
              extra: tuple[str, ...] = ()) -> tuple[dict, nbformat.NotebookNode]:
    """Execute ``path`` in full mode with ``env`` added to this process's environment (the kernel inherits it),
    the cells ``extra`` after the chapter's and :data:`READ_BACK` last: :func:`read_run`'s record with the wall
    time, and the executed notebook. A cell that raises is recorded and the run goes on to the end."""
    from autograder.bookkeeping.kernels import SteadyNotebookClient, UnixSocketKernelManager

    os.environ.update({"DLCOURSE_FAST": "0", **env})
    nb = nbformat.read(path, as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(source) for source in (*extra, READ_BACK)]
    start = time.perf_counter()
    failure = None
    try:
        SteadyNotebookClient(nb, timeout=timeout, kernel_name="dlcourse", allow_errors=True,
                             kernel_manager_class=UnixSocketKernelManager,
                             resources={"metadata": {"path": str(path.parent)}}).execute()
    except Exception as err:  # a cell past its timeout or a dead kernel: recorded, never lost
        failure = f"{type(err).__name__}: {_first_line(str(err))}"
    record = {"seconds": round(time.perf_counter() - start, 1), **read_run(nb)}
    if failure:
        record["errors"].append(failure)
    return record, nb


def run_one(path: Path, seed: int, threads: int, timeout: float = CELL_TIMEOUT_S) -> dict:
    """``path`` in full mode under seed shift ``seed`` on ``threads`` threads (:func:`full_mode`'s record)."""
    return full_mode(path, {"DLCOURSE_SEED": str(seed), "OMP_NUM_THREADS": str(threads),
                            "MKL_NUM_THREADS": str(threads)}, timeout)[0]


def spread(chapter_runs: dict[str, dict]) -> dict[str, dict]:
    """Per claim (``what``, numbered when a chapter shows the same name twice): the text's number, each run's
    value (what the run measured; the shown value where it measured nothing), and max − min."""
    table: dict[str, dict] = {}
    for run, record in chapter_runs.items():
        seen: dict[str, int] = {}
        for c in record.get("claims", []):
            seen[c["what"]] = seen.get(c["what"], 0) + 1
            key = c["what"] + (f" #{seen[c['what']]}" if seen[c["what"]] > 1 else "")
            entry = table.setdefault(key, {"stated": c["stated"], "tolerance": c["tolerance"], "values": {}})
            entry["values"][run] = c["measured"] if c["measured"] is not None else c["value"]
    for entry in table.values():
        values = [v for v in entry["values"].values() if v is not None]
        entry["min"], entry["max"] = (min(values), max(values)) if values else (None, None)
        entry["spread"] = round(max(values) - min(values), 6) if values else None
        entry["median"] = statistics.median(values) if values else None
    return table


def _value(value: float, stated: str) -> str:
    from dlcourse import claims

    return claims._show(value, stated).lstrip("+")


def spread_table(results: dict) -> str:
    """Markdown: per chapter, every claim whose full-mode runs gave different values (the text's number, the
    runs' range), and how many gave the same value in every run; what the Maintainers' guide shows under "How
    much the numbers move"."""
    lines = ["| chapter | claim | the text | full-mode runs: lowest – highest | runs |",
             "|---|---|---|---|---|"]
    steady = []
    for chapter, entry in sorted(results["chapters"].items()):
        table = entry.get("claims", {})
        same = 0
        for what, row in table.items():
            values = [v for v in row["values"].values() if v is not None]
            if len(values) < 2:
                continue
            if row["spread"] == 0 or _value(row["min"], row["stated"]) == _value(row["max"], row["stated"]):
                same += 1
                continue
            lines.append(f"| {chapter[:2]} | {what} | {row['stated']} | {_value(row['min'], row['stated'])} – "
                         f"{_value(row['max'], row['stated'])} | {len(values)} |")
        if same:
            steady.append(f"{chapter[:2]}: {same}")
    footer = ("Claims that printed the same value in every run (counts, closed forms, shipped models, and results "
              "that did not move at the text's precision): " + ", ".join(steady) + ".") if steady else ""
    return "\n".join(lines) + ("\n\n" + footer if footer else "") + "\n"


def _child(chapter: str, run: str, out: Path) -> subprocess.Popen:
    cmd = [sys.executable, __file__, "--one", chapter, run, "--out", str(out)]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def measure(chapter: str, run: str) -> dict:
    """One run in a process of its own (its environment is the run's), its record or what stopped it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        child = _child(chapter, run, out)
        log, _ = child.communicate()
        if out.exists():
            return json.loads(out.read_text())
        return {"seconds": None, "errors": [f"the run did not finish: {_first_line(log[-2000:], 2000)}"],
                "stderr": [], "claims": []}


def save(results: dict) -> None:
    for entry in results["chapters"].values():
        entry["claims"] = spread(entry["runs"])
    results["clean runs"] = sum(not r["errors"] for e in results["chapters"].values() for r in e["runs"].values())
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(RESULTS)  # a run stopped half-way never leaves a broken file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapters to run (default: all)")
    parser.add_argument("--runs", nargs="*", default=list(RUNS), choices=list(RUNS), help="which runs")
    parser.add_argument("--jobs", type=int, default=2, choices=(1, 2), help="one-thread runs side by side")
    parser.add_argument("--table", action="store_true", help="print the claims' spread as Markdown, run nothing")
    parser.add_argument("--one", nargs=2, metavar=("CHAPTER", "RUN"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # a child: one run, its record to --out
        chapter, run = args.one
        seed, threads = RUNS[run]
        record = run_one(ROOT / "solutions" / chapter / f"{chapter}.ipynb", seed, threads)
        args.out.write_text(json.dumps(record))
        return 0
    if args.table:
        print(spread_table(json.loads(RESULTS.read_text())), end="")
        return 0
    unknown = set(args.chapters) - set(chapters())
    if unknown:
        parser.error(f"no such chapter: {', '.join(sorted(unknown))}")
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"chapters": {}}
    results.update({"machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})",
                    "runs": {name: {"seed shift": s, "threads": t} for name, (s, t) in RUNS.items()}})
    for chapter in args.chapters or chapters():
        entry = results["chapters"].setdefault(chapter, {"runs": {}})
        single = [r for r in args.runs if RUNS[r][1] == 1]
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # one-thread runs, one per core
            for run, record in zip(single, pool.map(measure, [chapter] * len(single), single), strict=True):
                entry["runs"][run] = {**record, "date": time.strftime("%Y-%m-%d %H:%M"),
                                      "beside": "another one-thread run" if args.jobs == 2 and len(single) > 1 else ""}
        save(results)  # after every run: a long measurement stopped half-way keeps what it measured
        for run in [r for r in args.runs if RUNS[r][1] > 1]:  # alone: two threads beside other work crawl
            entry["runs"][run] = {**measure(chapter, run), "date": time.strftime("%Y-%m-%d %H:%M"), "beside": ""}
            save(results)
        for run, record in entry["runs"].items():
            print(f"{chapter} · {run}: {record['seconds']} s, {len(record['errors'])} error(s), "
                  f"{len(record['stderr'])} stderr output(s), {len(record['claims'])} claim(s)", flush=True)
            for line in record["errors"]:
                print(f"   {line}", flush=True)
    print(f"{results['clean runs']} clean run(s); written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
