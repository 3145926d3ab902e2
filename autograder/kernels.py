"""Kernels that talk to their client over Unix sockets.

A kernel started the usual way listens on five TCP ports its manager picked at random a moment before; on a
busy machine (a class graded in parallel, a test suite on two workers) another process can take one of them
first, and the kernel dies at start with "Address already in use" — the server's automatic restarts then
reuse the same ports. Sockets named in Jupyter's runtime folder cannot be taken that way.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import default


class UnixSocketKernelManager(AsyncKernelManager):
    """nbclient's kernel manager with ``transport="ipc"`` and a connection file of its own in the runtime
    folder (the sockets are named after it: ``kernel-<uuid>-ipc-<n>``), removed when the kernel is shut down.
    Pass it as ``NotebookClient(..., kernel_manager_class=UnixSocketKernelManager)``."""

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc"

    @default("connection_file")
    def _default_connection_file(self) -> str:
        runtime = Path(jupyter_runtime_dir())
        runtime.mkdir(parents=True, exist_ok=True)
        return str(runtime / f"kernel-{uuid.uuid4()}.json")


class NotebookFailed(RuntimeError):
    """A notebook run by :func:`run_notebook` stopped; the message names the cell and the error."""


def run_notebook(path: Path, timeout: float = 1200.0, out: Path | None = None,
                 kernel_name: str = "dlcourse") -> float:
    """Execute the notebook at ``path`` top to bottom, in its own folder, on a kernel on Unix sockets; the
    seconds it took. The executed copy (outputs included) is written to ``out`` when given — also when a cell
    failed, so the outputs up to it can be read. NotebookFailed names the first cell that failed or ran past
    ``timeout`` seconds."""
    import time

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, kernel_manager_class=UnixSocketKernelManager,
                       record_timing=True, resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    except (CellTimeoutError, CellExecutionError, DeadKernelError) as err:
        code = [c for c in nb.cells if c.cell_type == "code"]
        stopped = next((n for n, c in enumerate(code, 1) if c.get("execution_count") is None
                        or any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)
        what = f"ran past {timeout:g} s" if isinstance(err, CellTimeoutError) else f"failed: {str(err)[-800:]}"
        raise NotebookFailed(f"{path}: code cell {stopped} of {len(code)} {what}") from None
    finally:
        if out is not None:
            nbformat.write(nb, out)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """``python autograder/kernels.py NOTEBOOK [--timeout S] [--out EXECUTED.ipynb]``: run a notebook as
    ``jupyter nbconvert --execute`` would, on a kernel on Unix sockets (``make checkpoints`` uses it)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="run a notebook top to bottom on a kernel on Unix sockets")
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds a cell may run")
    parser.add_argument("--out", type=Path, help="where to write the executed notebook (default: nowhere)")
    args = parser.parse_args(argv)
    try:
        seconds = run_notebook(args.notebook, args.timeout, args.out)
    except NotebookFailed as err:
        print(err, file=sys.stderr)
        return 1
    print(f"{args.notebook}: ran in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
