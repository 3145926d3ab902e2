"""The Vision Transformer in the course's parameter layout, and Hugging Face's ViT seen through it.

Chapter 06 builds a ViT from chapter 02's blocks. Its parameters are named

=========================================  ==========================================================
course                                     Hugging Face ``ViTForImageClassification`` (``vit.`` prefix)
=========================================  ==========================================================
``embeddings.cls_token``                   ``embeddings.cls_token``
``embeddings.position_embeddings``         ``embeddings.position_embeddings``
``embeddings.projection`` (D, C·P²)        ``embeddings.patch_embeddings.projection`` (D, C, P, P)
``layers.i.norm1`` / ``norm2``             ``layers.i.layernorm_before`` / ``layernorm_after``
``layers.i.self_attn.in_proj_*`` (3D, …)   ``layers.i.attention.q_proj``, ``k_proj``, ``v_proj`` stacked
``layers.i.self_attn.out_proj``            ``layers.i.attention.o_proj``
``layers.i.mlp.fc1`` / ``fc2``             ``layers.i.mlp.fc1`` / ``fc2``
``norm``, ``head``                         ``layernorm``, ``classifier``
=========================================  ==========================================================

The patch projection is the one real change: Hugging Face stores it as a stride-P convolution, the
course as a matrix applied to channel-major patch vectors — the same numbers, reshaped.
:func:`course_names` maps names one way; :class:`InCourseLayout` wraps a Hugging Face module (the whole
classifier, its embeddings, or one layer) so that its parameters carry the course's names and shapes while
the computation stays Hugging Face's: the oracle the chapter's tests compare with, gradients included.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from dlcourse.layout import CourseLayout

# (Hugging Face name pattern, course name) for names that only change; order matters (first match wins).
_RENAMES = [
    (r"^vit\.", ""),
    (r"(^|\.)patch_embeddings\.projection\.", r"\1projection."),
    (r"(^|\.)layernorm_before\.", r"\1norm1."),
    (r"(^|\.)layernorm_after\.", r"\1norm2."),
    (r"(^|\.)attention\.o_proj\.", r"\1self_attn.out_proj."),
    (r"^layernorm\.", "norm."),
    (r"^classifier\.", "head."),
]
_QKV = re.compile(r"^(.*?)attention\.([qkv])_proj\.(weight|bias)$")


def course_names(hf_name: str) -> tuple[str, int | None]:
    """The course name of a Hugging Face ViT parameter, and which third (0 = q, 1 = k, 2 = v) of it it fills.

    ``"vit.layers.0.attention.k_proj.weight"`` → ``("layers.0.self_attn.in_proj_weight", 1)``;
    ``"vit.layernorm.bias"`` → ``("norm.bias", None)``.
    """
    name = hf_name
    for pattern, new in _RENAMES:
        name = re.sub(pattern, new, name)
    found = _QKV.match(name)
    if found:
        prefix, which, kind = found.groups()
        return f"{prefix}self_attn.in_proj_{kind}", "qkv".index(which)
    return name, None


def course_module_names(hf_module: nn.Module) -> dict[str, str]:
    """``{Hugging Face submodule name + ".": course name + "."}`` for every submodule whose parameters keep their
    shape under the course's names (not the q, k, v projections, stacked into one): how a check pairs the two
    models' sub-layers (:func:`dlcourse.checks.localise`)."""
    found = {"vit.": ""}  # the model's own layers, by the same index
    for hf_name, sub in hf_module.named_modules():
        own = [name for name, _ in sub.named_parameters(recurse=False)]
        if not hf_name or not own:
            continue
        name, third = course_names(f"{hf_name}.{own[0]}")
        if third is None:
            found[hf_name + "."] = name.rpartition(".")[0] + "."
    return found


def course_state_dict(hf_module: nn.Module) -> dict[str, torch.Tensor]:
    """The parameters of a Hugging Face ViT module (classifier, ViTEmbeddings or ViTLayer) under course names.

    Query, key and value projections are stacked into ``in_proj_weight`` / ``in_proj_bias``; the patch
    projection's convolution kernel (D, C, P, P) becomes a (D, C·P²) matrix. Tensors are detached copies.
    """
    parts: dict[str, dict[int, torch.Tensor]] = {}
    state: dict[str, torch.Tensor] = {}
    for hf_name, tensor in hf_module.state_dict().items():
        name, third = course_names(hf_name)
        tensor = tensor.detach().clone()
        if third is not None:
            parts.setdefault(name, {})[third] = tensor
        else:
            state[name] = tensor.reshape(tensor.shape[0], -1) if name.endswith("projection.weight") else tensor
    for name, thirds in parts.items():
        state[name] = torch.cat([thirds[i] for i in range(3)])
    return state


class InCourseLayout(CourseLayout):
    """A Hugging Face ViT module whose parameters carry the course's names and shapes.

    Its parameters are created from :func:`course_state_dict`; ``forward`` rebuilds Hugging Face's tensors
    from them (un-stacking q/k/v, reshaping the patch matrix back into a kernel) and calls the wrapped
    module with ``torch.func.functional_call``, so outputs *and* gradients are Hugging Face's, seen from
    the course's parameter names. ``output`` picks what to return from the module's result (e.g.
    ``lambda out: out.logits``).
    """

    def __init__(self, hf_module: nn.Module, output: Callable[[Any], Any] = lambda out: out) -> None:
        sources = {name: (*course_names(name), tensor.shape) for name, tensor in hf_module.state_dict().items()}
        super().__init__(hf_module, sources, course_state_dict(hf_module), output, names=course_names)


def hf_config(image_size: int = 16, patch_size: int = 4, num_channels: int = 3, dim: int = 32, depth: int = 2,
              heads: int = 4, mlp_dim: int = 64, num_labels: int = 5, layer_norm_eps: float = 1e-12,
              attn_implementation: str = "eager"):
    """A small ``ViTConfig`` with the course's argument names (dropout off, exact GELU)."""
    from transformers import ViTConfig

    config = ViTConfig(image_size=image_size, patch_size=patch_size, num_channels=num_channels, hidden_size=dim,
                       num_hidden_layers=depth, num_attention_heads=heads, intermediate_size=mlp_dim,
                       num_labels=num_labels, layer_norm_eps=layer_norm_eps, hidden_act="gelu",
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    config._attn_implementation = attn_implementation
    return config


def randomize(module: nn.Module, seed: int, std: float = 0.5) -> nn.Module:
    """Overwrite every parameter with seeded Gaussian noise (LayerNorm weights around 1), in place.

    Hugging Face initialises biases, LayerNorm shifts and the [CLS] token to zero, and position embeddings
    small; a test that copies such weights cannot tell a missing bias or position term from a present one.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            matrix = p.dim() >= 2 and not name.endswith(("cls_token", "position_embeddings"))
            scale = (p.numel() // p.shape[0]) ** -0.5 if matrix else std  # weights: 1/sqrt(fan-in)
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype) * scale
            p.copy_(1.0 + noise if re.search(r"(layernorm|norm\d?)[^.]*\.weight$", name) else noise)
    return module
