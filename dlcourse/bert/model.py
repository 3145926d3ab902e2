"""BERT in the course's parameter layout: chapter 02's encoder layer, and Hugging Face's BERT seen through it.

Chapter 03 builds BERT from chapter 02's blocks. A BERT layer is chapter 02's ``EncoderLayer`` in its
post-norm form, with the exact GELU and LayerNorm eps 1e-12 (what ``nn.TransformerEncoderLayer(norm_first=False,
activation="gelu", layer_norm_eps=1e-12)`` computes). :class:`EncoderLayer` is that layer as a reference block
— chapter 02's parameters (``self_attn``, ``ff.linear1``, ``ff.linear2``, ``norm1``, ``norm2``) and call — on
the package's :class:`~dlcourse.transformer.model.MultiHeadAttention`. The parameters are named

===============================================  ==========================================================
course                                           Hugging Face ``BertForPreTraining`` (``BertModel`` has no
                                                 ``bert.`` prefix)
===============================================  ==========================================================
``bert.embeddings.word_embeddings`` …            ``bert.embeddings.word_embeddings`` … (unchanged)
``bert.embeddings.norm``                         ``bert.embeddings.LayerNorm``
``bert.layers.i.self_attn.in_proj_*`` (3D, …)    ``bert.encoder.layer.i.attention.self.query/key/value`` stacked
``bert.layers.i.self_attn.out_proj``             ``bert.encoder.layer.i.attention.output.dense``
``bert.layers.i.norm1``                          ``bert.encoder.layer.i.attention.output.LayerNorm``
``bert.layers.i.ff.linear1`` / ``ff.linear2``    ``bert.encoder.layer.i.intermediate.dense`` / ``output.dense``
``bert.layers.i.norm2``                          ``bert.encoder.layer.i.output.LayerNorm``
``pooler``                                       ``bert.pooler.dense``
``mlm_transform``, ``mlm_norm``, ``mlm_bias``    ``cls.predictions.transform.dense``, ``….LayerNorm``,
                                                 ``cls.predictions.bias``
``nsp``                                          ``cls.seq_relationship``
(tied: the decoder *is* the word embeddings)     ``cls.predictions.decoder.weight``
===============================================  ==========================================================

:class:`InCourseLayout` wraps a Hugging Face BERT module so that its parameters carry the course's names while
the computation (and so every gradient) stays Hugging Face's — the oracle chapter 03's tests compare with.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from dlcourse.layout import CourseLayout
from dlcourse.transformer.model import MultiHeadAttention

# ----------------------------------------------------------------------------------------------------
# Chapter 02's encoder layer, as a reference block


class FeedForward(nn.Module):
    """linear1 → ReLU or exact GELU → dropout → linear2 (chapter 02's ``PositionwiseFeedForward``)."""

    def __init__(self, d_model: int, dim_feedforward: int, activation: str = "gelu", dropout: float = 0.0) -> None:
        super().__init__()
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear1(x)
        return self.linear2(self.dropout(F.relu(h) if self.activation == "relu" else F.gelu(h)))


class EncoderLayer(nn.Module):
    """Chapter 02's encoder layer (parameters and call of its ``EncoderLayer``); BERT's defaults: post-norm,
    exact GELU, eps 1e-12. ``forward(src (B, T, D), src_mask=None, src_key_padding_mask=None (B, T), True =
    padding) → (B, T, D)``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 3072, dropout: float = 0.0,
                 activation: str = "gelu", layer_norm_eps: float = 1e-12, norm_first: bool = False) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead)
        self.ff = FeedForward(d_model, dim_feedforward, activation, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor | None = None,
                src_key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        def attend(x: torch.Tensor) -> torch.Tensor:
            out, _ = self.self_attn(x, x, x, key_padding_mask=src_key_padding_mask, attn_mask=src_mask,
                                    need_weights=False)
            return self.dropout1(out)

        x = src
        if self.norm_first:
            x = x + attend(self.norm1(x))
            return x + self.dropout2(self.ff(self.norm2(x)))
        x = self.norm1(x + attend(x))
        return self.norm2(x + self.dropout2(self.ff(x)))


# ----------------------------------------------------------------------------------------------------
# Hugging Face names ↔ course names

_RENAMES = [
    (r"(^|\.)encoder\.layer\.(\d+)\.", r"\1layers.\2."),
    (r"\.attention\.output\.dense\.", ".self_attn.out_proj."),
    (r"\.attention\.output\.LayerNorm\.", ".norm1."),
    (r"\.intermediate\.dense\.", ".ff.linear1."),
    (r"\.output\.dense\.", ".ff.linear2."),
    (r"\.output\.LayerNorm\.", ".norm2."),
    (r"(^|\.)embeddings\.LayerNorm\.", r"\1embeddings.norm."),
    (r"^LayerNorm\.", "norm."),  # a BertEmbeddings module on its own
    (r"^bert\.pooler\.dense\.", "pooler."),
    (r"^cls\.predictions\.transform\.dense\.", "mlm_transform."),
    (r"^cls\.predictions\.transform\.LayerNorm\.", "mlm_norm."),
    (r"^cls\.predictions\.bias$", "mlm_bias"),
    (r"^cls\.predictions\.decoder\.bias$", "mlm_bias"),
    (r"^cls\.seq_relationship\.", "nsp."),
]
_QKV = re.compile(r"^(.*?)attention\.self\.(query|key|value)\.(weight|bias)$")


def course_names(hf_name: str) -> tuple[str, int | None]:
    """The course name of a Hugging Face BERT parameter, and which third (0 = q, 1 = k, 2 = v) of it it fills.

    ``"encoder.layer.0.attention.self.key.weight"`` → ``("layers.0.self_attn.in_proj_weight", 1)``.
    """
    name = hf_name
    for pattern, new in _RENAMES:
        name = re.sub(pattern, new, name)
    found = _QKV.match(name)
    if found:
        prefix, which, kind = found.groups()
        return f"{prefix}self_attn.in_proj_{kind}", ("query", "key", "value").index(which)
    return name, None


def _parameters(hf_module: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters once each (a tied decoder weight appears under its first name only)."""
    return dict(hf_module.named_parameters())


def course_state_dict(hf_module: nn.Module) -> dict[str, torch.Tensor]:
    """The parameters of a Hugging Face BERT module (``BertModel``, ``BertEmbeddings``, ``BertForPreTraining``)
    under course names, q/k/v stacked into ``in_proj_*``; tied weights once. Detached copies."""
    parts: dict[str, dict[int, torch.Tensor]] = {}
    state: dict[str, torch.Tensor] = {}
    for hf_name, tensor in _parameters(hf_module).items():
        name, third = course_names(hf_name)
        tensor = tensor.detach().clone()
        if third is not None:
            parts.setdefault(name, {})[third] = tensor
        else:
            state[name] = tensor
    for name, thirds in parts.items():
        state[name] = torch.cat([thirds[i] for i in range(3)])
    return state


class InCourseLayout(CourseLayout):
    """A Hugging Face BERT module whose parameters carry the course's names (see the module docstring).

    ``forward`` rebuilds Hugging Face's tensors from the course parameters and calls the wrapped module with
    ``torch.func.functional_call`` (tied weights stay tied), so outputs and gradients are Hugging Face's.
    ``output`` picks what to return (e.g. ``lambda out: out.last_hidden_state``); ``keywords`` names the
    positional arguments when the wrapped module needs them by keyword (``("input_ids", …, "labels")``).
    """

    def __init__(self, hf_module: nn.Module, output: Callable[[Any], Any] = lambda out: out,
                 keywords: tuple[str, ...] | None = None) -> None:
        sources = {name: (*course_names(name), tensor.shape) for name, tensor in _parameters(hf_module).items()}
        super().__init__(hf_module, sources, course_state_dict(hf_module), output, keywords, names=course_names)


def hf_config(vocab_size: int = 50, dim: int = 32, depth: int = 2, heads: int = 4, mlp_dim: int = 64,
              max_positions: int = 32, type_vocab_size: int = 2, layer_norm_eps: float = 1e-12,
              attn_implementation: str = "eager"):
    """A small ``BertConfig`` with the course's argument names (dropout off, exact GELU, pad id 0)."""
    from transformers import BertConfig

    config = BertConfig(vocab_size=vocab_size, hidden_size=dim, num_hidden_layers=depth, num_attention_heads=heads,
                        intermediate_size=mlp_dim, max_position_embeddings=max_positions,
                        type_vocab_size=type_vocab_size, layer_norm_eps=layer_norm_eps, hidden_act="gelu",
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0)
    config._attn_implementation = attn_implementation
    return config


def randomize(module: nn.Module, seed: int, std: float = 0.5) -> nn.Module:
    """Overwrite every parameter with seeded Gaussian noise (LayerNorm weights around 1), in place, so a test that
    copies the weights can tell a missing bias, position or segment term from a present one."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            matrix = p.dim() >= 2 and "embeddings" not in name
            scale = (p.numel() // p.shape[0]) ** -0.5 if matrix else std
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype) * scale
            p.copy_(1.0 + noise if re.search(r"(layernorm|norm\d?)\.weight$", name, re.IGNORECASE) else noise)
    return module
