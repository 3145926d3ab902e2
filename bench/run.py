"""Benchmarks: each solution notebook's wall time in FAST and full mode, and widget latency.

Results are written to bench/results/<machine>.json; they are measurements, not pass/fail tests.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results"


def notebook_seconds(path: Path, fast: bool) -> float:
    nb = nbformat.read(path, as_version=4)
    os.environ["DLCOURSE_FAST"] = "1" if fast else "0"
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=1200, kernel_name="dlcourse",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return time.perf_counter() - start


def widget_ms(repeats: int = 20) -> dict[str, float]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dlcourse import widgets

    logits = [2.0, 1.5, 0.3, -0.5, -1.0, -2.0]
    labels = list("abcdef")
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        fig = widgets.draw_temperature(widgets.temperature_state(logits, 0.1 + i / 10), labels)
        fig.canvas.draw()
        plt.close(fig)
        times.append((time.perf_counter() - start) * 1000)
    return {"softmax_temperature redraw, median ms": round(statistics.median(times), 1)}


def main() -> int:
    results: dict[str, object] = {
        "machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})",
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for fast in (True, False):
            key = f"{path.stem} notebook, {'FAST' if fast else 'full'} mode, s"
            results[key] = round(notebook_seconds(path, fast), 1)
            print(f"{key}: {results[key]}", flush=True)
    results.update(widget_ms())
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / "latest.json"
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print(f"written to {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
