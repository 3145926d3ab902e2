"""Kernels that talk to their client over Unix sockets, and a kernel client that does not miss a reply: what
``make validate`` (:mod:`dlcourse.validate`) and the course's notebook runners
(``autograder/bookkeeping/kernels.py``) share.

A kernel started the usual way listens on five TCP ports its manager picked at random a moment before; on a
busy machine (a class graded in parallel, a test suite on several workers) another process can take one of them
first, and the kernel dies at start with "Address already in use" — the server's automatic restarts then
reuse the same ports. Sockets named in Jupyter's runtime folder cannot be taken that way. A socket's path has a
length limit (104 bytes on macOS, 108 on Linux): where the runtime folder is too deep for it (a long home folder),
the sockets go to a private folder of their own under the system's temporary folder.

nbclient waits for a cell's reply with one poll of the shell socket as long as the cell's time limit. When a
cell draws into an ``Output`` widget, nbclient sends the widget's new state back to the kernel on that same
socket while the poll is pending, and pyzmq can then miss the reply's wake-up: the poll sleeps until its
timeout, finds the reply at the last moment and goes on as if nothing happened. Chapter 06's patch-explorer
cell (3 s in the kernel) took 200 s, its time limit, on a 16-core GPU machine, in every run. :func:`steady`
makes a client's shell and IOPub channels poll in short slices, so a missed wake-up costs at most one slice.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import default

POLL_SLICE = 0.1  # seconds: the longest a missed wake-up can delay a reply


class UnixSocketKernelManager(AsyncKernelManager):
    """nbclient's kernel manager with ``transport="ipc"`` and a connection file of its own in the runtime
    folder (the sockets are named after it: ``kernel-<uuid>-ipc-<n>``), removed when the kernel is shut down.
    Pass it as ``NotebookClient(..., kernel_manager_class=UnixSocketKernelManager)``. Unix only (Windows has
    no ipc transport)."""

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc"

    @default("connection_file")
    def _default_connection_file(self) -> str:
        return str(socket_folder() / f"kernel-{uuid.uuid4()}.json")


SOCKET_PATH_LIMIT = 103  # bytes: macOS allows 104 with the final NUL, Linux 108
_LONGEST_NAME = len(f"kernel-{uuid.uuid4()}-ipc-99")


def socket_folder(runtime: Path | None = None) -> Path:
    """Where a kernel's sockets (and connection file) go: Jupyter's runtime folder, or, when a socket's path
    there would pass :data:`SOCKET_PATH_LIMIT`, a new folder only this user can enter, under the system's
    temporary folder (then ``/tmp``)."""
    runtime = Path(runtime or jupyter_runtime_dir())
    if len(str(runtime)) + 1 + _LONGEST_NAME <= SOCKET_PATH_LIMIT:
        runtime.mkdir(parents=True, exist_ok=True)
        return runtime
    for parent in (tempfile.gettempdir(), "/tmp"):
        if len(parent) + 1 + len("dlcourse-12345678") + 1 + _LONGEST_NAME <= SOCKET_PATH_LIMIT:
            return Path(tempfile.mkdtemp(prefix="dlcourse-", dir=parent))  # mode 0700
    raise OSError(f"no folder is short enough for a kernel's sockets (runtime folder {runtime})")


def sliced(poll_once: Any) -> Any:
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


def steady(client: Any) -> Any:
    """An asynchronous kernel client whose shell and IOPub channels poll in short slices (:func:`sliced`); the
    same client."""
    for channel in (client.shell_channel, client.iopub_channel):
        channel.get_msg = sliced(channel.get_msg)
    return client
