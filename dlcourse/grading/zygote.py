"""A fork server for grading kernels, run inside the sandbox: Python, torch and the kernel's own machinery are
loaded once, and each submission's kernel is a fork of it, isolated again before any of its code runs.

Starting a kernel the usual way costs a new interpreter and ``import torch`` (2-3 s of CPU on a laptop core,
most of a small chapter's grading). This process (the *zygote*) is started by the grader
(``autograder/core/forkserver.py``) in the same bubblewrap sandbox a kernel gets, loads the modules every kernel
loads, runs nothing of any student's, and then only forks. A fork (one per kernel, never reused) is put in
new user, mount, PID, network and IPC namespaces before it starts the kernel:

* a fresh size-limited ``/tmp`` (home, working folder) of its own; of the zygote's exchange folders only its
  own is mounted back, so no kernel sees another's connection file or sockets;
* those mounts are locked: the kernel runs in a second, nested user namespace, where they cannot be undone;
* no PID outside its own namespace can be named (``kill``, ``ptrace``, ``pidfd``); the zygote and every
  kernel are non-dumpable, so ``/proc`` files of other kernels that hold anything (memory, environment,
  open files) are refused, though ``/proc`` still lists their processes (a new ``/proc`` cannot be mounted
  under the sandbox's, which covers part of itself);
* its own loopback-only network and IPC namespaces;
* limits: the grader moves it into the submission's cgroup (memory, processes) before it runs anything, and
  it sets its own rlimits (open files, file size, CPU time, no core files; address space where no memory
  cgroup is to be had).

Protocol, one JSON object per line on stdin, replies on stdout::

    {"spawn": ID, "exchange": DIR, "env": {...}, "argv": [...], "workdir": DIR, "limits": {...}}
        -> {"spawned": ID, "pid": PID in the sandbox's PID namespace} or {"failed": ID, "error": TEXT}
    {"go": ID}      the kernel starts (after the grader moved it into its cgroup)
    {"drop": ID}    it never will: it exits
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import resource
import signal
import sys
import traceback

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWNET, CLONE_NEWIPC = 0x40000000, 0x08000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 2, 4, 4096, 8192, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
STAGE = "/run/grading"  # an empty folder the sandbox provides (autograder/core/forkserver.py): a fork's staging area
# Loaded before any fork: what every kernel loads, and nothing that behaves differently when it is imported
# outside a running kernel (ipywidgets and matplotlib's pyplot look for the kernel when they are imported).
# matplotlib itself and its Figure are the slow part of pyplot (its font list is built in a fresh home); the
# backend, which matplotlib reads from MPLBACKEND when it is imported, is set in each kernel (_kernel).
PRELOAD = ("numpy", "torch", "torch.nn", "torch.nn.functional", "ipykernel.kernelapp", "matplotlib",
           "matplotlib.figure", "dlcourse.checks", "dlcourse.runtime", "dlcourse.grading.agent")
INLINE = "module://matplotlib_inline.backend_inline"  # the backend ipykernel asks for when MPLBACKEND is unset

_libc = ctypes.CDLL(None, use_errno=True)


def _call(name: str, *args) -> None:
    if getattr(_libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}{args!r}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = (lambda s: None if s is None else s.encode())
    _call("mount", enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))


def _own_user_namespace(flags: int) -> None:
    """Enter new namespaces (``flags``) with a new user namespace that maps this process's ids to themselves."""
    uid, gid = os.getuid(), os.getgid()
    _call("unshare", CLONE_NEWUSER | flags)
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def _die_with_parent() -> None:
    _call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _private_filesystem(exchange: str, workdir: str, tmp_bytes: int, keep: list[str]) -> None:
    """A fresh ``/tmp`` holding only this kernel's exchange folder (at the same path), home and working folder,
    and the read-only folders of the sandbox that lie under ``/tmp`` (``keep``: a checkout there)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "size=65536,mode=700")
    own, old = os.path.join(STAGE, "own"), os.path.join(STAGE, "old")
    os.mkdir(own)
    os.mkdir(old)
    _mount(exchange, own, None, MS_BIND | MS_REC)
    _mount("/tmp", old, None, MS_BIND | MS_REC)  # the sandbox's /tmp, to take the kept folders from
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(tmp_bytes)},mode=1777")
    os.makedirs(exchange)
    _mount(own, exchange, None, MS_MOVE)
    for path in sorted(keep, key=len):  # (read-only binds stay read-only: their flag is locked)
        os.makedirs(path, exist_ok=True)
        _mount(os.path.join(old, os.path.relpath(path, "/tmp")), path, None, MS_BIND | MS_REC)
    _call("umount2", STAGE.encode(), MNT_DETACH)
    for d in ("/tmp/home", "/tmp/home/.cache", workdir):
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o777)


def _limit(limits: dict) -> None:
    for name, value in (("RLIMIT_NOFILE", limits.get("open_files")), ("RLIMIT_FSIZE", limits.get("file_size")),
                        ("RLIMIT_CPU", limits.get("cpu_seconds")), ("RLIMIT_CORE", 0),
                        ("RLIMIT_AS", limits.get("address_space"))):
        if value is not None:
            resource.setrlimit(getattr(resource, name), (int(value), int(value)))


def _kernel(request: dict, report: int, go: int) -> None:
    """The kernel's own process: report where it is, wait for the grader's go, then become the kernel."""
    _die_with_parent()
    os.setsid()
    _call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
    pid = int(os.readlink("/proc/self"))  # (the sandbox's /proc: the PID the grader can find)
    os.write(report, (json.dumps({"pid": pid}) + "\n").encode())
    os.close(report)
    if os.read(go, 1) != b"g":
        os._exit(0)
    os.close(go)
    _limit(request.get("limits", {}))
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["workdir"])
    log = os.open(os.path.join(request["exchange"], "kernel.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.closerange(3, 1 << 16)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    sys.stdin = os.fdopen(0, "r")
    import random

    import numpy as np
    import torch

    random.seed()  # a fork inherits the zygote's random states: each kernel gets fresh ones
    np.random.seed()
    threads = request["env"].get("OMP_NUM_THREADS")
    if threads and threads.isdigit():
        torch.set_num_threads(int(threads))
    _blas_threads(request["env"])
    import matplotlib

    matplotlib.rcParams["backend"] = request["env"].get("MPLBACKEND") or INLINE  # as if imported in the kernel
    sys.argv = ["ipykernel_launcher", *request["argv"]]
    from ipykernel.kernelapp import launch_new_instance

    launch_new_instance(argv=request["argv"])


def _fork_kernel(request: dict, report: int, go: int) -> None:
    """In the fork of the zygote: new namespaces, the private file system, then the kernel two forks below."""
    _die_with_parent()
    _own_user_namespace(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC)
    _private_filesystem(request["exchange"], request["workdir"], request["limits"]["tmp_bytes"],
                        request.get("keep", []))
    init = os.fork()  # the first process of the new PID namespace
    if init:
        os.close(report)
        os.close(go)
        _, status = os.waitpid(init, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    _die_with_parent()
    _own_user_namespace(CLONE_NEWNS)  # the mounts above are now locked: the kernel cannot lift them
    kernel = os.fork()
    if kernel == 0:
        try:
            _kernel(request, report, go)
        finally:
            os._exit(1)
    os.close(report)
    os.close(go)
    while True:  # reap everything orphaned in the namespace; end with the kernel
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == kernel:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _read_line(fd: int) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data


def serve(stdin, stdout) -> None:
    pending: dict[str, int] = {}

    def reply(obj: dict) -> None:
        stdout.write(json.dumps(obj) + "\n")
        stdout.flush()

    for line in stdin:
        with_children_reaped()
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "spawn" in request:
            key = str(request["spawn"])
            report_r, report_w = os.pipe()
            go_r, go_w = os.pipe()
            child = os.fork()
            if child == 0:
                try:
                    os.close(report_r)
                    os.close(go_w)
                    for fd in pending.values():
                        os.close(fd)
                    null = os.open(os.devnull, os.O_RDWR)
                    os.dup2(null, 0)  # never the zygote's own pipes
                    os.dup2(null, 1)
                    _fork_kernel(request, report_w, go_r)
                except BaseException:  # noqa: BLE001 - reported to the grader, which falls back
                    os.write(report_w, (json.dumps({"error": traceback.format_exc(limit=3)}) + "\n").encode())
                finally:
                    os._exit(1)
            os.close(report_w)
            os.close(go_r)
            answer = _read_line(report_r)
            os.close(report_r)
            try:
                found = json.loads(answer)
            except ValueError:
                found = {"error": f"no report from the fork: {answer[:200]!r}"}
            if "pid" in found:
                pending[key] = go_w
                reply({"spawned": key, "pid": found["pid"]})
            else:
                os.close(go_w)
                reply({"failed": key, "error": found.get("error", "")})
        elif "go" in request or "drop" in request:
            fd = pending.pop(str(request.get("go", request.get("drop"))), None)
            if fd is not None:
                if "go" in request:
                    os.write(fd, b"g")
                os.close(fd)
            reply({"done": str(request.get("go", request.get("drop")))})


def with_children_reaped() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _blas_threads(env: dict[str, str]) -> None:
    """Give numpy's OpenBLAS the threads a kernel started alone would have: the zygote loaded it with one (its
    pool threads start at load, and a process with threads cannot fork safely); OpenBLAS reads these variables,
    in this order, else takes every core."""
    wanted = next((env[k] for k in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS") if k in env),
                  None)
    count = int(wanted) if wanted and wanted.isdigit() and int(wanted) > 0 else os.cpu_count() or 1
    if count > 1:
        from threadpoolctl import threadpool_limits

        threadpool_limits(count, user_api="blas")


def main() -> None:
    _call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
    # OpenBLAS starts its pool threads when numpy loads it, one fewer than the threads it is told to use: the
    # zygote must stay one thread, so it loads it with one (each kernel gets its own count, _blas_threads)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    for name in PRELOAD:
        importlib.import_module(name)
    importlib.import_module("dlcourse.grading.integrity").prepare()  # every fork inherits torch's record
    threads = os.listdir("/proc/self/task")
    if len(threads) != 1:  # forking a threaded process copies one thread and whatever locks the others held
        raise SystemExit(f"the zygote has {len(threads)} threads after its imports: it cannot fork safely")
    print(json.dumps({"ready": True, "modules": len(sys.modules)}), flush=True)
    serve(sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
