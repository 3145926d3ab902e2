"""Synthetic sequence tasks that small models learn in seconds (chapters 01 and 02).

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


def delayed_recall_batch(batch_size: int, n_symbols: int, delay: int, vocab: int, generator: torch.Generator,
                         ignore_index: int = -100) -> SequenceBatch:
    """The copy task over a delay: read ``n_symbols`` symbols, wait, then write them back in order.

    Each input is the symbols (drawn from ``1 .. vocab``), then ``delay`` steps of a blank (``vocab + 1``)
    whose last one is replaced by the recall cue (``vocab + 2``), then ``n_symbols`` more blanks: length
    ``2 * n_symbols + delay``, so an embedding needs ``vocab + 3`` rows. The targets are the symbols at the
    last ``n_symbols`` steps and ``ignore_index`` everywhere else; nothing is padded. A symbol must be carried
    ``n_symbols + delay`` steps from where it is read to where it is written.
    """
    if n_symbols < 1 or delay < 1 or vocab < 2:
        raise ValueError("need n_symbols >= 1, delay >= 1 and vocab >= 2")
    symbols = torch.randint(1, vocab + 1, (batch_size, n_symbols), generator=generator)  # (B, K)
    x = torch.full((batch_size, 2 * n_symbols + delay), vocab + 1)  # (B, 2K + delay), blanks
    x[:, :n_symbols] = symbols
    x[:, n_symbols + delay - 1] = vocab + 2  # the cue: the next step starts the answer
    y = torch.full_like(x, ignore_index)
    y[:, -n_symbols:] = symbols
    return SequenceBatch(x, y, torch.zeros_like(x, dtype=torch.bool))


def sequence_accuracy(predictions: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100) -> float:
    """Fraction of sequences whose every non-ignored position is predicted exactly."""
    wrong = (predictions != targets) & (targets != ignore_index)
    return float((~wrong.any(dim=1)).float().mean())
