"""Chapter 11: self-supervised learning on Fashion-MNIST — the encoder, the pre-training loops and the probes.

The student writes the pretext labellers (rotation, 2×2 jigsaw), SimCLR's pair of views, the NT-Xent and
triplet losses and k-nearest-neighbour classification; this module holds what those exercises plug into:

* :class:`ConvEncoder`, a small CNN from (B, 1, H, W) images to (B, 4·width) features, and
  :class:`ProjectionHead`, SimCLR's MLP g(·) on top of it;
* :func:`resized_crop`, crop boxes resized back to the image size for a whole batch at once (bilinear);
* :func:`pretrain_rotation`, :func:`pretrain_simclr` and :func:`train_supervised`, small training loops
  that take the student's functions as arguments;
* :func:`features`, :func:`balanced_subset` and :func:`linear_probe`: frozen features, a class-balanced
  label budget, and a logistic-regression probe (scikit-learn's, on standardised features);
* :func:`shipped_networks`: the encoders and heads full mode pre-trained, shipped in ``data/``;
* :func:`jigsaw_permutations` and the generative pretext pairs (:func:`colourisation_pair`,
  :func:`super_resolution_pair`, :func:`masked_patches`) drawn in the chapter's figure.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from dlcourse import runtime, training

Views = Callable[[torch.Tensor, torch.Generator], tuple[torch.Tensor, torch.Tensor]]
Rotate = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
PairLoss = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]


class ConvEncoder(nn.Module):
    """Three 3×3 convolutions with batch norm and ReLU (the last two with stride 2), then a global average.

    (B, 1, H, W) images → (B, 4·width) features, for any H, W ≥ 4 (28×28 Fashion-MNIST, 8×8 digits).
    """

    def __init__(self, width: int = 16, channels: int = 1) -> None:
        super().__init__()
        self.feature_dim = 4 * width
        self.net = nn.Sequential(
            nn.Conv2d(channels, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.Conv2d(2 * width, 4 * width, 3, stride=2, padding=1), nn.BatchNorm2d(4 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images)


class ProjectionHead(nn.Module):
    """SimCLR's g(·): Linear → ReLU → Linear, from the encoder's features to the space the loss compares."""

    def __init__(self, in_dim: int, hidden: int = 64, out_dim: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.net(h)


SHIPPED = "11_ssl_encoders"  # the networks full mode pre-trained, in data/ (make checkpoints)


def shipped_networks(device: torch.device | str = "cpu") -> tuple[nn.ModuleDict, dict[str, float]]:
    """The encoders and heads full mode pre-trained (``simclr_encoder``, ``simclr_head``, ``rotation_encoder``,
    ``rotation_head``), loaded from ``data/`` in evaluation mode on ``device``, and what that run recorded."""
    from dlcourse import data

    nets = nn.ModuleDict({"simclr_encoder": ConvEncoder(), "simclr_head": ProjectionHead(64),
                          "rotation_encoder": ConvEncoder(), "rotation_head": nn.Linear(64, 4)})
    metrics = data.load_checkpoint(SHIPPED, nets)
    return nets.to(device).eval(), metrics


def resized_crop(images: torch.Tensor, top: torch.Tensor, left: torch.Tensor, height: torch.Tensor,
                 width: torch.Tensor) -> torch.Tensor:
    """Crop box b of image b, resized back to the image's own size by bilinear interpolation.

    Args:
        images: (B, C, H, W) float.
        top, left, height, width: (B,) integer boxes, rows ``top .. top + height - 1`` and columns
            ``left .. left + width - 1`` (1 ≤ height ≤ H − top, 1 ≤ width ≤ W − left).

    Returns:
        (B, C, H, W): output pixel (i, j) samples the image at row ``top + (i + ½)·height/H − ½`` and column
        ``left + (j + ½)·width/W − ½`` (the pixel-centre convention of ``F.interpolate(...,
        align_corners=False)`` applied to the crop), reading the nearest edge pixel beyond the image's border.
        One ``F.grid_sample`` call for the whole batch.
    """
    b, _, h, w = images.shape
    for name, value in (("top", top), ("left", left), ("height", height), ("width", width)):
        if value.shape != (b,):
            raise ValueError(f"{name} must have shape ({b},), got {tuple(value.shape)}")
    if bool((height < 1).any() or (width < 1).any() or (top < 0).any() or (left < 0).any()
            or (top + height > h).any() or (left + width > w).any()):
        raise ValueError("every box must lie inside its image and be at least one pixel wide and high")
    dtype, device = images.dtype, images.device
    top, left, height, width = (v.to(device=device, dtype=dtype)[:, None] for v in (top, left, height, width))
    cols = torch.arange(w, dtype=dtype, device=device)
    rows = torch.arange(h, dtype=dtype, device=device)
    x = left + (cols[None] + 0.5) * width / w - 0.5  # (B, W) the source column of each output column
    y = top + (rows[None] + 0.5) * height / h - 0.5  # (B, H) the source row of each output row
    gx, gy = (2 * x + 1) / w - 1, (2 * y + 1) / h - 1  # grid_sample's coordinates: -1 and 1 are the outer edges
    grid = torch.stack([gx[:, None, :].expand(b, h, w), gy[:, :, None].expand(b, h, w)], dim=-1)  # (B, H, W, 2)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)


def jigsaw_permutations() -> torch.Tensor:
    """All 24 orders of the four tiles of a 2×2 grid, (24, 4) int64, in lexicographic order.

    Row p lists which original tile goes to each position (0 top-left, 1 top-right, 2 bottom-left,
    3 bottom-right); row 0 is the identity.
    """
    return torch.tensor(list(itertools.permutations(range(4))), dtype=torch.int64)


# ----------------------------------------------------------------------------------------------------
# Training loops


@dataclass
class History:
    """What a training loop recorded: one loss (and, where it applies, an accuracy) every ``every`` steps."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    seconds: float = 0.0


def _batches(n: int, batch: int, steps: int, seed: int):
    generator = torch.Generator().manual_seed(runtime.shifted(seed))
    for _ in range(steps):
        yield torch.randint(n, (min(batch, n),), generator=generator), generator


BatchLoss = Callable[[torch.Tensor, torch.Generator], tuple[torch.Tensor, Callable[[], float] | None]]


def _fit(encoder: nn.Module, head: nn.Module, optimizer: torch.optim.Optimizer, n: int, batch_loss: BatchLoss, *,
         steps: int, batch: int, seed: int, every: int) -> History:
    """The loop the three trainings share: ``batch_loss(index, generator)`` gives one batch's loss and, where
    the training has one, a function that measures the batch's accuracy (called only when it is recorded);
    one optimiser step per batch; the loss (and accuracy) every ``every`` steps and at the last."""
    encoder.train()
    head.train()
    history, start = History(), time.perf_counter()
    for step, (index, generator) in enumerate(_batches(n, batch, steps, seed)):
        loss, accuracy = batch_loss(index, generator)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % every == 0 or step == steps - 1:
            history.steps.append(step)
            history.loss.append(float(loss.detach()))
            if accuracy is not None:
                history.accuracy.append(accuracy())
    history.seconds = time.perf_counter() - start
    return history


def _parameters(encoder: nn.Module, head: nn.Module) -> list[nn.Parameter]:
    return list(encoder.parameters()) + list(head.parameters())


def pretrain_rotation(encoder: nn.Module, head: nn.Module, images: torch.Tensor, rotate: Rotate, *,
                      steps: int, batch: int = 64, lr: float = 1e-3, seed: int = 0, every: int = 25) -> History:
    """Rotation prediction (Gidaris et al., 2018): each batch of ``batch`` images becomes 4·``batch`` by
    ``rotate`` (the student's labeller), and ``head(encoder(·))`` learns to tell which of the four rotations
    it sees. Adam; ``images`` (N, 1, H, W) on the encoder's device. Returns the loss and accuracy history."""

    def batch_loss(index: torch.Tensor, _: torch.Generator):
        rotated, labels = rotate(images[index])
        logits = head(encoder(rotated))
        labels = labels.to(logits.device)
        return F.cross_entropy(logits, labels), lambda: float((logits.argmax(1) == labels).float().mean())

    history = _fit(encoder, head, torch.optim.Adam(_parameters(encoder, head), lr=lr), len(images), batch_loss,
                   steps=steps, batch=batch, seed=seed, every=every)
    training.record_run("rotation pre-training", steps=steps, seconds=history.seconds, items=steps * 4 * batch,
                        item_name="images", metric_name="rotation accuracy (last batch)", metric=history.accuracy[-1])
    return history


def pretrain_simclr(encoder: nn.Module, head: nn.Module, images: torch.Tensor, views: Views, loss_fn: PairLoss, *,
                    steps: int, batch: int = 128, temperature: float = 0.5, lr: float = 1e-3, seed: int = 0,
                    every: int = 25) -> History:
    """SimCLR (Chen et al., 2020) at a small scale: two views of every image of a batch (``views``, the
    student's), both through ``head(encoder(·))``, and ``loss_fn(z1, z2, temperature)`` (the student's
    NT-Xent). Adam. Records the loss and how often a view's most similar other view is its partner."""

    def batch_loss(index: torch.Tensor, generator: torch.Generator):
        first, second = views(images[index], generator)
        z1, z2 = head(encoder(first)), head(encoder(second))
        return loss_fn(z1, z2, temperature), lambda: positive_top1(z1.detach(), z2.detach())

    history = _fit(encoder, head, torch.optim.Adam(_parameters(encoder, head), lr=lr), len(images), batch_loss,
                   steps=steps, batch=batch, seed=seed, every=every)
    training.record_run("SimCLR pre-training", steps=steps, seconds=history.seconds, items=steps * 2 * batch,
                        item_name="views", metric_name="partner is the nearest view (last batch)",
                        metric=history.accuracy[-1])
    return history


def train_supervised(encoder: nn.Module, head: nn.Module, images: torch.Tensor, labels: torch.Tensor, *,
                     steps: int, batch: int = 128, lr: float = 1e-3, seed: int = 0, flip: bool = True,
                     every: int = 25) -> History:
    """The baseline: encoder and a linear head trained from scratch on labelled images only (cross-entropy,
    Adam, random horizontal flips when ``flip``)."""

    def batch_loss(index: torch.Tensor, generator: torch.Generator):
        x, y = images[index], labels[index]
        if flip:
            flipped = (torch.rand(len(index), generator=generator) < 0.5).to(x.device)
            x = torch.where(flipped[:, None, None, None], x.flip(-1), x)
        return F.cross_entropy(head(encoder(x)), y), None

    optimizer = torch.optim.Adam(_parameters(encoder, head), lr=lr, weight_decay=1e-4)
    history = _fit(encoder, head, optimizer, len(images), batch_loss, steps=steps, batch=batch, seed=seed,
                   every=every)
    training.record_run(f"from scratch on {len(images):,} labelled images", steps=steps, seconds=history.seconds,
                        items=steps * min(batch, len(images)), item_name="images", metric_name="training loss",
                        metric=history.loss[-1])
    return history


def positive_top1(z1: torch.Tensor, z2: torch.Tensor) -> float:
    """Of the 2N views, the fraction whose most cosine-similar *other* view is its own partner."""
    z = F.normalize(torch.cat([z1, z2]).float(), dim=1)
    n = len(z1)
    similarity = z @ z.T
    similarity.fill_diagonal_(-math.inf)
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)]).to(z.device)
    return float((similarity.argmax(1) == partner).float().mean())


# ----------------------------------------------------------------------------------------------------
# Frozen features and probes


def features(encoder: nn.Module, images: torch.Tensor, batch: int = 1000) -> torch.Tensor:
    """The frozen encoder's features (N, F) on the CPU: evaluation mode (batch norm's running statistics),
    no gradients; the encoder's training mode is restored afterwards."""
    was_training = encoder.training
    encoder.eval()
    try:
        with torch.no_grad():
            return torch.cat([encoder(images[i:i + batch]).cpu() for i in range(0, len(images), batch)])
    finally:
        encoder.train(was_training)


def balanced_subset(labels: torch.Tensor, fraction: float, seed: int = 0) -> torch.Tensor:
    """Indices of ``fraction`` of each class's examples (at least one per class), seeded, sorted."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction}")
    generator = torch.Generator().manual_seed(seed)
    picked = []
    for c in torch.unique(labels).tolist():
        members = torch.nonzero(labels == c).flatten()
        keep = max(1, round(fraction * len(members)))
        picked.append(members[torch.randperm(len(members), generator=generator)[:keep]])
    return torch.cat(picked).sort().values


def linear_probe(train_features: torch.Tensor, train_labels: torch.Tensor, test_features: torch.Tensor,
                 test_labels: torch.Tensor, *, c: float = 1.0) -> float:
    """Test accuracy of a multinomial logistic regression (L2, inverse strength ``c``) fitted on standardised
    frozen features — the linear evaluation protocol of the SSL papers, with scikit-learn's solver."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))
    probe.fit(train_features.double().numpy(), train_labels.numpy())
    return float(probe.score(test_features.double().numpy(), test_labels.numpy()))


def accuracy(encoder: nn.Module, head: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    """Test accuracy of ``head(encoder(·))`` in evaluation mode."""
    logits = head(features(encoder, images).to(next(head.parameters()).device))
    return float((logits.argmax(1).cpu() == labels.cpu()).float().mean())


# ----------------------------------------------------------------------------------------------------
# Generative pretext tasks, for the chapter's figure: what the network sees, and what it must produce


def colourisation_pair(photo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(input, target) of colourisation: the photo's luminance (ITU-R BT.601 weights) and the photo itself,
    both float in [0, 1]; ``photo`` is (H, W, 3) uint8 or float in [0, 1]."""
    rgb = photo.astype(np.float64) / (255.0 if photo.dtype == np.uint8 else 1.0)
    grey = rgb @ np.array([0.299, 0.587, 0.114])
    return grey, rgb


def super_resolution_pair(image: torch.Tensor, factor: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input, target) of super-resolution: ``image`` (C, H, W) averaged over ``factor``×``factor`` blocks,
    and the image itself."""
    if factor < 1 or image.shape[-1] % factor or image.shape[-2] % factor:
        raise ValueError(f"factor {factor} must divide the image's height and width {tuple(image.shape[-2:])}")
    return F.avg_pool2d(image[None], factor)[0], image


def masked_patches(image: torch.Tensor, patch: int, fraction: float, seed: int = 0
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """(input, mask) of masked-image modelling: ``image`` (C, H, W) with ``fraction`` of its ``patch``×``patch``
    patches set to 0, and the (H, W) boolean mask of the hidden pixels (what the network must fill in)."""
    c, h, w = image.shape
    if h % patch or w % patch:
        raise ValueError(f"patch {patch} must divide the image's height and width ({h}, {w})")
    rows, cols = h // patch, w // patch
    hidden = round(fraction * rows * cols)
    order = torch.randperm(rows * cols, generator=torch.Generator().manual_seed(seed))[:hidden]
    grid = torch.zeros(rows * cols, dtype=torch.bool)
    grid[order] = True
    mask = grid.reshape(rows, cols).repeat_interleave(patch, 0).repeat_interleave(patch, 1)
    return image.masked_fill(mask, 0.0), mask
