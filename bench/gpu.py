"""`make gpu-check`: every chapter in full mode on a CUDA GPU, and every chapter's reference answers graded with
the student's kernel on the GPU.

    python bench/gpu.py [CHAPTER ...]

Per chapter it records the wall time of the full-mode run, the peak GPU memory the run's kernel allocated, the
cells that raised and what reached stderr, the claims the run showed (:mod:`dlcourse.claims`), and whether the
reference answers passed every test when graded with the kernel on the GPU, in ``bench/results/gpu.json``. On a
machine without CUDA it says so and exits 0 having written nothing: the course's own machines have no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
RESULTS = ROOT / "bench" / "results" / "gpu.json"
PEAK = "GPU-PEAK-BYTES:"
READ_PEAK = ("import torch as _torch\n"
             f"print({PEAK!r}, _torch.cuda.max_memory_allocated() if _torch.cuda.is_available() else -1)")
NO_GPU = ("no CUDA device here (torch.cuda.is_available() is False): make gpu-check measures the chapters on a "
          "machine with an NVIDIA GPU and the CUDA build of torch 2.13.0; nothing was measured or written")


def peak_bytes(nb: nbformat.NotebookNode) -> int | None:
    """The peak GPU memory the :data:`READ_PEAK` cell of an executed notebook printed; None if it never ran or
    found no GPU."""
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "stream" and PEAK in out.get("text", ""):
                value = int(out["text"].split(PEAK, 1)[1].split()[0])
                return value if value >= 0 else None
    return None


def full_mode_on_gpu(chapter: str, timeout: float = 1800, device: str = "cuda") -> dict:
    """The chapter in full mode with its kernel on ``device`` (``DLCOURSE_DEVICE``; the GPU but in the tests):
    seconds, peak GPU memory, errors, stderr and claims (``bench/full_runs.py``'s run and record)."""
    import full_runs

    record, nb = full_runs.full_mode(ROOT / "solutions" / chapter / f"{chapter}.ipynb", {"DLCOURSE_DEVICE": device},
                                     timeout, extra=(READ_PEAK,))  # the peak's cell prints to stdout only
    return {"seconds": record.pop("seconds"), "peak_gpu_mib": _mib(peak_bytes(nb)), **record}


def _mib(value: int | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)


def graded_on_gpu(chapter: str, device: str = "cuda") -> dict:
    """The reference answers graded by the trusted grader, the student's kernel on ``device``: seconds, and every
    test that lost points (none expected)."""
    from autograder.core import grade, sandbox

    os.environ.update({"DLCOURSE_DEVICE": device})
    source = ROOT / "solutions" / chapter / f"{chapter}.ipynb"
    release = ROOT / "course" / chapter / f"{chapter}.ipynb"
    start = time.perf_counter()
    result, _ = grade.grade(release, source, source, student="gpu-check", chapter=chapter,
                            sandbox=sandbox.Sandbox(unsafe=not sandbox.bwrap_available()[0]))
    lost = [f"{t.grade_id}: {t.message}"[:300] for t in result.tests if t.score != t.points]
    return {"seconds": round(time.perf_counter() - start, 1), "error": result.error or "", "tests lost": lost}


def main(argv: list[str] | None = None, cuda: bool | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapters to measure (default: all)")
    args = parser.parse_args(argv)
    import torch

    if not (torch.cuda.is_available() if cuda is None else cuda):
        print(NO_GPU)
        return 0
    chapters = args.chapters or sorted(p.name for p in (ROOT / "solutions").iterdir()
                                       if (p / f"{p.name}.ipynb").exists())
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"chapters": {}}
    results.update({"machine": f"{platform.node()}: {torch.cuda.get_device_name(0)}, torch {torch.__version__}",
                    "date": time.strftime("%Y-%m-%d %H:%M")})
    for chapter in chapters:
        entry = {"full mode": full_mode_on_gpu(chapter), "graded": graded_on_gpu(chapter)}
        results["chapters"][chapter] = entry
        RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")  # after every chapter
        run, graded = entry["full mode"], entry["graded"]
        print(f"{chapter}: full mode {run['seconds']} s, peak {run['peak_gpu_mib']} MiB, {len(run['errors'])} "
              f"error(s); graded in {graded['seconds']} s, {len(graded['tests lost'])} test(s) lost", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
