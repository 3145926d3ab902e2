"""Generative adversarial networks: the data, models and training loop of chapter 07.

* The 8-Gaussian ring (:func:`ring_centres`, :func:`sample_ring`): eight modes on a circle, the standard toy
  for watching a generator find — or drop — modes.
* Small models: MLPs for the plane (:class:`MLPGenerator`, :class:`MLPDiscriminator`) and a DC-GAN-style
  pair for 28 × 28 images (:class:`ConvGenerator`, :class:`ConvDiscriminator`). Discriminators return
  *logits*, one per sample, shape (B,).
* :func:`train_gan` runs any alternating step function (the chapter's exercise) and keeps snapshots.
* :func:`toy_gan` builds a tiny, seeded generator–discriminator pair with their optimizers: what the tests
  of a training step start from.
* :func:`class_scores`: how a classifier sees generated images — the class histogram (coverage), the mean
  confidence, and the score exp(H(p(y)) − E H(p(y|x))) that summarises both.
* The game in one dimension, in closed form: :class:`Mixture1D` densities and samples,
  :func:`optimal_discriminator` D* = p_data / (p_data + p_g) and :func:`js_divergence` on a grid.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn as nn

from dlcourse import runtime, training

# ------------------------------------------------------------------------------------------------ data


def ring_centres(modes: int = 8, radius: float = 2.0) -> torch.Tensor:
    """(modes, 2) float32 centres evenly spaced on a circle, the first at angle 0."""
    angles = 2 * math.pi * torch.arange(modes, dtype=torch.float64) / modes
    return (radius * torch.stack([angles.cos(), angles.sin()], dim=1)).float()


def sample_ring(n: int, modes: int = 8, radius: float = 2.0, std: float = 0.05,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """(n, 2) samples of an equal mixture of isotropic Gaussians (standard deviation ``std``) on the ring."""
    which = torch.randint(modes, (n,), generator=generator)
    noise = torch.randn(n, 2, generator=generator) * std
    return ring_centres(modes, radius)[which] + noise


# ---------------------------------------------------------------------------------------------- models


class MLPGenerator(nn.Module):
    """z (B, latent) → x (B, out): ``layers`` hidden layers of ``hidden`` ReLU units, a linear output."""

    def __init__(self, latent: int = 2, hidden: int = 128, out: int = 2, layers: int = 2) -> None:
        super().__init__()
        sizes = [latent] + [hidden] * layers
        blocks: list[nn.Module] = []
        for a, b in zip(sizes[:-1], sizes[1:], strict=True):
            blocks += [nn.Linear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*blocks, nn.Linear(sizes[-1], out))
        self.latent = latent

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


class MLPDiscriminator(nn.Module):
    """x (B, inp) → logits (B,): ``layers`` hidden layers of ``hidden`` LeakyReLU(0.2) units."""

    def __init__(self, inp: int = 2, hidden: int = 128, layers: int = 2) -> None:
        super().__init__()
        sizes = [inp] + [hidden] * layers
        blocks: list[nn.Module] = []
        for a, b in zip(sizes[:-1], sizes[1:], strict=True):
            blocks += [nn.Linear(a, b), nn.LeakyReLU(0.2)]
        self.net = nn.Sequential(*blocks, nn.Linear(sizes[-1], 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class ConvGenerator(nn.Module):
    """DC-GAN-style: z (B, latent) → a linear map to (2w, 7, 7) → two stride-2 transposed convolutions
    (BatchNorm and ReLU between) → images (B, 1, 28, 28) in [-1, 1] (tanh)."""

    def __init__(self, latent: int = 32, width: int = 32) -> None:
        super().__init__()
        self.latent = latent
        self.project = nn.Sequential(nn.Linear(latent, 2 * width * 7 * 7, bias=False),
                                     nn.BatchNorm1d(2 * width * 7 * 7), nn.ReLU())
        self.up = nn.Sequential(
            nn.ConvTranspose2d(2 * width, width, 4, stride=2, padding=1, bias=False),  # 7 -> 14
            nn.BatchNorm2d(width), nn.ReLU(),
            nn.ConvTranspose2d(width, 1, 4, stride=2, padding=1),  # 14 -> 28
            nn.Tanh(),
        )
        self.width = width

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.project(z).view(-1, 2 * self.width, 7, 7)
        return self.up(h)


class ConvDiscriminator(nn.Module):
    """DC-GAN-style: images (B, 1, 28, 28) → two stride-2 convolutions with LeakyReLU(0.2) → logits (B,)."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, width, 4, stride=2, padding=1), nn.LeakyReLU(0.2),  # 28 -> 14
            nn.Conv2d(width, 2 * width, 4, stride=2, padding=1), nn.LeakyReLU(0.2),  # 14 -> 7
            nn.Flatten(), nn.Linear(2 * width * 7 * 7, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def toy_gan(seed: int = 0, latent: int = 3, data_dim: int = 2, hidden: int = 8, optimizer: str = "sgd",
            lr: float = 0.05, momentum: float = 0.0) -> tuple[nn.Module, nn.Module, torch.optim.Optimizer,
                                                              torch.optim.Optimizer]:
    """A tiny seeded ``(G, D, opt_G, opt_D)``: one-hidden-layer MLPs and SGD (with ``momentum``) or Adam.

    The same seed gives the same weights on every call, and the global random state is left untouched.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        G = MLPGenerator(latent, hidden, data_dim, layers=1)
        D = MLPDiscriminator(data_dim, hidden, layers=1)
    if optimizer == "sgd":
        opt_G = torch.optim.SGD(G.parameters(), lr=lr, momentum=momentum)
        opt_D = torch.optim.SGD(D.parameters(), lr=lr, momentum=momentum)
    elif optimizer == "adam":
        opt_G = torch.optim.Adam(G.parameters(), lr=lr, betas=(0.5, 0.999))
        opt_D = torch.optim.Adam(D.parameters(), lr=lr, betas=(0.5, 0.999))
    else:
        raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    return G, D, opt_G, opt_D


# -------------------------------------------------------------------------------------------- training


@dataclass
class GANRun:
    """What :func:`train_gan` recorded: the losses of every step and the snapshots it took."""

    d_loss: list[float] = field(default_factory=list)
    g_loss: list[float] = field(default_factory=list)
    snapshots: list[tuple[int, torch.Tensor]] = field(default_factory=list)  # (step, samples of fixed z)
    seconds: float = 0.0


def train_gan(
    G: nn.Module,
    D: nn.Module,
    step: Callable[..., tuple[float, float]],
    sample_real: Callable[[int, torch.Generator], torch.Tensor],
    steps: int,
    *,
    batch_size: int = 256,
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.5, 0.999),
    kind: str = "non_saturating",
    snapshot_every: int = 0,
    fixed_z: torch.Tensor | None = None,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> GANRun:
    """Train with Adam, one call of ``step(G, D, opt_G, opt_D, real, z, kind=kind)`` per step.

    ``step`` returns (discriminator loss, generator loss) as floats. Every ``snapshot_every`` steps (and at
    the end) the generator's outputs for ``fixed_z`` are kept, on the CPU.
    """
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    opt_G = torch.optim.Adam(G.parameters(), lr=lr, betas=betas)
    opt_D = torch.optim.Adam(D.parameters(), lr=lr, betas=betas)
    run = GANRun()
    start = time.perf_counter()

    def snapshot(at: int) -> None:
        if fixed_z is None:
            return
        was_training = G.training
        G.eval()
        with torch.no_grad():
            run.snapshots.append((at, G(fixed_z.to(device)).cpu()))
        G.train(was_training)

    snapshot(0)
    for t in range(1, steps + 1):
        real = sample_real(batch_size, gen).to(device)
        z = torch.randn(batch_size, G.latent, generator=gen).to(device)
        d_loss, g_loss = step(G, D, opt_G, opt_D, real, z, kind=kind)
        run.d_loss.append(float(d_loss))
        run.g_loss.append(float(g_loss))
        if snapshot_every and t % snapshot_every == 0 and t != steps:
            snapshot(t)
    snapshot(steps)
    run.seconds = time.perf_counter() - start
    training.record_run(f"GAN, {kind} generator loss", steps=steps, seconds=run.seconds, items=steps * batch_size,
                        item_name="samples", metric_name="generator loss, last 50 steps",
                        metric=training.recent_mean(run.g_loss))
    return run


# ----------------------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class ClassScores:
    """How a classifier sees a set of images."""

    histogram: torch.Tensor  # (classes,) share of images predicted as each class, sums to 1
    confidence: float  # mean of the largest class probability
    score: float  # exp(H(mean p(y|x)) − mean H(p(y|x))): 1 (all alike or all unsure) … classes (diverse, sure)

    @property
    def effective_classes(self) -> float:
        """exp(entropy of the histogram): how many classes the images spread over, 1 … classes."""
        h = self.histogram[self.histogram > 0]
        return float(torch.exp(-(h * h.log()).sum()))


@torch.no_grad()
def class_scores(classifier: nn.Module, images: torch.Tensor, batch_size: int = 500) -> ClassScores:
    """Score ``images`` (N, 1, 28, 28), in the classifier's input range, by ``classifier``'s predictions."""
    was_training = classifier.training
    classifier.eval()
    probs = torch.cat([classifier(images[i:i + batch_size]).softmax(-1) for i in range(0, len(images), batch_size)])
    classifier.train(was_training)
    classes = probs.shape[1]
    histogram = torch.bincount(probs.argmax(-1), minlength=classes).double() / len(probs)
    marginal = probs.double().mean(0)
    entropy = lambda p: -(p * p.clamp_min(1e-12).log()).sum(-1)  # noqa: E731
    score = math.exp(float(entropy(marginal) - entropy(probs.double()).mean()))
    return ClassScores(histogram.float(), float(probs.max(-1).values.mean()), score)


# ------------------------------------------------------------------------- the 1-D game, in closed form


@dataclass(frozen=True)
class Mixture1D:
    """A mixture of 1-D Gaussians: component k has weight ``weights[k]``, mean ``means[k]``, std ``stds[k]``."""

    means: tuple[float, ...]
    stds: tuple[float, ...]
    weights: tuple[float, ...] | None = None  # None: equal weights

    def _params(self, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        k = len(self.means)
        if len(self.stds) != k or (self.weights is not None and len(self.weights) != k):
            raise ValueError("means, stds and weights must have the same length")
        w = torch.full((k,), 1.0 / k, dtype=dtype) if self.weights is None else torch.tensor(self.weights, dtype=dtype)
        return torch.tensor(self.means, dtype=dtype), torch.tensor(self.stds, dtype=dtype), w / w.sum()

    def pdf(self, x: torch.Tensor) -> torch.Tensor:
        """The density at every entry of ``x`` (any shape), same shape and dtype."""
        mean, std, w = self._params(x.dtype)
        u = (x[..., None] - mean) / std
        return (w * torch.exp(-0.5 * u**2) / (std * math.sqrt(2 * math.pi))).sum(-1)

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """(n,) float32 samples."""
        mean, std, w = self._params(torch.float32)
        which = torch.multinomial(w, n, replacement=True, generator=generator)
        return mean[which] + std[which] * torch.randn(n, generator=generator)


def js_divergence(p: torch.Tensor, q: torch.Tensor, dx: float) -> float:
    """Jensen–Shannon divergence (nats) of two densities sampled on an even grid of spacing ``dx``.

    JS(p‖q) = ½ KL(p‖m) + ½ KL(q‖m) with m = (p + q)/2, each integral a Riemann sum; 0 ≤ JS ≤ log 2.
    """
    p, q = p.double(), q.double()
    m = (p + q) / 2

    def kl(a: torch.Tensor) -> torch.Tensor:
        return torch.where(a > 0, a * torch.log(a.clamp_min(1e-300) / m.clamp_min(1e-300)), torch.zeros_like(a)).sum()

    return float(0.5 * (kl(p) + kl(q)) * dx)


def optimal_discriminator(p_data: torch.Tensor, p_g: torch.Tensor) -> torch.Tensor:
    """D*(x) = p_data(x) / (p_data(x) + p_g(x)), the best discriminator for a fixed generator (½ where both are 0)."""
    total = p_data + p_g
    return torch.where(total > 0, p_data / total.clamp_min(1e-300), torch.full_like(total, 0.5))
