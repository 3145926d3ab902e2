"""Benchmarks of grading a class: throughput with JOBS=1 and JOBS=N, a mixed class graded in parallel against
the same class graded serially (nothing lost, duplicated or scored differently), memory per worker, and the
projection for 300 students × 11 chapters.

    python bench/grading.py [--n 40] [--mixed 200] [--jobs 2]

Writes bench/results/grading.json. Measurements, not pass/fail tests (except that a lost, duplicated or
differently scored submission is reported as such).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
OUT = ROOT / "bench" / "results"

from test_pipeline import _mutants, _save, answers_from_solution, submission  # noqa: E402

HANG = "\nimport time\nwhile True:\n    time.sleep(0.05)"
HOARD = "\n_hoard = [torch.ones(2 ** 27) for _ in range(400)]"  # past the sandbox's memory limit


def chapters() -> list[str]:
    return sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


def make_class(root: Path, n: int, mixed: bool, seed: int = 0) -> dict[str, str]:
    """``n`` submissions under root/submitted; chapter 00 only, or mixed chapters with wrong, hanging and
    memory-hungry answers among them. Returns student -> what was submitted."""
    rng = random.Random(seed)
    kinds = {}
    for i in range(n):
        chapter = rng.choice(chapters()) if mixed else "00_welcome"
        answers = answers_from_solution(chapter)
        answer_ids = sorted(answers)
        kind = rng.choices(["right", "wrong", "hangs", "crashes"], [80, 14, 3, 3])[0] if mixed else "right"
        if kind == "wrong":
            mutants = _mutants(chapter)
            exercise = rng.choice(sorted(mutants))
            answers[f"{exercise}_answer"] = rng.choice(mutants[exercise])[1]
        elif kind in ("hangs", "crashes"):
            victim = rng.choice(answer_ids)
            answers[victim] += HANG if kind == "hangs" else HOARD
        student = f"s{i:03d}_{kind}"
        _save(root, student, chapter, submission(chapter, answers))
        kinds[student] = f"{chapter} {kind}"
    return kinds


def sync(root: Path) -> None:
    """Record the chapters in the class's gradebook, as the first ``make autograde`` after a release does."""
    env = dict(os.environ, DLCOURSE_GRADING_DIR=str(root))
    subprocess.run([sys.executable, "-c", "from autograder.bookkeeping import pipeline; pipeline.sync_gradebook()"],
                   env=env, check=True, cwd=ROOT, capture_output=True)


def grade_class(root: Path, jobs: int, scheduler: str | None = None, cell_timeout: int = 120) -> dict:
    """Run `pipeline.py autograde --force` over the class; wall time, scores and the gradebook's row count."""
    env = dict(os.environ, DLCOURSE_GRADING_DIR=str(root), DLCOURSE_CELL_TIMEOUT=str(cell_timeout))
    cmd = [sys.executable, str(ROOT / "autograder" / "bookkeeping" / "pipeline.py"), "autograde", "--force", "--jobs",
           str(jobs)]
    if scheduler:
        cmd += ["--scheduler", scheduler]
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    return {**collect(root), "seconds": seconds, "returncode": done.returncode,
            "tail": done.stdout[-400:] + done.stderr[-400:]}


def collect(root: Path) -> dict:
    """What a grading run left under ``root``: scores per (student, chapter) from the results JSON, the
    gradebook's submission rows, failures, memory peaks and the mean seconds per chapter."""
    results = [json.loads(p.read_text()) for p in (root / "results").glob("*.json")]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        rows = sum(len(gb.find_student(s.id).submissions) for s in gb.students)
    return {"scores": {(r["student"], r["chapter"]): sorted((t["grade_id"], t["score"]) for t in r["tests"])
                       for r in results},
            "errors": [r["student"] for r in results if r.get("error")], "gradebook_rows": rows,
            "grader_peak_mb": max((r.get("grader_peak_mb", 0) for r in results), default=0),
            "kernel_peak_mb": max((r.get("kernel_peak_mb", 0) for r in results), default=0),
            "seconds_by_chapter": _mean_seconds(results)}


def _mean_seconds(results: list[dict]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for r in results:
        if not r.get("error") and r.get("seconds"):
            by.setdefault(r["chapter"], []).append(r["seconds"])
    return {ch: round(sum(v) / len(v), 1) for ch, v in sorted(by.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=40, help="chapter-00 submissions for the throughput run")
    parser.add_argument("--mixed", type=int, default=200, help="mixed submissions for the consistency run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--per-chapter", type=int, default=1, help="0: skip timing each chapter alone")
    parser.add_argument("--sample", type=int, default=4,
                        help="right submissions of every chapter graded together with JOBS=N, for the projection")
    args = parser.parse_args()
    out: dict[str, object] = {"cores": os.cpu_count(), "jobs": args.jobs, "n": args.n,
                              "date": time.strftime("%Y-%m-%d")}
    previous = json.loads((OUT / "grading.json").read_text()) if (OUT / "grading.json").exists() else {}
    if not args.n:  # keep the throughput measured last time
        if "speed-up" not in previous:
            parser.error("--n 0 reuses the last throughput run, and bench/results/grading.json has none")
        kept = ("chapter-00", "speed-up", "same scores", "grader process peak", "kernel peak (chapter 00)")
        out.update({k: v for k, v in previous.items() if k == "n" or any(word in k for word in kept)})
        out["throughput measured on"] = previous.get("throughput measured on", previous.get("date"))
    if not args.mixed:  # keep the mixed class graded last time
        out.update({k: v for k, v in previous.items() if "mixed" in k or k.startswith("mean seconds")})
    alone = "one right submission per chapter, graded alone"
    if not args.per_chapter and alone in previous:
        out[alone] = previous[alone]
    with tempfile.TemporaryDirectory(prefix="dlcourse-bench-") as tmp:
        if args.n:
            throughput(Path(tmp) / "same", args.n, args.jobs, out)
        if args.mixed:
            mixed = Path(tmp) / "mixed"
            kinds = make_class(mixed, args.mixed, mixed=True)
            copy = Path(tmp) / "mixed-serial"
            shutil.copytree(mixed / "submitted", copy / "submitted")
            many = grade_class(mixed, args.jobs)
            one = grade_class(copy, 1)
            out.update(mixed_report(kinds, many, one, args.jobs))
            out["mixed: scores still differing when re-graded alone"] = regrade_alone(
                mixed, copy, out["mixed: submissions whose scores differ"], Path(tmp) / "again")
        if args.per_chapter:
            out["one right submission per chapter, graded alone"] = per_chapter(Path(tmp) / "each")
        if args.sample:
            out.update(class_sample(Path(tmp) / "sample", args.sample, args.jobs))
    out["projection, 300 students x 11 chapters"] = projection(out)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "grading.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


def mixed_report(kinds: dict[str, str], many: dict, one: dict, jobs: int) -> dict[str, object]:
    """The mixed class graded with JOBS=jobs (``many``) against serially (``one``): nothing lost, nothing
    written twice, the same scores."""
    n = len(kinds)
    return {
        f"{n} mixed submissions": {k: sum(1 for v in kinds.values() if v.endswith(k))
                                   for k in ("right", "wrong", "hangs", "crashes")},
        f"{n} mixed, JOBS={jobs}, s": round(many["seconds"], 1),
        f"{n} mixed, JOBS=1, s": round(one["seconds"], 1),
        "mixed: results recorded (parallel, serial)": [len(many["scores"]), len(one["scores"])],
        "mixed: gradebook submissions (parallel, serial)": [many["gradebook_rows"], one["gradebook_rows"]],
        "mixed: failed submissions": many["errors"],
        "mixed: same scores as serial": many["scores"] == one["scores"],
        "mixed: submissions whose scores differ": sorted(
            k[0] for k in many["scores"] if many["scores"][k] != one["scores"].get(k)),
        "mixed: kernel peak (any chapter), MB": max(many["kernel_peak_mb"], one["kernel_peak_mb"]),
        "mean seconds per submission, by chapter (serial)": one["seconds_by_chapter"],
    }


def regrade_alone(parallel: Path, serial: Path, students: list[str], root: Path) -> list[str]:
    """Re-grade, one at a time on an otherwise idle grader, the submissions whose parallel and serial scores
    differed: a difference that stays is a grading bug; one that goes was a cell limit reached under load."""
    if not students:
        return []
    for student in students:
        shutil.copytree(serial / "submitted" / student, root / "submitted" / student)
    again = grade_class(root, 1)["scores"]
    first = collect(parallel)["scores"]
    return sorted(k[0] for k in again if again[k] != first.get(k))


def per_chapter(root: Path) -> dict[str, dict[str, float]]:
    """The reference answers of each chapter graded alone (JOBS=1): seconds (and where they went: kernel start,
    cells, tests), and the kernel's memory peak."""
    for chapter in chapters():
        _save(root, f"ref_{chapter[:2]}", chapter, submission(chapter, answers_from_solution(chapter)))
    grade_class(root, 1)
    out = {}
    for path in sorted((root / "results").glob("*.json")):
        r = json.loads(path.read_text())
        score, points = sum(t["score"] for t in r["tests"]), sum(t["points"] for t in r["tests"])
        out[r["chapter"]] = {"s": round(r["seconds"], 1), "kernel peak, MB": r.get("kernel_peak_mb", 0),
                             "grader peak, MB": r.get("grader_peak_mb", 0), "score": f"{score:g}/{points:g}",
                             "where the time went, s": {k: round(v, 1) for k, v in r.get("timings", {}).items()}}
    return out


def class_sample(root: Path, k: int, jobs: int) -> dict[str, object]:
    """``k`` right submissions of every chapter, graded in one run with JOBS=jobs, as a class is: wall seconds
    per submission (start-up, recording and all), what the projection uses."""
    for chapter in chapters():
        for i in range(k):
            _save(root, f"c{i}_{chapter[:2]}", chapter, submission(chapter, answers_from_solution(chapter)))
    sync(root)
    run = grade_class(root, jobs)
    n = k * len(chapters())
    lost = sorted(s for s, scores in run["scores"].items()
                  if any(score == 0 for gid, score in scores if gid.endswith(("_visible", "_hidden"))))
    return {f"class sample: {n} right submissions ({k} per chapter), JOBS={jobs}, s": round(run["seconds"], 1),
            "class sample: wall seconds per submission": round(run["seconds"] / n, 2),
            "class sample: mean grading seconds per submission, by chapter": run["seconds_by_chapter"],
            "class sample: submissions that lost points": [" ".join(s) for s in lost],
            "class sample: jobs": jobs}


def throughput(root: Path, n: int, jobs: int, out: dict) -> None:
    """``n`` right chapter-00 submissions graded with JOBS=1 and JOBS=jobs."""
    make_class(root, n, mixed=False)
    sync(root)  # once per release, not per run: neither timed run pays for it
    serial = grade_class(root, 1)
    parallel = grade_class(root, jobs)
    out[f"{n} chapter-00 submissions, JOBS=1, s"] = round(serial["seconds"], 1)
    out[f"{n} chapter-00 submissions, JOBS={jobs}, s"] = round(parallel["seconds"], 1)
    out["speed-up"] = round(serial["seconds"] / parallel["seconds"], 2)
    out["same scores, JOBS=1 and JOBS=N"] = serial["scores"] == parallel["scores"]
    out["grader process peak, MB"] = max(serial["grader_peak_mb"], parallel["grader_peak_mb"])
    out["kernel peak (chapter 00), MB"] = max(serial["kernel_peak_mb"], parallel["kernel_peak_mb"])
    print(json.dumps(out, indent=1), flush=True)


def projection(out: dict) -> dict[str, str]:
    """Wall time for 300 × 11 submissions on 2, 16 and 64 cores. On this machine's cores: the class sample's
    wall seconds per submission (every chapter, JOBS = the cores, start-up and recording included). On more
    cores: the serial seconds per submission (the sample's times its jobs; else each chapter graded alone,
    else the mixed class's serial means, else chapter 00's) over the cores, at the measured parallel
    efficiency. Memory as JOBS × (the largest grader and kernel peaks) plus one spare kernel per job."""
    alone = out.get("one right submission per chapter, graded alone") or {}
    per_chapter = ({ch: v["s"] for ch, v in alone.items()}
                   or out.get("mean seconds per submission, by chapter (serial)") or {})
    mean = (sum(per_chapter.values()) / len(per_chapter) if per_chapter
            else out[f"{out['n']} chapter-00 submissions, JOBS=1, s"] / out["n"])
    efficiency = min(1.0, out["speed-up"] / max(1, out["jobs"]))
    if "class sample: wall seconds per submission" in out:
        mean = out["class sample: wall seconds per submission"] * out["class sample: jobs"] * efficiency
    kernel = max([v["kernel peak, MB"] for v in alone.values()]
                 + [out.get("mixed: kernel peak (any chapter), MB", 0), out.get("kernel peak (chapter 00), MB", 0)])
    grader = max([v["grader peak, MB"] for v in alone.values()] + [out["grader process peak, MB"]])
    memory_gb = (grader + 2 * kernel) / 1024
    return {f"{cores} cores": f"{300 * 11 * mean / (cores * efficiency) / 3600:.1f} h with JOBS={cores}, "
                              f"about {cores * memory_gb:.0f} GB of memory"
            for cores in (2, 16, 64)}


if __name__ == "__main__":
    sys.exit(main())
