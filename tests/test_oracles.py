"""No exercise earns points by calling the library it is checked against.

Every exercise declares its oracle in autograder/core/oracles.toml; the grader reads each answer's source and
flags the exercise when the answer, or the student's code it depends on, names that oracle — however it was
captured. These tests need no kernel: the check is static, and :func:`grade.plan` is what the grader runs.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from conftest import CHAPTERS, ROOT
from kernel import reference_answers, released_notebook

from autograder.core import (
    grade,  # the repository is on sys.path (see conftest)
    oracles,
)
from autograder.core.flags import escape_hatches

DECLARED = oracles.load() if oracles.DECLARATIONS.exists() else {}


def flags_of(chapter: str, answers: dict[str, str], added: list[str] = ()) -> dict[str, list[str]]:
    """The oracle flags the grader raises for a release with ``answers`` typed in and ``added`` cells
    appended after the first answer (scratch cells a student writes)."""
    nb = released_notebook(chapter, answers)
    cells = [dict(c) for c in nb.cells]
    first = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution"))
    for k, source in enumerate(added):
        cells.insert(first + 1 + k, {"cell_type": "code", "metadata": {}, "source": source, "outputs": []})
    steps = grade.plan(nb, cells, [])
    return grade.oracle_flags(steps, chapter)


# ------------------------------------------------------------------------------------ the declarations


def test_every_exercise_declares_its_oracle_and_nothing_else_is_declared():
    """What ``make check`` runs: an exercise without a declaration, one of no exercise, or one without its
    oracle and reason is a problem (an exercise no library computes in one call may refuse nothing)."""
    from autograder.bookkeeping import pipeline

    assert pipeline.oracle_problems() == []


def test_a_malformed_declaration_is_a_clear_error(tmp_path):
    bad = tmp_path / "oracles.toml"
    for text, says in [("[a.b]\noracle = 'x'\n", "needs a list 'refuse'"),
                       ("[a.b]\nrefuse = ['torch softmax']\n", "dotted name"),
                       ("[a.b]\nrefuse = []\nrefused = []\n", "unknown keys"),
                       ("[a.b\n", "not valid TOML")]:
        bad.write_text(text)
        with pytest.raises(oracles.DeclarationError, match=re.escape(says)):
            oracles.load(bad)


# --------------------------------------------------------------------------- operators refused at run time

def _adam_step(**options):
    import torch

    p = torch.nn.Parameter(torch.randn(3))
    p.grad = torch.ones(3)
    torch.optim.Adam([p], **options).step()


def _sgd_step():
    import torch

    p = torch.nn.Parameter(torch.randn(3))
    p.grad = torch.ones(3)
    torch.optim.SGD([p], lr=0.1, momentum=0.9, fused=True).step()


def _clip():
    import torch

    p = torch.nn.Parameter(torch.randn(3))
    p.grad = torch.ones(3)
    torch.nn.utils.clip_grad_norm_([p], 0.1)


# Each operator pattern oracles.toml lists, and library calls that compute the oracle through it on the CPU.
PROBES = {
    "softmax": lambda t, F, x: F.softmax(x, -1),
    "log_softmax": lambda t, F, x: F.log_softmax(x, -1),
    "safe_softmax": lambda t, F, x: t._safe_softmax(x, -1),
    "masked_softmax": lambda t, F, x: t._masked_softmax(x, t.zeros_like(x, dtype=t.bool), 2, 0),
    "scaled_dot_product*": lambda t, F, x: F.scaled_dot_product_attention(x[None], x[None], x[None]),
    "nll_loss*": lambda t, F, x: F.cross_entropy(x.reshape(6, 4), t.tensor([0, 1, 2, 3, 0, 1])),
    "logsumexp": lambda t, F, x: t.logsumexp(x, -1),
    "fused_sgd*": lambda t, F, x: _sgd_step(),
    "fused_adam*": lambda t, F, x: (_adam_step(fused=True), _adam_step(fused=True, weight_decay=0.1)),
    "foreach_norm": lambda t, F, x: _clip(),
    "layer_norm": lambda t, F, x: F.layer_norm(x, (4,)),
    "group_norm": lambda t, F, x: F.group_norm(x, 1),
    "batch_norm": lambda t, F, x: (F.instance_norm(x), t.nn.InstanceNorm1d(3)(x), F.batch_norm(x, None, None,
                                                                                                training=True)),
    "multinomial": lambda t, F, x: t.distributions.Categorical(logits=x[0, 0]).sample(),
    "im2col": lambda t, F, x: F.unfold(x[None], 2, stride=2),
    "unfold": lambda t, F, x: x.unfold(-1, 2, 2),
    "pixel_unshuffle": lambda t, F, x: F.pixel_unshuffle(x[None, :, :2, :2], 2),
    "binary_cross_entropy*": lambda t, F, x: (F.binary_cross_entropy_with_logits(x, t.ones_like(x)),
                                              F.binary_cross_entropy(t.sigmoid(x), t.ones_like(x))),
    "soft_margin_loss*": lambda t, F, x: F.soft_margin_loss(x, t.ones_like(x)),
    "lerp": lambda t, F, x: t.lerp(x, x + 1, 0.3),
    "rot90": lambda t, F, x: t.rot90(x, 1, (1, 2)),
}


def _dispatched(probe) -> set[str]:
    """The ATen operators ``probe`` reaches, as the run-time guard sees them (a dispatch mode)."""
    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Record(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    x = torch.randn(2, 3, 4)
    with Record():
        probe(torch, F, x)
    return seen


def test_every_declared_operator_is_what_a_library_function_dispatches_to():
    """No `operators` entry is dead: each one matches an operator that a library function computing the oracle
    dispatches to on the CPU, and each probe's operators are refused by the guard the grader installs."""
    from dlcourse import checks
    from dlcourse.checks import _forbidden_match

    declared = {p for o in DECLARED.values() for p in o.operators}
    assert declared, "oracles.toml refuses no operator at run time"
    assert declared <= set(PROBES), f"operators without a probe here: {sorted(declared - set(PROBES))}"
    for pattern in sorted(declared):
        ops = _dispatched(PROBES[pattern])
        assert any(_forbidden_match(op, frozenset([pattern])) for op in ops), f"{pattern}: dispatched {sorted(ops)}"
        with pytest.raises(checks.ForbiddenCall):
            import torch
            import torch.nn.functional as F

            with checks.forbid([pattern]):
                PROBES[pattern](torch, F, torch.randn(2, 3, 4))


def test_a_malformed_operator_list_is_a_clear_error(tmp_path):
    bad = tmp_path / "oracles.toml"
    for text in ("[a.b]\nrefuse = []\noperators = 'softmax'\n", "[a.b]\nrefuse = []\noperators = ['aten.softmax']\n",
                 "[a.b]\nrefuse = []\noperators = ['.softmax']\n"):
        bad.write_text(text)
        with pytest.raises(oracles.DeclarationError, match="operators"):
            oracles.load(bad)


def test_the_instructors_guide_says_what_each_answer_may_not_use():
    guide = (ROOT / "docs" / "guides" / "instructors.md").read_text()
    assert oracles.markdown() in guide, ("the Instructors' guide's table is out of date: "
                                         "python autograder/core/oracles.py prints it")


# --------------------------------------------------------------------------------- the static check


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reference_answers_do_not_call_their_oracles(chapter):
    assert flags_of(chapter, reference_answers(chapter)) == {}


def _planted_use(entry: str) -> str:
    """A statement that keeps a reference to ``entry`` (as a call-through would, before calling it)."""
    if entry.startswith("."):
        return f"_held = (lambda obj: obj{entry})"
    root, _, rest = entry.partition(".")
    return f"import {root} as _lib\n_held = _lib{'.' + rest if rest else ''}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_refused_name_of_every_exercise_is_seen(chapter):
    """Each exercise's reference answer with one refused name planted in it, name by name: every one is
    flagged, so no declared entry is dead (misspelt, or shadowed by an ``allow``)."""
    answers = reference_answers(chapter)
    for exercise, oracle in sorted(oracles.for_chapter(chapter).items()):
        answer = answers[f"{exercise}_answer"]
        others = [src for gid, src in answers.items() if gid != f"{exercise}_answer"]
        missed = [entry for entry in oracle.refuse
                  if not oracles.oracle_uses(answer + "\n" + _planted_use(entry), oracle, others)]
        assert not missed, f"{chapter}/{exercise}: planted references not seen: {missed}"


TOY = oracles.parse(textwrap.dedent("""
    [toy.softmax]
    oracle = "torch.softmax"
    why = "write it from exp, max and sum"
    refuse = ["torch.softmax", ".softmax", ".log_softmax", "scipy.special.softmax"]
    [toy.filters]
    oracle = "Hugging Face's warpers"
    why = "write the filters yourself"
    refuse = ["transformers.TopKLogitsWarper", "transformers.TopPLogitsWarper"]
    [toy.adam]
    oracle = "torch.optim.Adam"
    why = "write the update yourself"
    refuse = ["torch.optim", "torch.optim.Adam"]
    allow = ["torch.optim.Optimizer"]
"""))

# Each of these gets past a guard that patches or refuses the oracle in the kernel at test time, since it
# captured the oracle before (or reaches it by another name). The static check must see every one.
CAPTURED = {
    "a bound method saved at import": ("filters", """
        from transformers.generation.logits_process import TopKLogitsWarper as W
        _call = W.__call__
        def top_k_filter(logits, k):
            return _call(W(k), None, logits)"""),
    "a subclass": ("filters", """
        import transformers
        class Mine(transformers.generation.TopPLogitsWarper):
            pass
        def top_p_filter(logits, p):
            return Mine(p)(None, logits)"""),
    "functools.partial": ("filters", """
        import functools
        import transformers as hf
        _make = functools.partial(hf.TopKLogitsWarper)
        def top_k_filter(logits, k):
            return _make(k)(None, logits)"""),
    "a star import": ("filters", """
        from transformers import *
        def top_k_filter(logits, k):
            return TopKLogitsWarper(k)(None, logits)"""),
    "a closure over the original": ("filters", """
        def _keep():
            from transformers import TopKLogitsWarper
            return lambda logits, k: TopKLogitsWarper(k)(None, logits)
        top_k_filter = _keep()"""),
    "an alias of an alias": ("softmax", """
        import torch as t
        nn_ = t.nn
        f = nn_.functional
        def softmax(x, dim):
            return f.softmax(x, dim)"""),
    "getattr with a literal name": ("softmax", """
        import torch
        def softmax(x, dim):
            return getattr(torch, "softmax")(x, dim)"""),
    "a tensor method": ("softmax", """
        def softmax(x, dim):
            return x.log_softmax(dim).exp()"""),
    "operator.methodcaller": ("softmax", """
        import operator
        def softmax(x, dim):
            return operator.methodcaller("softmax", dim)(x)"""),
    "another library's equivalent": ("softmax", """
        import scipy.special as sp
        import torch
        def softmax(x, dim):
            return torch.as_tensor(sp.softmax(x.detach().numpy(), axis=dim))"""),
    "a module alias reaching a sibling": ("adam", """
        import torch
        o = torch.optim
        class Adam(o.AdamW):
            pass"""),
    "the functional form under the allowed base": ("adam", """
        from torch.optim import Optimizer
        import torch.optim.adam as impl
        class Adam(Optimizer):
            def step(self):
                impl.adam([], [], [], [], [], [])"""),
}

# The oracle reached through another cell of the student's: each answer is clean on its own.
THROUGH_ANOTHER_CELL = {
    "a helper defined in a scratch cell": ("softmax", "def softmax(x, dim):\n    return _helper(x, dim)",
                                           ["import torch\n_helper = torch.special.softmax"]),
    "a list filled by a later statement": ("softmax", "def softmax(x, dim):\n    return _box[0](x, dim)",
                                           ["_box = []", "import torch\n_box.append(torch.softmax)"]),
    "a helper that calls a helper": ("softmax", "def softmax(x, dim):\n    return _outer(x, dim)",
                                     ["def _outer(x, dim):\n    return _inner(x, dim)",
                                      "import torch.nn.functional as G\n"
                                      "def _inner(x, dim):\n    return G.softmax(x, dim)"]),
}

# Honest answers, and a student's scratch work around them, that must not be flagged.
HONEST = {
    "softmax from exp and sum": ("softmax", """
        import torch
        def softmax(x, dim):
            z = x - x.max(dim, keepdim=True).values
            return z.exp() / z.exp().sum(dim, keepdim=True)""", []),
    "a scratch cell comparing with the library": ("softmax", """
        def softmax(x, dim):
            z = (x - x.max(dim, keepdim=True).values).exp()
            return z / z.sum(dim, keepdim=True)""",
        ["import torch\nx = torch.randn(3, 4)\nprint((softmax(x, -1) - torch.softmax(x, -1)).abs().max())"]),
    "the docstring names the oracle": ("softmax", '''
        def softmax(x, dim):
            """Like torch.softmax, and "softmax" is its name."""
            z = (x - x.max(dim, keepdim=True).values).exp()
            return z / z.sum(dim, keepdim=True)''', []),
    "the allowed base class": ("adam", """
        import torch
        class Adam(torch.optim.Optimizer):
            def step(self, closure=None):
                return None""", []),
    "the allowed base class, imported by name": ("adam", """
        from torch.optim import Optimizer
        class Adam(Optimizer):
            pass""", []),
    "printing to the interpreter's own stderr": ("softmax", """
        import logging
        import sys
        def softmax(x, dim):
            print("debug", file=sys.__stderr__)
            logging.getLogger("mine").warning("debug")
            z = (x - x.max(dim, keepdim=True).values).exp()
            return z / z.sum(dim, keepdim=True)""", []),
}


def _check(exercise: str, answer: str, others: list[str] = ()) -> list[str]:
    return oracles.oracle_uses(textwrap.dedent(answer).strip(), TOY["toy", exercise], list(others))


@pytest.mark.parametrize("how", list(CAPTURED))
def test_an_oracle_captured_before_the_guard_is_still_seen(how):
    exercise, answer = CAPTURED[how]
    reasons = _check(exercise, answer)
    assert reasons and TOY["toy", exercise].oracle in reasons[0], how


@pytest.mark.parametrize("how", list(THROUGH_ANOTHER_CELL))
def test_an_oracle_called_through_another_cell_is_seen(how):
    exercise, answer, others = THROUGH_ANOTHER_CELL[how]
    reasons = _check(exercise, answer, others)
    assert reasons and "which the answer depends on" in reasons[0], how


@pytest.mark.parametrize("how", list(HONEST))
def test_honest_answers_and_scratch_work_are_not_flagged(how):
    exercise, answer, others = HONEST[how]
    assert _check(exercise, answer, others) == [], how
    assert escape_hatches(textwrap.dedent(answer)) == [], how


def test_writing_to_the_standard_streams_is_not_an_escape_hatch():
    for source in ["import sys\nprint('x', file=sys.__stderr__)", "import sys\nsys.__stdout__.write('x')",
                   "import sys\nprint('x', file=sys.stderr)", "import logging\nlogging.warning('x')",
                   "from sys import __stderr__\n__stderr__.write('x')"]:
        assert escape_hatches(source) == [], source


def test_looking_attributes_up_by_a_computed_name_is_an_escape_hatch():
    for source in ["import functools, torch\nf = functools.reduce(getattr, ['optim', 'Adam'], torch)",
                   "import operator\nname = 'soft' + 'max'\nf = operator.attrgetter(name)",
                   "import torch\nf = torch.optim.__getattr__('Adam')"]:
        assert escape_hatches(source), source


# -------------------------------------------------------------------------- one call-through per chapter

CALLTHROUGH = Path(__file__).with_name("callthroughs.py")


def _callthroughs() -> dict[str, tuple[str, str]]:
    namespace: dict = {}
    exec(compile(CALLTHROUGH.read_text(), str(CALLTHROUGH), "exec"), namespace)  # noqa: S102 - test data
    return namespace["CALLTHROUGH"]


def test_every_chapter_has_a_planted_call_through():
    assert set(_callthroughs()) == set(CHAPTERS)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_call_through_of_each_chapter_is_flagged_and_nothing_else(chapter):
    exercise, source = _callthroughs()[chapter]
    answers = reference_answers(chapter)
    answers[f"{exercise}_answer"] = source
    found = flags_of(chapter, answers)
    assert set(found) == {exercise}, f"{chapter}: flagged {sorted(found)}, expected only {exercise!r}"
    assert DECLARED[chapter, exercise].oracle in found[exercise][0]
