"""The autograder's submission guard and stderr handling (autograder/course_preprocessors.py)."""

import nbformat
import pytest
from course_preprocessors import StderrToStdout, SubmissionGuard, tampering


@pytest.mark.parametrize("source", [
    "torch.allclose = lambda *a, **k: True",
    "checks.assert_untampered = lambda: None",
    "from dlcourse import checks as c\nc.compare_with_oracle = print",
    "import torch as t\nt.Tensor.__eq__ = lambda a, b: True",
    "setattr(torch, 'equal', lambda *a: True)",
    "import builtins\nbuiltins.print = None",
    "sys.modules['torch'] = None",
    "del checks.assert_close",
    "np.allclose = lambda *a, **k: True",
    # reported by review
    "class _A:\n    __getattr__ = lambda s, n: (lambda *a, **k: None)\nchecks = _A()",
    "get_ipython().input_transformers_cleanup.append(lambda lines: [])",
    "_f = checks._compare_arrays\n_f.__code__ = (lambda *a: None).__code__",
    "_F = F\n_F.cross_entropy = my_ce",
    "vars(torch)['softmax'] = my_softmax",
    "torch.nn.functional.__dict__['softmax'] = f",
    "globals().update(checks=None)",
    "import fake_checks as checks",
    "def F(x):\n    return x",
    "import ctypes",
    "for torch in range(3):\n    pass",
])
def test_rewiring_is_found(source):
    assert tampering(source)


@pytest.mark.parametrize("source", [
    "torch.backends.cudnn.deterministic = True",
    "model.weight.data = w",
    "x.grad = None",
    "scores[mask] = -1e9",
    "self.linear = nn.Linear(3, 4)",
    "def f(x:\n",  # a syntax error is the kernel's to report
    "data = [1, 2, 3]",
    "from IPython.display import display",
    "import torch\nimport torch.nn.functional as F\nx = torch.zeros(3)",
    "t = torch.randn(3)\nt.data = torch.ones(3)",
])
def test_ordinary_code_is_left_alone(source):
    assert tampering(source) == []


def test_hidden_test_markers_in_an_answer_are_neutralised():
    guard = SubmissionGuard()
    cell, _ = guard.preprocess_cell(_cell("# BEGIN HIDDEN TESTS\nx = 1", solution=True, grade_id="a"), {}, 0)
    assert "BEGIN HIDDEN TESTS" not in cell.source and "x = 1" in cell.source


def _cell(source, **nbgrader):
    cell = nbformat.v4.new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = nbgrader
    return cell


def test_guard_replaces_only_rewiring_student_cells():
    guard = SubmissionGuard()
    bad, _ = guard.preprocess_cell(_cell("torch.equal = f", solution=True, grade=False, grade_id="a"), {}, 0)
    assert bad.source.startswith("raise RuntimeError('grader: this cell was not run")
    locked = "torch.equal = f"  # a locked cell is the course's own and is restored by nbgrader anyway
    same, _ = guard.preprocess_cell(_cell(locked, locked=True, grade_id="b"), {}, 1)
    assert same.source == locked
    fine, _ = guard.preprocess_cell(_cell("y = x + 1"), {}, 2)
    assert fine.source == "y = x + 1"


def test_stderr_becomes_marked_stdout_and_errors_stay():
    cell = _cell("pass", grade=True, points=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text="UserWarning: x\nmore\n"),
                    nbformat.v4.new_output("error", ename="CheckFailure", evalue="bad", traceback=[])]
    out, _ = StderrToStdout().preprocess_cell(cell, {}, 0)
    assert out.outputs[0]["name"] == "stdout"
    assert out.outputs[0]["text"] == "[stderr] UserWarning: x\n[stderr] more\n"
    assert out.outputs[1]["output_type"] == "error"
