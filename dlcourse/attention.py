"""Read attention weights out of a model, whatever its layers return.

:func:`capture_attention` records the inputs of every multi-head attention module (any module with an
``in_proj_weight``, the parameter layout of ``torch.nn.MultiheadAttention`` that the course's blocks
share) during one forward pass, then calls each again with ``need_weights=True,
average_attn_weights=False`` to get the per-head weights. Layers need not store or return them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class AttentionMap:
    """Weights of one attention module: ``weights`` is (B, H, L, S), rows sum to 1 (or 0 if fully masked)."""

    name: str
    weights: torch.Tensor
    key_padding_mask: torch.Tensor | None  # (B, S), True = ignored key
    attn_mask: torch.Tensor | None  # (L, S)


def attention_modules(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """(name, module) of every multi-head attention module of ``model``, in registration order."""
    return [(n, m) for n, m in model.named_modules() if isinstance(getattr(m, "in_proj_weight", None), torch.Tensor)]


@torch.no_grad()
def capture_attention(model: torch.nn.Module, *args, **kwargs) -> list[AttentionMap]:
    """Run ``model(*args, **kwargs)`` once and return the attention maps of all its attention modules."""
    calls: list[tuple[str, torch.nn.Module, tuple, dict]] = []
    handles = []
    for name, module in attention_modules(model):
        def hook(mod, a, kw, name=name):
            calls.append((name, mod, a, dict(kw)))
        handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
    was_training = model.training
    model.eval()
    try:
        model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    maps = []
    for name, module, a, kw in calls:
        kw.update(need_weights=True, average_attn_weights=False)
        _, weights = module(*a, **kw)
        maps.append(AttentionMap(name, weights.detach().cpu(), _cpu(kw.get("key_padding_mask")),
                                 _cpu(kw.get("attn_mask"))))
    return maps


def _cpu(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach().cpu()
