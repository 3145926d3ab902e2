"""What the grader reads in a student's source before running it: rewiring (rewiring.tampering),
escape hatches (flags.escape_hatches) and hidden-test markers (grade.strip_markers)."""

import pytest

from autograder.core.flags import escape_hatches
from autograder.core.grade import strip_markers
from autograder.core.rewiring import tampering


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
    cleaned = strip_markers("### BEGIN HIDDEN TESTS\nx = 1\n   ### END HIDDEN TESTS\n")
    assert "HIDDEN TESTS" not in cleaned and "x = 1" in cleaned
    assert strip_markers("y = '### BEGIN HIDDEN TESTS'") == "y = '### BEGIN HIDDEN TESTS'"  # only whole lines


@pytest.mark.parametrize("source", [
    "import ctypes",
    "import gc\ngc.get_referrers(checks)",
    "f.__code__ = g.__code__",
    "with torch._C.DisableTorchFunction():\n    y = F.softmax(x, -1)",
    "get_ipython().events.register('post_run_cell', f)",
    "import threading",
    "class T(torch.Tensor):\n    pass",
    "getattr(torch, '__dict__')",
    "!rm -rf ~",
    "%run other.py",
])
def test_escape_hatches_are_flagged(source):
    assert escape_hatches(source)


@pytest.mark.parametrize("source", [
    "%time y = f(x)",
    "%timeit -n 10 -r 3 attention(q, k, v)",
    "%%time\nfor _ in range(3):\n    step()",
    "%matplotlib inline\nplt.plot(xs)",
    "for i in range(3):\n    print(getattr(model, 'weight').shape)",
    "class Block(nn.Module):\n    def forward(self, x):\n        return x",
])
def test_honest_code_is_not_flagged(source):
    assert escape_hatches(source) == []


@pytest.mark.parametrize("source", ["%timeit -n 3 -r1 import ctypes", "%%time\nimport gc", "%time f.__code__"])
def test_a_timed_statement_is_read_like_any_other(source):
    assert escape_hatches(source)


@pytest.mark.parametrize("source, flagged", [
    ("import sys\nprint('warning', file=sys.stderr)", False),
    ("from sys import stderr\nstderr.write('x')", False),
    ("import sys\nsys.modules['torch'] = fake", True),
    ("import sys as s\ns.modules.clear()", True),
    ("from sys import modules", True),
    ("import sys\nx = sys\nx.settrace(f)", True),
    ("import sys\ngetattr(sys, 'modules')", True),
    ("import sys\nsys.exit()", True),
])
def test_sys_is_allowed_for_printing_only(source, flagged):
    assert bool(escape_hatches(source)) == flagged, escape_hatches(source)
