"""modded-nanogpt's model and optimiser set-up, re-implemented at chapter 04's size for bench/compare/gpt.py.

The source is the speedrun record ``records/track_1_short/2025-01-04_SoftCap`` of
github.com/KellerJordan/modded-nanogpt (read at commit f411b3d3): a GPT-2 whose every element below was a record
of its own. Each is a switch of :class:`Elements`, so the ablation can take one away (or add one to the chapter's
recipe) at a time:

* ``relu2`` — the MLP's activation is ReLU(x)² (not GELU);
* ``qk_norm`` — queries and keys are RMS-normalised per head before the scores (``attn_scale`` then sets the
  scores' scale: the record keeps 1/√d; later records fix it at 0.12);
* ``rotary`` — positions enter as rotary embeddings on q and k, half of the head's dimensions rotating at
  frequencies from 1 down to 1/1024 and half not rotating ("half-truncated" RoPE); no learned position table;
* ``zero_init`` — the projections back into the residual stream and the language-model head start at zero;
* ``untied`` — the head is a matrix of its own, not the embedding's transpose;
* ``x0`` — every block mixes the normalised embedding x₀ back in, ``λ₀·x + λ₁·x₀`` with learned λ (1 and 0 at
  first);
* ``value_embeddings`` — extra token embeddings added to the values of the first and the last blocks,
  ``λ₀·v + λ₁·ve`` (the record's 012…012 pattern: block i and block L − n + i share table i);
* ``unet`` — the first half of the blocks keep their outputs, which the second half add back in reverse order,
  each with a learned weight (1 at first);
* ``softcap`` — the logits pass through ``cap · tanh(logits / cap)`` (cap 15);
* no biases anywhere, and RMS normalisation without a learned gain (always, as in the record).

The optimisers (:func:`optimisers`): Muon on the blocks' matrices — q, k and v as three matrices, each
orthogonalised on its own — with Nesterov momentum 0.95 reached from 0.85 over the first 300 steps and the step
scaled by √max(1, rows/columns); Adam with β = (0.8, 0.95) and no weight decay on the embeddings (lr 0.6), the
head (0.008; a head tied to the embedding takes this rate, as the record's tied head did) and the scalars (0.04);
Muon's lr 0.05. No warm-up: the rates stay constant, then fall in a straight
line to 0 over the last 40 % of the steps (:func:`lr_factor`). ``lr_scale`` multiplies every rate (the sweep's
one knob). What needs a GPU is left out: FlexAttention's sliding-window and document block masks (at 64 positions
every query sees its whole causal past), bfloat16 and FP8 weights, and skipping block 7's attention (a 12-block
detail).

:class:`GraftedGPT` grafts the same elements, one at a time, onto chapter 04's own GPT: the other direction of
the ablation.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from dlcourse.gpt.muon import orthogonalise

SOFTCAP = 15.0
ROPE_BASE = 1024.0  # the slowest rotating pair turns by 1/1024 of a radian per position


@dataclass(frozen=True)
class Elements:
    """Which of the record's elements a model has (all of them by default)."""

    relu2: bool = True
    qk_norm: bool = True
    rotary: bool = True
    zero_init: bool = True
    untied: bool = True
    x0: bool = True
    value_embeddings: bool = True
    unet: bool = True
    softcap: bool = True

    def without(self, name: str) -> Elements:
        self._check(name)
        return Elements(**{f.name: getattr(self, f.name) and f.name != name for f in fields(self)})

    @classmethod
    def only(cls, *names: str) -> Elements:
        """None of the elements but ``names``."""
        for name in names:
            cls._check(name)
        return cls(**{f.name: f.name in names for f in fields(cls)})

    @classmethod
    def _check(cls, name: str) -> None:
        if name not in {f.name for f in fields(cls)}:
            raise ValueError(f"no element {name!r}; the elements are {[f.name for f in fields(cls)]}")


def rms(x: torch.Tensor) -> torch.Tensor:
    """RMS normalisation over the last dimension, without a learned gain."""
    return F.rms_norm(x, (x.size(-1),))


def rotary_frequencies(head_dim: int) -> torch.Tensor:
    """(head_dim / 2,) angular frequencies: head_dim / 4 from 1 down to 1 / ROPE_BASE, geometrically, then
    head_dim / 4 zeros (those pairs never turn)."""
    if head_dim % 4:
        raise ValueError(f"rotary embeddings need a head dimension divisible by 4, got {head_dim}")
    turning = (1 / ROPE_BASE) ** torch.linspace(0, 1, steps=head_dim // 4, dtype=torch.float32)
    return torch.cat([turning, torch.zeros(head_dim // 4)])


def rotate(x: torch.Tensor, frequencies: torch.Tensor) -> torch.Tensor:
    """x (B, T, H, D) with pair i — dimensions i and i + D/2 — of position t turned by the angle t·ω_i."""
    angle = torch.arange(x.size(1), dtype=torch.float32, device=x.device)[:, None] * frequencies  # (T, D/2)
    cos, sin = angle.cos()[None, :, None, :], angle.sin()[None, :, None, :]
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * cos + x2 * sin, x2 * cos - x1 * sin), dim=-1).type_as(x)


class Attention(nn.Module):
    def __init__(self, width: int, heads: int, elements: Elements, attn_scale: float | None) -> None:
        super().__init__()
        self.heads, self.elements, self.attn_scale = heads, elements, attn_scale
        self.c_q, self.c_k, self.c_v = (nn.Linear(width, width, bias=False) for _ in range(3))
        self.c_proj = nn.Linear(width, width, bias=False)
        self.lambdas = nn.Parameter(torch.tensor([0.5, 0.5]) if elements.value_embeddings else torch.ones(1))
        self.register_buffer("frequencies", rotary_frequencies(width // heads), persistent=False)

    def forward(self, x: torch.Tensor, ve: torch.Tensor | None) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (proj(x).view(B, T, self.heads, C // self.heads) for proj in (self.c_q, self.c_k, self.c_v))
        if self.elements.value_embeddings:
            v = self.lambdas[0] * v + (self.lambdas[1] * ve.view_as(v) if ve is not None else 0)
        if self.elements.qk_norm:
            q, k = rms(q), rms(k)
        if self.elements.rotary:
            q, k = rotate(q, self.frequencies), rotate(k, self.frequencies)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                           scale=self.attn_scale)  # (B, H, T, D)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, width: int, elements: Elements) -> None:
        super().__init__()
        self.relu2 = elements.relu2
        self.c_fc = nn.Linear(width, 4 * width, bias=False)
        self.c_proj = nn.Linear(4 * width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.c_fc(x)
        return self.c_proj(F.relu(h).square() if self.relu2 else F.gelu(h))


class Block(nn.Module):
    def __init__(self, width: int, heads: int, elements: Elements, attn_scale: float | None) -> None:
        super().__init__()
        self.x0 = elements.x0
        self.attn, self.mlp = Attention(width, heads, elements, attn_scale), MLP(width, elements)
        self.lambdas = nn.Parameter(torch.tensor([1.0, 0.0]))  # unused without x0

    def forward(self, x: torch.Tensor, ve: torch.Tensor | None, x0: torch.Tensor) -> torch.Tensor:
        if self.x0:
            x = self.lambdas[0] * x + self.lambdas[1] * x0
        x = x + self.attn(rms(x), ve)
        return x + self.mlp(rms(x))


class ModdedGPT(nn.Module):
    """The record's GPT at a given size: ``forward(ids (B, T))`` → logits (B, T, V)."""

    def __init__(self, vocab_size: int, n_positions: int, n_embd: int, n_layer: int, n_head: int,
                 elements: Elements = Elements(), attn_scale: float | None = None) -> None:
        super().__init__()
        self.elements = elements
        self.embed = nn.Embedding(vocab_size, n_embd)
        self.wpe = None if elements.rotary else nn.Embedding(n_positions, n_embd)  # positions some other way
        self.blocks = nn.ModuleList(Block(n_embd, n_head, elements, attn_scale) for _ in range(n_layer))
        self.n_value = n_layer // 2 if elements.value_embeddings else 0  # tables: the first and last n blocks
        self.value_embeds = nn.ModuleList(nn.Embedding(vocab_size, n_embd) for _ in range(self.n_value))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        if not elements.untied:
            self.lm_head.weight = self.embed.weight
        self.n_encoder = n_layer // 2
        self.skip_weights = nn.Parameter(torch.ones(n_layer - self.n_encoder))  # unused without unet
        for module in self.modules():
            if isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=1.0)  # PyTorch's default, as the record leaves it
        if elements.zero_init:
            for block in self.blocks:
                nn.init.zeros_(block.attn.c_proj.weight)
                nn.init.zeros_(block.mlp.c_proj.weight)
            if elements.untied:
                nn.init.zeros_(self.lm_head.weight)

    def value_pattern(self) -> list[int | None]:
        """Which value table each block adds (None: none), the record's 012…012: block i and block
        L − n + i share table i."""
        L, n = len(self.blocks), self.n_value
        return [i if i < n else (i - (L - n) if i >= L - n else None) for i in range(L)]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        x0 = x = rms(x)
        tables = [table(ids) for table in self.value_embeds]
        ves = [tables[i] if i is not None else None for i in self.value_pattern()]
        skips = []
        for i, block in enumerate(self.blocks):
            if self.elements.unet and i >= self.n_encoder:
                x = x + self.skip_weights[i - self.n_encoder] * skips.pop()
            x = block(x, ves[i], x0)
            if self.elements.unet and i < self.n_encoder:
                skips.append(x)
        logits = self.lm_head(rms(x))
        return SOFTCAP * torch.tanh(logits / SOFTCAP) if self.elements.softcap else logits


class GraftedGPT(nn.Module):
    """Chapter 04's GPT (``base``, the student's classes) with some of the record's elements grafted on, for the
    other side of the ablation; with no element it computes exactly what ``base`` computes.

    It reuses ``base``'s modules (``wte``, ``wpe``, the blocks' ``ln_1``, ``attn.c_attn``, ``attn.c_proj``,
    ``ln_2``, ``mlp``, ``ln_f``, the tied head) and runs its own forward, where the elements enter as in
    :class:`ModdedGPT`: ``relu2`` in the MLP; ``qk_norm`` and ``rotary`` on the heads' queries and keys (the
    position table is then dropped); ``zero_init`` zeroes the projections into the residual stream (weights and
    biases) and an untied head; ``untied`` gives the head a matrix of its own (N(0, 0.02), the chapter's
    initialisation); ``x0`` mixes the embedding output back in before every block; ``value_embeddings`` adds
    tables (N(0, 0.02), the chapter's embedding scale) to the values of the first and last blocks; ``unet``
    and ``softcap`` as in the record. The chapter's LayerNorms and biases stay."""

    def __init__(self, base: nn.Module, n_head: int, elements: Elements) -> None:
        super().__init__()
        self.elements, self.n_head = elements, n_head
        vocab_size, width = base.wte.weight.shape
        n_layer = len(base.h)
        self.embed, self.blocks, self.ln_f, self.lm_head = base.wte, base.h, base.ln_f, base.lm_head
        self.wpe = None if elements.rotary else base.wpe
        if elements.untied:
            self.lm_head = nn.Linear(width, vocab_size, bias=False)
            nn.init.normal_(self.lm_head.weight, std=0.02)
        self.n_value = n_layer // 2 if elements.value_embeddings else 0
        self.value_embeds = nn.ModuleList(nn.Embedding(vocab_size, width) for _ in range(self.n_value))
        for table in self.value_embeds:
            nn.init.normal_(table.weight, std=0.02)
        # per block: (λ₀, λ₁) of the values' mix and of the x0 mix, vectors (scalars to the optimisers)
        self.value_lambdas = nn.ParameterList(nn.Parameter(torch.tensor([0.5, 0.5])) for _ in range(n_layer)
                                              ) if self.n_value else None
        self.x0_lambdas = nn.ParameterList(nn.Parameter(torch.tensor([1.0, 0.0])) for _ in range(n_layer)
                                           ) if elements.x0 else None
        self.n_encoder = n_layer // 2
        self.skip_weights = nn.Parameter(torch.ones(n_layer - self.n_encoder)) if elements.unet else None
        self.register_buffer("frequencies", rotary_frequencies(width // n_head), persistent=False)
        if elements.zero_init:
            with torch.no_grad():
                for block in self.blocks:
                    for proj in (block.attn.c_proj, block.mlp.c_proj):
                        proj.weight.zero_()
                        if proj.bias is not None:
                            proj.bias.zero_()
                if elements.untied:
                    self.lm_head.weight.zero_()

    value_pattern = ModdedGPT.value_pattern

    def attend(self, i: int, x: torch.Tensor, ve: torch.Tensor | None) -> torch.Tensor:
        attn = self.blocks[i].attn
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head) for t in attn.c_attn(x).split(C, dim=-1))
        if self.value_lambdas is not None:
            mix = self.value_lambdas[i]
            v = mix[0] * v + (mix[1] * ve.view_as(v) if ve is not None else 0)
        if self.elements.qk_norm:
            q, k = rms(q), rms(k)
        if self.elements.rotary:
            q, k = rotate(q, self.frequencies), rotate(k, self.frequencies)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return attn.c_proj(y.transpose(1, 2).reshape(B, T, C))

    def feed_forward(self, i: int, x: torch.Tensor) -> torch.Tensor:
        mlp = self.blocks[i].mlp
        h = mlp.c_fc(x)
        return mlp.c_proj(F.relu(h).square() if self.elements.relu2 else F.gelu(h, approximate="tanh"))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        x0 = x
        tables = [table(ids) for table in self.value_embeds]
        ves = [tables[i] if i is not None else None for i in self.value_pattern()]
        skips = []
        for i, block in enumerate(self.blocks):
            if self.skip_weights is not None and i >= self.n_encoder:
                x = x + self.skip_weights[i - self.n_encoder] * skips.pop()
            if self.x0_lambdas is not None:
                x = self.x0_lambdas[i][0] * x + self.x0_lambdas[i][1] * x0
            x = x + self.attend(i, block.ln_1(x), ves[i])
            x = x + self.feed_forward(i, block.ln_2(x))
            if self.skip_weights is not None and i < self.n_encoder:
                skips.append(x)
        logits = self.lm_head(self.ln_f(x))
        return SOFTCAP * torch.tanh(logits / SOFTCAP) if self.elements.softcap else logits


class ModdedMuon(torch.optim.Optimizer):
    """The record's Muon on one device: Nesterov momentum kept as ``buf ← lerp(buf, g, 1 − μ)``, the update
    ``lerp(g, buf, μ)`` orthogonalised (in float32 here) and applied with ``lr · √max(1, rows/columns)``; no
    weight decay. A group with ``parts`` > 1 holds fused matrices (GPT-2's ``c_attn``: q, k and v stacked by
    rows) whose row blocks are orthogonalised one by one, as the record's separate q, k, v matrices are."""

    def __init__(self, params, lr: float = 0.05, momentum: float = 0.95, steps: int = 5) -> None:
        super().__init__(params, dict(lr=lr, momentum=momentum, steps=steps))

    @torch.no_grad()
    def step(self, closure=None):  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                buf = state.setdefault("momentum_buffer", torch.zeros_like(p.grad))
                buf.lerp_(p.grad, 1 - group["momentum"])
                update = p.grad.lerp(buf, group["momentum"])
                parts = group.get("parts", 1)
                for part, piece in zip(p.chunk(parts), update.chunk(parts), strict=True):
                    scale = max(1.0, piece.size(0) / piece.size(1)) ** 0.5
                    part.add_(orthogonalise(piece, group["steps"]).to(p.dtype), alpha=-group["lr"] * scale)
        return None


# the record's rates (for 12 blocks of width 768 and 0.5 M tokens a step): ``lr_scale`` multiplies them all
RATES = {"embed": 0.6, "head": 0.008, "scalar": 0.04, "muon": 0.05}
COOLDOWN = 0.4  # the share of the steps over which the rates fall to 0
MOMENTUM_WARMUP = (0.85, 0.95, 300)  # Muon's momentum goes from the first to the second over the steps given


def optimisers(model: ModdedGPT | GraftedGPT, lr_scale: float = 1.0) -> tuple[torch.optim.Adam, ModdedMuon]:
    """Adam (β 0.8, 0.95) on the embeddings, the head and the scalars; Muon on the blocks' matrices (a grafted
    chapter GPT's fused ``c_attn`` as three). Each group remembers its peak rate as ``initial_lr`` (what
    :func:`set_step` scales)."""
    fused = [p for name, p in model.blocks.named_parameters() if name.endswith("c_attn.weight")]
    matrices = [p for p in model.blocks.parameters() if p.ndim == 2 and all(p is not f for f in fused)]
    head = [model.lm_head.weight]  # tied to the embedding, the one matrix takes the head's rate, as the record
    # did while its head was tied (2024-10-14_ModernArch: the tied lm_head/wte in the first optimiser at its lr)
    embeddings = [p for p in [model.embed.weight, *model.value_embeds.parameters()] if p is not head[0]]
    if model.wpe is not None:
        embeddings.append(model.wpe.weight)
    scalars = [p for p in model.parameters() if p.ndim < 2]
    groups = [dict(params=embeddings, lr=RATES["embed"] * lr_scale),
              dict(params=scalars, lr=RATES["scalar"] * lr_scale),
              dict(params=head, lr=RATES["head"] * lr_scale)]
    adam = torch.optim.Adam(groups, betas=(0.8, 0.95), eps=1e-10)
    muon_groups = [dict(params=matrices)] + ([dict(params=fused, parts=3)] if fused else [])
    muon = ModdedMuon(muon_groups, lr=RATES["muon"] * lr_scale, momentum=MOMENTUM_WARMUP[1])
    for opt in (adam, muon):
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
    return adam, muon


def lr_factor(step: int, steps: int, cooldown: float = COOLDOWN) -> float:
    """1 until the last ``cooldown`` share of the steps, then a straight line down to 0 after the last step
    (the record's get_lr: ``t = 1 − step/steps``; ``t / cooldown`` once t < cooldown)."""
    remaining = 1 - step / steps
    return 1.0 if remaining >= cooldown else remaining / cooldown


def muon_momentum(step: int) -> float:
    start, end, over = MOMENTUM_WARMUP
    frac = min(step / over, 1.0)
    return (1 - frac) * start + frac * end


def set_step(adam: torch.optim.Adam, muon: ModdedMuon, step: int, steps: int) -> None:
    """Rates and Muon's momentum for ``step`` of ``steps``."""
    factor = lr_factor(step, steps)
    for opt in (adam, muon):
        for group in opt.param_groups:
            group["lr"] = group["initial_lr"] * factor
    for group in muon.param_groups:
        group["momentum"] = muon_momentum(step)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
