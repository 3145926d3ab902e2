"""Each exercise's oracle, declared once, and the grader's static check that an answer does not call it.

An exercise is checked against an independent implementation (its *oracle*): ``torch.softmax``, Hugging
Face's logits warpers, ``torch.optim.Adam``... An answer that simply calls that implementation would pass
every comparison without the student writing anything. The hidden tests refuse some of these calls while
the student's code runs (a first layer, in the student's kernel), but anything the kernel does can be
sidestepped by the kernel: a reference saved before the refusal, a subclass, a ``functools.partial``. This
module is the layer that decides. It reads the answer's *source* in the grader and flags the exercise when
the answer, or any code of the student's that the answer depends on, names the oracle or one of its
equivalents — through whatever alias, ``from … import … as …``, assignment or attribute chain.

The declarations live in ``autograder/core/oracles.toml``, one table per exercise::

    [00_welcome.softmax]
    oracle = "torch.softmax"
    why = "the exercise is to write softmax from exp, max and sum"
    refuse = ["torch.softmax", ".softmax", "scipy.special.softmax"]
    allow = []

A ``refuse`` entry ``"pkg.mod.Name"`` matches a reference to that object or to anything under it; the same
final name under the same top-level package matches too (a re-export such as
``transformers.generation.logits_process.TopKLogitsWarper`` for ``transformers.TopKLogitsWarper``), and so
does a distinctive final name (a class name, or one with an underscore) under any package (a re-export
through another library). An entry ``".name"`` matches any attribute of that name (``x.softmax(-1)``) and
any import of it. ``allow`` names paths under a refused one that stay allowed (``torch.optim.Optimizer``
under ``torch.optim``). Strings that spell a refused name (for ``operator.attrgetter`` and the like) match
too; docstrings do not.

Which code counts: the answer cell, plus every top-level statement of the student's other cells (added
cells, other answers) that binds or mentions a name the answer reads (repeated until nothing is added),
plus every statement of the release's own cells that binds such a name. A scratch cell that compares the
student's function with the library (``print(softmax(x) - torch.softmax(x, -1))``) does not count: the
answer does not depend on it.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import os
import symtable
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
# DLCOURSE_ORACLES points at another declarations file (the test suite changes a declaration with it).
DECLARATIONS = Path(os.environ.get("DLCOURSE_ORACLES", str(HERE / "oracles.toml"))).resolve()


@dataclass(frozen=True)
class Oracle:
    """What one exercise is checked against, and what its answer may therefore not use."""

    chapter: str
    exercise: str
    oracle: str
    why: str
    refuse: tuple[str, ...]
    allow: tuple[str, ...] = ()
    # ATen operators (dlcourse.checks.forbid patterns) that compute the oracle: the grader refuses them while the
    # student's code runs for this exercise's tests, whatever Python API reached them.
    operators: tuple[str, ...] = ()


class DeclarationError(ValueError):
    """``oracles.toml`` is malformed; the message says where."""


def load(path: Path = DECLARATIONS) -> dict[tuple[str, str], Oracle]:
    """Every declared exercise, keyed by (chapter, exercise)."""
    try:
        text = path.read_text()
    except OSError as err:
        raise DeclarationError(f"{path.name} cannot be read: {err}") from err
    return parse(text, path.name)


def parse(text: str, name: str = "oracles.toml") -> dict[tuple[str, str], Oracle]:
    """:func:`load` of the declarations' text."""
    path = Path(name)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise DeclarationError(f"{path.name} is not valid TOML: {err}") from err
    found = {}
    for chapter, exercises in data.items():
        if not isinstance(exercises, dict):
            raise DeclarationError(f"{path.name}: {chapter!r} is not a table of exercises")
        for exercise, decl in exercises.items():
            where = f"{path.name}: [{chapter}.{exercise}]"
            if not isinstance(decl, dict) or not isinstance(decl.get("refuse"), list):
                raise DeclarationError(f"{where} needs a list 'refuse'")
            unknown = set(decl) - {"oracle", "why", "refuse", "allow", "operators"}
            if unknown:
                raise DeclarationError(f"{where} has unknown keys {sorted(unknown)}")
            entries = [*decl["refuse"], *decl.get("allow", [])]
            if not all(isinstance(e, str) and e.strip(".") and " " not in e for e in entries):
                raise DeclarationError(f"{where}: every entry is a dotted name or '.name'")
            operators = decl.get("operators", [])
            if not isinstance(operators, list) or not all(
                    isinstance(e, str) and e and not e.startswith((".", "aten.")) and " " not in e for e in operators):
                raise DeclarationError(f"{where}: 'operators' lists ATen operator names or patterns "
                                       "('softmax', 'scaled_dot_product*')")
            found[chapter, exercise] = Oracle(chapter, exercise, str(decl.get("oracle", "")),
                                              str(decl.get("why", "")), tuple(decl["refuse"]),
                                              tuple(decl.get("allow", ())), tuple(operators))
    return found


def for_chapter(chapter: str, path: Path = DECLARATIONS) -> dict[str, Oracle]:
    """The declared exercises of one chapter, by exercise name (empty for an unknown chapter)."""
    return {ex: o for (ch, ex), o in load(path).items() if ch == chapter}


def chapter_text(chapter: str, path: Path = DECLARATIONS) -> str:
    """One chapter's declarations as TOML text: what a grading worker is sent, and part of the fingerprint
    that decides whether a graded submission must be graded again."""
    lines = []
    for ex, o in sorted(for_chapter(chapter, path).items()):
        lines += [f'[{json.dumps(chapter)}.{json.dumps(ex)}]', f"oracle = {json.dumps(o.oracle)}",
                  f"why = {json.dumps(o.why)}", f"refuse = {json.dumps(list(o.refuse))}",
                  f"allow = {json.dumps(list(o.allow))}", f"operators = {json.dumps(list(o.operators))}", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ resolving


@functools.lru_cache(maxsize=1024)
@functools.lru_cache(maxsize=4096)
def _parse(source: str) -> ast.Module | None:
    """The source as a tree (cached: the grader reads each cell once per exercise; never mutated)."""
    from autograder.core.flags import to_python

    python, _ = to_python(source)
    try:
        return ast.parse(python)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _targets(node: ast.AST) -> list[str]:
    """Names bound by an assignment target (``a``, ``a, b``, ``*a``)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Tuple | ast.List):
        return [n for elt in node.elts for n in _targets(elt)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


class Aliases:
    """What names stand for: imports anywhere in the code (module level or inside functions) and
    assignments of a resolvable expression (``o = torch.optim``), followed to a fixed point."""

    def __init__(self) -> None:
        self.names: dict[str, set[str]] = {}
        self.star: set[str] = set()  # modules imported with `from M import *`

    def bind(self, name: str, path: str) -> bool:
        paths = self.names.setdefault(name, set())
        if path in paths or len(paths) > 16:
            return False
        paths.add(path)
        return True

    def learn(self, nodes: list[ast.AST]) -> None:
        """Follow the imports and assignments among ``nodes`` (:func:`_bindings` of each cell)."""
        for _ in range(8):  # an alias of an alias of ...: a few rounds reach the fixed point
            changed = False
            for node in nodes:
                if isinstance(node, ast.Import):
                    for a in node.names:
                        if a.asname:
                            changed |= self.bind(a.asname, a.name)
                        else:
                            root = a.name.split(".")[0]
                            changed |= self.bind(root, root)
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    for a in node.names:
                        if a.name == "*":
                            self.star.add(node.module or "")
                        else:
                            changed |= self.bind(a.asname or a.name, f"{node.module}.{a.name}")
                elif isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    values = self.resolve(node.value)
                    pairwise = isinstance(node.value, ast.Tuple | ast.List)
                    for target in targets:
                        if pairwise and isinstance(target, ast.Tuple | ast.List) \
                                and len(target.elts) == len(node.value.elts):
                            for t, v in zip(target.elts, node.value.elts, strict=True):
                                for name in _targets(t):
                                    for path in self.resolve(v):
                                        changed |= self.bind(name, path)
                            continue
                        for name in _targets(target):
                            for path in values:
                                changed |= self.bind(name, path)
            if not changed:
                return

    def resolve(self, node: ast.AST) -> set[str]:
        """The dotted paths an expression may stand for (empty when it is not a name or attribute chain)."""
        if isinstance(node, ast.Name):
            paths = set(self.names.get(node.id, ()))
            paths |= {f"{m}.{node.id}" for m in self.star}
            return paths
        if isinstance(node, ast.Attribute):
            return {f"{p}.{node.attr}" for p in self.resolve(node.value)}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str):
            return {f"{p}.{node.args[1].value}" for p in self.resolve(node.args[0])}
        return set()


# ------------------------------------------------------------------------------------------- matching


def _distinctive(name: str) -> bool:
    """A final name that, under any package, means the same object (a class, or a name with an underscore)."""
    return name[:1].isupper() or "_" in name.strip("_")


def _same(path: list[str], entry: list[str]) -> bool:
    if path == entry:
        return True
    if path[-1] != entry[-1]:
        return False
    return path[0] == entry[0] or _distinctive(entry[-1])


def _under(path: str, entry: str) -> bool:
    """``path`` is ``entry``, a re-export of it, or something reached through one of those."""
    parts, want = path.split("."), entry.split(".")
    return any(_same(parts[:i], want) for i in range(1, len(parts) + 1))


def matches(path: str, oracle: Oracle) -> str | None:
    """The refused entry that dotted ``path`` falls under, unless an allowed one covers it."""
    parts = path.split(".")
    for entry in oracle.refuse:
        hit = (entry.lstrip(".") in parts[1:] or len(parts) == 1 and parts[0] == entry.lstrip(".")) \
            if entry.startswith(".") else _under(path, entry)
        if hit and not any(_under(path, a) for a in oracle.allow):
            return entry
    return None


def _name_of(entry: str) -> str:
    return entry.rsplit(".", 1)[-1]


@dataclass
class Unit:
    """One top-level statement: what it binds, what it reads, and its tree."""

    node: ast.AST
    binds: set[str]
    reads: set[str]
    where: str


def _free_globals(stmt: ast.AST) -> set[str]:
    """Global names a statement reads (in its own body or in the functions and classes it defines),
    builtins and the names it binds itself excluded: a function's parameters and locals are not globals."""
    try:
        table = symtable.symtable(ast.unparse(stmt), "<unit>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return set()
    found: set[str] = set()

    def walk(t: symtable.SymbolTable, top: bool) -> None:
        for s in t.get_symbols():
            if s.is_referenced() and (top or s.is_global()):
                found.add(s.get_name())
        for child in t.get_children():
            walk(child, False)

    walk(table, True)
    return {n for n in found if not hasattr(builtins, n)}


def _units(tree: ast.Module, where: str) -> list[Unit]:
    units = []
    for stmt in tree.body:
        binds: set[str] = set()
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            binds.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                binds.update(_targets(t))
        elif isinstance(stmt, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith | ast.If | ast.Try | ast.While):
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    binds.add(node.id)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    binds.add(node.name)
        for node in ast.walk(stmt):  # walrus anywhere binds at module level
            if isinstance(node, ast.NamedExpr):
                binds.update(_targets(node.target))
        units.append(Unit(stmt, binds, _free_globals(stmt), where))
    return units


def _is_docstring(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    return isinstance(parent, ast.Expr)


def _hits(unit: Unit, oracle: Oracle, aliases: Aliases) -> list[str]:
    """Why this statement uses the oracle (empty when it does not)."""
    found = []
    parents = {id(child): node for node in ast.walk(unit.node) for child in ast.iter_child_nodes(node)}
    dotted = {_name_of(e) for e in oracle.refuse if e.startswith(".")}
    spelled = dotted | {_name_of(e) for e in oracle.refuse if not e.startswith(".") and _distinctive(_name_of(e))}
    for node in ast.walk(unit.node):
        if isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Load):
            parent = parents.get(id(node))
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue  # the longest chain is what is used
            for path in sorted(aliases.resolve(node)):
                if (entry := matches(path, oracle)) is not None:
                    found.append(f"{path} (refused: {entry})")
            if isinstance(node, ast.Attribute):
                chain = node
                while isinstance(chain, ast.Attribute):
                    if chain.attr in dotted:
                        found.append(f".{chain.attr}")
                    chain = chain.value
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and not _is_docstring(node, parents):
            text = node.value.strip()
            if text.replace(".", "").replace("_", "").isalnum() and set(text.split(".")) & spelled:
                found.append(f"the string {text!r}")
    return found


@functools.lru_cache(maxsize=4096)
def _bindings(source: str) -> tuple[ast.AST, ...]:
    """The import and assignment nodes of a cell, anywhere in it (what :meth:`Aliases.learn` follows)."""
    tree = _parse(source)
    kinds = ast.Import | ast.ImportFrom | ast.Assign | ast.AnnAssign | ast.NamedExpr
    return tuple(n for n in ast.walk(tree) if isinstance(n, kinds)) if tree is not None else ()


@functools.lru_cache(maxsize=4096)
def _units_of(source: str, where: str) -> tuple[Unit, ...]:
    tree = _parse(source)
    return tuple(_units(tree, where)) if tree is not None else ()


def oracle_uses(answer: str, oracle: Oracle, student: list[str] = (), release: list[str] = ()) -> list[str]:
    """Why ``answer`` (an answer cell's source) uses its exercise's oracle; empty when it does not.

    ``student`` are the student's other code cells (added cells, other answers), ``release`` the release's
    own code cells that run in the kernel (set-up and demos, not tests). The result is what a person
    reviewing the exercise reads: the oracle, and each reference that names it.
    """
    if _parse(answer) is None:
        return []
    aliases = Aliases()
    aliases.learn([n for src in (answer, *student, *release) for n in _bindings(src)])
    chosen = list(_units_of(answer, "the answer"))
    own = set().union(*(u.binds for u in chosen))
    imported = set(aliases.names)
    needed = set().union(*(u.reads for u in chosen)) - own
    student_units = [u for i, src in enumerate(student) for u in _units_of(src, f"student cell {i + 1}")]
    release_units = [u for src in release for u in _units_of(src, "the release")]
    pending = student_units + release_units
    while True:
        added = [u for u in pending
                 if u.binds & needed or (u.where != "the release" and (u.reads - imported) & needed)]
        if not added:
            break
        for u in added:
            pending.remove(u)
            chosen.append(u)
            needed |= u.reads - own
    reasons = []
    for unit in chosen:
        for hit in _hits(unit, oracle, aliases):
            where = "" if unit.where == "the answer" else f" in {unit.where}, which the answer depends on"
            reasons.append(f"{hit}{where}")
    if not reasons:
        return []
    what = f"its oracle ({oracle.oracle})" if oracle.oracle else "its oracle"
    return [f"{what}: " + "; ".join(dict.fromkeys(reasons)) + (f" — {oracle.why}" if oracle.why else "")]


def problems(exercises: dict[str, list[str]], path: Path = DECLARATIONS) -> list[str]:
    """What is wrong with the declarations, given each chapter's exercises (empty when nothing is):
    an exercise without one, a declaration of no exercise, or a file that cannot be read."""
    try:
        declared = load(path)
    except DeclarationError as err:
        return [str(err)]
    wanted = {(ch, ex) for ch, exs in exercises.items() for ex in exs}
    found = [f"{path.name}: exercise {ch}/{ex} declares no oracle (add a [{ch}.{ex}] table)"
             for ch, ex in sorted(wanted - set(declared))]
    found += [f"{path.name}: [{ch}.{ex}] declares the oracle of no exercise"
              for ch, ex in sorted(set(declared) - wanted)]
    found += [f"{path.name}: [{ch}.{ex}] needs both 'oracle' and 'why'"
              for (ch, ex), o in sorted(declared.items()) if not (o.oracle and o.why)]
    return found


def markdown(path: Path = DECLARATIONS, shown: int = 5) -> str:
    """The Instructors' guide's table of what each exercise's answer may not use (``python
    autograder/core/oracles.py`` prints it): the first ``shown`` refused names of each exercise; ``oracles.toml``
    lists them all."""
    lines = ["| exercise | checked against | the answer may not use | operators refused at run time | why |",
             "|---|---|---|---|---|"]
    for (chapter, exercise), o in sorted(load(path).items()):
        refused = ", ".join(f"`{e}`" for e in o.refuse[:shown]) or "(no library computes it in one call)"
        if len(o.refuse) > shown:
            refused += f" and {len(o.refuse) - shown} more"
        allowed = f" (allowed: {', '.join(f'`{a}`' for a in o.allow)})" if o.allow else ""
        operators = ", ".join(f"`{p}`" for p in o.operators) or "—"
        lines.append(f"| {chapter[:2]} `{exercise}` | {o.oracle} | {refused}{allowed} | {operators} | {o.why} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python autograder/core/oracles.py: the Instructors' guide's table of oracles
    import sys

    sys.path.insert(0, str(HERE.parents[1]))  # the repository, for `autograder.core.flags`
    print(markdown(), end="")
