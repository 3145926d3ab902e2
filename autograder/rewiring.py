"""Rewiring found by reading a student's source (AST): assignments to, and setattr/delattr on, the names under
which answer cells reach the libraries and the checks. :mod:`flags` uses it; it imports nothing of nbgrader,
so the grader starts without it."""

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
