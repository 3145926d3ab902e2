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
