"""The grader's side of one submission: a sandboxed kernel it drives, and test cells it runs itself.

The student's cells (answers, and the release's own set-up and demo cells) run in the kernel. Test cells —
visible and hidden — never do: they run here, in the grader's interpreter, with every name the student
defined bound to a :class:`~dlcourse.grading.remote.Remote` proxy. Whatever the student's code does to its
own interpreter cannot change a comparison made here.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import os
import queue
import shutil
import signal
import socket
import subprocess
import symtable
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file

from autograder.core import forkserver
from autograder.core.sandbox import Sandbox, processes

OUTPUT_LIMIT = 200_000  # characters of text output kept per cell


class KernelDied(RuntimeError):
    """The kernel process ended (os._exit, a crash, a kill)."""


class KernelHung(TimeoutError):
    """The kernel did not finish a cell within the limit."""


@dataclass
class CellRun:
    """What one kernel cell did."""

    outputs: list[dict] = field(default_factory=list)
    error: tuple[str, str] | None = None
    stdout: str = ""
    stderr: str = ""
    status: str = "ok"  # ok | error | died | timeout

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class TestRun:
    """What one test cell, run in the grader, found."""

    passed: bool
    message: str = ""
    error_type: str = ""
    stdout: str = ""
    kernel_lost: str = ""  # "died" or "timeout" when the kernel has to be restarted
    tampered: list[str] = field(default_factory=list)  # course or torch objects found replaced in the kernel


INTEGRITY_BASELINE = "__import__('dlcourse.grading.integrity', fromlist=['baseline']).baseline({modules!r})"


def prelude_imports(sources: list[str]) -> str:
    """The import statements of the release's locked set-up cells, which test cells rely on."""
    lines = []
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        lines += [ast.unparse(node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    return "\n".join(dict.fromkeys(lines))


def prelude_of(cells: list) -> str:
    """:func:`prelude_imports` of a notebook's locked code cells that are not tests (the set-up cell)."""
    return prelude_imports([c.source for c in cells if c.cell_type == "code"
                            and c.metadata.get("nbgrader", {}).get("locked")
                            and not c.metadata.get("nbgrader", {}).get("grade")])


def free_names(source: str) -> list[str]:
    """Global names a cell reads but never binds (nor imports), builtins excluded."""
    table = symtable.symtable(source, "<test>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    bound |= {t.get_name() for t in table.get_children()}  # def / class at top level
    used: set[str] = set()

    def walk(t: symtable.SymbolTable, top: bool) -> None:
        for s in t.get_symbols():
            if (top and s.is_referenced()) or (not top and s.is_global() and s.is_referenced()):
                used.add(s.get_name())
        for child in t.get_children():
            walk(child, False)

    walk(table, True)
    return sorted(n for n in used - bound if not hasattr(builtins, n))


def tree_peak_mb(root: int) -> float:
    """The summed memory high-water marks (VmHWM) of process ``root`` and everything under it, in MB.

    A sandboxed kernel starts its own session, so its process group is not the launcher's; the parent links
    in /proc find it. Resource usage of children (``RUSAGE_CHILDREN``) would not do: it counts only
    processes already waited for, and a forked child inherits its parent's high-water mark.
    """
    table = processes()
    children: dict[int, list[int]] = {}
    for pid, fields in table.items():
        with contextlib.suppress(KeyError, ValueError):
            children.setdefault(int(fields["PPid"]), []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        with contextlib.suppress(KeyError, ValueError, IndexError):
            total += int(table[pid]["VmHWM"].split()[0])  # kB
    return round(total / 1024, 1)


class GradingKernel:
    """A course kernel in the sandbox, driven over ZeroMQ IPC sockets in a private exchange folder."""

    def __init__(self, sandbox: Sandbox, env: dict[str, str] | None = None, start_timeout: float = 120) -> None:
        self.sandbox, self.extra_env, self.start_timeout = sandbox, env or {}, start_timeout
        # bubblewrap mode: the kernel is forked from a server that loaded Python's and torch's modules once
        # (forkserver.py); its exchange folder is then one the server's forks can reach
        self.server = (forkserver.server_for(sandbox.environment(Path("/"), self.extra_env))
                       if forkserver.enabled(sandbox) else None)
        self.exchange = self.server.exchange() if self.server else Path(tempfile.mkdtemp(prefix="dlg-"))
        os.chmod(self.exchange, 0o755)
        self.forked = False  # whether the running kernel came from the fork server
        self.proc: subprocess.Popen | None = None
        self.client: BlockingKernelClient | None = None
        self.log = self.exchange / "kernel.log"
        self._serial = 0
        self.starts = 0
        self.peak_mb = 0.0  # the largest memory high-water mark of the kernel's processes, over its restarts
        self.setup_run: tuple[str, CellRun] | None = None  # the set-up cell a warm kernel ran ahead (warm.py)
        # whether a cell ran in the kernel since it was last asked what was replaced (a test asks again only then)
        self.unchecked = True

    # lifecycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the kernel's process, without waiting for it to answer (:meth:`wait_ready`).

        Call it from the thread that outlives the kernel: the sandbox ends the kernel when the thread that
        started it ends (bubblewrap's ``--die-with-parent``).
        """
        self.sandbox.start()
        # Without a mount namespace the kernel gets folders of its own here; as another user (user mode) it owns
        # only those (its sockets go in "ipc"), never the exchange folder, where the grader makes its own sockets.
        own = ("home", "tmp", "work") if self.sandbox.shared_filesystem else ()
        own += ("ipc",) if self.sandbox.user is not None else ()
        for d in own:
            (self.exchange / d).mkdir(exist_ok=True)
        conn = self.exchange / f"kernel-{uuid.uuid4().hex[:8]}.json"
        ipc = self.exchange / "ipc" if self.sandbox.user is not None else self.exchange
        write_connection_file(str(conn), transport="ipc", ip=str(ipc / "k"))
        self.sandbox.hand_over(conn, *(self.exchange / d for d in own))
        kernel_args = ["-f", str(conn), "--HistoryManager.enabled=False"]
        self.proc, self.forked = None, False
        if self.server is not None:
            why = ""
            if self.server.usable():
                try:
                    self.proc, self.forked = self.server.spawn(self.sandbox, self.exchange, kernel_args), True
                except OSError as err:
                    why = str(err)
            if self.proc is None:  # started the usual way below; the log says why
                why = why or self.server.failed or "the fork server has ended"
                with open(self.log, "a") as log:
                    log.write(f"[grader] {why}; the kernel starts as a process of its own\n")
        if self.proc is None:
            argv = [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", *kernel_args]
            cmd = self.sandbox.command(argv, self.exchange, workdir="/tmp/work")
            env = self.sandbox.environment(self.exchange, self.extra_env)
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                             start_new_session=True,
                                             cwd=str(self.exchange / "work") if self.sandbox.shared_filesystem
                                             else "/")
        self.client = BlockingKernelClient(connection_file=str(conn))
        self.client.load_connection_file()
        self.client.start_channels()

    def wait_ready(self) -> None:
        """Wait until the launched kernel answers; :class:`KernelDied` if it never will."""
        why = self._wait_for_kernel_info()
        if why:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            self.kill()
            raise KernelDied(f"the grading kernel did not start: {why}\n{tail}")
        self.starts += 1

    def _wait_for_kernel_info(self) -> str:
        """Ask for kernel_info until it answers; the reason it never will, or "" once it has.

        The process, not the heartbeat, says whether the kernel is alive: on a loaded machine (several
        submissions graded at once) a heartbeat can be late while the kernel is only slow to start.
        """
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc is None or self.proc.poll() is not None:
                return f"the kernel process ended (exit code {self.proc.returncode if self.proc else None})"
            if time.monotonic() > deadline:
                return f"no reply to kernel_info within {self.start_timeout:.0f} s"
            self.client.kernel_info()
            try:
                reply = self.client.get_shell_msg(timeout=1)
            except queue.Empty:
                continue
            if reply.get("msg_type") == "kernel_info_reply":
                with contextlib.suppress(queue.Empty):
                    while True:  # the start-up status messages
                        self.client.get_iopub_msg(timeout=0.2)
                return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """End the kernel and everything it started."""
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.stop_channels()
            self.client = None
        if self.proc is not None:
            self.peak_mb = max(self.peak_mb, tree_peak_mb(self.proc.pid))
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                self.proc.wait(timeout=10)
            self.proc = None
        self.sandbox.stop()

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.exchange, ignore_errors=True)

    # cells ------------------------------------------------------------------------------------------
    def _collect(self, msg_id: str, timeout: float, keep: bool) -> CellRun:
        run = CellRun()
        deadline = time.monotonic() + timeout
        text = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                run.status = "timeout"
                return run
            try:
                msg = self.client.get_iopub_msg(timeout=min(left, 0.5))
            except Exception:  # queue.Empty
                if not self.alive():
                    run.status = "died"
                    return run
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind == "status" and content.get("execution_state") == "idle":
                break
            if kind == "stream":
                if content.get("name") == "stderr":
                    run.stderr += content.get("text", "")[:OUTPUT_LIMIT]
                else:
                    run.stdout += content.get("text", "")[:OUTPUT_LIMIT]
            elif kind == "error":
                run.error = (str(content.get("ename", "Error")), str(content.get("evalue", "")))
                run.status = "error"
            if keep and kind in ("stream", "display_data", "execute_result", "error") and text < OUTPUT_LIMIT:
                from nbformat.v4 import output_from_msg

                with contextlib.suppress(Exception):
                    out = output_from_msg(msg)
                    text += len(str(out))
                    run.outputs.append(out)
        return run

    def run_cell(self, source: str, timeout: float, keep: bool = True, silent: bool = False) -> CellRun:
        """Execute ``source`` in the kernel; a crash or a hang is reported, not raised. ``silent``: not counted
        in the kernel's history or execution count (the grader's own set-up work)."""
        if not self.alive() or self.client is None:
            return CellRun(status="died")
        self.unchecked = True
        try:
            msg_id = self.client.execute(source, silent=silent, store_history=not silent, allow_stdin=False,
                                         stop_on_error=False)
        except Exception:  # noqa: BLE001 - e.g. a source the message encoder refuses
            return CellRun(status="error", error=("GraderError", "the cell could not be sent to the kernel"))
        run = self._collect(msg_id, timeout, keep)
        if run.status == "ok" and not self.alive():
            run.status = "died"
        return run

    def record_integrity(self, modules: set[str], timeout: float = 60) -> str:
        """Record, in the kernel, the course's and torch's objects as they are now (before the student's code runs):
        each test then asks the kernel what has been replaced since (:mod:`dlcourse.grading.integrity`).
        ``modules``: the factories the tests build in the kernel, whose modules are imported first so that they are
        recorded too. Returns the cell it ran (a restarted kernel runs it again in its place)."""
        source = INTEGRITY_BASELINE.format(modules=sorted(modules))
        self.run_cell(source, timeout, keep=False, silent=True)
        return source

    def run_test(self, source: str, prelude: str, timeout: float, label: str = "test",
                 refuse: tuple[str, ...] = (), why: str = "") -> TestRun:
        """Run a test cell here, against the kernel's names through proxies.

        ``refuse``: ATen operators (:func:`dlcourse.checks.forbid` patterns) refused in the kernel during every call
        the test makes into it. Before and after the test the kernel is asked which of the course's and torch's
        objects were replaced since :meth:`record_integrity`; any replacement fails the test (``tampered``).
        """
        from dlcourse.grading import guards
        from dlcourse.grading.channel import ChannelClosed, ChannelTimeout
        from dlcourse.grading.remote import Remote, remote_channel, set_channel

        if not self.alive() or self.client is None:
            return TestRun(False, "the kernel was not running", "KernelDied", kernel_lost="died")
        self._serial += 1
        path = self.exchange / f"agent-{self._serial}.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        os.chmod(path, 0o777)
        listener.listen(1)
        listener.settimeout(min(timeout, 60.0))
        code = f"__import__('dlcourse.grading.agent', fromlist=['serve']).serve({str(path)!r}, globals())"
        msg_id = self.client.execute(code, silent=True, store_history=False, allow_stdin=False, stop_on_error=False)
        deadline = time.monotonic() + timeout
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            listener.close()
            lost = "died" if not self.alive() else "timeout"
            return TestRun(False, "the kernel did not answer the grader (busy, hung, or its imports are broken)",
                           "KernelHung", kernel_lost=lost)
        finally:
            with contextlib.suppress(OSError):
                path.unlink()
        listener.close()
        channel, _lender = remote_channel(conn)
        channel.deadline = deadline
        out = io.StringIO()
        result: TestRun
        guards.set_trusted(True)
        set_channel(channel)
        tampered: list[str] = []
        refusal = guards.pushed(("dlcourse.checks.forbid", frozenset(refuse), why)) if refuse \
            else contextlib.nullcontext()

        def ask() -> None:  # what the kernel found replaced since it was last asked, added to `tampered`
            tampered.extend(t for t in map(str, channel.request("integrity") or []) if t not in tampered)

        try:
            if self.unchecked:  # a cell ran since the last test: what did it replace?
                ask()
            ns: dict[str, Any] = {"__name__": "__grading__", "__builtins__": builtins}
            exec(compile(prelude, "<set-up imports>", "exec"), ns)  # noqa: S102 - the release's own imports
            for name in free_names(source):
                if name in ns:
                    continue
                try:
                    value = channel.request("lookup", name=name)
                except NameError:
                    continue  # the test then fails with NameError where it uses it
                if isinstance(value, Remote):
                    object.__setattr__(value, "_label", name)
                ns[name] = value
            if not tampered:
                with contextlib.redirect_stdout(out), refusal:
                    exec(compile(source, f"<{label}>", "exec"), ns)  # noqa: S102 - the course's own test code
            ask()
            self.unchecked = False
            result = TestRun(True, stdout=out.getvalue())
            if tampered:
                result = TestRun(False, "the course's helpers or torch were changed in the kernel after the set-up "
                                 "cell, which the grader does not accept: " + ", ".join(tampered[:8]) +
                                 (f" and {len(tampered) - 8} more" if len(tampered) > 8 else ""),
                                 "Tampering", out.getvalue(), tampered=tampered)
        except ChannelTimeout:
            result = TestRun(False, f"timed out after {timeout:.0f} s", "TimeoutError", out.getvalue(), "timeout")
        except ChannelClosed:
            result = TestRun(False, "the kernel died while the tests ran (did the code end its own process?)",
                             "KernelDied", out.getvalue(), "died")
        except Exception as err:  # noqa: BLE001 - every failure of a test is a result
            result = TestRun(False, _message(err), type(err).__name__, out.getvalue())
            with contextlib.suppress(Exception):  # replaced helpers may be why it failed: say so
                ask()
            result.tampered = tampered
        finally:
            guards.set_trusted(False)
            set_channel(None)
        if not result.kernel_lost:
            channel.deadline = time.monotonic() + 30
            channel.close()
            tail = self._collect(msg_id, 30, keep=False)
            if tail.status in ("died", "timeout"):
                result.kernel_lost = tail.status
        else:
            with contextlib.suppress(OSError):
                conn.close()
        return result


def _message(err: BaseException) -> str:
    try:
        text = str(err)
    except Exception:  # noqa: BLE001
        text = ""
    name = type(err).__name__
    if name in ("CheckFailure", "ForbiddenCall"):
        return text
    return f"{name}: {text}" if text else name
