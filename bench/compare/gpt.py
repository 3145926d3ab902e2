"""Chapter 04's GPT recipe against nanoGPT's, on the same windows in the same order, side by side.

Two recipes train a character-level GPT of one size (4 blocks, 4 heads, width 128, 64 positions: 0.8 M
parameters) on Shakespeare for the same number of steps of the same batches:

* **course**: the model students build in chapter 04 (its classes are taken from the solution notebook, so the
  benchmark follows the chapter) trained as the notebook's pretraining demo trains it (:data:`CHAPTER_RECIPE`,
  named ``course-rope``): rotary positions in place of the position table (``dlcourse.gpt.rotary``), Muon
  (``dlcourse.gpt.muon``) on the blocks' weight matrices and AdamW (β₂ 0.99) on the rest, weight decay 0.1 on the
  matrices and embeddings, a 100-step warm-up then a straight line to 0, gradients clipped at 1.0, the loss the
  student wrote. :data:`MUON` (``course-linear-muon``) is the same without rotary positions, the ablation's
  baseline; :data:`COURSE` is an earlier recipe (AdamW, warm-up 200, a cosine to a tenth of the peak);
  :data:`VARIANTS` holds every alternative tried.
* **nanoGPT**: a re-implementation of Karpathy's nanoGPT ``model.py`` and ``train.py`` with the
  ``shakespeare_char`` settings scaled to this size, as its repository describes them: no biases, exact GELU,
  ``F.scaled_dot_product_attention``, weights drawn from N(0, 0.02) with the residual projections scaled by
  1/√(2L), biases (none here) and LayerNorm shifts zero, tied embeddings, no dropout; AdamW β₂ 0.99 with weight
  decay 0.1 on every tensor of two or more dimensions, warm-up over 100 steps to the peak then a cosine to a
  tenth of it at the last step, clipping at 1.0, ``F.cross_entropy``.

* **modded-nanogpt** (``--recipe modded``): its record's model and optimisers, re-implemented in ``modded.py``;
  ``--lr`` multiplies the record's rates. The ablation runs ``modded-without-<element>`` and
  ``course-with-<element>`` (the element grafted onto the chapter's GPT); :func:`ablation` tabulates them.

Both read identical (B, 64) windows drawn once from the training plays (seed 0), in the same order, and are
scored by one function: the mean next-character loss (63 targets a window) on a fixed sample of 1,024 held-out
windows during training, and on the whole held-out text (four plays, each character once) at the end. Each
run uses one torch thread; :func:`sweep` starts the two sides of every learning rate at the same moment, so
both see the same load on a 2-core machine. The training clock stops during evaluations. After the grid,
:func:`equal_time` gives each side, at its best rate, the wall time nanoGPT's best run took, with a schedule that
follows the clock.

    python bench/compare/gpt.py sweep [--grid 1e-3 2e-3 3e-3 4e-3 6e-3] [--steps 2200] [--batch 32]
    python bench/compare/gpt.py sweep --pair course-linear nanogpt     # a variant of the course's recipe
    python bench/compare/gpt.py run --recipe course --lr 3e-3 --out run.json
    python bench/compare/gpt.py beside --job modded 0.5 --job course-linear-muon 8e-3 [--seed 1]   # any two
    python bench/compare/gpt.py summary        # the table, from the recorded runs

Runs are kept one file each in ``bench/results/compare-gpt/``; ``summary`` writes
``bench/results/compare-gpt.json`` and prints the Maintainers' guide's tables (docs/guides/maintainers.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "bench" / "results" / "compare-gpt"
SUMMARY = ROOT / "bench" / "results" / "compare-gpt.json"
CHAPTER = "04_gpt_decoding"
sys.path.insert(0, str(ROOT / "tests"))  # kernel.solution_namespace: a solution notebook's answer cells
SIZE = dict(n_positions=64, n_embd=128, n_layer=4, n_head=4)


# ---------------------------------------------------------------- the course's model, from the chapter itself

@functools.cache
def course_classes() -> dict:
    """The chapter's ``GPT`` and ``lm_loss``, executed from the solution notebook's answer cells."""
    from kernel import solution_namespace

    from dlcourse.gpt import lm

    namespace = solution_namespace(CHAPTER, ("attention_answer", "gpt_answer", "loss_answer"), lm=lm)
    missing = [name for name in ("GPT", "lm_loss") if name not in namespace]
    if missing:
        raise RuntimeError(f"solutions/{CHAPTER} no longer defines {missing} in its answer cells")
    return namespace


@functools.cache
def modded():
    """bench/compare/modded.py, loaded beside this file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("compare_modded", Path(__file__).with_name("modded.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- nanoGPT's model, re-implemented

class NanoLayerNorm(nn.Module):
    """LayerNorm whose shift is optional (nanoGPT drops it with ``bias=False``)."""

    def __init__(self, width: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class NanoBlock(nn.Module):
    def __init__(self, width: int, heads: int, bias: bool) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = NanoLayerNorm(width, bias), NanoLayerNorm(width, bias)
        self.c_attn = nn.Linear(width, 3 * width, bias=bias)
        self.attn_proj = nn.Linear(width, width, bias=bias)
        self.c_fc = nn.Linear(width, 4 * width, bias=bias)
        self.mlp_proj = nn.Linear(4 * width, width, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in self.c_attn(self.ln_1(x)).split(C, dim=2))  # 3 × (B, H, T, D)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.attn_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class NanoGPT(nn.Module):
    """nanoGPT's GPT at a given size: ``forward(ids (B, T))`` → logits (B, T, V)."""

    def __init__(self, vocab_size: int, n_positions: int, n_embd: int, n_layer: int, n_head: int,
                 bias: bool = False) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.h = nn.ModuleList(NanoBlock(n_embd, n_head, bias) for _ in range(n_layer))
        self.ln_f = NanoLayerNorm(n_embd, bias)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # tied, as nanoGPT ties them
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for name, p in self.named_parameters():  # the projections into the residual stream
            if name.endswith(("attn_proj.weight", "mlp_proj.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---------------------------------------------------------------- recipes

@dataclass(frozen=True)
class Recipe:
    """How one side trains: its model, loss, optimiser groups and learning-rate schedule."""

    name: str
    model: str  # "course" (the chapter's GPT), "nanogpt", "modded" (modded.ModdedGPT) or "graft" (the chapter's
    # GPT with ``graft``'s elements of modded's, modded.GraftedGPT)
    warmup: int  # steps of linear warm-up
    floor: float = 0.1  # the last learning rate, as a share of the peak
    schedule: str = "course"  # "course": cosine over all steps times the warm-up ramp; "nanogpt": cosine after
    # the warm-up; "linear": a straight line from the peak after the warm-up to the floor at the last step
    beta2: float = 0.99
    weight_decay: float = 0.1
    decay_embeddings: bool = True  # the embedding tables are decayed (both recipes, as written, decay them)
    clip: float = 1.0
    loss: str = "course"  # "course": the chapter's lm_loss; "fused": F.cross_entropy
    zero_biases: bool = False  # the course model's biases start at 0 instead of PyTorch's default draw
    bias: bool = False  # nanoGPT's model only: keep biases
    optimiser: str = "adamw"  # "adamw"; or "muon": Muon (float32) for the blocks' matrices, AdamW for the rest;
    # "modded": modded-nanogpt's Adam + Muon set-up (bench/compare/modded.py), ``lr`` scaling its record's rates
    muon_momentum: float = 0.95
    without: tuple[str, ...] = ()  # the modded model's elements left out (modded.Elements' names)
    graft: tuple[str, ...] = ()  # the modded elements grafted onto the chapter's GPT (model "graft")
    attn_scale: float | None = None  # the modded model's score scale (None: 1/√d, the record's; later ones 0.12)
    rotary: bool = False  # the chapter's GPT with rotary positions (dlcourse.gpt.rotary) instead of its table
    zero_projections: bool = False  # the chapter's GPT with its blocks' output projections (c_proj) starting at 0

    def lr_factor(self, step: int, steps: int) -> float:
        if self.schedule == "modded":  # constant, then a straight line to 0 over the last 40 % (no warm-up)
            return modded().lr_factor(step, steps)
        if self.schedule == "nanogpt":  # train.py's get_lr, with lr_decay_iters = max_iters
            if step < self.warmup:
                return (step + 1) / (self.warmup + 1)
            ratio = (step - self.warmup) / max(1, steps - self.warmup)
            return self.floor + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (1 - self.floor)
        warm = min(1.0, (step + 1) / self.warmup)
        if self.schedule == "linear":
            return warm * (1 - (1 - self.floor) * max(0, step - self.warmup) / max(1, steps - self.warmup))
        # the chapter's lr_factor
        return warm * (self.floor + (1 - self.floor) / 2 * (1 + math.cos(math.pi * min(1.0, step / steps))))


COURSE = Recipe("course", "course", warmup=200)  # the chapter's former recipe
NANOGPT = Recipe("nanogpt", "nanogpt", warmup=100, schedule="nanogpt")
LINEAR = Recipe("course-linear", "course", warmup=100, floor=0.0, schedule="linear")  # two changes of COURSE
MUON = replace(LINEAR, name="course-linear-muon", optimiser="muon")  # the chapter's recipe before rotary positions
CHAPTER_RECIPE = replace(MUON, name="course-rope", rotary=True)  # the chapter's recipe now
# modded-nanogpt's record (bench/compare/modded.py): its model, its optimisers and schedule, no clipping
MODDED = Recipe("modded", "modded", warmup=0, schedule="modded", loss="fused", clip=0.0, optimiser="modded")
VARIANTS = {recipe.name: recipe for recipe in [  # the other "course-*" variants each change one thing of COURSE
    COURSE, NANOGPT, LINEAR,
    replace(COURSE, name="course-warmup100", warmup=100),
    replace(COURSE, name="course-zero-biases", zero_biases=True),
    replace(COURSE, name="course-fused-loss", loss="fused"),
    replace(COURSE, name="course-floor0", floor=0.0),
    replace(COURSE, name="course-linear0", floor=0.0, schedule="linear"),
    replace(COURSE, name="course-beta95", beta2=0.95),
    replace(COURSE, name="course-embeddings-undecayed", decay_embeddings=False),
    MUON, CHAPTER_RECIPE,
    replace(NANOGPT, name="nanogpt-muon", optimiser="muon"),  # nanoGPT's model and recipe with Muon
    replace(NANOGPT, name="nanogpt-linear", schedule="linear", floor=0.0),  # the chapter's straight line
    MODDED,
]}
# The ablation, both ways: modded-nanogpt's recipe with one element taken away, and the chapter's recipe with
# one added. The model's elements (modded.Elements), and "optimiser": the record's whole optimiser set-up —
# Adam (0.8, 0.95) at its rates per group (embeddings 0.6, head 0.008, scalars 0.04) without weight decay,
# its Muon (q, k, v orthogonalised apart, momentum warmed up from 0.85, lr 0.05 × √max(1, rows/columns)),
# no warm-up, constant then a 40 % cool-down, no clipping — against the chapter's (MuonAdamW, warm-up 100, a
# straight line to 0, weight decay 0.1, clipping at 1). "--lr" means the record's scale with the record's
# optimiser, the chapter's peak rate with the chapter's.
ELEMENTS = ("relu2", "qk_norm", "rotary", "zero_init", "untied", "x0", "value_embeddings", "unet", "softcap")
GRAFT = replace(MUON, model="graft")
VARIANTS.update({f"modded-without-{name}": replace(MODDED, name=f"modded-without-{name}", without=(name,))
                 for name in ELEMENTS})
VARIANTS.update({f"course-with-{name}": replace(GRAFT, name=f"course-with-{name}", graft=(name,))
                 for name in ELEMENTS})
VARIANTS.update({  # the optimiser, both ways
    "modded-without-optimiser": replace(MUON, name="modded-without-optimiser", model="modded"),
    "course-with-optimiser": replace(MODDED, name="course-with-optimiser", model="graft", loss="course"),
    "modded-scale0.12": replace(MODDED, name="modded-scale0.12", attn_scale=0.12),  # later records' fixed scale
    # the chapter's recipe (course-rope) with modded's zero-initialised projections as well
    "course-rope-zero": replace(CHAPTER_RECIPE, name="course-rope-zero", zero_projections=True)})


def build(recipe: Recipe, vocab_size: int, seed: int = 0
          ) -> tuple[nn.Module, Callable[[nn.Module, torch.Tensor], torch.Tensor]]:
    """The model (seeded: torch.manual_seed(seed) first) and ``loss(model, ids (B, T))``."""
    torch.manual_seed(seed)
    if recipe.model == "graft":
        model = modded().GraftedGPT(course_classes()["GPT"](vocab_size, **SIZE), SIZE["n_head"],
                                    modded().Elements.only(*recipe.graft))
        forward = model
    elif recipe.model == "modded":
        elements = modded().Elements()
        for name in recipe.without:
            elements = elements.without(name)
        model = modded().ModdedGPT(vocab_size, **SIZE, elements=elements, attn_scale=recipe.attn_scale)
        forward = model
    elif recipe.model == "nanogpt":
        model = NanoGPT(vocab_size, **SIZE, bias=recipe.bias)
        forward = model
    else:
        course = course_classes()
        model = course["GPT"](vocab_size, **SIZE)
        if recipe.rotary:
            from dlcourse.gpt import rotary

            rotary.use_rotary_positions(model)
        if recipe.zero_projections:  # each block starts as the identity, as modded-nanogpt's do
            with torch.no_grad():
                for block in model.h:
                    for proj in (block.attn.c_proj, block.mlp.c_proj):
                        proj.weight.zero_()
                        proj.bias.zero_()
        if recipe.zero_biases:
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if name.endswith(".bias") and ".ln_" not in name and not name.startswith("ln_"):
                        p.zero_()

        def forward(ids):
            return model(ids).logits
    if recipe.loss == "course" and recipe.model in ("course", "graft"):
        lm_loss = course_classes()["lm_loss"]

        def loss(m, ids):
            return lm_loss(forward(ids), ids)
    else:
        def loss(m, ids):
            logits = forward(ids)[:, :-1]
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    return model, loss


def optimiser(recipe: Recipe, model: nn.Module, lr: float) -> torch.optim.Optimizer:
    """AdamW with weight decay on the tensors of two or more dimensions (embeddings too unless the recipe says);
    with ``optimiser="muon"``, the chapter's :class:`~dlcourse.gpt.muon.MuonAdamW`: Muon for the weight
    matrices that are neither embeddings nor an untied head, AdamW for the rest."""
    if recipe.optimiser == "modded":
        return ModdedPair(model, lr)
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    if isinstance(getattr(model, "lm_head", None), nn.Linear):  # an untied head is AdamW's, as an embedding
        embeddings.add(id(model.lm_head.weight))
    decay, no_decay, matrices = [], [], []
    for p in model.parameters():
        if recipe.optimiser == "muon" and p.dim() == 2 and id(p) not in embeddings:
            matrices.append(p)
            continue
        decayed = p.dim() >= 2 and (recipe.decay_embeddings or id(p) not in embeddings)
        (decay if decayed else no_decay).append(p)
    if not matrices:
        return torch.optim.AdamW([{"params": decay, "weight_decay": recipe.weight_decay},
                                  {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, recipe.beta2))
    from dlcourse.gpt.muon import MuonAdamW

    return MuonAdamW([{"params": matrices, "muon": True, "weight_decay": recipe.weight_decay},
                      {"params": decay, "weight_decay": recipe.weight_decay},
                      {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, recipe.beta2),
                     momentum=recipe.muon_momentum)


class ModdedPair:
    """modded-nanogpt's two optimisers as one: its Adam and Muon groups in ``param_groups``, each with its
    ``rate`` (the record's rate times ``lr_scale``), so that :func:`run` sets ``lr = factor × rate``; Muon's
    momentum warms up with the schedule's step, which :func:`run` sets (``at``: under a time budget, the step
    the clock has reached) and which otherwise counts the steps taken."""

    def __init__(self, model: nn.Module, lr_scale: float) -> None:
        self.adam, self.muon = modded().optimisers(model, lr_scale)
        self.param_groups = self.adam.param_groups + self.muon.param_groups
        for group in self.param_groups:
            group["rate"] = group["initial_lr"]
        self.at = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.adam.zero_grad(set_to_none=set_to_none)
        self.muon.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        for group in self.muon.param_groups:
            group["momentum"] = modded().muon_momentum(self.at)
        self.adam.step()
        self.muon.step()
        self.at += 1


# ---------------------------------------------------------------- one run

def data(steps: int, batch: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """(training windows (steps, B, 64), held-out sample (1024, 64), whole held-out text (N, 64), vocabulary).

    ``seed`` draws the training windows (0: the chapter's order); the held-out sample never changes."""
    from dlcourse.datasets import shakespeare

    corpus = shakespeare.char_corpus()
    gen = torch.Generator().manual_seed(seed)
    train = torch.stack([torch.cat([x, y[:, -1:]], dim=1)
                         for x, y in (corpus.batch("train", batch, 63, gen) for _ in range(steps))])
    whole = corpus.windows("val", 64)
    sample = whole[torch.randperm(len(whole), generator=torch.Generator().manual_seed(1))[:1024]]
    return train, sample, whole, len(corpus.tokenizer)


@torch.no_grad()
def held_out(model: nn.Module, windows: torch.Tensor) -> float:
    """Mean next-character loss in nats over ``windows`` (N, 64); the same function scores both sides."""
    model.eval()
    total, count = 0.0, 0
    for chunk in windows.split(256):
        out = model(chunk)
        logits = (out if isinstance(out, torch.Tensor) else out.logits)[:, :-1]
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1),
                                 reduction="sum").item()
        count += chunk[:, 1:].numel()
    model.train()
    return total / count


def run(recipe: Recipe, lr: float, steps: int, batch: int, eval_every: int, threads: int = 1,
        budget: float | None = None, seed: int = 0) -> dict:
    """Train one side; the record holds the sampled curve against steps and training seconds, and the end.

    With a ``budget`` in seconds, the run stops when the training clock reaches it, and the schedule follows
    the clock: after a fraction f of the budget the learning rate is the one of step f · ``steps`` of the
    planned schedule, so the run warms up, decays and ends its schedule in the time given however fast it
    steps. It may then take more than ``steps`` steps: it has twice as many windows to read, the first
    ``steps`` batches those of a run without a budget.

    ``seed`` draws both the windows and the model's first weights (0: the runs recorded before seeds existed).
    """
    torch.set_num_threads(threads)
    train, sample, whole, vocab = data(steps if budget is None else 2 * steps, batch, seed)
    model, loss = build(recipe, vocab, seed)
    model.train()
    opt = optimiser(recipe, model, lr)
    curve, seconds = [], 0.0
    started = time.perf_counter()
    done = 0
    for step in range(len(train)):
        at = step
        if budget is not None:
            fraction = (seconds + time.perf_counter() - started) / budget
            if fraction >= 1.0:
                break
            at = min(steps - 1, int(fraction * steps))
        for group in opt.param_groups:  # a group with a rate of its own (modded) scales it instead
            group["lr"] = group.get("rate", lr) * recipe.lr_factor(at, steps)
        if isinstance(opt, ModdedPair):  # its momentum follows the schedule's step too
            opt.at = at
        value = loss(model, train[step])
        opt.zero_grad(set_to_none=True)
        value.backward()
        if recipe.clip:
            nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
        opt.step()
        done = step + 1
        if (step + 1) % eval_every == 0 or step + 1 == len(train):
            seconds += time.perf_counter() - started
            curve.append({"step": step + 1, "seconds": round(seconds, 2), "train_loss": round(value.item(), 4),
                          "sample_loss": round(held_out(model, sample), 4)})
            started = time.perf_counter()
    if not curve or curve[-1]["step"] != done:  # a budget ended the run between evaluations
        seconds += time.perf_counter() - started
        curve.append({"step": done, "seconds": round(seconds, 2), "train_loss": round(value.item(), 4),
                      "sample_loss": round(held_out(model, sample), 4)})
    final = held_out(model, whole)
    return {"recipe": asdict(recipe), "lr": lr, "steps": done, "planned_steps": steps, "budget_seconds": budget,
            "batch": batch, "seed": seed, "threads": threads, "characters": done * batch * 64,
            "seconds": round(seconds, 1),
            "tokens_per_second": round(done * batch * 64 / seconds), "whole_held_out": round(final, 4),
            "curve": curve, "parameters": sum(p.numel() for p in model.parameters()),
            "torch": torch.__version__}


def run_file(recipe: str, lr: float, steps: int, batch: int, budget: float | None = None, seed: int = 0) -> Path:
    when = f"{budget:g}s" if budget is not None else f"{steps}x{batch}"
    return RUNS / f"{recipe}-lr{lr:g}-{when}{f'-seed{seed}' if seed else ''}.json"


# ---------------------------------------------------------------- side by side

def side_by_side(jobs: list[tuple[str, float]], steps: int, batch: int, eval_every: int,
                 budget: float | None = None, seed: int = 0) -> None:
    """Start every (recipe, lr) job at the same moment, one thread each, and wait for all of them."""
    RUNS.mkdir(parents=True, exist_ok=True)
    print(" beside ".join(f"{name} at {lr:g}" for name, lr in jobs) + (f", {budget:g} s each" if budget else "")
          + (f", seed {seed}" if seed else ""), flush=True)
    extra = (["--budget", str(budget)] if budget is not None else []) + ["--seed", str(seed)]
    procs = [subprocess.Popen([sys.executable, __file__, "run", "--recipe", name, "--lr", str(lr), "--steps",
                               str(steps), "--batch", str(batch), "--eval-every", str(eval_every), *extra,
                               "--out", str(run_file(name, lr, steps, batch, budget, seed))]) for name, lr in jobs]
    for proc in procs:
        if proc.wait():
            raise SystemExit(f"a run failed (exit {proc.returncode})")


def sweep(pairs: list[tuple[str, str]], grid: list[float], steps: int, batch: int, eval_every: int,
          again: bool = False) -> None:
    """For each learning rate, each pair's two recipes start together, one thread each (a pair whose two runs
    are both recorded is skipped unless ``again``); then :func:`equal_time` for every pair."""
    for lr in grid:
        for pair in pairs:
            if again or not all(run_file(name, lr, steps, batch).exists() for name in pair):
                side_by_side([(name, lr) for name in pair], steps, batch, eval_every)
    for pair in pairs:
        equal_time(pair, steps, batch, eval_every, again)
    summary()


def best(name: str, steps: int, batch: int) -> dict:
    """The recorded run of ``name`` at ``steps`` × ``batch`` with the lowest whole held-out loss."""
    runs = [json.loads(p.read_text()) for p in RUNS.glob(f"{name}-lr*-{steps}x{batch}.json")]
    runs = [r for r in runs if r["recipe"]["name"] == name and not r.get("seed")]
    if not runs:
        raise SystemExit(f"no recorded run of {name} at {steps} x {batch}: run the sweep first")
    return min(runs, key=lambda r: r["whole_held_out"])


def equal_time(pair: tuple[str, str], steps: int, batch: int, eval_every: int, again: bool = False) -> None:
    """Each recipe at its best learning rate on the grid, both given the wall time the rival's best run took
    (the second of the pair: nanoGPT), with schedules that follow the clock; side by side."""
    mine, rival = (best(name, steps, batch) for name in pair)
    budget = float(round(rival["seconds"]))
    jobs = [(pair[0], mine["lr"]), (pair[1], rival["lr"])]
    if again or not all(run_file(name, lr, steps, batch, budget).exists() for name, lr in jobs):
        side_by_side(jobs, steps, batch, eval_every, budget)


def summary() -> dict:
    """The tables of recorded runs: equal characters (whole held-out loss of full runs, per recipe and learning
    rate) and equal time (runs given one wall-clock budget)."""
    runs = [dict(json.loads(p.read_text()), file=p.name) for p in sorted(RUNS.glob("*.json"))]

    def row(r: dict) -> dict:  # (a file named "...-beside-<recipe>" ran beside that recipe's run)
        return {"file": r["file"], "recipe": r["recipe"]["name"], "lr": r["lr"], "steps": r["steps"],
                "batch": r["batch"], "seed": r.get("seed", 0), "budget_seconds": r.get("budget_seconds"),
                "whole_held_out": r["whole_held_out"],
                "seconds": r["seconds"], "tokens_per_second": r["tokens_per_second"],
                "characters": r["characters"]}

    rows = sorted((row(r) for r in runs), key=lambda r: (r["budget_seconds"] or 0, -r["steps"], r["recipe"], r["lr"]))
    out = {"machine": "2-core CPU, one torch thread per run, two runs side by side",
           "equal_characters": [r for r in rows if r["budget_seconds"] is None],
           "equal_time": [r for r in rows if r["budget_seconds"] is not None]}
    out["ablation"] = {}
    for steps, batch in sorted({(r["steps"], r["batch"]) for r in runs if r.get("budget_seconds") is None}):
        table = ablation(runs, steps, batch)
        if any(row[side]["deltas"] for row in table for side in ("added", "removed")):
            out["ablation"][f"{steps}x{batch}"] = table
    SUMMARY.write_text(json.dumps(out, indent=1) + "\n")
    print("| recipe | peak lr | steps × windows | whole held-out (nats/char) | training s | tokens/s |")
    print("|---|---|---|---|---|---|")
    for r in out["equal_characters"]:
        print(f"| {r['recipe']} | {r['lr']:g} | {r['steps']:,} × {r['batch']} | {r['whole_held_out']:.3f} | "
              f"{r['seconds']:.0f} | {r['tokens_per_second']:,} |")
    if out["equal_time"]:
        print("\n| recipe | peak lr | budget s | steps × windows | whole held-out (nats/char) | tokens/s |")
        print("|---|---|---|---|---|---|")
    for r in out["equal_time"]:
        print(f"| {r['recipe']} | {r['lr']:g} | {r['budget_seconds']:g} | {r['steps']:,} × {r['batch']} | "
              f"{r['whole_held_out']:.3f} | {r['tokens_per_second']:,} |")

    def cell(d: dict) -> str:
        if d["mean"] is None:
            return "–"
        return f"{d['mean']:+.3f}" + (f" (± {d['spread'] / 2:.3f})" if len(d["deltas"]) > 1 else " (one seed)")
    for size, table in out["ablation"].items():
        print(f"\n| element ({size}; Δ nats/char, mean ± half the seeds' spread) | added to the chapter's recipe | "
              "removed from modded-nanogpt's |")
        print("|---|---|---|")
        for row in table:
            print(f"| {row['element']} | {cell(row['added'])} | {cell(row['removed'])} |")
    return out


def ablation(runs: list[dict], steps: int, batch: int) -> list[dict]:
    """One row per element: Δ whole held-out loss (nats/char) when it is added to the chapter's recipe
    (``course-with-<element>`` against ``course-linear-muon``) and when it is taken from modded-nanogpt's
    (``modded-without-<element>`` against ``modded``), per seed against the baseline run of the same seed,
    at ``steps`` × ``batch``. A side's baseline rate is the one its element runs used (the optimiser element's
    runs use the other side's rate units, so they do not vote). An element run at several rates (the
    optimiser, whose best rate on the other model is not the baseline's) counts at the rate run with the
    most seeds, the best seed-0 run among those; the row names it."""
    runs = [r for r in runs if r["steps"] == steps and r["batch"] == batch and r.get("budget_seconds") is None]

    def by_seed(name: str, lr: float | None = None) -> dict[int, float]:
        return {r.get("seed", 0): r["whole_held_out"] for r in runs
                if r["recipe"]["name"] == name and (lr is None or r["lr"] == lr)}

    def base_rate(prefix: str) -> float | None:
        rates = [r["lr"] for r in runs if r["recipe"]["name"].startswith(prefix)
                 and not r["recipe"]["name"].endswith("-optimiser")]
        return max(set(rates), key=rates.count) if rates else None

    sides = {"added": ("course-with-", MUON.name), "removed": ("modded-without-", MODDED.name)}
    bases = {side: by_seed(name, base_rate(prefix)) for side, (prefix, name) in sides.items()}
    rows = []
    for element in (*ELEMENTS, "optimiser"):
        row = {"element": element}
        for side, (prefix, _) in sides.items():
            name = prefix + element
            rates = sorted({r["lr"] for r in runs if r["recipe"]["name"] == name})
            rate = min(rates, key=lambda lr: (-len(by_seed(name, lr)), by_seed(name, lr).get(0, math.inf)),
                       default=None)
            deltas = {seed: round(value - bases[side][seed], 4)
                      for seed, value in sorted(by_seed(name, rate).items()) if seed in bases[side]}
            row[side] = {"lr": rate, "deltas": deltas,
                         "mean": round(sum(deltas.values()) / len(deltas), 4) if deltas else None,
                         "spread": round(max(deltas.values()) - min(deltas.values()), 4) if deltas else None}
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run")
    one.add_argument("--recipe", choices=sorted(VARIANTS), required=True)
    one.add_argument("--out", type=Path, required=True)
    one.add_argument("--budget", type=float, help="seconds of training; the schedule follows the clock")
    many = sub.add_parser("sweep")
    many.add_argument("--grid", type=float, nargs="+", default=[1e-3, 2e-3, 3e-3, 4e-3, 6e-3])
    many.add_argument("--pair", nargs=2, action="append", metavar=("RECIPE", "RIVAL"),
                      help="recipes trained side by side (default: the chapter's, course-rope, beside nanogpt)")
    many.add_argument("--again", action="store_true", help="re-run recorded runs too")
    beside = sub.add_parser("beside", help="any runs side by side: --job RECIPE LR, repeated")
    beside.add_argument("--job", nargs=2, action="append", metavar=("RECIPE", "LR"), required=True)
    beside.add_argument("--budget", type=float, help="seconds of training each; schedules follow the clock")
    for p in (one, beside):
        p.add_argument("--seed", type=int, default=0, help="draws the windows and the first weights")
    for p in (one, many, beside):
        p.add_argument("--steps", type=int, default=2200)
        p.add_argument("--batch", type=int, default=32)
        p.add_argument("--eval-every", type=int, default=275)
    one.add_argument("--lr", type=float, required=True)
    sub.add_parser("summary")
    args = parser.parse_args()
    if args.command == "run":
        record = run(VARIANTS[args.recipe], args.lr, args.steps, args.batch, args.eval_every, budget=args.budget,
                     seed=args.seed)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n")
        print(f"{args.recipe} lr {args.lr:g}: whole held-out {record['whole_held_out']:.4f} nats/char after "
              f"{record['steps']:,} steps, {record['seconds']:.0f} s, {record['tokens_per_second']:,} tokens/s",
              flush=True)
    elif args.command == "sweep":
        sweep([tuple(p) for p in args.pair] if args.pair else [(CHAPTER_RECIPE.name, "nanogpt")], args.grid, args.steps,
              args.batch, args.eval_every, args.again)
    elif args.command == "beside":
        unknown = [name for name, _ in args.job if name not in VARIANTS]
        if unknown:
            raise SystemExit(f"unknown recipes {unknown}; the recipes are {sorted(VARIANTS)}")
        side_by_side([(name, float(lr)) for name, lr in args.job], args.steps, args.batch, args.eval_every,
                     args.budget, args.seed)
    else:
        summary()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
