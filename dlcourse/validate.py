"""Check a notebook before submitting it, from the command line: ``make validate NB=course/07_gan/07_gan.ipynb``.

It does what the Validate button does — restarts the kernel, runs every cell as the grader will, and
reports each test cell that fails, with its error — and, unlike ``nbgrader validate``, it needs no
``nbgrader_config.py`` and its exit status says the result: 0 when every test passes, 1 when one fails (or
a cell that must not change was changed), 2 when the notebook cannot be read or run.

It runs nbgrader's validator with one change to how the kernel is reached (:mod:`dlcourse.kernelio`): the
client polls for replies in short slices, so a cell that draws into an ``Output`` widget (every chapter's
explorers) cannot leave it waiting out the cell's whole time limit for a reply that has arrived; and on
Linux and macOS the kernel listens on Unix sockets, which no other process can take first.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

FAILED, BROKEN = 1, 2


def _first_lines(source: str, n: int = 3) -> str:
    lines = source.strip().splitlines()
    shown = "\n".join("    " + line for line in lines[:n])
    return shown + ("\n    …" if len(lines) > n else "")


def steady_validator(config):
    """nbgrader's Validator whose kernel client polls in short slices and whose kernel, on a Unix system,
    listens on Unix sockets (see the module's docstring); otherwise nbgrader's own."""
    from nbclient.util import run_sync
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, Execute
    from nbgrader.validator import Validator
    from traitlets import List

    from dlcourse.kernelio import UnixSocketKernelManager, steady

    class SteadyExecute(Execute):
        def __init__(self, *args, **kwargs):
            if os.name == "posix":
                kwargs.setdefault("kernel_manager_class", UnixSocketKernelManager)
            super().__init__(*args, **kwargs)

        async def async_start_new_kernel_client(self):
            return steady(await super().async_start_new_kernel_client())

        # nbclient binds the synchronous name, which nbconvert's preprocess calls, to its own coroutine
        start_new_kernel_client = run_sync(async_start_new_kernel_client)

    class SteadyValidator(Validator):
        preprocessors = List([CheckCellMetadata, ClearOutput, SteadyExecute])

    return SteadyValidator(config=config)


def validate(path: str | Path, timeout: int = 600, out=None) -> int:
    """Validate one notebook; print what failed to ``out``; return the exit status (0, 1 or 2)."""
    from traitlets.config import Config

    out = out or sys.stdout
    path = Path(path)
    if not path.is_file():
        print(f"{path}: no such notebook", file=out)
        return BROKEN
    validator = steady_validator(Config({"Execute": {"timeout": timeout}}))
    try:
        results = validator.validate(str(path))
    except Exception as err:  # noqa: BLE001 - unreadable JSON, a kernel that does not start, ...
        print(f"{path}: could not be validated: {type(err).__name__}: {err}", file=out)
        return BROKEN
    problems = 0
    for cell in results.get("type_changed", []):
        problems += 1
        print(f"\nA {cell['old_type']} cell was changed into a {cell['new_type']} cell:\n"
              f"{_first_lines(cell['source'])}", file=out)
    for cell in results.get("changed", []):
        problems += 1
        print(f"\nA cell that must not change was edited:\n{_first_lines(cell['source'])}", file=out)
    for cell in results.get("failed", []):
        problems += 1
        error = cell.get("raw_error", "").strip().splitlines()
        print(f"\nThis test failed:\n{_first_lines(cell['source'])}\n  {error[-1] if error else 'an error'}", file=out)
    if problems:
        print(f"\n{path}: {problems} problem(s); fix them before you submit.", file=out)
        return FAILED
    print(f"{path}: every test passed.", file=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlcourse.validate", description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", help="the notebooks to check")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    args = parser.parse_args(argv)
    return max(validate(nb, args.timeout) for nb in args.notebooks)


if __name__ == "__main__":
    sys.exit(main())
