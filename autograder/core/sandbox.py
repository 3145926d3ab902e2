"""The sandbox a submission runs in: bubblewrap namespaces, a minimal read-only view, limits, no network.

Inside, the student's kernel sees only what a student has — the system's programs and libraries, the Python
installation and the course's virtual environment, the ``dlcourse`` package, ``data/``, ``models/`` and the
release ``course/`` — all read-only, plus a private writable ``/tmp`` (size-limited) and the exchange
folder through which the grader talks to it. Not the repository (``solutions/``, ``tests/``,
``autograder/``, ``.git``), not the grading folder, the gradebook or other submissions, not other
checkouts. It runs in fresh user, PID (with its own ``/proc``), network (loopback only), IPC, UTS and
cgroup namespaces, with a scrubbed environment, as an unprivileged user id. Limits: address space or
cgroup memory, process count (cgroup), open files, file size, CPU time. Killing the sandbox's first
process ends every process in it.

Kernels are forked from a fork server in such a sandbox (``autograder/core/forkserver.py``): each fork gets new
user, mount, PID, network and IPC namespaces of its own, its own ``/tmp`` with only its own exchange
folder, the submission's cgroup and rlimits, before any of its code runs. What differs from a kernel
started on its own: its ``/proc`` lists the server's processes and the other kernels forked from it (their
memory, environment and open files stay refused: every one of them is non-dumpable, and none is in the
kernel's PID namespace). ``DLCOURSE_FORK_SERVER=0`` starts each kernel on its own.

Where namespaces cannot be had but the grader is root (Gradescope runs its autograder as root in a Docker
container that refuses them), ``Sandbox(user=UID)`` runs the kernel as that unprivileged user instead
(``setpriv``: real and effective ids switched, supplementary groups cleared, no new privileges, killed with
its parent), with the same limits and a scrubbed environment: it then sees the machine's file system with
that user's permissions, so what it must not read has to sit in folders only root may enter (the Gradescope
package puts the grader and the source notebook in mode-0700 folders). It has no PID or network namespace.

Usage::

    python autograder/core/sandbox.py check     # exit 0 when the sandbox can be had here, and what it enforces
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What a student has, relative to the repository.
STUDENT_PATHS = ["dlcourse", "data", "models", "course"]


@dataclass
class Limits:
    """Resource limits of one submission's sandbox (environment variables override the defaults)."""

    memory_bytes: int = int(os.environ.get("DLCOURSE_GRADING_MEMORY", str(8 << 30)))
    processes: int = int(os.environ.get("DLCOURSE_GRADING_PROCESSES", "512"))
    open_files: int = 4096
    file_size_bytes: int = 2 << 30
    cpu_seconds: int = int(os.environ.get("DLCOURSE_GRADING_CPU_SECONDS", "7200"))
    tmp_bytes: int = 2 << 30


def _cgroup_roots() -> dict[str, Path]:
    """Writable cgroup v1 hierarchies for pids and memory (v2 is used when it is the only one)."""
    roots = {}
    base = Path("/sys/fs/cgroup")
    for ctl in ("pids", "memory"):
        d = base / ctl
        if d.is_dir() and os.access(d, os.W_OK):
            # nest under our own cgroup of that controller (a container may confine us to a sub-tree)
            own = next((line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                        if line.split(":", 2)[1] == ctl), "/")
            here = d / own.lstrip("/")
            if here.is_dir() and os.access(here, os.W_OK):
                roots[ctl] = here
    if not roots and (base / "cgroup.controllers").exists():
        own = next((line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                    if line.startswith("0::")), "/")
        here = base / own.lstrip("/")
        if os.access(here, os.W_OK):
            roots["v2"] = here
    return roots


@dataclass
class CGroup:
    """A per-submission cgroup with process and memory limits; ``kill()`` ends everything in it."""

    limits: Limits
    dirs: list[Path] = field(default_factory=list)
    limited: set[str] = field(default_factory=set)  # "processes", "memory": what the cgroups enforce

    def create(self) -> bool:
        name = f"dlcourse-{uuid.uuid4().hex[:12]}"
        for ctl, root in _cgroup_roots().items():
            d = root / name
            try:
                d.mkdir()
                if ctl in ("pids", "v2"):
                    (d / "pids.max").write_text(str(self.limits.processes))
                    self.limited.add("processes")
                if ctl in ("memory", "v2"):
                    (d / ("memory.max" if ctl == "v2" else "memory.limit_in_bytes")).write_text(
                        str(self.limits.memory_bytes))
                    self.limited.add("memory")
                self.dirs.append(d)
            except OSError:
                try:
                    d.rmdir()
                except OSError:
                    pass
        return bool(self.dirs)

    def enter_command(self) -> list[str]:
        """Shell words that move the shell into the cgroups before it execs the rest."""
        moves = "; ".join(f"echo $$ > {d / 'cgroup.procs'}" for d in self.dirs)
        return ["/bin/sh", "-c", moves + '; exec "$@"', "sh"] if self.dirs else []

    def adopt(self, pid: int) -> None:
        """Move the running process ``pid`` into the cgroups (a kernel forked outside :meth:`enter_command`)."""
        for d in self.dirs:
            (d / "cgroup.procs").write_text(str(pid))

    def pids(self) -> list[int]:
        found = set()
        for d in self.dirs:
            try:
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return sorted(found)

    def kill(self) -> None:
        import signal
        import time

        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.05)
        for d in self.dirs:
            try:
                d.rmdir()
            except OSError:
                pass
        self.dirs = []
        self.limited = set()


def processes() -> dict[int, dict[str, str]]:
    """Every process this machine shows now: PID -> the fields of its ``/proc/<pid>/status`` (``PPid``,
    ``NSpid``, ``VmHWM``, …; values as written there). A process that ends while it is read is left out."""
    table = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        with contextlib.suppress(OSError, ValueError):
            table[int(status.parent.name)] = dict(line.split(":", 1) for line in status.read_text().splitlines()
                                                  if ":" in line)
    return table


def bwrap_available() -> tuple[bool, str]:
    """Whether bubblewrap can create the namespaces the sandbox needs here, and if not, why."""
    if shutil.which("bwrap") is None:
        return False, "bubblewrap is not installed (apt-get install bubblewrap)"
    probe = ["bwrap", "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534", "--die-with-parent",
             "--ro-bind", "/", "/", "--proc", "/proc", "--", sys.executable, "-c",
             "import os, socket, sys; s = socket.socket(); "
             "sys.exit(0 if os.getpid() < 10 and os.getuid() == 65534 else 3)"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, f"bubblewrap failed to start: {err}"
    if done.returncode != 0:
        return False, ("bubblewrap cannot create user/PID/network namespaces here "
                       f"({(done.stderr or '').strip()[:200] or done.returncode}); grade on a VM, or pass --unsafe")
    return True, "bubblewrap namespaces work"


NOBODY = 65534  # the unprivileged user (and group) id the kernel runs as without namespaces


def user_switch_available(uid: int = NOBODY) -> tuple[bool, str]:
    """Whether a kernel can be run here as the unprivileged ``uid`` (:class:`Sandbox` ``user=``), and if not, why."""
    if os.geteuid() != 0:
        return False, "the grader is not root, so it cannot run the kernel as another user"
    if shutil.which("setpriv") is None:
        return False, "setpriv (util-linux) is not installed"
    probe = Sandbox(user=uid).switch_user() + [
        sys.executable, "-c", f"import os, sys; sys.exit(0 if os.getuid() == os.geteuid() == {uid} and "
                              f"os.getgid() == {uid} and not set(os.getgroups()) - {{{uid}}} else 3)"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, f"setpriv failed to start: {err}"
    if done.returncode != 0:
        return False, f"setpriv could not switch to uid {uid} ({(done.stderr or '').strip()[:200] or done.returncode})"
    return True, f"the kernel can run as uid {uid} (setpriv)"


def _python_roots() -> list[Path]:
    """The Python installation and the virtual environment the kernel runs from."""
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.prefix)}
    exe = Path(sys.executable)
    roots.add(exe.resolve().parent.parent)
    return sorted(roots)


class Sandbox:
    """Builds the command line that runs a program inside the sandbox."""

    def __init__(self, limits: Limits | None = None, unsafe: bool = False, user: int | None = None) -> None:
        """``unsafe``: no isolation at all; ``user``: no namespaces, the kernel runs as that unprivileged uid
        (and gid) on the machine's own file system (:func:`user_switch_available`); else bubblewrap."""
        self.limits = limits or Limits()
        self.unsafe = unsafe
        self.user = None if unsafe else user
        self.cgroup = CGroup(self.limits)

    @property
    def shared_filesystem(self) -> bool:
        """The kernel sees this machine's file system (unsafe or user mode): its home, temporary and working
        folders are then made in the exchange folder."""
        return self.unsafe or self.user is not None

    def switch_user(self) -> list[str]:
        """The words that run the rest of a command line as :attr:`user` (empty without one)."""
        if self.user is None:
            return []
        return ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--clear-groups", "--no-new-privs",
                "--pdeathsig", "KILL", "--"]

    def hand_over(self, *paths: Path) -> None:
        """Give ``paths`` (the kernel's own folders in the exchange folder, its connection file) to :attr:`user`,
        so that the kernel can use them; nothing to do in the other modes."""
        if self.user is not None:
            for path in paths:
                os.chown(path, self.user, self.user)

    def environment(self, exchange: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The kernel's whole environment: nothing of the grader's is passed on."""
        home = "/tmp/home"
        env = {
            "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home, "USER": "student", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp",
            "MPLCONFIGDIR": f"{home}/.matplotlib", "XDG_CACHE_HOME": f"{home}/.cache", "IPYTHONDIR": f"{home}/.ipython",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "HF_HOME": f"{home}/.cache/huggingface", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
            "NBGRADER_EXECUTION": "autograde", "DLCOURSE_FAST": os.environ.get("DLCOURSE_FAST", "1"),
            "JUPYTER_PLATFORM_DIRS": "1", "VIRTUAL_ENV": sys.prefix,
        }
        for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "DLCOURSE_DEVICE", "CUDA_VISIBLE_DEVICES"):
            if key in os.environ:
                env[key] = os.environ[key]
        if self.shared_filesystem:
            env["HOME"] = str(exchange / "home")
            env["TMPDIR"] = str(exchange / "tmp")
            for k in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "IPYTHONDIR", "HF_HOME"):
                env[k] = env[k].replace(home, env["HOME"])
        env.update(extra or {})
        return env

    def command(self, argv: list[str], exchange: Path, workdir: str = "/tmp/work", limited: bool = True,
                extra_dirs: tuple[str, ...] = ()) -> list[str]:
        """``argv`` wrapped in limits and (unless unsafe) bubblewrap; ``exchange`` stays shared with the grader.

        ``limited=False`` leaves out the cgroup and the rlimits (the kernels' fork server, which runs no
        student's code: each kernel it forks is limited on its own); ``extra_dirs``: empty folders to make in
        the sandbox (bubblewrap mode)."""
        lim = self.limits
        rlimits = ["prlimit", f"--nofile={lim.open_files}", f"--fsize={lim.file_size_bytes}",
                   f"--cpu={lim.cpu_seconds}", "--core=0"]
        if "memory" not in self.cgroup.limited:
            rlimits.append(f"--as={lim.memory_bytes * 2}")  # virtual memory is larger than resident; a backstop
        rlimits.append("--")
        enter = self.cgroup.enter_command() if limited else []
        if not limited:
            rlimits = []
        if self.shared_filesystem:
            return enter + rlimits + self.switch_user() + argv
        cmd = ["bwrap", "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
               "--hostname", "grading", "--die-with-parent", "--new-session"]  # env: Popen passes only ours
        for d in ("/usr", "/etc", "/opt"):
            if Path(d).is_dir():
                cmd += ["--ro-bind", d, d]
        for d in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            p = Path("/") / d
            if p.is_symlink():
                cmd += ["--symlink", os.readlink(p), str(p)]
            elif p.is_dir():
                cmd += ["--ro-bind", str(p), str(p)]
        cmd += ["--proc", "/proc", "--dev", "/dev"]
        for dev in sorted(Path("/dev").glob("nvidia*")):  # a GPU, when the machine has one
            cmd += ["--dev-bind", str(dev), str(dev)]
        cmd += ["--size", str(lim.tmp_bytes), "--tmpfs", "/tmp"]
        for d in ("/tmp/home", "/tmp/home/.cache", workdir):
            cmd += ["--perms", "0777", "--dir", d]
        for p in self.read_only_paths():
            cmd += ["--ro-bind", p, p]
        for d in extra_dirs:
            cmd += ["--dir", d]
        cmd += ["--bind", str(exchange), str(exchange), "--chdir", workdir]
        return enter + rlimits + cmd + ["--", *argv]

    def read_only_paths(self) -> list[str]:
        """What bubblewrap mode shows read-only besides the system's folders: the Python installation, the
        virtual environment and what a student has (:data:`STUDENT_PATHS`)."""
        found = [str(root) for root in _python_roots() if not str(root).startswith(("/usr", "/etc", "/opt"))]
        return found + [str(ROOT / rel) for rel in STUDENT_PATHS if (ROOT / rel).exists()]

    def start(self) -> None:
        self.cgroup.create()

    def stop(self) -> None:
        self.cgroup.kill()

    def describe(self) -> str:
        enforced = ["open files", "file size", "CPU time"]
        enforced += [f"{what} (cgroup)" for what in sorted(self.cgroup.limited)]
        if "memory" not in self.cgroup.limited:
            enforced.append("address space (rlimit)")
        mode = ("NOT sandboxed (--unsafe)" if self.unsafe else "bubblewrap sandbox" if self.user is None
                else f"no namespaces: the kernel runs as uid {self.user} (setpriv)")
        return f"{mode}; limits: {', '.join(enforced)}"


def main(argv: list[str]) -> int:
    if argv[:1] == ["check"]:
        ok, why = bwrap_available()
        probe = Sandbox()
        probe.start()
        if not ok or not os.environ.get("DLCOURSE_QUIET_SETUP"):  # other make targets: only a sandbox missing
            print(f"grading sandbox: {'available' if ok else 'NOT available'}: {why}; {probe.describe()}")
        probe.stop()
        return 0 if ok else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
