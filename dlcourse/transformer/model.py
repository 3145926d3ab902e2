"""Chapter 02's multi-head attention, as a reference block for the chapters after it.

It has the parameters of chapter 02's ``MultiHeadAttention`` and of ``nn.MultiheadAttention`` —
``in_proj_weight`` stacks W_Q, W_K, W_V as a (3E, E) matrix, ``out_proj`` is W_O — and the same call, so a
state dict moves between the three unchanged, and :func:`dlcourse.attention.capture_attention` reads its
weights. The output goes through ``F.scaled_dot_product_attention``, PyTorch's fused kernel, which is the
built-in chapter 02 asks students to write themselves: this block is for reuse, not an answer there.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the parameters and masks of ``nn.MultiheadAttention(batch_first=True)``."""

    def __init__(self, embed_dim: int, num_heads: int, bias: bool = True) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))  # rows: W_Q; W_K; W_V
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim)) if bias else None
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                key_padding_mask: torch.Tensor | None = None, attn_mask: torch.Tensor | None = None,
                need_weights: bool = True,
                average_attn_weights: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` (B, L, E) over ``key`` and ``value`` (B, S, E).

        ``key_padding_mask``: bool (B, S), True = ignore this key. ``attn_mask``: (L, S), bool True = blocked
        or float added to the scores. Returns ``(output (B, L, E), weights)``: the weights are (B, L, S)
        averaged over heads, (B, H, L, S) per head with ``average_attn_weights=False``, or ``None`` without
        ``need_weights`` (the fast path). A query whose keys are all masked gets NaN, as in PyTorch.
        """
        B, L, E = query.shape
        S = key.shape[1]
        H, Dh = self.num_heads, self.head_dim
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q, b_k, b_v = self.in_proj_bias.chunk(3) if self.in_proj_bias is not None else (None, None, None)

        def split(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, n: int) -> torch.Tensor:
            return F.linear(x, w, b).view(B, n, H, Dh).transpose(1, 2)  # (B, n, E) -> (B, H, n, Dh)

        q, k, v = split(query, w_q, b_q, L), split(key, w_k, b_k, S), split(value, w_v, b_v, S)
        bias = None  # additive (B, 1, L, S) mask shared by the heads
        if attn_mask is not None or key_padding_mask is not None:
            bias = q.new_zeros(B, 1, L, S)
            if attn_mask is not None:
                bias = bias.masked_fill(attn_mask, -math.inf) if attn_mask.dtype == torch.bool else bias + attn_mask
            if key_padding_mask is not None:
                bias = bias.masked_fill(key_padding_mask[:, None, None, :], -math.inf)
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)  # (B, H, L, Dh)
        out = self.out_proj(heads.transpose(1, 2).reshape(B, L, E))  # merge the heads: (B, L, E)
        if not need_weights:
            return out, None
        scores = q @ k.transpose(-2, -1) / math.sqrt(Dh)  # (B, H, L, S)
        weights = (scores if bias is None else scores + bias).softmax(dim=-1)
        return out, (weights.mean(dim=1) if average_attn_weights else weights)
