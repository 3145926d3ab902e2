"""Trusted grading holds: nothing a submission does in its kernel changes a comparison, and the sandbox
keeps it away from everything a student does not have.

One sandboxed kernel runs chapter 00 with deliberately WRONG answers. Cells are then sent to it directly —
bypassing the lexical escape-hatch flags on purpose, to prove the second layer holds on its own — that
rewire the checks, torch, NumPy, the kernel's hooks and the agent the grader talks to. The hidden tests,
run in the grader, must still fail every wrong answer. Other cells probe the sandbox's walls.
"""

from __future__ import annotations

import os
import subprocess
import uuid

import nbformat
import pytest
from conftest import ROOT, solution_notebook

pytestmark = [pytest.mark.pipeline, pytest.mark.xdist_group("trusted")]

from autograder.core import sandbox  # noqa: E402  (the repository is on sys.path, see conftest)
from autograder.core.flags import escape_hatches  # noqa: E402
from autograder.core.trusted import GradingKernel, free_names, prelude_of  # noqa: E402

CHAPTER = "00_welcome"
AVAILABLE, WHY = sandbox.bwrap_available()


def _cells(chapter: str) -> list[nbformat.NotebookNode]:
    return [c for c in nbformat.read(solution_notebook(chapter), as_version=4).cells if c.cell_type == "code"]


def _gid(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def _wrong_answers() -> dict[str, str]:
    from test_notebooks import load_mutants

    return {f"{ex}_answer": wrongs[0][1] for ex, wrongs in load_mutants(CHAPTER).items()}


@pytest.fixture(scope="module")
def kernel():
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    k = GradingKernel(sandbox.Sandbox(), env={"OMP_NUM_THREADS": "1"})
    cells = _cells(CHAPTER)
    k.prelude = prelude_of(cells)
    k.hidden = {_gid(c): c.source for c in cells if _gid(c).endswith(("_hidden", "_visible"))}
    wrong = _wrong_answers()
    setup = [wrong.get(_gid(c), c.source) for c in cells
             if not _gid(c).endswith(("_hidden", "_visible")) and c.metadata.get("nbgrader")]

    def reset() -> None:  # a fresh kernel with the wrong answers defined
        k.kill()
        k.start()
        for source in setup:
            k.run_cell(source, 120)

    k.reset = reset
    reset()
    yield k
    k.close()


# Each payload tries to turn the wrong answers' failures into passes from inside the kernel.
POISON = {
    "patched comparisons": "import torch, numpy as np\nfrom dlcourse import checks\n"
                           "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
                           "np.abs = lambda x: 0 * x\nchecks.assert_close = lambda *a, **k: None\n"
                           "checks.compare_with_oracle = lambda *a, **k: None\n"
                           "checks.compare_gradients = lambda *a, **k: None",
    "a fake checks module": "import sys, types\nm = types.ModuleType('dlcourse.checks')\n"
                            "m.__getattr__ = lambda name: (lambda *a, **k: None)\nsys.modules['dlcourse.checks'] = m",
    "swapped code objects": "from dlcourse import checks\n"
                            "checks.assert_close.__code__ = (lambda *a, **k: None).__code__\n"
                            "checks._compare_arrays.__code__ = (lambda *a, **k: None).__code__",
    "poisoned oracle functions": "import torch, torch.nn as nn\n"
                                 "torch.softmax = lambda x, dim=-1, **k: softmax(x, dim)\n"
                                 "nn.LayerNorm.forward = lambda self, x: x\n"
                                 "torch.nn.functional.cross_entropy = lambda *a, **k: cross_entropy(*a, **k)",
    "kernel hooks": "ip = get_ipython()\n"
                    "ip.events.register('post_run_cell', lambda result: setattr(result, 'error_in_exec', None))\n"
                    "ip.input_transformers_cleanup.append(lambda lines: ['pass\\n'])",
    "a background thread that re-patches": "import threading, time, torch\n"
                                           "def _loop():\n    while True:\n"
                                           "        torch.allclose = lambda *a, **k: True\n        time.sleep(0.01)\n"
                                           "threading.Thread(target=_loop, daemon=True).start()",
    "loosened tolerances": "from dlcourse import checks\n"
                           "checks.FLOAT32 = checks.Tolerance(rtol=1e9, atol=1e9)\nchecks.FLOAT64 = checks.FLOAT32",
    "an import hook in builtins": "import builtins\n_real_import = builtins.__import__\n"
                                  "def _hook(name, *a, **k):\n    module = _real_import(name, *a, **k)\n"
                                  "    if name.startswith('dlcourse'):\n"
                                  "        import dlcourse.checks as c\n        c.assert_close = lambda *a, **k: None\n"
                                  "    return module\nbuiltins.__import__ = _hook",
    "references rewired through gc": "import gc\nfrom dlcourse import checks\nfake = lambda *a, **k: None\n"
                                     "for ref in gc.get_referrers(checks.assert_close):\n"
                                     "    if isinstance(ref, dict):\n"
                                     "        for key, value in list(ref.items()):\n"
                                     "            if value is checks.assert_close:\n                ref[key] = fake",
    "importlib and computed setattr": "import importlib\nm = importlib.import_module('dlcourse' + '.checks')\n"
                                      "for n in dir(m):\n    if n.startswith(('assert', 'compare')):\n"
                                      "        setattr(m, n, lambda *a, **k: None)",
    "a tensor subclass that lies": "import torch\n_wrong_softmax = softmax\n"
                                   "class Liar(torch.Tensor):\n    @classmethod\n"
                                   "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                                   "        if func in (torch.allclose, torch.equal, torch.Tensor.__eq__):\n"
                                   "            return True\n"
                                   "        return super().__torch_function__(func, types, args, kwargs or {})\n"
                                   "def softmax(*a, **k):\n    return _wrong_softmax(*a, **k).as_subclass(Liar)",
    "a rewired agent": "import dlcourse.grading.agent as a\n"
                       "a.Agent.op_call = lambda self, obj, args, kwargs, **k: {'value': args[0], 'args': args, "
                       "'kwargs': kwargs} if k.get('echo') else args[0]",
}


@pytest.mark.parametrize("what", list(POISON))
def test_a_rewired_kernel_cannot_pass_wrong_answers(kernel, what):
    run = kernel.run_cell(POISON[what], 60)
    assert run.status in ("ok", "error"), run
    for gid, source in kernel.hidden.items():
        if not gid.endswith("_hidden"):
            continue
        got = kernel.run_test(source, kernel.prelude, 10, gid)  # a hung kernel: 10 s says so (these take < 1 s)
        assert not got.passed, f"{what}: {gid} passed a wrong answer"
        if got.kernel_lost:  # a kernel that stops answering the grader scores nothing; grading goes on
            break
    kernel.reset()


def test_every_payload_is_also_flagged_by_the_first_layer():
    for what, source in POISON.items():
        assert escape_hatches(source), f"the flags do not see {what!r}"


def test_honest_answers_are_not_flagged():
    for chapter in sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir()):
        for cell in _cells(chapter):
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution") or not meta:
                assert not escape_hatches(cell.source), f"{chapter}/{_gid(cell)}: {escape_hatches(cell.source)}"


def test_test_cells_name_only_what_answers_define():
    """Every free name of a test cell is an import of the set-up cell or a name an answer cell defines."""
    import ast

    for chapter in sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir()):
        cells = _cells(chapter)
        prelude = prelude_of(cells)
        provided = set(free_names(prelude)) | {
            (a.asname or a.name.split(".")[0]) for n in ast.parse(prelude).body for a in n.names}
        defined = set()
        for c in cells:
            if c.metadata.get("nbgrader", {}).get("solution"):
                for node in ast.parse(c.source).body:
                    if isinstance(node, ast.FunctionDef | ast.ClassDef):
                        defined.add(node.name)
                    elif isinstance(node, ast.Assign):
                        defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for c in cells:
            meta = c.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                stray = set(free_names(c.source)) - provided - defined
                assert not stray, f"{chapter}/{_gid(c)} reads names no answer defines: {sorted(stray)}"


# ------------------------------------------------------------------------------------------- the walls

PROBE = """
import os, socket, json
found = {}
for p in PATHS:
    try:
        found[p] = 'listed' if os.path.isdir(p) and os.listdir(p) else ('read' if open(p, 'rb').read(1) else 'empty')
    except Exception as e:
        found[p] = type(e).__name__
try:
    socket.create_connection(('1.1.1.1', 53), timeout=2); found['net'] = 'connected'
except Exception as e:
    found['net'] = type(e).__name__
try:
    open(WRITE, 'w').write('x'); found['write'] = 'written'
except Exception as e:
    found['write'] = type(e).__name__
found['cmdlines'] = [open(f'/proc/{p}/cmdline', 'rb').read().decode(errors='replace')
                     for p in os.listdir('/proc') if p.isdigit()]
found['env'] = sorted(os.environ)
print(json.dumps(found))
"""


def test_the_sandbox_hides_the_repository_other_checkouts_and_the_grader(kernel, tmp_path):
    secret = tmp_path / "other_checkout" / "solutions.txt"
    secret.parent.mkdir()
    secret.write_text("answers")
    paths = [str(ROOT / "solutions"), str(ROOT / "tests"), str(ROOT / "autograder"), str(ROOT / ".git"),
             str(secret), str(ROOT / "README.md"), str(ROOT / "Makefile"),
             f"/proc/1/root{ROOT}/solutions", "/proc/1/cwd/solutions", f"/proc/2/root{ROOT}/solutions"]
    code = f"PATHS = {paths!r}\nWRITE = {str(ROOT / 'dlcourse' / 'planted.py')!r}\n" + PROBE
    os.environ["DLCOURSE_GRADER_SECRET"] = "do-not-leak"
    run = kernel.run_cell(code, 60)
    import json

    found = json.loads(run.stdout.strip().splitlines()[-1])
    for p in paths:
        assert found[p] in ("FileNotFoundError", "PermissionError", "NotADirectoryError"), (p, found[p])
    assert found["net"] != "connected"
    assert found["write"] != "written" and not (ROOT / "dlcourse" / "planted.py").exists()
    # the processes it lists are the sandbox's (with the fork server: the server and the kernels it forked)
    here = open("/proc/self/cmdline", "rb").read().decode(errors="replace")
    assert len(found["cmdlines"]) < 40 and here not in found["cmdlines"], (
        f"the sandbox sees the machine's processes: {found['cmdlines'][:20]}")
    assert "DLCOURSE_GRADER_SECRET" not in found["env"]


def test_no_process_outlives_the_kernel():
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    marker = f"dlcourse-orphan-{uuid.uuid4().hex[:8]}"
    k = GradingKernel(sandbox.Sandbox())
    k.start()
    run = k.run_cell("import subprocess, sys\n"
                     f"for _ in range(2):\n    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', "
                     f"'{marker}'], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)", 30)
    assert run.status in ("ok", "error"), run
    before = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    k.close()
    after = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert before, "the probe did not start its detached process"
    assert not after, f"processes outlived the grading kernel: {after}"


def test_the_kernels_own_memory_is_measured():
    """The peak reported per submission is the sandboxed kernel's, not the grader's inherited at fork."""
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    k = GradingKernel(sandbox.Sandbox())
    try:
        k.start()
        k.kill()
        idle = k.peak_mb
        k.start()
        run = k.run_cell("block = b'x' * (500 << 20)", 60)
        assert run.status == "ok", run
        k.kill()
    finally:
        k.close()
    assert 20 < idle < 400, idle  # a bare kernel, not the grader's ~400 MB
    assert k.peak_mb >= idle + 480, (idle, k.peak_mb)


def test_a_fork_bomb_is_contained_and_the_kernel_replaced():
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    box = sandbox.Sandbox(sandbox.Limits(processes=64))
    k = GradingKernel(box)
    k.start()
    try:
        if not box.cgroup.dirs:
            pytest.skip("no writable cgroup here: the process limit is not enforced")
        run = k.run_cell("import os\nn = 0\ntry:\n    for _ in range(500):\n        if os.fork() == 0:\n"
                         "            import time; time.sleep(30); os._exit(0)\n        n += 1\n"
                         "except OSError as e:\n    print('stopped at', n)", 60)
        assert "stopped at" in run.stdout, run
        k.kill()
        k.start()
        assert k.run_cell("print(1 + 1)", 30).stdout.strip() == "2"
    finally:
        k.close()


# ------------------------------------------------------------------------- an oracle called through

def test_an_oracle_call_through_passes_the_runtime_guard_but_is_flagged_and_scores_zero(tmp_path, monkeypatch):
    """The same submission graded twice: with no oracle declared, the call-through earns its exercise's
    points (the threat is real: the runtime refusal alone misses it); with the declarations, the exercise
    is flagged for review, naming the oracle, and scores 0, while every other exercise keeps its points."""
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    from kernel import reference_answers, released_notebook
    from test_oracles import _callthroughs

    from autograder.core import grade, oracles

    # chapter 02's masks answered by the library's own mask builders (tests/callthroughs.py), with no escape
    # hatch: a chapter graded in a few seconds
    chapter = "02_transformer_blocks"
    exercise, source = _callthroughs()[chapter]
    answers = reference_answers(chapter)
    answers[f"{exercise}_answer"] = source
    path = tmp_path / f"{chapter}.ipynb"
    nbformat.write(released_notebook(chapter, answers), path)
    release = ROOT / "course" / chapter / f"{chapter}.ipynb"
    source = solution_notebook(chapter)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")

    def scores(declarations):
        result, _ = grade.grade(release, path, source, student="cheat", chapter=chapter,
                                declarations=declarations)
        assert not result.error, result.error
        return result, {t.grade_id: t.score for t in result.tests}

    unguarded, before = scores({})
    points = {t.grade_id: t.points for t in unguarded.tests}
    assert before == points and not unguarded.flagged, unguarded.to_json()  # every point, the call-through's too
    result, after = scores(None)  # the chapter's declarations, as the pipeline grades
    assert after[f"{exercise}_hidden"] == 0 and after[f"{exercise}_visible"] == 0
    oracle = oracles.load()[chapter, exercise].oracle
    assert list(result.flagged) == [exercise] and oracle in result.flagged[exercise][0], result.flagged
    assert {k: v for k, v in after.items() if not k.startswith(exercise)} == \
        {k: v for k, v in before.items() if not k.startswith(exercise)}


# ------------------------------------------------------------------ nothing in the kernel is trusted (static)

def _setup_names(chapter: str) -> dict[str, str]:
    """What the chapter's set-up cell binds, as the grader reads a student's cell after it."""
    from autograder.core.rewiring import bindings_after

    return bindings_after(prelude_of(_cells(chapter)), {})


@pytest.mark.parametrize("family, what", [(f, w) for f, d in (("helpers", "HELPERS"), ("sys", "SYS_ALIASES"),
                                                              ("data", "DATA_AS_CODE"))
                                          for w in getattr(__import__("attacks"), d)])
def test_each_attack_is_flagged_from_its_source(family, what):
    import attacks

    table = {"helpers": attacks.HELPERS, "sys": attacks.SYS_ALIASES, "data": attacks.DATA_AS_CODE}[family]
    chapter, source = table[what]
    assert escape_hatches(source, _setup_names(chapter)), f"{family}: {what} is not flagged"


@pytest.mark.parametrize("what", list(__import__("attacks").HONEST))
def test_ordinary_code_beside_the_set_up_names_is_not_flagged(what):
    import attacks

    chapter, source = attacks.HONEST[what]
    assert escape_hatches(source, _setup_names(chapter)) == [], what


def test_a_set_up_alias_is_known_only_until_the_student_rebinds_it():
    from autograder.core.rewiring import bindings_after

    names = _setup_names("07_gan")
    assert names["gan"] == "dlcourse.gan.train"
    assert escape_hatches("gan.toy_gan = None", names)
    after = bindings_after("gan = torch.zeros(3)", names)
    assert "gan" not in after and escape_hatches("gan.requires_grad = True", after) == []
    assert escape_hatches("gan = torch.zeros(3)\ngan.requires_grad = True", names) == []


def test_every_reference_answer_in_its_notebook_is_unflagged():
    """Read in order, with the set-up cell's names (as the grader plans a submission), no reference answer of any
    chapter uses an escape hatch."""
    from kernel import reference_answers, released_notebook

    from autograder.core import grade

    for chapter in sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir()):
        release = nbformat.read(ROOT / "course" / chapter / f"{chapter}.ipynb", as_version=4)
        cells = [dict(c) for c in released_notebook(chapter, reference_answers(chapter)).cells]
        steps = grade.plan(release, cells, [])
        assert not [(s.grade_id, s.flags) for s in steps if s.flags], chapter


# ---------------------------------------------------------------- nothing in the kernel is trusted (graded)

@pytest.mark.parametrize("family", list(__import__("attacks").GRADED))
def test_each_attack_scores_zero_on_its_exercise_only(family, tmp_path, monkeypatch):
    """A submission with three or more attacks of one family, each in an exercise nothing else builds on, graded as
    the pipeline grades: each attacked exercise is flagged for review and scores 0, every other exercise keeps all
    its points. "no names" grades with every declaration's `refuse` list emptied, so that an equivalent can only be
    caught by the run-time refusal of its operators; the replacement made inside a function is caught only by the
    kernel's integrity check (the source never names the module it patches)."""
    if not AVAILABLE:
        pytest.skip(f"no sandbox here: {WHY}")
    import dataclasses

    import attacks
    from kernel import reference_answers, released_notebook

    from autograder.core import grade, oracles

    chapter, declared, changes = attacks.GRADED[family]
    answers = reference_answers(chapter)
    for gid, change in changes.items():
        answers[gid] = change[1:] if change.startswith("=") else answers[gid] + "\n" + change
    path = tmp_path / f"{chapter}.ipynb"
    nbformat.write(released_notebook(chapter, answers), path)
    declarations = oracles.for_chapter(chapter)
    if declared == "no names":
        declarations = {ex: dataclasses.replace(o, refuse=(), allow=()) for ex, o in declarations.items()}
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    result, _ = grade.grade(ROOT / "course" / chapter / f"{chapter}.ipynb", path, solution_notebook(chapter),
                            student="attacker", chapter=chapter, declarations=declarations)
    assert not result.error, result.error
    attacked = {gid.removesuffix("_answer") for gid in changes}
    assert set(result.flagged) == attacked, result.flagged
    for test in result.tests:
        if test.exercise in attacked:
            assert test.score == 0 and test.message.startswith("flagged for review"), test
        else:
            assert test.score == test.points, test
    reasons = {ex: " ".join(r) for ex, r in result.flagged.items()}
    if family == "helpers":
        assert "tampering: dlcourse.gan.train.toy_gan" in reasons["gloss"], reasons["gloss"]
    if declared == "no names":
        runtime = {"softmax", "ce", "ln", "sample"} & attacked
        assert all("through a route its source does not name" in reasons[ex] for ex in runtime), reasons
