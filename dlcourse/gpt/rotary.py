"""Rotary position embeddings (RoPE) for a GPT-2-style model: chapter 04's pretraining demo.

GPT-2 adds a learned vector per position to each token's embedding (``wpe``); the blocks must then work out
from the sum where every token is. Rotary embeddings (Su et al., 2021; Llama, SmolLM2 and modded-nanogpt use
them) leave the residual stream alone and turn each head's queries and keys instead. A head's D dimensions
form D/2 pairs; pair ``i`` of a query or key at position ``m`` is rotated by the angle ``m·θᵢ``, with
``θᵢ = base^(−2i/D)``. Rotating both vectors of a dot product by the same amount leaves it unchanged, so the
score ``qₘ·kₙ`` depends on the positions only through ``m − n``: every head sees relative positions, with
nothing to learn.

The pairs follow Llama's layout ("rotate half": pair ``i`` is dimensions ``i`` and ``i + D/2``), the layout of
``transformers``' ``apply_rotary_pos_emb``, against which tests/test_rotary.py checks :func:`rotate`.

:func:`use_rotary_positions` gives a course GPT (chapter 04's ``GPT``: ``wpe``, blocks ``h`` whose
``attn.c_attn`` produces queries, keys and values side by side, ``attn.n_head``) rotary positions in place,
without touching its code: ``wpe`` becomes :class:`NoPositions` (it adds nothing and has no parameters), and
a hook turns the queries and keys as they leave each ``c_attn``, at the positions the key–value cache says
the new tokens have. The weights keep their names (minus ``wpe.weight``), so a checkpoint saved from the
model loads into another ``GPT`` given rotary positions the same way.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

BASE = 10_000.0  # Llama's (and the RoPE paper's) base: the slowest pair turns by about 1/base a position


def frequencies(head_dim: int, base: float = BASE) -> torch.Tensor:
    """The (head_dim / 2,) angular frequencies ``θᵢ = base^(−2i / head_dim)``, radians per position."""
    if head_dim % 2:
        raise ValueError(f"rotary embeddings pair up dimensions: the head dimension {head_dim} is odd")
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """``x`` (..., T, D) with pair ``i`` (dimensions ``i`` and ``i + D/2``) of row ``t`` turned by the angle
    ``positions[t] · theta[i]``; ``positions`` (T,), ``theta`` (D/2,). Computed in float32, returned in
    ``x``'s dtype."""
    angle = positions.to(torch.float32)[:, None] * theta.to(x.device)  # (T, D/2)
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x.float().chunk(2, dim=-1)  # (..., T, D/2) each
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).type_as(x)


class NoPositions(nn.Module):
    """Stands in for a position table: ``forward(positions (T,))`` returns zeros (T, width)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return torch.zeros(*positions.shape, self.width, device=positions.device)


class RotaryPositions(nn.Module):
    """The hooks :func:`use_rotary_positions` installs, kept on the model as ``model.rotary`` (no parameters,
    no saved state), so that a copy of the model (``copy.deepcopy``) rotates with its own copy."""

    def __init__(self, n_head: int, head_dim: int, base: float = BASE) -> None:
        super().__init__()
        self.n_head, self.head_dim = n_head, head_dim
        self.register_buffer("theta", frequencies(head_dim, base), persistent=False)
        self.offset = 0  # the position of the first new token: the length of the cache passed in

    def note_offset(self, model: nn.Module, args: tuple, kwargs: dict[str, Any]) -> None:
        """Forward pre-hook on the GPT: ``past`` (one (k, v) per block, k (B, H, P, D)) puts the new tokens
        at positions P, P + 1, …"""
        past = kwargs.get("past", args[1] if len(args) > 1 else None)
        self.offset = 0 if past is None else int(past[0][0].shape[2])

    def turn(self, c_attn: nn.Module, inputs: tuple, qkv: torch.Tensor) -> torch.Tensor:
        """Forward hook on a block's ``c_attn``: its output (B, T, 3C), queries, keys and values side by side,
        with the queries and keys rotated head by head."""
        B, T, three_c = qkv.shape
        C = three_c // 3
        positions = torch.arange(self.offset, self.offset + T, device=qkv.device)
        q, k, v = qkv.split(C, dim=-1)
        q, k = (rotate(t.view(B, T, self.n_head, self.head_dim).transpose(1, 2), positions, self.theta)
                .transpose(1, 2).reshape(B, T, C) for t in (q, k))  # turned per head: (B, H, T, D) inside
        return torch.cat([q, k, v], dim=-1)


def use_rotary_positions(model: nn.Module, base: float = BASE) -> nn.Module:
    """Give a course GPT rotary positions instead of its learned position table, in place; returns it.

    ``model`` needs ``wpe`` (an ``nn.Embedding``), blocks ``h`` with ``attn.c_attn`` (an ``nn.Linear`` to
    3 × width) and ``attn.n_head``, and a ``forward(input_ids, past=None)``. Raises ValueError otherwise, or
    when the model already has rotary positions.
    """
    if isinstance(getattr(model, "rotary", None), RotaryPositions):
        raise ValueError("the model already has rotary positions")
    wpe, blocks = getattr(model, "wpe", None), getattr(model, "h", None)
    if not isinstance(wpe, nn.Embedding) or blocks is None:
        raise ValueError("use_rotary_positions expects chapter 04's GPT: a position table wpe and blocks h")
    width = wpe.embedding_dim
    heads = {getattr(block.attn, "n_head", None) for block in blocks}
    if len(heads) != 1 or None in heads or width % next(iter(heads)):
        raise ValueError(f"every block's attention needs the same n_head dividing the width {width}")
    n_head = next(iter(heads))
    for block in blocks:
        c_attn = block.attn.c_attn
        if not isinstance(c_attn, nn.Linear) or c_attn.out_features != 3 * width:
            raise ValueError(f"attn.c_attn must be an nn.Linear from {width} to {3 * width} features")
    model.wpe = NoPositions(width).to(wpe.weight.device)
    model.rotary = RotaryPositions(n_head, width // n_head, base).to(wpe.weight.device)
    model.register_forward_pre_hook(model.rotary.note_offset, with_kwargs=True)
    for block in blocks:
        block.attn.c_attn.register_forward_hook(model.rotary.turn)
    return model
