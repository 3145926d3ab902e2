"""The grading kernel: the course kernel inside a bubblewrap sandbox that hides the instructor's files.

A student's code runs with the grader's permissions. Without a sandbox it could read ``solutions/`` (the
answers and hidden tests), other students' submissions, or write to the gradebook. Under bwrap the kernel
sees the machine as usual except that these are replaced by empty folders (or an empty file):

    solutions/  tests/  .git/  autograder/   (its own working folder, the submission's, stays visible)

Usage::

    python autograder/sandbox_kernel.py install   # register the ``dlcourse-grading`` kernel (make setup)
    python autograder/sandbox_kernel.py check     # exit 0 when the sandbox works on this machine

The kernelspec runs this file with ``launch -f {connection_file}``; it execs bwrap, which execs ipykernel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_NAME = "dlcourse-grading"
HIDDEN = ["solutions", "tests", ".git", "autograder"]


def bwrap_command(cwd: Path, python: str, kernel_args: list[str]) -> list[str]:
    """bwrap argv that runs ``python -m ipykernel_launcher kernel_args`` with the instructor's files hidden."""
    cmd = ["bwrap", "--dev-bind", "/", "/", "--die-with-parent"]
    for name in HIDDEN:
        path = ROOT / name
        if path.exists():
            cmd += ["--tmpfs", str(path)]
    cwd = cwd.resolve()
    if cwd != ROOT and ROOT in cwd.parents:  # the submission's folder (inside autograder/) comes back
        cmd += ["--bind", str(cwd), str(cwd)]
    cmd += ["--chdir", str(cwd), "--", python, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", *kernel_args]
    return cmd


def works() -> bool:
    """True when bwrap is installed and can hide a folder here (it may be refused inside some containers)."""
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--dev-bind", "/", "/", "--tmpfs", str(ROOT / "solutions"), "--", sys.executable, "-c",
             f"import os, sys; sys.exit(1 if os.listdir({str(ROOT / 'solutions')!r}) else 0)"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def install() -> Path:
    """Write the ``dlcourse-grading`` kernelspec into this environment (sys.prefix)."""
    folder = Path(sys.prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, str(Path(__file__).resolve()), "launch", "-f", "{connection_file}"],
        "display_name": "Python 3 (dlcourse, grading sandbox)",
        "language": "python",
        "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
    }
    (folder / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
    return folder


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "install":
        print(f"installed the {KERNEL_NAME} kernel in {install()}")
        return 0
    if command == "check":
        ok = works()
        print("grading sandbox: " + ("bubblewrap works" if ok else "NOT available (install bubblewrap)"))
        return 0 if ok else 1
    if command == "launch":
        cmd = bwrap_command(Path.cwd(), sys.executable, argv[1:])
        os.execvp(cmd[0], cmd)
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
