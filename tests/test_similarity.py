"""The similarity report (``autograder/bookkeeping/similarity.py``): planted copies rank above every honest pair.

The class: 25 honest students' answers to chapter 10, written independently and each passing the visible tests
(``tests/data/similarity/``), and five planted copies — one with its variables renamed, one with independent
statements and functions reordered, one of the instructor's solution with comments, blank lines and prints
added, one partly retyped (every other statement rewritten: operands swapped, ``x += y`` spelled out, keyword
arguments reordered), and one of an earlier term's answer (the archive) renamed.
"""

from __future__ import annotations

import ast
import csv
import html
import json
import re

import nbformat
import pytest
from conftest import ROOT
from kernel import released_notebook

from autograder.bookkeeping import (
    pipeline,  # the repository is on sys.path (see conftest)
    similarity,
)

CHAPTER = "10_optimizers_schedulers"
DATA = ROOT / "tests" / "data" / "similarity" / CHAPTER
HONEST = sorted(p.stem for p in DATA.glob("s*.json"))
ARCHIVED = "s26"  # an earlier term's student (archived-s26.json), in the archive only
COPIES = {"p_renamed": ("pair", "s03"), "p_reordered": ("pair", "s07"), "p_retyped": ("pair", "s18"),
          "p_commented": ("solution", similarity.SOLUTION), "p_archive": ("archive", f"archive: 2025/{ARCHIVED}")}


# ------------------------------------------------------------------------------------------ planting copies


def _own_names(tree: ast.Module) -> set[str]:
    """Names a copier may rename: what the answer binds, less the functions and methods the exercise asks for."""
    kept = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    kept |= {n.name for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body if isinstance(n, ast.FunctionDef)}
    kept |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for a in n.args.args + n.args.kwonlyargs}
    return similarity._bound_names(tree) - kept


class _Rename(ast.NodeTransformer):
    def __init__(self, names: set[str]) -> None:
        self.new = {name: f"{name}_{i}x" for i, name in enumerate(sorted(names))}

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.new.get(node.id, node.id)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:  # an inner function of the student's
        node.name = self.new.get(node.name, node.name)
        return self.generic_visit(node)


def renamed(source: str) -> str:
    tree = ast.parse(source)
    return ast.unparse(_Rename(_own_names(tree)).visit(tree))


def _reads_writes(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    names = [n for n in ast.walk(stmt) if isinstance(n, ast.Name)]
    writes = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    reads = {n.id for n in names if isinstance(n.ctx, ast.Load)}
    reads |= {n.value.id for n in ast.walk(stmt) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    return reads, writes


def _independent(a: ast.stmt, b: ast.stmt) -> bool:
    if any(isinstance(n, ast.Return | ast.Raise | ast.If | ast.For | ast.While | ast.With | ast.Try)
           for s in (a, b) for n in ast.walk(s)):
        return False
    (ra, wa), (rb, wb) = _reads_writes(a), _reads_writes(b)
    calls = [n for s in (a, b) for n in ast.walk(s) if isinstance(n, ast.Call)]
    mutating = any(isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)  # obj.method(): may
                   and n.func.value.id not in ("math", "torch") for n in calls)  # change obj, keep the order
    return not (wa & (rb | wb) or wb & ra) and not mutating


def reordered(source: str) -> str:
    """Top-level functions in the opposite order; in every body, each pair of adjacent independent statements
    swapped."""
    tree = ast.parse(source)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(defs) > 1:
        rest = [n for n in tree.body if not isinstance(n, ast.FunctionDef)]
        tree.body = rest + defs[::-1]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            i = 0
            while i + 1 < len(body):
                if _independent(body[i], body[i + 1]):
                    body[i], body[i + 1] = body[i + 1], body[i]
                    i += 2
                else:
                    i += 1
    return ast.unparse(tree)


def commented(source: str) -> str:
    """Comments above every line that starts a statement, blank lines, and a ``print`` after every assignment."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            out = []
            for stmt in body:
                out.append(stmt)
                if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                    out.append(ast.parse(f"print('{stmt.targets[0].id} computed')").body[0])
            node.body = out
    text = ast.unparse(tree)
    starts = {n.lineno for n in ast.walk(ast.parse(text)) if isinstance(n, ast.stmt)}
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if number in starts:
            indent = line[: len(line) - len(line.lstrip())]
            lines += ["", f"{indent}# my own step: {line.strip()[:20]!r} here"]
        lines.append(line)
    return "\n".join(lines)


class _Retype(ast.NodeTransformer):
    """Write a statement another way: commutative operands swapped, ``x += y`` spelled out, keywords reversed."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Add | ast.Mult):
            node.left, node.right = node.right, node.left
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        node.keywords = node.keywords[::-1]
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            value = ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)
            return ast.copy_location(ast.Assign([ast.Name(node.target.id, ast.Store())], value), node)
        return node


def retyped(source: str) -> str:
    """Every other simple statement of every body rewritten (:class:`_Retype`), the rest left as copied."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            simple = [i for i, s in enumerate(body) if not hasattr(s, "body")]
            for i in simple[::2]:
                body[i] = _Retype().visit(body[i])
    return renamed(ast.unparse(tree))


# --------------------------------------------------------------------------------------------- the class


def _answers(student: str) -> dict[str, str]:
    path = DATA / f"{student}.json"
    return json.loads((path if path.exists() else DATA / f"archived-{student}.json").read_text())


def _solution_answers() -> dict[str, str]:
    (solution,) = sorted((ROOT / "solutions" / CHAPTER).glob("*.ipynb"))
    return {c.metadata["nbgrader"]["grade_id"]: "\n".join(
        line for line in c.source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
        for c in nbformat.read(solution, 4).cells if c.metadata.get("nbgrader", {}).get("solution")}


def _write(folder, student: str, answers: dict[str, str], when: str):
    path = folder / student / CHAPTER / f"{CHAPTER}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(released_notebook(CHAPTER, answers), path)
    (path.parent / "timestamp.txt").write_text(when)
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("similarity")
    submitted = {s: _write(root / "submitted", s, _answers(s), f"2026-10-{1 + i % 28:02d} 10:{i:02d}:00")
                 for i, s in enumerate(HONEST)}
    plant = {"p_renamed": {k: renamed(v) for k, v in _answers("s03").items()},
             "p_reordered": {k: reordered(v) for k, v in _answers("s07").items()},
             "p_retyped": {k: retyped(v) for k, v in _answers("s18").items()},
             "p_commented": {k: commented(v) for k, v in _solution_answers().items()},
             "p_archive": {k: renamed(v) for k, v in _answers(ARCHIVED).items()}}
    for i, (name, answers) in enumerate(plant.items()):
        submitted[name] = _write(root / "submitted", name, answers, f"2026-10-29 23:5{i}:00")
    _write(root / "archive" / "2025", ARCHIVED, _answers(ARCHIVED), "2025-10-20 12:00:00")
    (solution,) = sorted((ROOT / "solutions" / CHAPTER).glob("*.ipynb"))
    found = similarity.compare(CHAPTER, submitted, solution,
                               similarity.archive_notebooks(root / "archive", CHAPTER), threshold=0.7)
    similarity.write_csv(found, root / "similarity.csv")
    similarity.write_html(found, root / "similarity.html")
    return found, root, plant


def test_the_planted_copies_differ_from_what_they_copied(report):
    """The transformations are real: each copy's text differs from its source in every answer it changed."""
    _, _, plant = report
    source = {"p_renamed": _answers("s03"), "p_reordered": _answers("s07"), "p_retyped": _answers("s18"),
              "p_commented": _solution_answers(), "p_archive": _answers(ARCHIVED)}
    for name, answers in plant.items():
        changed = [e for e in answers if answers[e].strip() != source[name][e].strip()]
        assert len(changed) >= 5, (name, changed)
        assert all(compile(src, name, "exec") for src in answers.values())
    assert any("print(" in src and "# my own step" in src for src in plant["p_commented"].values())


def test_every_planted_copy_ranks_above_every_honest_pair_for_its_exercise(report):
    """Ranked by the report's own order, for every exercise and for the whole notebook."""
    found, _, _ = report
    honest = set(HONEST)
    lines = []
    for exercise in [*found.medians, "notebook"]:
        ranked = [p for p in found.pairs if p.exercise == exercise]
        for copy, (kind, original) in COPIES.items():
            same_kind = [p for p in ranked if p.kind == kind]
            planted = next(p for p in same_kind if {p.a, p.b} == {copy, original})
            if kind == "pair":
                rivals = [p for p in same_kind if p.a in honest and p.b in honest]
            else:  # against the solution or the archive: the honest students' own matches with it
                rivals = [p for p in same_kind if p.a in honest]
            best = max(rivals, key=lambda p: p.score)
            lines.append(f"{exercise:<9} {copy:<12} {planted.score:.2f} > {best.score:.2f} ({best.a}/{best.b})")
            assert planted.score > best.score, lines[-1]
    print("\n".join(lines))


def test_honest_pairs_rarely_reach_the_threshold_and_the_rate_is_printed(report):
    found, _, _ = report
    honest = set(HONEST)
    rates = {}
    for exercise in [*found.medians, "notebook"]:
        pairs = [p for p in found.pairs if p.kind == "pair" and p.exercise == exercise and {p.a, p.b} <= honest]
        assert len(pairs) == len(HONEST) * (len(HONEST) - 1) // 2
        rates[exercise] = sum(p.score >= found.threshold for p in pairs) / len(pairs)
    print("honest pairs at or above the threshold: " + ", ".join(f"{e} {r:.1%}" for e, r in rates.items()))
    assert rates["notebook"] == 0.0, rates  # no honest pair of notebooks is flagged
    assert max(rates.values()) <= 0.02, rates  # at most 2 % of honest pairs per exercise


def test_the_report_shows_the_copies_side_by_side_with_their_matches_marked(report):
    found, root, _ = report
    page = (root / "similarity.html").read_text()
    for copy, (_, original) in COPIES.items():
        assert copy in page and html.escape(original.split(": ")[-1]) in page
    assert page.count("<details>") >= 5 and "<mark>" in page and "2026-10-29 23:50:00" in page
    assert "Matches with the instructor's solution" in page and "Matches with earlier terms" in page
    assert "cdn" not in page.lower() and "<script" not in page  # offline, nothing fetched
    with (root / "similarity.csv").open() as f:
        rows = list(csv.DictReader(f))
    flagged = {(r["a"], r["b"]) for r in rows if r["above_threshold"] == "1" and r["exercise"] == "notebook"}
    for copy, (_, original) in COPIES.items():
        assert (copy, original) in flagged or (original, copy) in flagged, (copy, flagged)
    assert re.search(r"Median answer weight per exercise: sgd \d", page)


def test_answers_normalise_away_names_comments_prints_and_order():
    first = "def f(x, n):\n    a = x * 2  # double\n    b = n + 1\n    print(a)\n    return a / b\n"
    second = "def f(x, n):\n\n    nn = n + 1\n    twice = x * 2\n    return twice / nn\n"
    assert set(similarity.fingerprints(first)) == set(similarity.fingerprints(second))
    other = "def f(x, n):\n    return torch.lerp(x, n, 0.5)\n"
    assert not set(similarity.fingerprints(other)) - set(similarity.fingerprints("def f(x, n):\n    pass\n")) \
        <= set(similarity.fingerprints(first))
    broken = "def f(x:\n    return x +\n"  # does not parse: still fingerprinted, by tokens
    assert similarity.fingerprints(broken)


def test_make_similarity_reads_the_grading_folder_and_writes_both_files(report, monkeypatch, capsys):
    _, root, _ = report
    monkeypatch.setattr(pipeline, "SUBMITTED", root / "submitted")
    monkeypatch.setattr(pipeline, "GRADING", root)
    assert pipeline.main(["similarity", CHAPTER, "--archive", str(root / "archive")]) == 0
    said = capsys.readouterr().out
    assert f"{CHAPTER}: 30 submissions" in said and "p_renamed" in said
    assert (root / "similarity" / CHAPTER / "similarity.html").exists()
    assert (root / "similarity" / CHAPTER / "similarity.csv").exists()
    monkeypatch.setattr(pipeline, "SUBMITTED", root / "nothing-here")
    assert pipeline.main(["similarity", CHAPTER]) == 0 and "nothing to compare" in capsys.readouterr().out
    assert "similarity:" in (ROOT / "Makefile").read_text()


def test_autograde_ends_with_a_line_per_chapter_and_a_mistake_is_one_line(report, monkeypatch, capsys):
    _, root, _ = report
    monkeypatch.setattr(pipeline, "SUBMITTED", root / "submitted")
    monkeypatch.setattr(pipeline, "GRADING", root)
    (line,) = pipeline.similarity_summary([CHAPTER])
    assert line.startswith(f"similarity, {CHAPTER}: ") and "pair(s) of notebooks at or above 0.70" in line
    assert "most alike: p_" in line and str(root / "similarity" / CHAPTER / "similarity.html") in line
    assert pipeline.similarity_summary(["no_such_chapter"]) == []  # no submissions: nothing to say

    def broken(*args, **kwargs):
        raise ValueError("a notebook nobody can read")

    monkeypatch.setattr(similarity, "compare", broken)  # a report that fails is a line; grading is done by then
    assert pipeline.similarity_summary([CHAPTER]) == [
        f"similarity, {CHAPTER}: no report (ValueError: a notebook nobody can read)"]
    assert pipeline.main(["similarity", "00_welcom"]) == 2 and "no chapter" in capsys.readouterr().err
    assert pipeline.main(["similarity", CHAPTER, "--archive", str(root / "nowhere")]) == 2
