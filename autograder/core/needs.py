"""Which of a chapter's cells grading has to run, and which it may leave out.

Most of a chapter's code cells are demos: a training run, a widget, a figure. No test reads what they make,
yet running them is most of what grading one submission costs. This module decides, from the sources
alone, which release cells a graded thing can depend on:

* always run: the set-up cell and every other code cell nbgrader knows by a grade id, every answer cell,
  every cell the student added, and every cell an instructor tagged ``grading-run`` in ``solutions/``;
* then, walking back from the last cell, a release cell runs when
  - it binds a name that something run later reads (a test, an answer, another cell that runs), from the
    binding that reaches it: a name bound again for certain in between (a top-level assignment or def) cuts
    the chain; what an answer, or a function of a cell that runs, reads is wanted wherever it is bound,
    since a test may call it at any later moment;
  - it may change such a value in place (``x[0] = 1``, ``model.eval()``, ``train(model)``), directly or
    through a value built from it (an optimizer over the model's parameters, ``m = model``), or through a
    function of the notebook's that assigns it as a global — modules, functions and classes excepted, and
    the set-up cell's values (``device``) unless graded code reads them;
  - it changes the process's global state (:data:`GLOBAL_STATE`: the global random seed, the default dtype
    or device, autograd's switch);
  - it cannot be read: a syntax error, ``exec``, ``globals()``, ``import *``, a cell magic
    (:data:`OPAQUE`) — then everything before it runs too;
* every other release cell is left out.

What it does not see: state a helper changes behind a call (``runtime.seed_everything(0)``, an environment
variable), random numbers a skipped cell would have drawn from the global generator. The chapters pass
explicit generators to everything graded, and the proof below would show a difference.

``make release`` writes the decision into the student's notebook as cell metadata
(``{"dlcourse": {"grading": "skip"}}``, :class:`MarkSkippable`), computed with the reference answers and the
hidden tests. When a submission is graded, :func:`needed` runs again over the student's own cells: a cell
the release marks as skippable still runs if the student's code reads what it binds. The test suite grades
every chapter with the marked cells left out and with every cell run, for the reference answers and for
every planted wrong answer, and requires the same verdicts.

A name counts as read when any scope of the cell mentions it as a global (a function body's reads count:
the function may be called by a test). Names a cell both reads and binds count as read too.
"""

from __future__ import annotations

import ast
import builtins
import functools
import symtable
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

KEY = "dlcourse"        # the cell metadata key the release writes
SKIP = "skip"           # metadata[KEY]["grading"] of a cell grading may leave out
RUN_TAG = "grading-run"  # an instructor's tag in solutions/: always run this cell when grading

# Names through which a cell reaches what no analysis of its source can see (a cell using one is kept, with
# everything before it). IPython's cell magics (`%%capture`, `%run`) become `get_ipython()` calls.
OPAQUE = frozenset({"exec", "eval", "globals", "vars", "locals", "get_ipython", "__import__", "compile"})

SAFE_MAGICS = frozenset({"matplotlib", "config", "precision", "pprint", "time", "timeit", "who", "whos", "pinfo",
                         "pdoc", "xmode", "lsmagic"})

# Calls that change state every later cell of the process sees. `torch.set_num_threads` is not one of them: the
# tolerances hold for one thread and for two (tests/test_pipeline_chapters.py grades with both).
GLOBAL_STATE = frozenset({
    "manual_seed", "seed", "set_rng_state", "set_default_dtype", "set_default_device", "set_default_tensor_type",
    "set_grad_enabled", "use_deterministic_algorithms", "set_printoptions", "set_flush_denormal",
})


@dataclass(frozen=True)
class Names:
    """What one code cell binds, reads and may change."""

    binds: frozenset[str]    # bound at the top level, or changed in place there (`x[0] = 1`, `x.a = 2`)
    kills: frozenset[str]    # of binds: bound for certain (a top-level assignment, def, class or import)
    reads: frozenset[str]    # global names read by any scope of the cell
    changes: frozenset[str]  # global names it may change in place: `x.m(...)`, `f(x)`, `x[0] = 1`
    inert: frozenset[str]    # of binds: modules, functions and classes
    imports: frozenset[str]  # of binds: modules and names imported
    state: frozenset[str]    # roots of its calls to GLOBAL_STATE (`torch` for `torch.manual_seed(0)`)
    sets: frozenset[str] = frozenset()  # globals its functions assign (`global W`): what calling them changes
    known: bool = True       # False: the cell could not be read (a syntax error, exec, a cell magic)


UNKNOWN = Names(*(frozenset(),) * 7, known=False)


@functools.lru_cache(maxsize=4096)  # a release's cells are read again for every submission
def names(source: str) -> Names:
    """The :class:`Names` of one code cell (IPython magics and shell escapes read as the calls they become)."""
    from autograder.core.flags import to_python

    python, _ = to_python(source)
    try:
        tree = ast.parse(python)
        table = symtable.symtable(python, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return UNKNOWN
    binds, reads, imports = set(), set(), set()
    for sym in table.get_symbols():
        if sym.is_assigned() or sym.is_imported():
            binds.add(sym.get_name())
        if sym.is_imported():
            imports.add(sym.get_name())
        if sym.is_referenced():
            reads.add(sym.get_name())
    local: set[str] = set()  # names some function or class body binds for itself
    sets: set[str] = set()

    def walk(t: symtable.SymbolTable) -> None:
        for child in t.get_children():
            for sym in child.get_symbols():
                if sym.is_global() and sym.is_referenced():
                    reads.add(sym.get_name())
                if sym.is_declared_global() and sym.is_assigned():
                    binds.add(sym.get_name())
                    sets.add(sym.get_name())
                if sym.is_local():
                    local.add(sym.get_name())
            walk(child)

    walk(table)
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    binds |= defs
    values = {name for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)
              for name in _target(n)}
    # A top-level `from m import x` binds x for certain; `import m` binds the module object there already was,
    # changes made to it before included, so it cuts no chain.
    kills = set(defs) | {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            kills |= {n.id for t in targets for n in _plain_targets(t)}
    changes, state = set(), set()
    opaque = False  # it reaches names the analysis cannot see: exec, globals(), a cell magic, `import *`
    harmless = {id(n.func.value.func) for n in ast.walk(tree) if _safe_magic(n)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in OPAQUE and id(node) not in harmless \
                or isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            opaque = True
        if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            root = _root(node)
            if root is not None:
                binds.add(root)
                changes.add(root)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                root = _root(node.func.value)
                if root is not None:
                    changes.add(root)
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                arg = arg.value if isinstance(arg, ast.Starred) else arg
                if isinstance(arg, ast.Name):
                    changes.add(arg.id)
            if isinstance(node.func, ast.Name):  # a function of the notebook's may change what it reads
                changes.add(node.func.id)
            chain = _chain(node.func)
            if chain and chain[-1] in GLOBAL_STATE:
                state.add(chain[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            changes |= {_root(d) for d in node.decorator_list} - {None}  # `@register` changes the registry
    changes -= local - (reads | binds)
    reads -= {n for n in reads if hasattr(builtins, n) and n not in binds}
    inert = (defs | imports) - values
    if opaque:
        return UNKNOWN
    return Names(frozenset(binds), frozenset(kills & binds - (changes - kills)), frozenset(reads),
                 frozenset(changes & (reads | binds)), frozenset(inert), frozenset(imports), frozenset(state),
                 frozenset(sets))


def _safe_magic(node: ast.AST) -> bool:
    """``get_ipython().run_line_magic("matplotlib", ...)``: a line magic that binds and changes no name."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run_line_magic" and isinstance(node.func.value, ast.Call)
            and isinstance(node.func.value.func, ast.Name) and node.func.value.func.id == "get_ipython"
            and bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value in SAFE_MAGICS)


def _target(node: ast.AST) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _plain_targets(target: ast.AST) -> list[ast.Name]:
    """The names an assignment target binds as a whole (`a`, `a, b`), not those it changes (`a[0]`, `a.b`)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for elt in target.elts for n in _plain_targets(elt.value if isinstance(elt, ast.Starred) else elt)]
    return []


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Subscript | ast.Attribute | ast.Call):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else None


def _chain(func: ast.AST) -> list[str]:
    """``torch.cuda.manual_seed`` → ["torch", "cuda", "manual_seed"]; [] for anything but names and dots."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    return [func.id, *reversed(parts)] if isinstance(func, ast.Name) else []


@dataclass(frozen=True)
class Cell:
    """One code cell as :func:`needed` sees it."""

    source: str
    runs: bool          # always run (set-up, answer, the student's own, tagged)
    test: bool = False  # a test cell: run by the grader, never in the kernel; what it reads is needed
    setup: bool = False  # the set-up cell: the values it binds (device, a vocabulary) are taken as constants


def needed(cells: Sequence[Cell]) -> list[bool]:
    """For each cell, whether grading has to run it (or, for a test, read it: always True)."""
    parsed = [_test_names(c.source) if c.test else names(c.source) for c in cells]
    unknown = [i for i, n in enumerate(parsed) if not n.known]
    if unknown:  # an unreadable cell may read anything: keep it and everything before it
        return [True] * (unknown[-1] + 1) + needed(cells[unknown[-1] + 1:])
    # Test cells run in the grader: what they bind or change there is not the kernel's.
    kernel = [n for c, n in zip(cells, parsed, strict=True) if not c.test]
    inert, imported = _inert(kernel), set().union(*(n.imports for n in kernel))
    # What graded code reads is never taken as a constant, even when the set-up cell binds it.
    graded = set().union(*(n.reads for c, n in zip(cells, parsed, strict=True) if c.test or c.runs and not c.setup))
    constants = set().union(*(n.binds - n.inert for c, n in zip(cells, parsed, strict=True) if c.setup)) - graded
    aliases = _aliases(kernel, inert)
    # An answer's functions run whenever a test calls them, and read the globals of that moment: what any answer
    # (or other cell that always runs) reads is wanted before and after it, whichever binding it was; so is
    # what a function or class of a kept cell reads. Not what is only ever imported (importing it again gives
    # the object there already was), nor what the cell itself defines or imports by name.
    only_imported = imported - set().union(*(n.binds - n.imports for n in kernel))

    def own_reads(n: Names) -> frozenset[str]:
        return n.reads - (n.kills & n.inert)

    everywhere = set().union(*(own_reads(n) for c, n in zip(cells, parsed, strict=True) if c.runs and not c.setup))
    everywhere -= only_imported
    while True:
        keep, wanted = [False] * len(cells), set(everywhere)  # wanted: what a kept cell after this one reads
        for i in range(len(cells) - 1, -1, -1):
            cell, n = cells[i], parsed[i]
            changed = _closure(n.changes, aliases)
            keep[i] = (cell.runs or cell.test or bool(n.state & imported) or bool(n.binds & wanted)
                       or bool((changed & wanted) - inert - constants))
            if keep[i]:
                wanted = (wanted - n.kills) | own_reads(n) | everywhere
        helpers = set().union(*(own_reads(n) for k, c, n in zip(keep, cells, parsed, strict=True)
                                if k and not c.test and n.inert - n.imports)) - only_imported
        if helpers <= everywhere:
            return keep
        everywhere |= helpers


def _aliases(parsed: Iterable[Names], inert: set[str]) -> dict[str, set[str]]:
    """name → what changing it may change too: for a value, the values its cells built it from (``opt`` made
    from ``model``, ``m = model``); for a function, the globals its body assigns (calling ``init`` that sets
    ``W`` changes ``W``). Never through a class or a module: changing an instance changes not its class."""
    out: dict[str, set[str]] = {}
    for n in parsed:
        for name in n.binds - n.imports:
            out.setdefault(name, set()).update(n.sets if name in inert else (n.reads - inert) - {name})
    return out


def _closure(names_: frozenset[str], aliases: dict[str, set[str]]) -> set[str]:
    seen, todo = set(names_), list(names_)
    while todo:
        for other in aliases.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


@functools.lru_cache(maxsize=4096)
def _test_names(source: str) -> Names:
    """A test cell reads from the kernel exactly the names the grader fetches for it (:func:`trusted.free_names`)."""
    from autograder.core.trusted import free_names

    try:
        return Names(*(frozenset(),) * 2, frozenset(free_names(source)), *(frozenset(),) * 4)
    except SyntaxError:
        return UNKNOWN


def _inert(parsed: Iterable[Names]) -> set[str]:
    """Names that are modules, functions or classes wherever they are bound."""
    inert, values = set(), set()
    for n in parsed:
        inert |= n.inert
        values |= n.binds - n.inert
    return inert - values


# ------------------------------------------------------------------------------------ the release's metadata


def _nbgrader(cell) -> dict:  # noqa: ANN001 - a notebook cell
    return cell.get("metadata", {}).get("nbgrader", {})


def release_cells(nb) -> list[tuple[int, Cell]]:  # noqa: ANN001 - a notebook
    """The code cells of a source notebook (reference answers and hidden tests in) as :class:`Cell` s."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = _nbgrader(cell)
        test = bool(meta.get("grade")) and not meta.get("solution")
        runs = bool(meta.get("grade_id")) and not test or RUN_TAG in cell.get("metadata", {}).get("tags", [])
        out.append((i, Cell(cell.source, runs=runs, test=test, setup=bool(meta.get("locked")) and runs)))
    return out


def skippable(nb) -> set[int]:  # noqa: ANN001 - a notebook
    """Indices of the source notebook's cells that grading may leave out."""
    cells = release_cells(nb)
    keep = needed([c for _, c in cells])
    return {i for (i, _), k in zip(cells, keep, strict=True) if not k}


def marked_skip(cell) -> bool:  # noqa: ANN001 - a notebook cell
    """Whether the release marks ``cell`` as one grading may leave out."""
    return cell.get("metadata", {}).get(KEY, {}).get("grading") == SKIP
