"""A task where long range matters, and the small classifier chapter 09 trains on it.

**Find the signal.** A sequence of ``n`` tokens starts with ``[CLS]``; one of ``classes`` signal tokens is
hidden at a uniformly random position 1 … n-1 among random noise tokens. The label is which signal it
was, read from the output at ``[CLS]``. A stack of ``L`` sliding-window layers of one-sided width ``w``
lets position 0 see positions up to ``L·w`` only; beyond that it can only guess (accuracy ``1/classes``).
Made a global token, ``[CLS]`` sees every position in one layer.

:class:`LongRangeClassifier` is pre-LayerNorm Transformer blocks around any attention module with the
signature ``attention(x, global_idx) -> y`` (x, y: (B, n, d); ``global_idx``: the positions with global
attention, an int64 tensor, possibly empty) — in the notebook, the student's Longformer attention.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from dlcourse import runtime

CLS = 0  # token id of [CLS]; signals are 1 … classes; noise tokens follow


def signal_batch(batch: int, n: int, classes: int, noise: int, generator: torch.Generator
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens, labels)``: int64 (batch, n) with ``[CLS]`` first and one signal at a random position ≥ 1,
    and int64 (batch,) labels in 0 … classes-1."""
    tokens = torch.randint(1 + classes, 1 + classes + noise, (batch, n), generator=generator)
    tokens[:, 0] = CLS
    labels = torch.randint(0, classes, (batch,), generator=generator)
    where = torch.randint(1, n, (batch,), generator=generator)
    tokens[torch.arange(batch), where] = 1 + labels
    return tokens, labels


def vocab_size(classes: int, noise: int) -> int:
    """Number of token ids: [CLS], the signals, the noise tokens."""
    return 1 + classes + noise


class LongRangeClassifier(nn.Module):
    """Embeddings + ``layers`` pre-LN blocks (attention, then a ReLU feed-forward) + a linear head at [CLS]."""

    def __init__(self, vocab: int, n: int, d: int, layers: int, classes: int,
                 attention: Callable[[], nn.Module]) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.position = nn.Parameter(0.02 * torch.randn(n, d))
        self.norms1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.attn = nn.ModuleList(attention() for _ in range(layers))
        self.norms2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.ffn = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
                                 for _ in range(layers))
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, classes))

    def forward(self, tokens: torch.Tensor, global_idx: torch.Tensor) -> torch.Tensor:
        """tokens (B, n) → logits (B, classes), read at position 0."""
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for norm1, attn, norm2, ffn in zip(self.norms1, self.attn, self.norms2, self.ffn, strict=True):
            x = x + attn(norm1(x), global_idx)
            x = x + ffn(norm2(x))
        return self.head(x[:, 0])


def batches(batch: int, n: int, classes: int, noise: int, seed: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless seeded stream of :func:`signal_batch` batches."""
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    while True:
        yield signal_batch(batch, n, classes, noise, gen)


def loss_fn(global_idx: torch.Tensor) -> Callable[[nn.Module, tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
    """``step_loss`` for :func:`dlcourse.training.train`: cross-entropy with ``global_idx`` as the global tokens."""
    def step_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        tokens, labels = batch
        return F.cross_entropy(model(tokens, global_idx), labels)
    return step_loss


@torch.no_grad()
def accuracy(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor, global_idx: torch.Tensor,
             batch: int = 256) -> float:
    """Fraction of sequences whose signal the model names (in eval mode, in chunks of ``batch``)."""
    was = model.training
    model.eval()
    right = sum(int((model(tokens[i:i + batch], global_idx).argmax(-1) == labels[i:i + batch]).sum())
                for i in range(0, len(labels), batch))
    model.train(was)
    return right / len(labels)
