"""Kernels forked from the fork server (autograder/core/forkserver.py, dlcourse/grading/zygote.py) are as walled
off as kernels started on their own: from the machine, from the server and from each other.

Two kernels of one server run side by side; each probe runs in one of them and tries to reach the other or
the server. The sandbox's walls towards the machine (the repository, the network, the grader's processes)
are tests/test_trusted.py's, which run on forked kernels too.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("trusted")]

from autograder.core import forkserver, sandbox  # noqa: E402  (the repository is on sys.path, see conftest)
from autograder.core.trusted import GradingKernel  # noqa: E402

AVAILABLE, WHY = sandbox.bwrap_available()
ENV = {"OMP_NUM_THREADS": "1", "DLCOURSE_TEST": "forkserver"}  # a server of this module's own


def _json(run) -> dict:
    assert run.status == "ok", (run.status, run.error, run.stderr)
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def pair():
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    kernels = [GradingKernel(sandbox.Sandbox(), env=ENV) for _ in range(2)]
    for k in kernels:
        k.start()
    assert all(k.forked for k in kernels), open(kernels[0].log).read()
    kernels[1].run_cell("open('/tmp/work/mine.txt', 'w').write('b'); open('/tmp/home/.secret', 'w').write('b')", 30)
    yield kernels
    for k in kernels:
        k.close()


def test_a_forked_kernel_runs_cells_with_its_own_limits_and_threads(pair):
    a, _ = pair
    got = _json(a.run_cell(
        "import json, os, resource, torch\n"
        "lim = lambda name: resource.getrlimit(getattr(resource, name))[1]\n"
        "print(json.dumps({'threads': torch.get_num_threads(), 'cwd': os.getcwd(), 'uid': os.getuid(),\n"
        "  'files': lim('RLIMIT_NOFILE'), 'cpu': lim('RLIMIT_CPU'), 'fsize': lim('RLIMIT_FSIZE'),\n"
        "  'core': lim('RLIMIT_CORE'), 'env': os.environ.get('DLCOURSE_TEST'), 'home': os.environ['HOME']}))", 30))
    lim = sandbox.Limits()
    assert got == {"threads": 1, "cwd": "/tmp/work", "uid": 65534, "files": lim.open_files, "cpu": lim.cpu_seconds,
                   "fsize": lim.file_size_bytes, "core": 0, "env": "forkserver", "home": "/tmp/home"}, got


def test_kernels_of_one_server_see_neither_each_others_files_nor_exchange(pair):
    a, b = pair
    got = _json(a.run_cell(
        "import json, os\n"
        f"spool = {str(a.exchange.parent)!r}\n"
        "print(json.dumps({'spool': sorted(os.listdir(spool)), 'work': os.listdir('/tmp/work'),\n"
        "  'home': os.listdir('/tmp/home'), 'tmp': sorted(os.listdir('/tmp')),\n"
        f"  'other': os.path.exists({str(b.exchange)!r})}}))", 30))
    assert got["spool"] == [a.exchange.name], got  # the other kernel's connection file and sockets are not there
    assert got["other"] is False and got["work"] == [] and ".secret" not in got["home"], got
    kept = {Path(p).relative_to("/tmp").parts[0] for p in sandbox.Sandbox().read_only_paths()
            if Path(p).is_relative_to("/tmp")}  # (a checkout under /tmp, shown read-only again)
    assert set(got["tmp"]) == {"home", "work", a.exchange.parent.name} | kept, got


PROBE_OTHERS = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
me = int(os.readlink('/proc/self'))
found = {}
for pid in sorted(int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != me):
    for name in ('environ', 'mem', 'maps', 'cwd', 'root', 'fd/0'):
        path = f'/proc/{pid}/{name}'
        try:
            os.readlink(path) if name in ('cwd', 'root', 'fd/0') else open(path, 'rb').read(1)
            found[path] = 'read'
        except OSError as e:
            found[path] = type(e).__name__
    try:  # a signal through a descriptor of the process's /proc folder (pidfd_send_signal, signal 0)
        fd = os.open(f'/proc/{pid}', os.O_RDONLY | os.O_DIRECTORY)
        found[f'signal {pid}'] = 'sent' if libc.syscall(424, fd, 0, None, 0) == 0 else 'refused'
        os.close(fd)
    except OSError as e:
        found[f'signal {pid}'] = type(e).__name__
    found[f'cmdline {pid}'] = open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace')
found['ptrace'] = [p for p in range(1, 64) if libc.ptrace(16, p, None, None) == 0]
found['umount /tmp'] = libc.umount2(b'/tmp', 2) == 0
found['umount spool'] = libc.umount2(os.path.dirname(SPOOL).encode(), 2) == 0
print(json.dumps(found))
"""


def test_a_kernel_can_neither_read_nor_signal_nor_trace_the_server_or_another_kernel(pair):
    a, b = pair
    found = _json(a.run_cell(f"SPOOL = {str(a.exchange)!r}\n" + PROBE_OTHERS, 60))
    read = [k for k, v in found.items() if v == "read"]
    assert not read, f"files of other processes read: {read}"
    # signals reach only the kernel's own namespace: its first process (the one that waits for it), never
    # the server or the other kernel
    sent = [k for k, v in found.items() if k.startswith("signal") and v == "sent"]
    assert len(sent) <= 1, sent
    assert not found["ptrace"] and not found["umount /tmp"] and not found["umount spool"], found
    # the other kernel, seen in the list of processes, is the server's code: nothing of it shows
    assert any("zygote" in v for k, v in found.items() if k.startswith("cmdline")), found


def test_forks_do_not_share_random_states_and_the_server_loaded_torch_once(pair):
    a, b = pair
    code = "import json, random, sys, numpy as np\nprint(json.dumps([random.random(), float(np.random.rand())]))"
    assert _json(a.run_cell(code, 30)) != _json(b.run_cell(code, 30))


def test_a_kernel_ends_with_its_server():
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    server = forkserver.ForkServer(sandbox.Sandbox().environment(sandbox.ROOT, dict(ENV, WHICH="ends")))
    k = GradingKernel(sandbox.Sandbox(), env=dict(ENV, WHICH="ends"))
    k.server, k.exchange = server, server.exchange()
    k.log = k.exchange / "kernel.log"
    try:
        k.start()
        assert k.forked and k.alive()
        server.close()
        deadline = time.monotonic() + 20
        while k.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not k.alive(), "the kernel outlived its fork server"
    finally:
        k.close()


def test_without_the_server_a_kernel_starts_as_its_own_process(monkeypatch):
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    monkeypatch.setenv("DLCOURSE_FORK_SERVER", "0")
    k = GradingKernel(sandbox.Sandbox(), env=ENV)
    try:
        k.start()
        assert not k.forked and k.server is None
        assert k.run_cell("print(6 * 7)", 60).stdout.strip() == "42"
    finally:
        k.close()


def test_a_server_that_cannot_start_leaves_kernels_starting_the_usual_way(monkeypatch):
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    env = dict(ENV, WHICH="broken")
    server = forkserver.server_for(sandbox.Sandbox().environment(sandbox.ROOT, env))
    monkeypatch.setattr(forkserver.sys, "executable", "/nonexistent/python")
    assert not server.usable() and server.failed  # (it is not tried again)
    monkeypatch.undo()
    k = GradingKernel(sandbox.Sandbox(), env=env)
    try:
        k.start()
        assert not k.forked
        assert k.run_cell("print(6 * 7)", 60).stdout.strip() == "42"
        assert "starts as a process of its own" in k.log.read_text()
    finally:
        k.close()


SAME_AS_ALONE = r"""
import json, os, threadpoolctl, torch
import matplotlib.pyplot as plt
blas = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
print(json.dumps({"blas": blas, "torch": torch.get_num_threads(), "backend": plt.get_backend(),
                  "MPLBACKEND": os.environ.get("MPLBACKEND"), "OPENBLAS": os.environ.get("OPENBLAS_NUM_THREADS")}))
plt.plot([0, 1])
"""


@pytest.mark.parametrize("threads", [None, "2"])
def test_a_forked_kernel_has_the_threads_and_plots_of_a_kernel_started_alone(monkeypatch, threads):
    # The zygote loads numpy's OpenBLAS with one thread (a threaded process cannot fork safely) and matplotlib
    # before any kernel set MPLBACKEND: each fork must still get the BLAS threads and the inline backend a kernel
    # started on its own gets, whatever OMP_NUM_THREADS says (unset: every core)
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    env = {"DLCOURSE_TEST": f"threads-{threads}"} | ({"OMP_NUM_THREADS": threads} if threads else {})
    seen = []
    for fork in ("1", "0"):
        monkeypatch.setenv("DLCOURSE_FORK_SERVER", fork)
        k = GradingKernel(sandbox.Sandbox(), env=env)
        try:
            k.start()
            assert k.forked == (fork == "1"), k.log.read_text()
            run = k.run_cell(SAME_AS_ALONE, 60)
            assert any("image/png" in out.get("data", {}) for out in run.outputs), run.outputs  # drawn inline
            seen.append(_json(run))
        finally:
            k.close()
    forked, alone = seen
    assert forked == alone, (forked, alone)
    assert alone["blas"] == [int(threads or 0) or __import__("os").cpu_count()] and alone["OPENBLAS"] is None, alone
