"""Image classifiers trained for a fixed time: the fair way to compare a ViT and a CNN on one CPU.

Chapter 06 asks which architecture does better *for the same compute*. :func:`fit_for` trains any
``(B, C, H, W) -> (B, classes)`` model with AdamW for a wall-clock budget, with a schedule that follows the
elapsed fraction of the budget (linear warm-up, then cosine decay to zero), so that every run anneals
properly whatever its speed. :class:`SmallCNN` is the convolutional baseline; :func:`accuracy` scores.

What a trained ViT learned, measured: :func:`principal_components` of its patch filters,
:func:`low_frequency_share` (their energy in the lowest 2-D DCT frequencies, :func:`dct_basis`) and
:func:`attention_entropy` (how spread one query's attention is).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from dlcourse.training import minibatches, record_run


class SmallCNN(nn.Module):
    """Two 3×3 convolution blocks (ReLU, 2×2 max-pooling) and a linear read-out: the baseline of chapter 06."""

    def __init__(self, image_size: int = 28, channels: int = 1, classes: int = 10, width: int = 32) -> None:
        super().__init__()
        if image_size % 4:
            raise ValueError(f"image_size must be a multiple of 4 (two poolings), got {image_size}")
        self.features = nn.Sequential(
            nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (B, w, H/2, W/2)
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (B, 2w, H/4, W/4)
        )
        self.head = nn.Linear(2 * width * (image_size // 4) ** 2, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images).flatten(1))


@dataclass
class Run:
    """One timed training run: the loss of every step, held-out accuracy at the end, and the cost."""

    loss: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    accuracy: float = math.nan
    parameters: int = 0
    batch_size: int = 0

    @property
    def images_per_second(self) -> float:
        """Training throughput (0 before the first step)."""
        return self.batch_size * self.steps / self.seconds if self.steps else 0.0


def parameter_count(model: nn.Module) -> int:
    """Number of trainable numbers in ``model``."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@torch.no_grad()
def accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 1000) -> float:
    """Fraction of ``images`` whose arg-max logit is the label (eval mode, restored afterwards)."""
    was_training = model.training
    model.eval()
    correct = 0
    for start in range(0, len(labels), batch_size):
        logits = model(images[start:start + batch_size])
        correct += int((logits.argmax(-1) == labels[start:start + batch_size]).sum())
    model.train(was_training)
    return correct / max(1, len(labels))


def lr_factor(fraction: float, warmup: float = 0.05) -> float:
    """Multiplier of the peak learning rate after ``fraction`` (0..1) of the budget: warm-up, then cosine."""
    if fraction < warmup:
        return fraction / warmup
    progress = min(1.0, (fraction - warmup) / (1.0 - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def fit_for(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, seconds: float, *,
            test: tuple[torch.Tensor, torch.Tensor] | None = None, lr: float = 2e-3, weight_decay: float = 0.05,
            batch_size: int = 128, max_steps: int | None = None, seed: int = 0) -> Run:
    """Train ``model`` with AdamW and cross-entropy for ``seconds`` of wall-clock time (or ``max_steps``).

    The learning rate warms up over the first 5 % of the budget and decays with a cosine to 0 at its end,
    measured in elapsed time (or in steps when ``max_steps`` ends the run first). ``test = (images,
    labels)`` is scored once at the end; the evaluation is not counted in ``seconds``.
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    batches = minibatches(images, labels, batch_size=batch_size, seed=seed)
    run = Run(parameters=parameter_count(model), batch_size=batch_size)
    model.train()
    start = time.perf_counter()
    while True:
        elapsed = time.perf_counter() - start
        fraction = elapsed / seconds if max_steps is None else max(elapsed / seconds, run.steps / max_steps)
        if fraction >= 1.0:
            break
        for group in optimizer.param_groups:
            group["lr"] = lr * lr_factor(fraction)
        x, y = next(batches)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        run.loss.append(loss.item())
        run.steps += 1
    run.seconds = time.perf_counter() - start
    if test is not None:
        run.accuracy = accuracy(model, *test)
    record_run(f"{type(model).__name__}, {run.parameters:,} parameters", steps=run.steps, seconds=run.seconds,
               items=run.steps * batch_size, item_name="images", metric_name="held-out accuracy", metric=run.accuracy)
    return run


# ------------------------------------------------------------------ what a trained ViT learned (chapter 06)


def principal_components(filters: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Principal components of ``filters`` (K, F), one filter per row, centred over the K filters.

    Returns ``(components, share)``: components (min(K, F), F), one unit vector per row, largest variance
    first; share (min(K, F),), the fraction of the total variance along each (sums to 1).
    """
    centred = filters.detach().double() - filters.detach().double().mean(0)
    _, s, vh = torch.linalg.svd(centred, full_matrices=False)
    return vh.to(filters.dtype), (s**2 / (s**2).sum()).to(filters.dtype)


def dct_basis(size: int) -> torch.Tensor:
    """The orthonormal DCT-II matrix (size, size), float64: row u is the cosine of frequency u."""
    k = torch.arange(size, dtype=torch.float64)
    basis = torch.cos(math.pi * (2 * k[None, :] + 1) * k[:, None] / (2 * size)) * math.sqrt(2 / size)
    basis[0] /= math.sqrt(2)
    return basis


def low_frequency_share(filters: torch.Tensor, size: int, cutoff: int = 3) -> torch.Tensor:
    """Fraction of each square filter's energy in its low 2-D DCT frequencies, those with u + v < ``cutoff``.

    ``filters``: (K, size·size) or (K, size, size). Returns (K,) float64 in [0, 1]. White noise puts the
    fraction of such coefficients there on average, e.g. 6/49 ≈ 0.12 for 7 × 7 and ``cutoff = 3``; a smooth,
    blob- or ramp-like filter puts most of its energy there.
    """
    basis = dct_basis(size)
    coefficients = basis @ filters.detach().double().reshape(-1, size, size) @ basis.T  # (K, u, v)
    u = torch.arange(size)
    low = (u[:, None] + u[None, :]) < cutoff
    energy = coefficients**2
    return energy[:, low].sum(-1) / energy.sum((-2, -1)).clamp_min(1e-300)


def attention_entropy(weights: torch.Tensor, query: int = 0) -> torch.Tensor:
    """Entropy in nats of one query's attention distribution: weights (B, heads, T, T) → (B, heads).

    ``query = 0`` is the [CLS] token. 0 means all weight on one token; log T means spread evenly.
    """
    row = weights[:, :, query, :].double()
    return -(row * row.clamp_min(1e-30).log()).sum(-1)
