"""The course's grader against plain nbgrader, on the same submissions, side by side.

For each chapter, ``n`` copies of the reference answers are graded twice, one command each, timed from
outside (the whole process: start-up, imports, the gradebook):

* **the course's grader**: ``pipeline.py autograde --chapter CH --force --jobs 1`` — a sandboxed kernel, the
  tests in the grader, only the cells grading needs, kernels started ahead;
* **plain nbgrader**: ``nbgrader autograde CH --force`` in a course of its own, generated from the same
  ``solutions/`` notebook — no sandbox, every cell executed, tests in the student's kernel.

The two commands alternate (ours, nbgrader, ours, ...) ``rounds`` times, so both see the same load; the report
gives the median seconds per submission. Both run in FAST mode with one thread per process.

    python bench/versus.py [--n 4] [--rounds 3] [--chapter 00_welcome ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
OUT = ROOT / "bench" / "results"

from kernel import reference_answers, released_notebook  # noqa: E402

PLAIN_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = "plain"
c.CourseDirectory.db_url = "sqlite:///{root}/gradebook.db"
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ExecutePreprocessor.timeout = 600
"""


def _env(**extra: str) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "DLCOURSE_FAST": "1",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **extra}


def plain_course(root: Path, chapter: str, n: int) -> list[str]:
    """A course of plain nbgrader under ``root`` with ``n`` submissions of the reference answers; the command
    that grades them."""
    root.mkdir(parents=True)
    (root / "nbgrader_config.py").write_text(PLAIN_CONFIG.format(root=str(root)))
    shutil.copytree(ROOT / "solutions" / chapter, root / "source" / chapter)
    jupyter = [sys.executable, "-m", "nbgrader"]
    subprocess.run([*jupyter, "generate_assignment", chapter, "--force"], cwd=root, env=_env(), check=True,
                   capture_output=True)
    (release,) = sorted((root / "release" / chapter).glob("*.ipynb"))
    answers = reference_answers(chapter)
    for i in range(n):
        nb = nbformat.read(release, as_version=4)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in answers:
                cell.source = answers[gid]
        folder = root / "submitted" / f"s{i:02d}" / chapter
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / release.name)
    return [*jupyter, "autograde", chapter, "--force"]


def our_course(root: Path, chapter: str, n: int) -> list[str]:
    """The same submissions for the course's pipeline (built from course/, as students get it); the command.
    Every chapter's submissions share ``root`` and its gradebook, which learns the chapters once (not timed)."""
    answers = reference_answers(chapter)
    for i in range(n):
        folder = root / "submitted" / f"s{i:02d}" / chapter
        folder.mkdir(parents=True)
        nbformat.write(released_notebook(chapter, answers), folder / f"{chapter}.ipynb")
    if not (root / "gradebook.db").exists():
        subprocess.run([sys.executable, "-c", "from autograder.bookkeeping import pipeline; pipeline.sync_gradebook()"],
                       cwd=ROOT, env=_env(DLCOURSE_GRADING_DIR=str(root)), check=True,
                       capture_output=True)
    return [sys.executable, str(ROOT / "autograder" / "bookkeeping" / "pipeline.py"), "autograde", "--chapter",
            chapter, "--force",
            "--jobs", "1"]


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd[-4:])} failed:\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return seconds


def _plain_scores(root: Path, chapter: str) -> list[tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return [(s.score, s.max_score) for s in gb.assignment_submissions(chapter)]


def _our_scores(root: Path, chapter: str) -> list[tuple[float, float]]:
    results = [json.loads(p.read_text()) for p in (root / "results").glob(f"*__{chapter}.json")]
    return [(sum(t["score"] for t in r["tests"]), sum(t["points"] for t in r["tests"])) for r in results]


def compare(chapter: str, n: int, rounds: int, tmp: Path) -> dict[str, object]:
    plain_root, ours_root = tmp / chapter / "plain", tmp / "ours"
    plain_cmd = plain_course(plain_root, chapter, n)
    ours_cmd = our_course(ours_root, chapter, n)
    ours_env = _env(DLCOURSE_GRADING_DIR=str(ours_root))
    ours, plain = [], []
    for _ in range(rounds):
        ours.append(_timed(ours_cmd, ROOT, ours_env) / n)
        plain.append(_timed(plain_cmd, plain_root, _env()) / n)
    a, b = statistics.median(ours), statistics.median(plain)
    return {"course's grader, s per submission": round(a, 2), "plain nbgrader, s per submission": round(b, 2),
            "ratio (course / nbgrader)": round(a / b, 2),
            "course's grader, s (min, max)": [round(min(ours), 2), round(max(ours), 2)],
            "plain nbgrader, s (min, max)": [round(min(plain), 2), round(max(plain), 2)],
            "scores (course, nbgrader)": [sorted(set(_our_scores(ours_root, chapter))),
                                          sorted(set(_plain_scores(plain_root, chapter)))]}


def chapters() -> list[str]:
    return sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=4, help="submissions per chapter and command")
    parser.add_argument("--rounds", type=int, default=3, help="times each command runs")
    parser.add_argument("--chapter", action="append", dest="chapters", help="a chapter (default: all)")
    args = parser.parse_args()
    out: dict[str, object] = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "mode": "FAST",
                              "submissions per command": args.n, "rounds": args.rounds, "by chapter": {}}
    with tempfile.TemporaryDirectory(prefix="dlcourse-versus-") as tmp:
        for chapter in args.chapters or chapters():
            out["by chapter"][chapter] = compare(chapter, args.n, args.rounds, Path(tmp))
            print(chapter, json.dumps(out["by chapter"][chapter]), flush=True)
    ratios = [v["ratio (course / nbgrader)"] for v in out["by chapter"].values()]
    out["faster than plain nbgrader on every chapter"] = all(r < 1 for r in ratios)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "versus-nbgrader.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
