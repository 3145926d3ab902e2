"""bench/compare: the re-implemented nanoGPT is GPT-2 (Hugging Face's, weight for weight), its schedule is
train.py's, its initialisation nanoGPT's; the course's side is the chapter's own model; ViT side, the chapter's
ViT."""

from __future__ import annotations

import importlib.util
import math
import sys

import nbformat
import pytest
import torch
from conftest import ROOT, solution_notebook

from dlcourse.gpt import lm


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"compare_{name}", ROOT / "bench" / "compare" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpt():
    return _module("gpt")


def test_the_nanogpt_schedule_is_train_py_s(gpt):
    steps = 2200
    factor = [gpt.NANOGPT.lr_factor(step, steps) for step in range(steps)]
    # train.py: learning_rate * (it + 1) / (warmup_iters + 1) while it < warmup_iters
    assert factor[0] == pytest.approx(1 / 101) and factor[99] == pytest.approx(100 / 101)
    assert factor[100] == pytest.approx(1.0)  # then min_lr + coeff * (lr - min_lr), coeff from 1 down
    midway = 100 + (steps - 100) // 2
    assert factor[midway] == pytest.approx(0.1 + 0.5 * 0.9)
    assert factor[-1] == pytest.approx(0.1, abs=1e-5)  # min_lr = learning_rate / 10
    assert all(a >= b for a, b in zip(factor[100:], factor[101:], strict=False))


def test_the_course_schedules(gpt):
    steps = 2200
    course = [gpt.COURSE.lr_factor(step, steps) for step in range(steps)]
    assert course[0] == pytest.approx(1 / 200) and max(course) < 1.0  # the chapter's: cosine times the ramp
    assert course[-1] == pytest.approx(0.1, abs=1e-5)
    linear = [gpt.LINEAR.lr_factor(step, steps) for step in range(steps)]
    assert linear[99] == pytest.approx(1.0)
    assert linear[100 + 1050] == pytest.approx(0.5)
    assert linear[-1] == pytest.approx(1 / 2100)


def test_the_nanogpt_model_is_gpt2_weight_for_weight(gpt):
    """With biases kept, nanoGPT's model is GPT-2 with exact GELU: Hugging Face's GPT2LMHeadModel holding the
    same weights gives the same logits."""
    from transformers.activations import ACT2FN

    torch.manual_seed(0)
    ours = gpt.NanoGPT(37, 16, 24, 2, 3, bias=True).eval()
    with torch.no_grad():  # not the initial zeros and ones: every weight and shift counts
        for p in ours.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    names = {".c_attn.": ".attn.c_attn.", ".attn_proj.": ".attn.c_proj.", ".c_fc.": ".mlp.c_fc.",
             ".mlp_proj.": ".mlp.c_proj."}
    state = {}
    for key, value in ours.state_dict().items():
        for mine, gpt2 in names.items():
            key = key.replace(mine, gpt2)
        state[key] = value
    hf = lm.as_gpt2(state, n_head=3)
    for block in hf.transformer.h:  # GPT-2 uses the tanh GELU; nanoGPT nn.GELU(), the exact one
        block.mlp.act = ACT2FN["gelu"]
    ids = torch.randint(37, (2, 16))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), hf(ids).logits, rtol=1e-5, atol=1e-5)
        block = hf.transformer.h[0].mlp
        block.act = ACT2FN["gelu_new"]
        assert not torch.allclose(ours(ids), hf(ids).logits, rtol=1e-5, atol=1e-5)  # the check can fail


def test_nanogpt_s_initialisation(gpt):
    torch.manual_seed(0)
    model = gpt.NanoGPT(76, 64, 128, 4, 4)
    assert model.wte.weight is model.lm_head.weight
    assert not any(name.endswith("bias") for name, _ in model.named_parameters())  # bias=False: none at all
    assert model.h[0].c_attn.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert model.h[0].attn_proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(8), rel=0.05)
    assert model.h[3].mlp_proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(8), rel=0.05)
    assert model.wpe.weight.std().item() == pytest.approx(0.02, rel=0.1)


def test_the_course_side_is_the_chapter_s_model(gpt):
    classes = gpt.course_classes()
    model = classes["GPT"](61, 48, 32, 2, 4).eval()
    hf = lm.tiny_gpt2(seed=0)
    lm.load_gpt2_weights(model, hf)
    ids = torch.randint(61, (2, 10))
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, hf(ids).logits, rtol=1e-4, atol=1e-4)
    logits = torch.randn(2, 5, 7)
    ids = torch.randint(7, (2, 5))
    expected = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 7), ids[:, 1:].reshape(-1))
    torch.testing.assert_close(classes["lm_loss"](logits, ids), expected)


def _chapter_recipe_cell() -> dict:
    """The pretraining demo's constants and its ``make_optimizer`` and ``lr_factor``, from the solution notebook."""
    import ast

    import nbformat

    from dlcourse.gpt import muon

    cells = [c.source for c in nbformat.read(solution_notebook("04_gpt_decoding"), as_version=4).cells
             if "def make_optimizer" in c.source]
    assert len(cells) == 1
    tree = ast.parse(cells[0])
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("make_optimizer", "lr_factor")
            or isinstance(n, ast.Assign) and "PEAK_LR" in ast.unparse(n.targets[0])]
    namespace = {"math": math, "torch": torch, "nn": torch.nn, "muon": muon, "STEPS": 2200}
    exec(compile(ast.Module(keep, []), "chapter 04's recipe cell", "exec"), namespace)
    return namespace


def test_the_benchmarked_recipe_is_the_chapter_s(gpt):
    """The chapter's learning rate, warm-up, clipping, schedule, positions and optimizer groups are
    CHAPTER_RECIPE's."""
    chapter, recipe = _chapter_recipe_cell(), gpt.CHAPTER_RECIPE
    assert (chapter["WARMUP"], chapter["CLIP"]) == (recipe.warmup, recipe.clip)
    assert any(p.name == f"{recipe.name}-lr{chapter['PEAK_LR']:g}-2200x32.json" for p in gpt.RUNS.iterdir())
    for step in range(2200):
        assert chapter["lr_factor"](step) == pytest.approx(recipe.lr_factor(step, 2200), abs=1e-12), step
    builds = [c.source for c in nbformat.read(solution_notebook("04_gpt_decoding"), as_version=4).cells
              if "gpt = " in c.source and "GPT(**CONFIG)" in c.source]
    assert len(builds) == 1 and ("rotary.use_rotary_positions(GPT(**CONFIG))" in builds[0]) == recipe.rotary
    model, _ = gpt.build(recipe, 61)
    ours, theirs = chapter["make_optimizer"](model, 6e-3), gpt.optimiser(recipe, model, 6e-3)
    assert type(ours) is type(theirs)

    def groups(opt):
        return sorted((g["muon"], g["weight_decay"], g["lr"], tuple(sorted(id(p) for p in g["params"])))
                      for g in opt.param_groups)

    assert groups(ours) == groups(theirs)
    assert ours.adamw.defaults["betas"] == theirs.adamw.defaults["betas"] == (0.9, recipe.beta2)
    assert ours.defaults["momentum"] == theirs.defaults["momentum"] == recipe.muon_momentum


def test_one_scoring_function_for_both_sides(gpt):
    """held_out reads a tensor (nanoGPT) or an LMOutput (the course) and counts 63 targets a window."""
    windows = torch.randint(61, (3, 8))
    logits = torch.randn(3, 8, 61)
    expected = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 61), windows[:, 1:].reshape(-1)).item()

    class Fixed(torch.nn.Module):
        def __init__(self, wrap: bool) -> None:
            super().__init__()
            self.wrap = wrap

        def forward(self, ids):
            return lm.LMOutput(logits, None) if self.wrap else logits

    for wrap in (False, True):
        assert gpt.held_out(Fixed(wrap), windows) == pytest.approx(expected, rel=1e-6)


def test_the_vit_sides_are_the_same_size():
    vit = _module("vit")
    course = vit.course_vit_class()(28, 7, 1, 10, dim=64, depth=4, num_heads=4, mlp_dim=128)
    count = sum(p.numel() for p in course.parameters())
    try:
        theirs = vit.vit_pytorch_class()
    except SystemExit:
        pytest.skip("vit-pytorch is installed by make bench only")
    other = theirs(image_size=28, patch_size=7, num_classes=10, channels=1, dim=64, depth=4, heads=4, dim_head=16,
                   mlp_dim=128)
    assert abs(sum(p.numel() for p in other.parameters()) - count) / count < 0.01
    assert course(torch.randn(2, 1, 28, 28)).shape == other(torch.randn(2, 1, 28, 28)).shape == (2, 10)


def test_the_vit_benchmark_draws_the_position_embeddings_as_the_chapter_says():
    """The chapter's class starts its position embeddings at N(0, 1); the benchmark's re-drawn variants at the
    standard deviations asked for; the neighbour score is read from either model's own parameter."""
    vit = _module("vit")
    built = vit.models(4, [0.02, 0.5], kinds=("chapter", "stds"))
    assert list(built) == ["ViT P = 4 (chapter)", "ViT P = 4 (chapter, E_pos std 0.02)",
                           "ViT P = 4 (chapter, E_pos std 0.5)"]
    stds = []
    for build in built.values():
        torch.manual_seed(0)
        positions = vit.position_embeddings(build())
        assert positions.shape == (1, 50, 64)
        stds.append(float(positions.std()))
    assert stds == pytest.approx([1.0, 0.02, 0.5], rel=0.05)
    assert vit.position_embeddings(torch.nn.Linear(2, 2)) is None
