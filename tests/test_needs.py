"""Which cells grading runs (autograder/core/needs.py): the static decision, the release's marks, and a student's
code bringing a demo cell back. That grading with the marked cells left out gives the same scores as running
every cell is proven on every chapter's reference answers and planted wrong answers in test_notebooks.py."""

from __future__ import annotations

import json

import nbformat
import pytest
from conftest import CHAPTERS, ROOT, solution_notebook

from autograder.core import needs

SETUP = needs.Cell("import torch\nfrom dlcourse import checks\ndevice = torch.device('cpu')", runs=True, setup=True)


def kept(*cells: needs.Cell) -> list[bool]:
    return needs.needed([SETUP, *cells])[1:]


def demo(source: str) -> needs.Cell:
    return needs.Cell(source, runs=False)


def answer(source: str) -> needs.Cell:
    return needs.Cell(source, runs=True)


def a_test(source: str) -> needs.Cell:
    return needs.Cell(source, runs=False, test=True)


def test_names_of_a_cell():
    n = needs.names("import numpy as np\nx = np.zeros(3)\nx[0] = y\n\ndef f():\n    return z + x\n"
                    "for i in range(3):\n    w = i\nmodel.train()\n%matplotlib inline\n")
    assert {"np", "x", "f", "i", "w"} <= n.binds
    assert {"x", "f"} <= n.kills and not {"i", "w"} & n.kills  # a loop may not bind: not for certain
    assert "np" not in n.kills  # an import binds the module there already was, changes and all
    assert {"y", "z", "x", "model"} <= n.reads and "range" not in n.reads
    assert {"x", "model"} <= n.changes
    assert n.inert == {"np", "f"}
    assert needs.names("def f(:\n").known is False


def test_a_demo_that_binds_what_a_test_reads_runs():
    assert kept(demo("table = torch.arange(5)"), demo("fig = 1"), a_test("checks.assert_true(table.sum() > 0)")) == [
        True, False, True]


def test_what_a_kept_cell_needs_runs_too():
    cells = [demo("n = 3"), demo("table = torch.arange(n)"), demo("plot = n"), a_test("print(table)")]
    assert kept(*cells) == [True, True, False, True]


def test_a_demo_that_changes_a_kept_value_in_place_runs():
    cells = [demo("model = torch.nn.Linear(2, 2)"), demo("train(model)"), demo("model.eval()"),
             demo("print(model.weight.shape)"), a_test("checks.assert_true(model(x).shape == (1, 2))")]
    assert kept(*cells) == [True, True, True, False, True]


def test_a_name_bound_again_before_it_is_read_cuts_the_chain():
    cells = [demo("model = slow_training()"), demo("model = torch.nn.Linear(2, 2)"), a_test("print(model)")]
    assert kept(*cells) == [False, True, True]
    looped = [demo("model = slow_training()"), demo("for _ in range(1):\n    model = torch.nn.Linear(2, 2)"),
              a_test("print(model)")]
    assert kept(*looped) == [True, True, True]  # a loop need not bind it: the earlier binding may reach the test


def test_functions_and_modules_passed_around_are_not_changed():
    cells = [answer("def softmax(x):\n    return x.exp() / x.exp().sum()"), demo("show(softmax, device)"),
             a_test("checks.assert_close(softmax(torch.zeros(2)), torch.full((2,), 0.5))")]
    assert kept(*cells) == [True, False, True]


def test_the_global_random_state_is_kept_but_a_generator_of_ones_own_is_not():
    assert kept(demo("torch.manual_seed(0)"), demo("g = torch.Generator().manual_seed(0)"),
                demo("import numpy\nnumpy.random.seed(1)")) == [True, False, True]


def test_a_test_reads_only_what_it_does_not_bind_itself():
    cells = [demo("_gen = torch.Generator()"), a_test("_gen = torch.Generator().manual_seed(1)\nprint(_gen)")]
    assert kept(*cells) == [False, True]


def test_an_unreadable_cell_keeps_everything_before_it():
    assert kept(demo("a = 1"), demo("def broken(:"), demo("b = 2")) == [True, True, False]


def test_an_answer_that_reads_a_demo_value_brings_it_back():
    cells = [demo("vocab = build_vocab()"), answer("def encode(s):\n    return [vocab[c] for c in s]"),
             a_test("checks.assert_equal(encode('ab'), [1, 2])")]
    assert kept(*cells) == [True, True, True]


def _marks(path) -> set[int]:
    nb = json.loads(path.read_text())
    return {i for i, c in enumerate(nb["cells"]) if needs.marked_skip(c)}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_release_marks_what_the_analysis_finds(chapter):
    """course/ carries the decision made on solutions/ (same cell positions: the release keeps every cell)."""
    source = nbformat.read(solution_notebook(chapter), as_version=4)
    release = ROOT / "course" / chapter / f"{chapter}.ipynb"
    skip = needs.skippable(source)
    assert _marks(release) == skip
    demos = [i for i, c in needs.release_cells(source) if not c.runs and not c.test]
    assert skip <= set(demos)


def test_a_tagged_cell_is_never_skipped():
    nb = nbformat.read(solution_notebook("00_welcome"), as_version=4)
    (first, *_) = sorted(needs.skippable(nb))
    nb.cells[first].metadata.setdefault("tags", []).append(needs.RUN_TAG)
    assert first not in needs.skippable(nb)


def test_a_global_an_answer_reads_is_kept_wherever_it_is_bound():
    """A test calls the answer later, when a demo after the answer may have bound what its body reads."""
    cells = [answer("def scaled(x):\n    return x * SCALE"), a_test("print(scaled(2))"), demo("SCALE = 3"),
             a_test("checks.assert_equal(scaled(2), 6)")]
    assert kept(*cells) == [True, True, True, True]


def test_a_model_changed_through_another_name_is_kept():
    """An optimizer made from the model, an alias, a trainer: changing them changes the model."""
    made = [demo("model = torch.nn.Linear(2, 2)"), demo("opt = torch.optim.SGD(model.parameters(), lr=0.1)"),
            demo("for _ in range(3):\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()"),
            a_test("print(model.weight)")]
    assert kept(*made) == [True, True, True, True]
    alias = [demo("model = torch.nn.Linear(2, 2)"), demo("m = model"), demo("m.weight.data.zero_()"),
             a_test("print(model.weight)")]
    assert kept(*alias) == [True, True, True, True]


def test_a_function_that_sets_a_global_changes_it_when_called():
    cells = [demo("def init():\n    global W\n    W = torch.zeros(2)"), demo("W = torch.ones(2)"), demo("init()"),
             a_test("print(W)")]
    assert kept(*cells) == [True, True, True, True]


def test_what_a_kept_helper_reads_is_wanted_wherever_it_is_changed():
    cells = [demo("model = torch.nn.Linear(2, 2)"), demo("def evaluate():\n    return model(x).sum()"),
             demo("model.weight.data.zero_()"), a_test("print(evaluate())")]
    assert kept(*cells) == [True, True, True, True]


def test_a_module_imported_again_keeps_what_was_done_to_it():
    cells = [demo("torch.backends.cudnn.benchmark = False"), demo("import torch"), a_test("print(torch.ones(1))")]
    assert kept(*cells) == [True, True, True]


def test_what_the_analysis_cannot_see_keeps_everything_before_it():
    for hidden in ("%%capture\nW = 1", "exec('W = 1')", "globals()['W'] = 1", "from math import *",
                   "get_ipython().user_ns['W'] = 1"):
        assert kept(demo("a = 1"), demo(hidden), demo("b = 2")) == [True, True, False], hidden
    assert kept(demo("a = 1"), demo("%matplotlib inline\nb = 2")) == [False, False]  # a harmless line magic


def test_a_set_up_value_graded_code_reads_is_not_a_constant():
    cells = [answer("def f():\n    return device"), demo("device.index"), demo("swap(device)"),
             a_test("print(f())")]
    assert kept(*cells) == [True, False, True, True]


def test_an_answer_importing_what_a_demo_imports_too_needs_no_demo():
    cells = [demo("from torch.distributions import Normal\nprint(Normal(0, 1).sample())"),
             answer("from torch.distributions import Normal\n\ndef draw():\n    return Normal(0, 1).rsample()"),
             a_test("print(draw())")]
    assert kept(*cells) == [False, True, True]
