"""Rewiring found by reading a student's source (AST): assignments to, and setattr/delattr on, the names under
which answer cells reach the libraries and the checks. :mod:`flags` uses it; it imports nothing of nbgrader,
so the grader starts without it."""

import functools

# Names under which answer cells reach the libraries and the checks. Rebinding one of these names, writing
# to an attribute reached through one (``torch.allclose = ...``, ``checks.assert_close = ...``), or calling
# setattr/delattr on one rewires what the tests compute with.
GUARDED_ROOTS = {"torch", "np", "numpy", "F", "nn", "checks", "dlcourse", "builtins", "sys", "math"}
ALWAYS_GUARDED = {"checks", "dlcourse", "builtins"}  # any depth
GUARDED_MODULES = {"torch", "numpy", "dlcourse", "builtins", "sys", "math"}
SETTINGS_PREFIXES = ("torch.backends.",)  # legitimate settings a student may change
# The kernel itself: input transformers rewrite later cells (test cells included), events run code around them.
KERNEL_HOOKS = {"get_ipython", "input_transformers_cleanup", "input_transformers_post", "ast_transformers",
                "register_magic_function", "set_custom_exc", "showtraceback", "run_cell"}
NAMESPACE_CALLS = {"globals", "vars", "locals"}


def _dotted(node) -> str | None:
    import ast

    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Subscript):  # sys.modules["torch"] = ...
        return _dotted(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NAMESPACE_CALLS:
        parts.append(f"{node.func.id}()")
        return ".".join(reversed(parts))
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _bound_names(target) -> list:
    import ast

    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for t in target.elts for n in _bound_names(t)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def tampering(source: str) -> list[str]:
    """What in ``source`` rewires torch, NumPy, builtins, the checks or the kernel (empty when nothing does)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the kernel reports it
    guarded, always = set(GUARDED_ROOTS), set(ALWAYS_GUARDED)
    found = []
    # Aliases: `import torch as t`, `from dlcourse import checks as c`, `t2 = torch`, `f = torch.nn.functional`.
    for _ in range(2):  # two passes let an alias of an alias be found
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                module = getattr(node, "module", None) or ""
                for alias in node.names:
                    full = f"{module}.{alias.name}" if module else alias.name
                    bound = alias.asname or alias.name.split(".")[0]
                    if full.split(".")[0] in GUARDED_MODULES:
                        guarded.add(bound)
                        if full.split(".")[0] in ALWAYS_GUARDED or alias.name in ALWAYS_GUARDED:
                            always.add(bound)
            elif isinstance(node, ast.Assign) and (name := _dotted(node.value)) and name.split(".")[0] in guarded:
                for target in node.targets:
                    for n in _bound_names(target):
                        guarded.add(n.id)
                        if name.split(".")[0] in always:
                            always.add(n.id)
    for node in ast.walk(tree):
        # rebinding a name the tests use: `checks = Fake()`, `import fake as checks`, `def F(): ...`
        rebound = []
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = _dotted(node.value) if getattr(node, "value", None) is not None else None
            if not (value and value.split(".")[0] in GUARDED_MODULES | ALWAYS_GUARDED):
                rebound = [n.id for t in targets for n in _bound_names(t)]
        elif isinstance(node, ast.For | ast.AsyncFor | ast.NamedExpr):
            rebound = [n.id for n in _bound_names(node.target)]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            rebound = [n.id for n in _bound_names(node.optional_vars)]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            rebound = [node.name]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            module = getattr(node, "module", None) or ""
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                bound = alias.asname or alias.name.split(".")[0]
                if bound in GUARDED_ROOTS and full.split(".")[0] not in GUARDED_MODULES:
                    rebound.append(bound)
                if full == "builtins" or module == "builtins":
                    found.append("import builtins")
        found += [f"rebinding of the name {n!r}" for n in rebound if n in GUARDED_ROOTS]
        # kernel hooks: get_ipython().input_transformers_cleanup.append(...), ip.events.register(...)
        if isinstance(node, ast.Name) and node.id in KERNEL_HOOKS or isinstance(node, ast.Attribute) \
                and node.attr in KERNEL_HOOKS:
            found.append(f"use of {getattr(node, 'id', None) or node.attr}")
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                full = getattr(node, "module", None) or alias.name
                if full.split(".")[0] in {"ipykernel", "ctypes", "gc"} or full == "IPython" or \
                        full.startswith(("IPython.core", "IPython.terminal")):
                    found.append(f"import of {full}")
        # writes through namespaces: vars(torch)["softmax"] = ..., globals().update(...), f.__code__ = ...
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in {
                "update", "setdefault", "pop", "__setitem__", "__delitem__", "clear"}:
            base = _dotted(node.func.value)
            if base and (base.endswith("()") or base.endswith("__dict__")):
                found.append(f"{base}.{node.func.attr}(...)")
        targets = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in {"setattr", "delattr"} and node.args):
            name = _dotted(node.args[0])
            if name and name.split(".")[0] in guarded:
                found.append(f"{node.func.id}({name}, ...)")
            continue
        for target in targets:
            if not isinstance(target, ast.Attribute | ast.Subscript):
                continue
            if isinstance(target, ast.Attribute) and target.attr.startswith("__") and target.attr.endswith("__"):
                found.append(f"assignment to {_dotted(target) or '…'} (a {target.attr} attribute)")
                continue
            name = _dotted(target)
            if not name:
                continue
            if name.split(".")[0].endswith("()") or "__dict__" in name.split("."):
                found.append(f"assignment through {name}")
                continue
            if "." not in name and not isinstance(target, ast.Subscript):
                continue
            root = name.split(".")[0]
            if root in always or (root in guarded and not name.startswith(SETTINGS_PREFIXES)):
                found.append(f"assignment to {name}")
    return sorted(set(found))


# ----------------------------------------------------------------------------------------------- monkeypatching
# What a name stands for, when it is a module, or a class or function taken from one: "gan" → "dlcourse.gan.train"
# after the set-up cell's `from dlcourse.gan import train as gan`. Anything bound by a call (an instance) is not.
Imported = dict[str, str]

# Assignments under these (resolved) names are settings, not rewiring.
SETTINGS = ("torch.backends.", "matplotlib.rcParams", "matplotlib.pyplot.rcParams", "os.environ", "pandas.options.",
            "numpy.set_printoptions", "warnings.filters", "logging.")
# Methods that change a container in place: called on a module's attribute they rewrite what it holds.
MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove", "add",
            "discard", "__setitem__", "__delitem__", "__ior__"}


def _resolve(node, names: Imported) -> str | None:
    """The dotted name ``node`` stands for when it reaches an imported module, class or function (else None):
    ``gan.toy_gan`` → ``dlcourse.gan.train.toy_gan``, ``getattr(t, "load")``, ``type(torch.zeros(1))`` → ``type(…)``."""
    import ast

    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, names)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript):
        base = _resolve(node.value, names)
        return f"{base}[]" if base else None
    if isinstance(node, ast.NamedExpr):
        return _resolve(node.value, names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and \
                isinstance(node.args[1].value, str):
            base = _resolve(node.args[0], names)
            return f"{base}.{node.args[1].value}" if base else None
        if node.func.id == "type" and len(node.args) == 1:
            return f"type({ast.unparse(node.args[0])[:40]})"
    return None


def _scope_nodes(body: list):
    """Every node of ``body`` that belongs to its own scope: nested functions, classes and lambdas contribute their
    name (and decorators, defaults, bases) but not their bodies."""
    import ast

    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            todo += node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
        elif isinstance(node, ast.ClassDef):
            todo += node.decorator_list + node.bases + [k.value for k in node.keywords]
        elif isinstance(node, ast.Lambda):
            todo += node.args.defaults
        else:
            todo += ast.iter_child_nodes(node)


def _local_names(func) -> set[str]:
    """The names a function or class body binds itself: its parameters and what it assigns or imports."""
    import ast

    args = func.args if isinstance(getattr(func, "args", None), ast.arguments) else None
    found = set()
    if args is not None:
        found |= {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        found |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared_global = set()
    for node in _scope_nodes(func.body):
        if isinstance(node, ast.Global | ast.Nonlocal):
            declared_global |= set(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
    return found - declared_global


class _Patches:
    """Reads statements in order, tracking which names stand for imported things, and notes every write into one."""

    def __init__(self, names: Imported) -> None:
        self.names = dict(names)
        self.found: list[str] = []

    # bindings --------------------------------------------------------------------------------------------------
    def bind(self, target, value) -> None:
        import ast

        if isinstance(target, ast.Name):
            what = _resolve(value, self.names) if value is not None else None
            if what:
                self.names[target.id] = what
            else:
                self.names.pop(target.id, None)
        elif isinstance(target, ast.Tuple | ast.List):
            values = value.elts if isinstance(value, ast.Tuple | ast.List) and \
                len(value.elts) == len(target.elts) else [None] * len(target.elts)
            for t, v in zip(target.elts, values, strict=True):
                self.bind(t, v)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None)

    def imports(self, node) -> None:
        import ast

        module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
        for alias in node.names:
            if isinstance(node, ast.ImportFrom):
                self.names[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
            elif alias.asname:
                self.names[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.names[root] = root

    # writes ----------------------------------------------------------------------------------------------------
    def note(self, what: str, how: str) -> None:
        if not what.startswith(SETTINGS):
            self.found.append(f"monkeypatching: {how} {what} (a module, or a class or function imported from one)")

    def written(self, target) -> None:
        import ast

        if isinstance(target, ast.Tuple | ast.List):
            for t in target.elts:
                self.written(t)
            return
        if isinstance(target, ast.Starred):
            self.written(target.value)
            return
        if not isinstance(target, ast.Attribute | ast.Subscript):
            return
        chain, node = [], target
        while isinstance(node, ast.Attribute | ast.Subscript):
            if isinstance(node, ast.Attribute):
                chain.append(node.attr)
            node = node.value
        if any(a.startswith("__") and a.endswith("__") for a in chain):
            self.found.append(f"monkeypatching: assignment through {ast.unparse(target)[:60]} (a special attribute)")
            return
        what = _resolve(target, self.names)
        if what:
            self.note(what, "assignment to")

    def expression(self, node) -> None:
        """Calls in ``node`` that write into an imported object: setattr/delattr on one, a mutating method of one's
        attribute, a global module hook."""
        import ast

        for call in ast.walk(node):
            if isinstance(call, ast.NamedExpr):  # `(m := torch).x = …`: m now stands for torch
                self.bind(call.target, call.value)
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and call.args:
                what = _resolve(call.args[0], self.names)
                if what:
                    self.note(what, f"{func.id} on")
            elif isinstance(func, ast.Attribute) and func.attr in MUTATORS:
                what = _resolve(func.value, self.names)
                if what and ("." in what or what.endswith("[]")):
                    self.note(what, f".{func.attr}(…) on")
            resolved = _resolve(func, self.names) or ""
            if "register_module_" in resolved:  # torch.nn.modules.module.register_module_forward_hook
                self.found.append(f"monkeypatching: a hook on every module ({resolved})")

    # statements ------------------------------------------------------------------------------------------------
    def block(self, body: list) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt) -> None:  # noqa: C901 - one case per kind of statement
        import ast

        if isinstance(stmt, ast.Import | ast.ImportFrom):
            self.imports(stmt)
        elif isinstance(stmt, ast.Assign):
            self.expression(stmt.value)
            for target in stmt.targets:
                self.expression(target)
                self.written(target)
            for target in stmt.targets:
                self.bind(target, stmt.value)
        elif isinstance(stmt, ast.AugAssign | ast.AnnAssign):
            if stmt.value is not None:
                self.expression(stmt.value)
                self.written(stmt.target)
            if isinstance(stmt, ast.AnnAssign):
                self.bind(stmt.target, stmt.value)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                self.written(target)
                self.bind(target, None)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for deco in stmt.decorator_list:
                self.expression(deco)
            if isinstance(stmt, ast.ClassDef):
                for base in stmt.bases + [k.value for k in stmt.keywords]:
                    self.expression(base)
            local = _local_names(stmt)
            inner = _Patches({k: v for k, v in self.names.items() if k not in local})
            inner.block(stmt.body)
            self.found += inner.found
            self.names.pop(stmt.name, None)
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            self.expression(stmt.iter)
            item = stmt.iter.elts[0] if isinstance(stmt.iter, ast.Tuple | ast.List) and stmt.iter.elts and \
                any(_resolve(e, self.names) for e in stmt.iter.elts) else None
            if item is not None:  # `for m in (torch, np):` — m is each of them
                item = next(e for e in stmt.iter.elts if _resolve(e, self.names))
            self.bind(stmt.target, item)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                self.expression(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, None)
            self.block(stmt.body)
        elif isinstance(stmt, ast.If | ast.While):
            self.expression(stmt.test)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.Try | getattr(ast, "TryStar", ast.Try)):
            self.block(stmt.body)
            for handler in stmt.handlers:
                if handler.name:
                    self.names.pop(handler.name, None)
                self.block(handler.body)
            self.block(stmt.orelse)
            self.block(stmt.finalbody)
        elif isinstance(stmt, ast.Match):
            self.expression(stmt.subject)
            for case in stmt.cases:
                self.block(case.body)
        else:
            self.expression(stmt)


@functools.lru_cache(maxsize=4096)
def _tree(source: str):
    """``source`` parsed (cached: every submission of a chapter has the same release cells; never mutated)."""
    import ast

    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None


def parses(source: str) -> bool:
    """Whether ``source`` is Python as it stands (no magics, no syntax error)."""
    return _tree(source) is not None


@functools.lru_cache(maxsize=8192)
def _read(source: str, names: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    tree = _tree(source)
    if tree is None:
        return (), names
    reader = _Patches(dict(names))
    reader.block(tree.body)
    return tuple(sorted(dict.fromkeys(reader.found))), tuple(sorted(reader.names.items()))


def patches(source: str, names: Imported) -> list[str]:
    """Writes into an imported module, class or function in ``source`` (Python, magics already turned into it):
    ``gan.toy_gan = …``, ``setattr(t5, …)``, ``type(x).forward = …``, ``checks._ORIGINALS.clear()``, whatever the
    module. ``names``: what the names the source starts with stand for (the cells run before it)."""
    return list(_read(source, tuple(sorted(names.items())))[0])


def bindings_after(source: str, names: Imported) -> Imported:
    """``names`` updated by what ``source``'s top level binds (imports and aliases added, other bindings removed)."""
    return dict(_read(source, tuple(sorted(names.items())))[1])
