"""How long the similarity report takes for a large class: 300 submissions of every chapter, compared.

    .venv/bin/python bench/similarity.py [--students 300] [CHAPTER ...]

Each synthetic submission takes, per exercise, the reference answer or one of the catalogued mistakes
(``tests/mistakes/``), its variables renamed at random (a different name set per student), so that answers vary
as a class's do. The notebooks are written first; what is timed is :func:`similarity.compare` on them (reading,
fingerprinting, every pair and each against the solution) and writing the HTML and CSV report. Results go to
``bench/results/similarity.json``.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.bookkeeping import similarity  # noqa: E402

OUT = ROOT / "bench" / "results" / "similarity.json"


def _variants(chapter: str) -> dict[str, list[str]]:
    """Per exercise: the reference answer and the catalogued mistakes (each a whole answer cell)."""
    (solution,) = sorted((ROOT / "solutions" / chapter).glob("*.ipynb"))
    found = {c.metadata["nbgrader"]["grade_id"].removesuffix("_answer"): ["\n".join(
        ln for ln in c.source.splitlines() if "### BEGIN SOLUTION" not in ln and "### END SOLUTION" not in ln)]
        for c in nbformat.read(solution, 4).cells if c.metadata.get("nbgrader", {}).get("solution")}
    spec = importlib.util.spec_from_file_location("mistakes", ROOT / "tests" / "mistakes" / f"{chapter}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for exercise, wrongs in module.MISTAKES.items():
        found.setdefault(exercise, []).extend(source for _, source in wrongs)
    return found


def _renamed(source: str, rng: random.Random) -> str:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    keep = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    names = sorted(similarity._bound_names(tree) - keep)
    new = {n: f"{n}_{rng.randrange(1000)}" for n in names if rng.random() < 0.5}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:
            node.id = new.get(node.id, node.id)
            return node

    return ast.unparse(Rename().visit(tree))


def synthetic_class(chapter: str, students: int, folder: Path, seed: int = 0) -> dict[str, Path]:
    rng = random.Random(seed)
    variants = _variants(chapter)
    (release,) = sorted((ROOT / "course" / chapter).glob("*.ipynb"))
    template = nbformat.read(release, 4)
    made = {}
    for i in range(students):
        nb = nbformat.from_dict(json.loads(json.dumps(template)))
        for cell in nb.cells:
            exercise = cell.metadata.get("nbgrader", {}).get("grade_id", "").removesuffix("_answer")
            if cell.metadata.get("nbgrader", {}).get("solution") and exercise in variants:
                cell.source = _renamed(rng.choice(variants[exercise]), rng)
        path = folder / f"student{i:03d}" / chapter / f"{chapter}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
        made[f"student{i:03d}"] = path
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--students", type=int, default=300)
    args = parser.parse_args(argv)
    chapters = args.chapters or sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    results, total = {}, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for chapter in chapters:
            submitted = synthetic_class(chapter, args.students, Path(tmp) / chapter)
            (solution,) = sorted((ROOT / "solutions" / chapter).glob("*.ipynb"))
            start = time.perf_counter()
            report = similarity.compare(chapter, submitted, solution)
            similarity.write_csv(report, Path(tmp) / f"{chapter}.csv")
            similarity.write_html(report, Path(tmp) / f"{chapter}.html")
            seconds = time.perf_counter() - start
            total += seconds
            results[chapter] = {"students": args.students, "comparisons": len(report.pairs),
                                "seconds": round(seconds, 2)}
            print(f"{chapter}: {args.students} submissions, {len(report.pairs):,} comparisons, {seconds:.1f} s",
                  flush=True)
    print(f"all {len(chapters)} chapters: {total:.1f} s")
    if not args.chapters:
        import os
        import platform

        OUT.write_text(json.dumps({"machine": f"{platform.machine()}, {os.cpu_count()} cores",
                                   "total_seconds": round(total, 1), "chapters": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
