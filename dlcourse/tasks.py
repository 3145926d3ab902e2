"""Synthetic sequence tasks that small models learn in seconds (chapter 02's demo).

Tokens: ``0`` is padding, ``1 .. vocab-1`` are symbols. Sequences have random lengths and are padded on
the right; targets at padded positions are ``ignore_index`` so that the loss skips them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PAD = 0


@dataclass(frozen=True)
class SequenceBatch:
    """``x`` (B, T) int64 inputs, ``y`` (B, T) int64 targets, ``padding`` (B, T) bool, True at padding."""

    x: torch.Tensor
    y: torch.Tensor
    padding: torch.Tensor

    def to(self, device: torch.device | str) -> SequenceBatch:
        return SequenceBatch(self.x.to(device), self.y.to(device), self.padding.to(device))


def reverse_batch(batch_size: int, max_len: int, vocab: int, generator: torch.Generator,
                  min_len: int = 1, ignore_index: int = -100) -> SequenceBatch:
    """Random symbol sequences and their reversals: ``y[b, i] = x[b, n_b - 1 - i]`` for ``i < n_b``."""
    if not 1 <= min_len <= max_len or vocab < 2:
        raise ValueError("need 1 <= min_len <= max_len and vocab >= 2")
    lengths = torch.randint(min_len, max_len + 1, (batch_size,), generator=generator)  # (B,)
    positions = torch.arange(max_len)  # (T,)
    padding = positions[None, :] >= lengths[:, None]  # (B, T)
    x = torch.randint(1, vocab, (batch_size, max_len), generator=generator).masked_fill(padding, PAD)
    source = (lengths[:, None] - 1 - positions[None, :]).clamp(min=0)  # index read by each output slot
    y = x.gather(1, source).masked_fill(padding, ignore_index)
    return SequenceBatch(x, y, padding)


def sequence_accuracy(predictions: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100) -> float:
    """Fraction of sequences whose every non-ignored position is predicted exactly."""
    wrong = (predictions != targets) & (targets != ignore_index)
    return float((~wrong.any(dim=1)).float().mean())
