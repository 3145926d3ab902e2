"""Notebooks run top to bottom by the course's tools (``make checkpoints``, render, the lecture test, the
benchmarks): on a kernel on Unix sockets, with a client that does not miss a reply (both from
:mod:`dlcourse.kernelio`, which says why), and a record of widget state that an Output widget cannot break.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from nbclient import NotebookClient
from nbclient.util import run_sync

from dlcourse.kernelio import UnixSocketKernelManager, steady


class _WidgetState(dict):
    """nbclient's record of widget state. Without ``store_widget_state`` nbclient records none, yet its Output
    widget hook writes each captured output into the record of its widget, and a KeyError ends the run (in
    chapter 04, at the beam-tree widget in full mode). A missing widget here gets a throwaway record."""

    def __missing__(self, key: str) -> dict:
        return {}


class SteadyNotebookClient(NotebookClient):
    """nbclient's NotebookClient whose shell and IOPub channels poll in short slices
    (:func:`dlcourse.kernelio.steady`); everything else is nbclient's."""

    def reset_execution_trackers(self) -> None:
        super().reset_execution_trackers()
        self.widget_state = _WidgetState()

    async def async_start_new_kernel_client(self) -> Any:
        return steady(await super().async_start_new_kernel_client())

    # nbclient binds the synchronous name (setup_kernel's) to its own coroutine, not to the one above
    start_new_kernel_client = run_sync(async_start_new_kernel_client)


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
    """``python autograder/bookkeeping/kernels.py NOTEBOOK [--timeout S] [--out EXECUTED.ipynb]``: run a notebook as
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
