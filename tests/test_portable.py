"""What students import runs on Windows and macOS as well as Linux.

The modules a student's notebook reaches — every ``dlcourse`` module the released chapters import, and everything
those import in turn — must not use what only a POSIX system (or only Linux) offers: ``fcntl``, ``resource``,
``pwd``, ``grp``, ``termios``, ``os.fork`` and its kin, ``/proc``, or a shell. Where one does on purpose and
guards it, ``GUARDED`` says where and how, reviewed like any other exception; an entry that no longer matches
anything fails too, so the list never goes stale. The grader's own machinery (sandbox, fork server) runs on
the instructor's Linux machine only and is not among the student's modules.
"""

from __future__ import annotations

import ast
import json

from conftest import ROOT
from test_imports import import_graph

POSIX_MODULES = {"fcntl", "resource", "pwd", "grp", "termios", "pty", "tty", "posix", "crypt", "spwd"}
POSIX_CALLS = {"fork", "forkpty", "setsid", "getuid", "geteuid", "getgid", "killpg", "setpgid", "getpgid", "wait4",
               "sched_setaffinity", "sched_getaffinity", "mkfifo", "system", "popen", "spawnlp", "execvp"}
SHELL_CALLS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"}

# (module, what) -> how it is guarded
GUARDED = {
    ("dlcourse.sparse.measure", "/proc"): "read only when /proc/self/status exists and clear_refs can be written "
                                          "(Linux); elsewhere the peak is reported as unknown (bytes = None)",
    ("dlcourse.assets", "subprocess.run"): "runs this Python's own pip (sys.executable, a list of arguments, no "
                                           "shell): the same on every system",
    ("dlcourse.student", "subprocess.run"): "runs this Python's own modules (sys.executable -m pip / ipykernel / "
                                            "jupyterlab / dlcourse, a list of arguments, no shell): the same on "
                                            "every system",
    ("dlcourse.student", "os.geteuid"): "asked only where os has it (hasattr), to add --allow-root for root; "
                                        "Windows has no root to warn about",
}


def student_modules() -> set[str]:
    """The package's modules the released chapters import, and everything they import in turn."""
    graph = import_graph()
    start = set()
    for notebook in sorted((ROOT / "course").glob("*/*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            try:
                tree = ast.parse(source)
            except SyntaxError:  # a skeleton with a placeholder; its imports are elsewhere
                continue
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                         if isinstance(node, ast.ImportFrom) else [])
                start |= {n for n in names if n in graph}
    start |= {m for m in ("dlcourse.__main__", "dlcourse.student", "dlcourse.validate") if m in graph}  # commands
    seen, todo = set(), sorted(start | {"dlcourse"})
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(graph.get(module, ()))
    return seen


def _path(module: str):
    base = ROOT / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def posix_uses(source: str) -> set[str]:
    """What in ``source`` needs a POSIX system: a module, an ``os`` call, a subprocess call, a ``/proc`` path."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in POSIX_MODULES}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in POSIX_MODULES:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in POSIX_CALLS:
                found.add(f"os.{node.attr}")
            elif node.value.id == "subprocess" and node.attr in SHELL_CALLS:
                found.add(f"subprocess.{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc"):
            found.add("/proc")
    return found


def test_what_students_import_needs_no_posix_system_unguarded():
    modules = student_modules()
    assert {"dlcourse.checks", "dlcourse.runtime", "dlcourse.cases"} <= modules  # the set-up cells' imports
    assert "dlcourse.grading.zygote" not in modules  # the sandbox is the grader's, on Linux
    found = {(m, what) for m in sorted(modules) for what in posix_uses(_path(m).read_text())}
    unguarded = sorted(found - set(GUARDED))
    assert not unguarded, f"modules students import use what only POSIX systems have: {unguarded}"
    stale = sorted(set(GUARDED) - found)
    assert not stale, f"GUARDED names uses that are gone: {stale}"


def test_the_scan_finds_each_kind_of_posix_use():
    source = ("import fcntl\nfrom resource import getrlimit\nimport os, subprocess\nos.fork()\n"
              "subprocess.run(['ls'])\nopen('/proc/self/status')\nos.path.join('a', 'b')\n")
    assert posix_uses(source) == {"fcntl", "resource", "os.fork", "subprocess.run", "/proc"}
