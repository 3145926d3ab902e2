"""Which submissions look copied: every pair compared, answer cell by answer cell and whole notebook.

    make similarity CH=CHAPTER [ARCHIVE=DIR] [THRESHOLD=0.7]
    python autograder/bookkeeping/pipeline.py similarity CHAPTER [--archive DIR] [--threshold 0.7]
                                                         [--public MODULE] [--out DIR]

This module compares notebooks it is given; the grading folder's submissions are found by :mod:`pipeline`
(``similarity_report``), which calls it.

Nothing here changes a grade: the report ranks pairs for a person to read.

**The method** (written here, not taken from a library: copydetect and Dolos fingerprint a file's token stream,
with every name replaced by one placeholder and the statements in their order; an answer cell here is a few
statements of Python, where the order of independent statements, a ``print`` or a renamed variable would move
their fingerprints, and where the names a student *calls* — ``torch.lerp``, ``addcmul_`` — carry most of what
distinguishes two answers). Each answer cell is parsed; docstrings, comments, blank lines, ``print(...)`` and
``pass`` are dropped; every name the answer itself binds (arguments, variables, loop targets, its own functions)
becomes ``_v``, while the names it uses from elsewhere (``torch``, ``math``, attributes, methods) stay. Each
statement (and each compound statement's header) is then a short token string; its fingerprints are its
k-grams of tokens (k = 4; a shorter statement is one fingerprint). An answer is the *set* of its statements'
fingerprints, so reordering independent statements does not change it. Answers that do not parse fall back to
the same over Python's tokenizer, with every name a placeholder.

**What everyone was given does not count**: fingerprints of the released starter cell (signature, docstring,
given lines) are removed from every answer.

**What students may read counts as given too**: the library code an exercise points to (``clip_grad_norm_``'s,
``transformers``' schedules — the modules in :data:`PUBLIC`, or ``--public module`` ones) is fingerprinted the
same way and removed; two students who both transcribed it honestly are then not alike for it.

**What everyone writes counts little**: a fingerprint's weight is ``log((N + 1) / (n + 1))``, N the answers to the
exercise, n those containing it — a line every second student writes weighs about 0.7, one shared by two of 300
about 4.6. The similarity of two answers is the weight they share divided by the larger of (the smaller
answer's weight, the exercise's median answer weight): two short answers made of the idioms everyone uses share
little weight next to the median, so a three-line exercise where honest answers must look alike ranks low, while
a copied answer shares its rare fingerprints and scores near 1. A notebook's similarity sums the same over its
exercises, so an exercise counts as much as a typical answer to it carries. Within an exercise, pairs are ranked
(and flagged) by the answers' similarity times their notebooks' similarity: one exercise alike in two otherwise
different notebooks — two honest students who wrote the same formula — is weaker evidence than the same exercise
in two notebooks alike throughout. Both numbers are in the report.

Matches with the instructor's solution (``solutions/``) and with earlier terms' submissions (``--archive``: a
folder holding ``<anything>/<chapter>.ipynb`` files) are reported separately; the solution does not count in the
weights, the archive does.
"""

from __future__ import annotations

import ast
import copy
import csv
import functools
import hashlib
import html
import io
import keyword
import math
import statistics
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import nbformat

COURSE = Path(__file__).resolve().parents[2] / "course"  # the released chapters (pipeline.COURSE)
K = 4  # tokens per fingerprint
FLOOR = 0.5  # an answer is weighed as at least this share of the exercise's median answer weight
# the public code each chapter's text points students to (its docstrings name these functions): read, and so
# transcribed, by honest students
PUBLIC = {
    "00_welcome": ["torch.optim.sgd"],
    "10_optimizers_schedulers": ["torch.optim.sgd", "torch.optim.adam", "torch.optim.adamw", "torch.nn.utils.clip_grad",
                                 "torch.optim.lr_scheduler", "transformers.optimization",
                                 "transformers.trainer_callback"],
}
PLACEHOLDER = "_v"
SOLUTION = "(instructor's solution)"


# ---------------------------------------------------------------------------------------------- normalising


class _Normaliser(ast.NodeTransformer):
    """Docstrings, ``print`` and ``pass`` out; every name the answer binds becomes the placeholder."""

    def __init__(self, bound: set[str]) -> None:
        self.bound = bound

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        kept = []
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.Pass):
                continue
            value = getattr(stmt, "value", None)
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(getattr(value, "value", None), str):
                continue  # a docstring
            if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "print"):
                continue
            kept.append(self.visit(stmt))
        return kept

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody") and isinstance(value, list) \
                    and all(isinstance(s, ast.stmt) for s in value):
                setattr(node, name, self._body(value))  # visits what it keeps
            elif isinstance(value, list):
                value[:] = [self.visit(item) if isinstance(item, ast.AST) else item for item in value]
            elif isinstance(value, ast.AST):
                setattr(node, name, self.visit(value))
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(PLACEHOLDER if node.id in self.bound else node.id, node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg, node.annotation = PLACEHOLDER, None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name, node.returns = PLACEHOLDER, None
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = PLACEHOLDER
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.copy_location(ast.Constant("S"), node) if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return ast.copy_location(ast.Constant("S"), node)


def _bound_names(tree: ast.AST) -> set[str]:
    """The names the answer binds itself: arguments, assigned names, loop and comprehension targets, its own
    functions and classes, names it imports under an alias of its own choosing."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias) and node.asname:
            bound.add(node.asname)
    return bound - {"self", "cls"}


def _tokens(text: str) -> list[str]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
                            tokenize.COMMENT):
                continue
            out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out = text.split()
    return out


def _header(stmt: ast.stmt) -> ast.stmt:
    """A compound statement without its bodies (``for _v in range(_v):``), to fingerprint on its own."""
    clone = copy.copy(stmt)  # shallow: the bodies are replaced, nothing else is changed
    for name in ("body", "orelse", "finalbody", "handlers"):
        if hasattr(clone, name):
            setattr(clone, name, [ast.Pass()] if name == "body" else [])
    return clone


def statements(source: str) -> list[tuple[list[str], tuple[int, int]]]:
    """The answer as normalised statements: (tokens, (first line, last line) in ``source``) each."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        lines = source.splitlines()
        found = []
        for i, line in enumerate(lines, 1):
            toks = ["_v" if t.isidentifier() and not keyword.iskeyword(t) else t for t in _tokens(line)]
            if toks and not line.lstrip().startswith("#"):
                found.append((toks, (i, i)))
        return found
    normalised = _Normaliser(_bound_names(tree)).visit(tree)  # statements keep their lines in ``source``
    found = []
    for node in (n for n in ast.walk(normalised) if isinstance(n, ast.stmt)):
        span = (node.lineno, node.end_lineno or node.lineno)
        compound = any(isinstance(getattr(node, name, None), list) and getattr(node, name)
                       and isinstance(getattr(node, name)[0], ast.stmt) for name in ("body", "orelse", "finalbody"))
        if compound:
            text = ast.unparse(_header(node)).replace("\n    pass", "")
            span = (span[0], span[0])
        else:
            text = ast.unparse(node)
        toks = _tokens(text)
        if toks:
            found.append((toks, span))
    return found



def _hash(tokens: tuple[str, ...]) -> int:
    return int.from_bytes(hashlib.blake2b(" ".join(tokens).encode(), digest_size=8).digest(), "big")


@functools.lru_cache(maxsize=65536)
def _fingerprints(source: str) -> tuple[tuple[int, frozenset[int]], ...]:
    found: dict[int, set[int]] = defaultdict(set)
    for toks, (first, last) in statements(source):
        grams = [tuple(toks)] if len(toks) <= K else [tuple(toks[i:i + K]) for i in range(len(toks) - K + 1)]
        for gram in grams:
            found[_hash(gram)].update(range(first, last + 1))
    return tuple((fp, frozenset(lines)) for fp, lines in found.items())


def fingerprints(source: str) -> dict[int, frozenset[int]]:
    """``{fingerprint: the source lines it comes from}`` for an answer cell's source (the same source, as when
    many students hand in the starter's own lines, is fingerprinted once)."""
    return dict(_fingerprints(source))


# ----------------------------------------------------------------------------------------------- comparing


@dataclass
class Answer:
    """One answer cell of one submission."""

    who: str
    exercise: str
    source: str
    prints: dict[int, frozenset[int]] = field(default_factory=dict)


@dataclass
class Pair:
    """Two answers (or two notebooks, ``exercise == "notebook"``) and how much weight they share."""

    kind: str  # "pair" (two students this term), "solution", "archive"
    exercise: str
    a: str
    b: str
    score: float  # what the pairs are ranked by: ``alike`` times the notebooks' similarity
    shared: float
    alike: float = 0.0  # the answers' own similarity


def answers_of(notebook: Path, who: str, exercises: list[str]) -> dict[str, Answer]:
    """The answer cells of a notebook, by exercise (a cell is found by its nbgrader ``grade_id``)."""
    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:  # noqa: BLE001 — a notebook that cannot be read has no answers to compare
        return {}
    found = {}
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if cell.get("cell_type") == "code" and gid.removesuffix("_answer") in exercises and gid.endswith("_answer"):
            found[gid.removesuffix("_answer")] = Answer(who, gid.removesuffix("_answer"), cell.source)
    return found


def exercises_of(chapter: str) -> list[str]:
    (release,) = sorted((COURSE / chapter).glob("*.ipynb"))
    return [c.metadata["nbgrader"]["grade_id"].removesuffix("_answer") for c in nbformat.read(release, 4).cells
            if c.metadata.get("nbgrader", {}).get("solution")]


@dataclass
class Report:
    chapter: str
    students: list[str]
    pairs: list[Pair]
    medians: dict[str, float]
    times: dict[str, str]
    answers: dict[tuple[str, str], Answer]
    threshold: float


def public_fingerprints(modules: list[str]) -> set[int]:
    """The fingerprints of the named modules' source (those that cannot be imported or read are skipped)."""
    import importlib
    import inspect

    found: set[int] = set()
    for name in modules:
        try:
            found |= set(fingerprints(inspect.getsource(importlib.import_module(name))))
        except Exception:  # noqa: BLE001, S112 — a module not installed here gives nothing to discount
            continue
    return found


def compare(chapter: str, submitted: dict[str, Path], solution: Path | None = None,
            archive: dict[str, Path] | None = None, threshold: float = 0.7,
            public: list[str] | None = None) -> Report:
    """Every pair of ``submitted`` notebooks (student → path), and each against ``solution`` and ``archive``.
    ``public``: modules whose code counts as given (default: :data:`PUBLIC` for the chapter)."""
    exercises = exercises_of(chapter)
    (release,) = sorted((COURSE / chapter).glob("*.ipynb"))
    library = public_fingerprints(PUBLIC.get(chapter, []) if public is None else public)
    given = {e: set(a.prints) | library
             for e, a in _fingerprinted(answers_of(release, "release", exercises)).items()}
    people: dict[str, dict[str, Answer]] = {}
    for who, path in {**submitted, **{f"archive: {k}": v for k, v in (archive or {}).items()}}.items():
        people[who] = _fingerprinted(answers_of(path, who, exercises), given)
    reference = _fingerprinted(answers_of(solution, SOLUTION, exercises), given) if solution else {}
    # weights: how many answers (this term and the archive) hold each fingerprint
    weights: dict[str, dict[int, float]] = {}
    medians: dict[str, float] = {}
    for e in exercises:
        held = [people[w][e] for w in people if e in people[w]]
        count: dict[int, int] = defaultdict(int)
        for answer in held:
            for fp in answer.prints:
                count[fp] += 1
        n = len(held)
        weights[e] = {fp: math.log((n + 1) / (c + 1)) for fp, c in count.items()}
        totals = [sum(weights[e][fp] for fp in a.prints) for a in held]
        medians[e] = statistics.median(totals) if totals else 0.0
    current = sorted(submitted)
    archived = sorted(w for w in people if w.startswith("archive: "))
    pairs: list[Pair] = []
    plans = [("pair", a, b) for a, b in combinations(current, 2)] + [("archive", a, b) for a in current
                                                                        for b in archived]
    plans += [("solution", a, SOLUTION) for a in current] if reference else []
    mass = {(who, e): sum(weights[e].get(fp, 0.0) for fp in answer.prints)
            for who, by in people.items() for e, answer in by.items()}
    for e, answer in reference.items():  # a fingerprint of the solution's own that no answer holds: a unique one
        rare = max(weights[e].values(), default=0.0)
        mass[(SOLUTION, e)] = sum(weights[e].get(fp, rare) for fp in answer.prints)
    for kind, a, b in plans:
        left, right = people[a], (reference if b == SOLUTION else people[b])
        shared_total = floor_total = 0.0
        these = []
        for e in exercises:
            if e not in left or e not in right:
                continue
            w = weights[e]
            mass_a, mass_b = mass[(a, e)], mass[(b, e)]
            shared = sum(map(w.__getitem__, left[e].prints.keys() & right[e].prints.keys() & w.keys()))
            floor = max(min(mass_a, mass_b), FLOOR * medians[e])
            shared_total, floor_total = shared_total + shared, floor_total + floor
            floor = max(floor, 1e-9)
            these.append(Pair(kind, e, a, b, 0.0, shared, alike=shared / floor))
        whole = shared_total / floor_total if floor_total > 0 else 0.0
        for pair in these:  # an exercise alike in two notebooks alike throughout is the stronger evidence
            pair.score = pair.alike * whole
        pairs += these
        if floor_total > 0:
            pairs.append(Pair(kind, "notebook", a, b, whole, shared_total, alike=whole))
    pairs.sort(key=lambda p: (-p.score, p.exercise, p.a, p.b))
    times = {who: _time(path) for who, path in submitted.items()}
    answers = {(w, e): ans for w, by in people.items() for e, ans in by.items()}
    answers.update({(SOLUTION, e): ans for e, ans in reference.items()})
    return Report(chapter, current, pairs, medians, times, answers, threshold)


def _fingerprinted(answers: dict[str, Answer], given: dict[str, set[int]] | None = None) -> dict[str, Answer]:
    for e, answer in answers.items():
        prints = fingerprints(answer.source)
        answer.prints = {fp: lines for fp, lines in prints.items() if fp not in (given or {}).get(e, set())}
    return answers


def _time(path: Path) -> str:
    stamp = path.parent / "timestamp.txt"
    try:
        return stamp.read_text().strip()
    except OSError:
        return ""


# ------------------------------------------------------------------------------------------------- report


def write_csv(report: Report, path: Path) -> None:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["kind", "exercise", "a", "b", "rank_score", "similarity", "shared_weight", "a_submitted",
                      "b_submitted", "above_threshold"])
        for p in report.pairs:
            out.writerow([p.kind, p.exercise, p.a, p.b, f"{p.score:.3f}", f"{p.alike:.3f}", f"{p.shared:.2f}",
                          report.times.get(p.a, ""), report.times.get(p.b, ""), int(p.score >= report.threshold)])


def matching_lines(report: Report, pair: Pair) -> tuple[list[int], list[int]]:
    """The lines of each answer whose fingerprints the other shares (for the side-by-side view)."""
    left, right = report.answers.get((pair.a, pair.exercise)), report.answers.get((pair.b, pair.exercise))
    if left is None or right is None:
        return [], []
    common = left.prints.keys() & right.prints.keys()
    return (sorted({ln for fp in common for ln in left.prints[fp]}),
            sorted({ln for fp in common for ln in right.prints[fp]}))


def _code(answer: Answer | None, lines: list[int]) -> str:
    if answer is None:
        return "<pre>(no answer)</pre>"
    marked = set(lines)
    rows = []
    for i, line in enumerate(answer.source.splitlines(), 1):
        text = html.escape(line) or " "
        rows.append(f"<mark>{text}</mark>" if i in marked else text)
    return "<pre>" + "\n".join(rows) + "</pre>"


def write_html(report: Report, path: Path, most: int = 25) -> None:
    """The report as one offline page: per scope the pairs ranked, each flagged pair's answers side by side."""
    kinds = {"pair": "Pairs of students", "solution": "Matches with the instructor's solution",
             "archive": "Matches with earlier terms"}
    parts = [f"<h1>Similarity, {html.escape(report.chapter)}</h1>",
             f"<p>{len(report.students)} submissions; threshold {report.threshold:.2f} (pairs at or above it are "
             "marked and shown side by side, the matching statements highlighted). Nothing here changes a grade.</p>",
             "<p>How to read it: a similarity near 1 means the two answers share nearly all of their weight. Lines "
             "everyone was given do not count; a statement many students write counts little (weight "
             "log((N + 1) / (n + 1)) for n of N answers holding it), and two answers are compared against the "
             "exercise's median answer weight as well as their own, so short exercises where honest answers must "
             "look alike score low. Within an exercise the rank score is the answers' similarity times their "
             "notebooks' similarity: an exercise alike in notebooks alike throughout comes first. "
             "Median answer weight per exercise: "
             + ", ".join(f"{html.escape(e)} {m:.1f}" for e, m in report.medians.items()) + ".</p>"]
    scopes = ["notebook", *report.medians]
    grouped: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for p in report.pairs:  # already ranked: the first ``most`` of each group are its top
        if len(grouped[(p.kind, p.exercise)]) < most:
            grouped[(p.kind, p.exercise)].append(p)
    for kind, title in kinds.items():
        if not any(grouped.get((kind, scope)) for scope in scopes):
            continue
        parts.append(f"<h2>{title}</h2>")
        for scope in scopes:
            ranked = grouped.get((kind, scope), [])
            if not ranked:
                continue
            parts.append(f"<h3>{'whole notebook' if scope == 'notebook' else html.escape(scope)}</h3><table>"
                         "<tr><th>rank score</th><th>answers alike</th><th>a</th><th>b</th><th>submitted</th></tr>")
            for p in ranked:
                flag = ' class="flag"' if p.score >= report.threshold else ""
                when = " / ".join(html.escape(report.times.get(w, "")) for w in (p.a, p.b) if report.times.get(w))
                parts.append(f"<tr{flag}><td>{p.score:.2f}{' ⚑' if flag else ''}</td><td>{p.alike:.2f}</td>"
                             f"<td>{html.escape(p.a)}</td>"
                             f"<td>{html.escape(p.b)}</td><td>{when}</td></tr>")
            parts.append("</table>")
            for p in ranked:
                if p.score >= report.threshold and scope != "notebook":
                    lines_a, lines_b = matching_lines(report, p)
                    parts.append(f"<details><summary>{html.escape(p.a)} and {html.escape(p.b)}: {p.score:.2f}"
                                 f"</summary><div class='side'><div><h4>{html.escape(p.a)}</h4>"
                                 f"{_code(report.answers.get((p.a, scope)), lines_a)}</div><div><h4>"
                                 f"{html.escape(p.b)}</h4>{_code(report.answers.get((p.b, scope)), lines_b)}"
                                 "</div></div></details>")
    style = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#111}table{border-collapse:collapse}"
             "td,th{border:1px solid #888;padding:2px 8px}tr.flag td{font-weight:bold;background:#ffe9a8}"
             ".side{display:flex;gap:1em}.side>div{flex:1;overflow-x:auto}mark{background:#ffd23f;color:#000}"
             "pre{font-size:13px;border:1px solid #ccc;padding:6px}")
    path.write_text(f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Similarity, "
                    f"{html.escape(report.chapter)}</title><style>{style}</style></head><body>{''.join(parts)}"
                    "</body></html>\n")


def archive_notebooks(folder: Path, chapter: str) -> dict[str, Path]:
    """``{name: notebook}`` for every ``<chapter>.ipynb`` under ``folder``, named by its path there."""
    found = {}
    for path in sorted(folder.rglob(f"{chapter}.ipynb")):
        where = path.parent if path.parent.name != chapter else path.parent.parent  # <term>/<student>/<chapter>/
        found[str(where.relative_to(folder)) if where != folder else path.stem] = path
    return found


def run(chapter: str, submitted: dict[str, Path], out: Path, solution: Path | None = None,
        archive: Path | None = None, threshold: float = 0.7, public: list[str] | None = None) -> Report:
    """:func:`compare` the ``submitted`` notebooks (student → path) with each other, the solution and the
    archive's (a folder, read by :func:`archive_notebooks`), and write ``similarity.csv`` and ``similarity.html``
    into ``out``."""
    report = compare(chapter, submitted, solution, archive_notebooks(archive, chapter) if archive else None,
                     threshold, public)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(report, out / "similarity.csv")
    write_html(report, out / "similarity.html")
    return report


def summary(report: Report, out: Path) -> str:
    """One line for the end of ``make autograde``: the notebooks that look alike, and the report."""
    flagged = [p for p in report.pairs if p.exercise == "notebook" and p.score >= report.threshold]
    top = f" (most alike: {flagged[0].a} / {flagged[0].b}, {flagged[0].score:.2f})" if flagged else ""
    return (f"similarity, {report.chapter}: {len(flagged)} pair(s) of notebooks at or above "
            f"{report.threshold:.2f}{top}; report: {out / 'similarity.html'}")


def lines(report: Report, out: Path, most: int = 10) -> list[str]:
    """What ``make similarity`` prints: the count, the report's place, and the ``most`` highest comparisons."""
    flagged = [p for p in report.pairs if p.score >= report.threshold]
    said = [f"{report.chapter}: {len(report.students)} submissions, {len(flagged)} comparisons at or above "
            f"{report.threshold:.2f}; report: {out / 'similarity.html'}"]
    return said + [f"  {p.score:.2f}  {p.exercise:<10} {p.a} / {p.b}" + ("" if p.kind == "pair" else f"  ({p.kind})")
                   for p in flagged[:most]]
