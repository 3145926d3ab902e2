"""The grader's side of the kernel fork server (``dlcourse/grading/zygote.py``): start it in the sandbox, ask it
for kernels, find each kernel's process on this machine and put it in its submission's cgroup.

A :class:`ForkServer` serves one environment (the kernels' whole environment: a warning filter or a thread
count is read when Python starts, so kernels that differ there need their own server); :func:`server_for`
keeps one per environment for the life of the grading process. It starts with the first kernel that asks,
from a thread of its own that lives as long as the process (bubblewrap's ``--die-with-parent`` ends the
sandbox when the thread that started it ends).

Used only with the bubblewrap sandbox. Set ``DLCOURSE_FORK_SERVER=0`` to start every kernel as its own
process (as the user and unsafe modes always do); a server that cannot start, or a fork that fails, makes
the kernel start that way too, and the grading log says why.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import multiprocessing.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.core.sandbox import Sandbox, processes

START_TIMEOUT = 120.0


def enabled(sandbox: Sandbox) -> bool:
    """Whether kernels in ``sandbox`` come from a fork server: bubblewrap mode, not switched off."""
    return not sandbox.shared_filesystem and os.environ.get("DLCOURSE_FORK_SERVER", "1") != "0"


class ForkedKernel:
    """The kernel's process on this machine, as much of ``subprocess.Popen`` as the grader uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._started = self._stat()[1]  # (a PID used again later by another process is not this kernel)

    def _stat(self) -> tuple[str, str]:
        """The process's state letter and start time ("X", "" when there is no such process)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return fields[0], fields[19]
        except (OSError, IndexError):
            return "X", ""

    def poll(self) -> int | None:
        if self.returncode is None:
            state, started = self._stat()
            if state in ("Z", "X") or started != self._started:
                self.returncode = -1  # (its parent in the sandbox reaps it: the exit code is not seen here)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.02)
        return self.returncode


class ForkServer:
    """One zygote in the sandbox, with the kernel environment ``env``."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = dict(env)
        self.spool = Path(tempfile.mkdtemp(prefix="dlz-"))
        os.chmod(self.spool, 0o755)
        self.proc: subprocess.Popen | None = None
        self.failed = ""  # why the server could not start; then kernels start the usual way
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._stop = threading.Event()
        self.log = self.spool / "zygote.log"

    # the server ------------------------------------------------------------------------------------------
    def _start(self) -> None:
        started = threading.Event()

        def keeper() -> None:  # the thread bubblewrap's --die-with-parent watches: it lives until close()
            try:
                argv = [sys.executable, "-Xfrozen_modules=off", "-m", "dlcourse.grading.zygote"]
                cmd = Sandbox().command(argv, self.spool, limited=False, extra_dirs=("/run/grading",))
                with open(self.log, "ab") as log:
                    self.proc = subprocess.Popen(cmd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                 stderr=log, start_new_session=True, cwd="/", text=True,
                                                 bufsize=1)
            except Exception as err:  # noqa: BLE001
                self.failed = f"the fork server did not start: {err}"
            finally:
                started.set()
            self._stop.wait()

        threading.Thread(target=keeper, name="fork-server", daemon=True).start()
        started.wait()
        if self.failed:
            return
        line = self._read(START_TIMEOUT)
        if not line.get("ready"):
            tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
            self.failed = f"the fork server did not become ready: {line}\n{tail}"
            self._end()

    def _read(self, timeout: float) -> dict:
        """The next reply line (``{}`` when none came in ``timeout`` seconds or the server ended)."""
        import selectors

        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                return {}
        line = self.proc.stdout.readline()
        try:
            return json.loads(line) if line else {}
        except ValueError:
            return {"error": line[:200]}

    def _ask(self, request: dict, timeout: float = 60.0) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            return {"error": "the fork server is not running"}
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except OSError as err:
            return {"error": f"the fork server is gone: {err}"}
        return self._read(timeout)

    def usable(self) -> bool:
        with self._lock:
            if self.proc is None and not self.failed:
                self._start()
            return not self.failed and self.proc is not None and self.proc.poll() is None

    # kernels ---------------------------------------------------------------------------------------------
    def exchange(self) -> Path:
        """A new exchange folder for one kernel, where that kernel's fork can find it."""
        path = Path(tempfile.mkdtemp(prefix="dlg-", dir=self.spool))
        os.chmod(path, 0o755)
        return path

    def spawn(self, sandbox: Sandbox, exchange: Path, argv: list[str], workdir: str = "/tmp/work") -> ForkedKernel:
        """A kernel for ``argv`` (the kernel's arguments), in ``sandbox``'s cgroup, started; OSError when the
        server cannot make it (the caller then starts the kernel the usual way)."""
        lim = sandbox.limits
        limits = {"open_files": lim.open_files, "file_size": lim.file_size_bytes, "cpu_seconds": lim.cpu_seconds,
                  "tmp_bytes": lim.tmp_bytes}
        if "memory" not in sandbox.cgroup.limited:
            limits["address_space"] = lim.memory_bytes * 2  # as the usual start's prlimit: a backstop
        key = str(next(self._ids))
        # what the sandbox shows under /tmp (a checkout or a virtual environment there): the fork's new /tmp
        # shows it again
        keep = [p for p in sandbox.read_only_paths() if Path(p).is_relative_to("/tmp")]
        request = {"spawn": key, "exchange": str(exchange), "env": self.env, "argv": argv, "workdir": workdir,
                   "limits": limits, "keep": keep}
        with self._lock:
            answer = self._ask(request)
            if "pid" not in answer:
                raise OSError(f"the fork server made no kernel: {answer.get('error') or answer}")
            try:
                pid = self._host_pid(int(answer["pid"]))
                sandbox.cgroup.adopt(pid)
            except Exception:
                self._ask({"drop": key})
                raise
            done = self._ask({"go": key})
        if done.get("done") != key:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            raise OSError(f"the fork server did not start the kernel: {done}")
        return ForkedKernel(pid)

    def _host_pid(self, inner: int) -> int:
        """This machine's PID of the process that is ``inner`` in the server's PID namespace (a process under
        this server's sandbox whose PID one level below this machine's is ``inner``)."""
        root = self.proc.pid
        parents: dict[int, int] = {}
        candidates = []
        for pid, fields in processes().items():
            with contextlib.suppress(KeyError, ValueError, IndexError):
                parents[pid] = int(fields["PPid"])
                nspid = fields.get("NSpid", "").split()
                if len(nspid) >= 3 and int(nspid[1]) == inner:
                    candidates.append(pid)
        for pid in candidates:
            seen, p = set(), pid
            while p and p not in seen:
                if p == root:
                    return pid
                seen.add(p)
                p = parents.get(p, 0)
        raise OSError(f"no process of this fork server has PID {inner} in its namespace")

    def _end(self) -> None:
        """Stop the server (the kernels it forked end with it)."""
        if self.proc is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                self.proc.wait(10)
        self._stop.set()

    def close(self) -> None:
        """Stop the server and remove its exchange folders (at the end of the grading process)."""
        self._end()
        shutil.rmtree(self.spool, ignore_errors=True)


_servers: dict[tuple, ForkServer] = {}
_servers_lock = threading.Lock()


def server_for(env: dict[str, str]) -> ForkServer:
    """The (one) fork server of this process for kernels with the environment ``env``."""
    key = tuple(sorted(env.items()))
    with _servers_lock:
        if key not in _servers:
            _servers[key] = ForkServer(env)
        return _servers[key]


def close_all() -> None:
    with _servers_lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


atexit.register(close_all)
# a worker of a multiprocessing pool leaves through os._exit, past atexit: its finalizers still run
multiprocessing.util.Finalize(None, close_all, exitpriority=10)
