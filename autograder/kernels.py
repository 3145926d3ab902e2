"""Kernels that talk to their client over Unix sockets, and a notebook client that does not miss a reply.

A kernel started the usual way listens on five TCP ports its manager picked at random a moment before; on a
busy machine (a class graded in parallel, a test suite on two workers) another process can take one of them
first, and the kernel dies at start with "Address already in use" — the server's automatic restarts then
reuse the same ports. Sockets named in Jupyter's runtime folder cannot be taken that way.

nbclient waits for a cell's reply with one poll of the shell socket as long as the cell's time limit. When a
cell draws into an ``Output`` widget, nbclient sends the widget's new state back to the kernel on that same
socket while the poll is pending, and pyzmq can then miss the reply's wake-up: the poll sleeps until its
timeout, finds the reply at the last moment and goes on as if nothing happened. Chapter 06's patch-explorer
cell (3 s in the kernel) took 200 s, its time limit, on a 16-core GPU machine, in every run.
:class:`SteadyNotebookClient` polls in short slices, so a missed wake-up costs at most one slice.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from nbclient import NotebookClient
from traitlets import default

POLL_SLICE = 0.1  # seconds: the longest a missed wake-up can delay a reply


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


def _sliced(poll_once: Any) -> Any:
    """A channel's ``get_msg`` (``poll_once``) that waits at most :data:`POLL_SLICE` per poll, until the
    caller's whole timeout."""

    async def get_msg(timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = POLL_SLICE if deadline is None else max(0.0, min(POLL_SLICE, deadline - time.monotonic()))
            try:
                return await poll_once(timeout=step)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    return get_msg


class _WidgetState(dict):
    """nbclient's record of widget state. Without ``store_widget_state`` nbclient records none, yet its Output
    widget hook writes each captured output into the record of its widget, and a KeyError ends the run (in
    chapter 04, at the beam-tree widget in full mode). A missing widget here gets a throwaway record."""

    def __missing__(self, key: str) -> dict:
        return {}


class SteadyNotebookClient(NotebookClient):
    """nbclient's NotebookClient whose shell and IOPub channels poll in short slices (see the module's
    docstring); everything else is nbclient's."""

    def reset_execution_trackers(self) -> None:
        super().reset_execution_trackers()
        self.widget_state = _WidgetState()

    async def async_start_new_kernel_client(self) -> Any:
        client = await super().async_start_new_kernel_client()
        for channel in (client.shell_channel, client.iopub_channel):
            channel.get_msg = _sliced(channel.get_msg)
        return client


class NotebookFailed(RuntimeError):
    """A notebook run by :func:`run_notebook` stopped; ``where`` names the cell and what happened."""

    def __init__(self, path: Path, where: str) -> None:
        super().__init__(f"{path}: {where}")
        self.where = where


def stopped_at(nb: Any) -> str:
    """The first code cell of an executed notebook that did not finish (no execution count, or an error
    output), as "code cell N of M ('its first line')"."""
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    for number, cell in enumerate(code, 1):
        if cell.get("execution_count") is None or any(o.get("output_type") == "error" for o in cell.outputs):
            return f"code cell {number} of {len(code)} ({cell.source.strip().splitlines()[0][:70]!r})"
    return "a cell"


def run_notebook(path: Path, timeout: float = 1200.0, out: Path | None = None, kernel_name: str = "dlcourse",
                 store_widget_state: bool = False) -> tuple[Any, float]:
    """Execute the notebook at ``path`` top to bottom, in its own folder, on a kernel on Unix sockets (with
    :class:`SteadyNotebookClient`); the executed notebook and the seconds it took. The executed copy is also
    written to ``out`` when given — also when a cell failed, so the outputs up to it can be read.
    NotebookFailed names the first cell that failed or ran past ``timeout`` seconds."""
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        SteadyNotebookClient(nb, timeout=timeout, kernel_name=kernel_name, kernel_manager_class=UnixSocketKernelManager,
                             store_widget_state=store_widget_state,
                             resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    except (CellTimeoutError, CellExecutionError, DeadKernelError) as err:
        what = f"ran past {timeout:g} s" if isinstance(err, CellTimeoutError) else f"failed: {str(err)[-800:]}"
        raise NotebookFailed(path, f"{stopped_at(nb)} {what}") from None
    finally:
        if out is not None:
            nbformat.write(nb, out)
    return nb, time.perf_counter() - start


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
        _, seconds = run_notebook(args.notebook, args.timeout, args.out)
    except NotebookFailed as err:
        print(err, file=sys.stderr)
        return 1
    print(f"{args.notebook}: ran in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
