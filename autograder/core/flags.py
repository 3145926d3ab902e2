"""Escape hatches in a student's cell, found by reading its source (AST) in the grader.

A cell that reaches for introspection or rewiring primitives is not run; the exercise it belongs to scores
0 and is listed for manual review with the reason. The comparisons already happen outside the student's
process, so these primitives can no longer change a comparison — but they could still fake what the
kernel sends back (a guard escaped, a call log written by hand), so an answer that uses them is not trusted.
Honest answers in this course need none of them.
"""

from __future__ import annotations

import ast
import functools
import sys
import types

from autograder.core.rewiring import Imported, _resolve, bindings_after, patches, tampering

# Modules whose import alone is an escape hatch (or a way out of the sandbox's rules).
MODULES = {
    "ctypes", "gc", "importlib", "imp", "threading", "_thread", "multiprocessing", "concurrent", "subprocess",
    "signal", "inspect", "builtins", "__builtin__", "atexit", "asyncio", "socket", "pty", "code",
    "codeop", "marshal", "pickle", "dill", "cloudpickle", "weakref", "ipykernel", "IPython", "traitlets",
    "zmq", "tornado", "jupyter_client", "faulthandler", "tracemalloc", "sched", "selectors", "mmap", "resource",
    # code that arrives as data, or is loaded from a file or an archive
    "_pickle", "shelve", "copyreg", "copy_reg", "joblib", "runpy", "zipimport", "pkgutil", "cffi", "site", "dbm",
}
# Modules that other modules hold as attributes (`os.sys`, `torch.serialization.pickle`): reaching one through an
# attribute is an escape hatch too, whatever the route.
# (Names an honest answer may give an attribute of its own, such as `signal`, are left to the walk through the
# grader's own modules below, which sees a module whatever the attribute holding it is called.)
MODULE_ATTRIBUTES = {"sys", "builtins", "importlib", "gc", "ctypes", "inspect", "marshal", "pickle", "_pickle", "dill",
                     "cloudpickle", "subprocess", "threading", "_thread", "multiprocessing", "atexit",
                     "faulthandler", "runpy", "zipimport", "copyreg", "shelve", "pty", "socket", "pkgutil", "joblib"}
# Library functions and modules that run code stored in data (pickles, TorchScript archives, packages) or compile it.
CODE_FROM_DATA = ("torch.jit.load", "torch.jit._serialization", "torch.package", "torch.hub", "torch.serialization",
                  "torch.utils.cpp_extension", "torch.utils.model_zoo", "torch._C", "pandas.read_pickle",
                  "pandas.io.pickle", "numpy.lib.format", "yaml.load", "yaml.unsafe_load", "yaml.full_load",
                  "yaml.unsafe_load_all", "yaml.load_all", "scipy.io.loadmat")
# What the release's set-up cells usually bind, for a cell read on its own (no notebook around it).
USUAL_NAMES: Imported = {"torch": "torch", "np": "numpy", "numpy": "numpy", "F": "torch.nn.functional",
                         "nn": "torch.nn", "checks": "dlcourse.checks", "dlcourse": "dlcourse", "math": "math"}
# What an answer may read from ``sys`` (printing to the standard streams, the interpreter's original ones
# too, float limits); anything else of it is flagged.
SYS_ALLOWED = {"stdout", "stderr", "__stdout__", "__stderr__", "float_info", "maxsize", "version_info", "platform",
               "getsizeof"}
# Attribute lookups by name, when the name is computed (or the lookup function is passed around) could
# reach anything, so only literal names are trusted.
LOOKUPS = {"getattr", "setattr", "delattr", "hasattr"}
NAMED_LOOKUPS = {"attrgetter", "methodcaller"}
# Names whose use is an escape hatch wherever it appears.
NAMES = {
    "__import__", "exec", "eval", "compile", "globals", "locals", "vars", "breakpoint", "get_ipython",
    "__builtins__", "__loader__", "__spec__", "quit", "exit",
}
# Attributes that reach into interpreters, frames, code objects or torch's dispatch machinery.
ATTRIBUTES = {
    "__code__", "__globals__", "__builtins__", "__dict__", "__subclasses__", "__bases__", "__mro__",
    "__closure__", "__func__", "__self__", "__wrapped__", "__getattribute__", "__getattr__", "__setattr__",
    "__delattr__",
    "__defaults__", "__kwdefaults__", "__reduce__", "__reduce_ex__", "__import__", "__loader__", "__spec__",
    "__torch_function__", "__torch_dispatch__", "__set_name__", "__init_subclass__", "__class_getitem__",
    "f_globals", "f_locals", "f_back", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "co_code",
    "_C", "_disable_current_modes", "DisableTorchFunction", "DisableTorchFunctionSubclass", "_python_dispatch",
    "TorchFunctionMode", "TorchDispatchMode", "_dynamo", "library", "_ops", "overrides", "_exit", "kill", "killpg",
    "fork", "forkpty", "system", "popen", "spawnl", "spawnv", "execv", "execve", "execl", "execvp", "setrlimit",
    "meta_path", "path_hooks", "settrace", "setprofile", "_getframe", "addaudithook",
    "input_transformers_cleanup", "input_transformers_post", "ast_transformers", "events", "register_magic_function",
    "set_custom_exc", "user_ns", "user_global_ns", "run_cell", "run_line_magic", "run_cell_magic", "shell",
    # objects made from code or bytes: a function or module built by hand
    "CodeType", "FunctionType", "LambdaType", "ModuleType", "CellType",
}
# Class methods that make an object take part in torch's dispatch (a Tensor subclass that defers a call).
METHODS = {"__torch_function__", "__torch_dispatch__", "__del__", "__getattribute__", "__init_subclass__"}
# Magics an answer may use harmlessly.
SAFE_MAGICS = {"time", "timeit", "matplotlib", "config", "precision"}


def _magic_free(line: str) -> str | None:
    """A safe magic line as the Python it runs (the timed statement), or None when it is not one."""
    indent = line[:len(line) - len(line.lstrip())]
    words = line.lstrip().lstrip("%").split(" ")
    if not line.lstrip().startswith("%") or words[0] not in SAFE_MAGICS:
        return None
    if words[0] not in ("time", "timeit"):
        return indent + "pass"
    rest = words[1:]
    while rest and (rest[0].startswith("-") or not rest[0]):  # timeit's options: -n 10, -r3, -q, -o
        option = rest.pop(0)
        if option in ("-n", "-r", "-p") and rest:
            rest.pop(0)
    return indent + (" ".join(rest) or "pass")


def to_python(source: str) -> tuple[str, list[str]]:
    """The cell as Python (IPython's own transforms), and the magics and shell escapes it uses.

    The few safe magics (timing, plotting, display precision) are replaced by the code they run, so a
    timed statement is read like any other line and ``%time`` alone never flags an honest answer.
    """
    python, found = _to_python(source)
    return python, list(found)


@functools.lru_cache(maxsize=4096)
def _to_python(source: str) -> tuple[str, tuple[str, ...]]:
    """The cell as Python (IPython's own transforms), and the magics and shell escapes it uses.

    The few safe magics (timing, plotting, display precision) are replaced by the code they run, so a
    timed statement is read like any other line and ``%time`` alone never flags an honest answer.
    """
    from IPython.core.inputtransformer2 import TransformerManager

    found, lines = [], []
    for line in source.splitlines():
        python = _magic_free(line)
        stripped = line.lstrip()
        if python is not None:
            lines.append(python)
            continue
        if stripped.startswith("!") or stripped.startswith("%"):
            what = "shell command or cell magic" if stripped.startswith(("!", "%%")) else "magic"
            found.append(f"{what}: {stripped[:40]!r}")
        lines.append(line)
    try:
        return TransformerManager().transform_cell("\n".join(lines) + "\n"), tuple(found)
    except Exception:  # noqa: BLE001 - IPython refuses it: the kernel will report the syntax error
        return source, tuple(found)


def _sys_uses(tree: ast.AST) -> list[str]:
    """``sys`` beyond :data:`SYS_ALLOWED`: its modules table, hooks, frames, or the module passed around."""
    found = []
    read = set()  # the `sys` names read as `sys.<attribute>`
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sys":
            read.add(id(node.value))
            if node.attr not in SYS_ALLOWED:
                found.append(f"use of sys.{node.attr}")
        elif isinstance(node, ast.Import):
            found += [f"import of sys as {a.asname}" for a in node.names if a.name == "sys" and a.asname]
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            found += [f"import of sys.{a.name}" for a in node.names if a.name not in SYS_ALLOWED]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "sys" and id(node) not in read:
            found.append("sys used as a value")
    return found


def _lookup_name(func: ast.AST) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _reached_module(what: str) -> str | None:
    """The escape-hatch module a dotted name reaches through other modules' attributes (``os.sys.modules`` →
    ``sys.modules``), read from this process's own modules without importing anything; None when it reaches none."""
    parts = what.split(".")
    module = sys.modules.get(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        if not isinstance(module, types.ModuleType):
            return None
        value = vars(module).get(part)
        if not isinstance(value, types.ModuleType):
            return None
        name = value.__name__
        rest = parts[i + 1:]
        if name == "sys":
            if rest and rest[0] in SYS_ALLOWED:
                return None
            return ".".join(["sys", *rest[:1]])
        if name.split(".")[0] in MODULES:
            return name
        module = value
    return None


def _data_as_code(tree: ast.AST, names: Imported) -> list[str]:
    """Calls and references that load code from data: pickles, TorchScript, ``torch.load`` without
    ``weights_only=True``, ``numpy.load(allow_pickle=True)``; and modules reached through other modules."""
    found = []
    called = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                if full.startswith(CODE_FROM_DATA) or module.startswith(CODE_FROM_DATA):
                    found.append(f"code from data: import of {full} (it runs or compiles code that is not in the cell)")
            continue
        if not isinstance(node, ast.Name | ast.Attribute | ast.Call):
            continue
        what = _resolve(node, names) if not isinstance(node, ast.Call) else None
        if not what:
            continue
        call = called.get(id(node))
        keywords = {k.arg: k.value for k in call.keywords} if call is not None else {}
        if what == "torch.load":
            safe = keywords.get("weights_only")
            if not (isinstance(safe, ast.Constant) and safe.value is True):
                found.append("code from data: torch.load without weights_only=True (unpickling runs code)")
        elif what == "numpy.load" and call is not None and "allow_pickle" in keywords and \
                not (isinstance(keywords["allow_pickle"], ast.Constant) and keywords["allow_pickle"].value is False):
            found.append("code from data: numpy.load with allow_pickle (unpickling runs code)")
        elif what.startswith(CODE_FROM_DATA):
            found.append(f"code from data: {what} (it runs or compiles code that is not in the cell)")
        reached = _reached_module(what)
        if reached:
            found.append(f"use of {reached} (reached as {what})")
    return found


def escape_hatches(source: str, names: Imported | None = None) -> list[str]:
    """Why the grader does not trust this cell (empty when it uses no escape hatch).

    ``names``: what the names the cell starts with stand for (the imports and aliases of the cells before it, the
    release's set-up cell first); without it, the usual set-up names (``torch``, ``np``, ``F``, ``nn``, ``checks``).
    """
    python, found = to_python(source)
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError):
        return found  # the kernel reports the syntax error; the exercise fails on its own
    names = dict(USUAL_NAMES if names is None else names)
    found += patches(python, names)
    found += _data_as_code(tree, {**names, **bindings_after(python, names)})
    found += _sys_uses(tree)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.level:
                found.append("relative import")
            for name in names:
                if name.split(".")[0] in MODULES:
                    found.append(f"import of {name}")
                if name.startswith("torch._") or name in ("torch.overrides", "torch.library") or \
                        name.startswith(("torch.utils._python_dispatch", "torch._C")):
                    found.append(f"import of {name}")
            if isinstance(node, ast.ImportFrom) and node.module in ("os", "torch", "torch.utils", "types"):
                for alias in node.names:
                    if alias.name in ATTRIBUTES or alias.name.startswith("_"):
                        found.append(f"import of {node.module}.{alias.name}")
        elif isinstance(node, ast.Name) and node.id in NAMES:
            found.append(f"use of {node.id}")
        elif isinstance(node, ast.Name) and node.id in LOOKUPS and id(node) not in called:
            found.append(f"{node.id} passed as a value")
        elif isinstance(node, ast.Call) and _lookup_name(node.func) in NAMED_LOOKUPS and \
                not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[:1]):
            found.append(f"{_lookup_name(node.func)} with a computed attribute name")
        elif isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
            found.append(f"use of .{node.attr}")
        elif isinstance(node, ast.Attribute) and node.attr in MODULE_ATTRIBUTES:
            found.append(f"use of .{node.attr} (a module reached through another one)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2 and \
                not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                     and not node.args[1].value.startswith("__")):
            found.append(f"{node.func.id} with a computed or special attribute name")
        elif isinstance(node, ast.Call) and _lookup_name(node.func) in LOOKUPS | NAMED_LOOKUPS and any(
                isinstance(a, ast.Constant) and isinstance(a.value, str) and
                (a.value.split(".")[0] in MODULE_ATTRIBUTES | ATTRIBUTES) for a in node.args[1:] or node.args[:1]):
            found.append(f"{_lookup_name(node.func)} of a module or an interpreter internal by name")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in METHODS:
            found.append(f"definition of {node.name}")
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = ast.unparse(base)
                if name.split(".")[-1] in ("Tensor", "Parameter", "TorchFunctionMode", "TorchDispatchMode",
                                           "ModuleType", "MetaPathFinder", "Loader", "Thread"):
                    found.append(f"a subclass of {name}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                any(s in node.value for s in ("__code__", "__globals__", "__builtins__", "__subclasses__")):
            found.append("a string naming interpreter internals")
    found += [f"rewiring: {what}" for what in tampering(python)]
    return sorted(dict.fromkeys(found))
