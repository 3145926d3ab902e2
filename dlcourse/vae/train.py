"""Chapter 08's package code: the MLP VAE and autoencoders its demo trains, their training loops and evaluations.

The models are plain building blocks: an encoder that outputs the mean and log-variance of q(z|x), a decoder
that outputs Bernoulli logits, a deterministic autoencoder with the same layers, and a linear autoencoder for
the PCA comparison. The losses a VAE trains on — the KL term, the reparameterized sample, the negative ELBO,
the IWAE bound — are the notebook's exercises; the training and evaluation functions here take the student's
functions as arguments and never compute those quantities themselves.

Images are flattened to (N, 784) vectors in [0, 1]; :func:`binarize` draws binary pixels with a seeded
generator (each pixel is 1 with its grey level as probability), which makes the Bernoulli likelihood a proper
probability of the data.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from dlcourse import runtime, training

# The student's functions, as the demo passes them in.
Reparameterize = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
NegativeElbo = Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
IwaeBound = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, Callable], torch.Tensor]


def mlp(sizes: Sequence[int]) -> nn.Sequential:
    """Linear layers between consecutive ``sizes`` with ReLU in between (none after the last)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class VAE(nn.Module):
    """An MLP VAE: ``encode`` x (N, D) → (mu, logvar), each (N, L); ``decode`` z (N, L) → logits (N, D).

    The encoder is D → hidden… → 2L (the two halves are the mean and log σ² of a diagonal Gaussian q(z|x));
    the decoder mirrors it, L → …hidden → D, and outputs the logits of independent Bernoulli pixels.
    """

    def __init__(self, latent_dim: int, data_dim: int = 784, hidden: Sequence[int] = (256,)) -> None:
        super().__init__()
        self.latent_dim, self.data_dim = latent_dim, data_dim
        self.encoder = mlp([data_dim, *hidden, 2 * latent_dim])
        self.decoder = mlp([latent_dim, *reversed(hidden), data_dim])

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (N, D) → mu (N, L), logvar (N, L)."""
        mu, logvar = self.encoder(x).chunk(2, dim=-1)
        return mu, logvar

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """z (..., L) → Bernoulli logits (..., D)."""
        return self.decoder(z)


class Autoencoder(nn.Module):
    """A deterministic MLP autoencoder with the VAE's layer sizes: ``encode`` x (N, D) → z (N, L)."""

    def __init__(self, latent_dim: int, data_dim: int = 784, hidden: Sequence[int] = (256,)) -> None:
        super().__init__()
        self.latent_dim, self.data_dim = latent_dim, data_dim
        self.encoder = mlp([data_dim, *hidden, latent_dim])
        self.decoder = mlp([latent_dim, *reversed(hidden), data_dim])

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))


class LinearAutoencoder(nn.Module):
    """x (N, D) → z = E x (N, k) → x̂ = G z (N, D), no biases and no non-linearity (data centred first)."""

    def __init__(self, data_dim: int, latent_dim: int) -> None:
        super().__init__()
        self.encoder = nn.Linear(data_dim, latent_dim, bias=False)
        self.decoder = nn.Linear(latent_dim, data_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


# ----------------------------------------------------------------------------------------------------
# Data


def flatten(images: torch.Tensor) -> torch.Tensor:
    """(N, 1, H, W) images → (N, H·W) vectors."""
    return images.reshape(len(images), -1)


def binarize(x: torch.Tensor, seed: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """Binary pixels drawn with probability equal to the grey level: a float tensor of 0s and 1s."""
    if generator is None:
        generator = torch.Generator(device=x.device).manual_seed(0 if seed is None else seed)
    return torch.bernoulli(x, generator=generator)


# ----------------------------------------------------------------------------------------------------
# Training


@dataclass
class TrainRun:
    """One training run: the loss of every step (and its reconstruction and KL parts), steps and seconds."""

    loss: list[float] = field(default_factory=list)
    reconstruction: list[float] = field(default_factory=list)
    kl: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0


def _cosine_lr(optimizer: torch.optim.Optimizer, lr: float, step: int, steps: int, final: float = 0.1) -> None:
    """Cosine decay from ``lr`` to ``final · lr`` over ``steps``."""
    factor = final + (1 - final) * 0.5 * (1 + math.cos(math.pi * step / max(1, steps)))
    for group in optimizer.param_groups:
        group["lr"] = lr * factor


def _batches(n: int, batch_size: int, generator: torch.Generator):
    """Endless shuffled index batches (a new permutation every epoch)."""
    while True:
        order = torch.randperm(n, generator=generator)
        for start in range(0, n - batch_size + 1, batch_size):
            yield order[start:start + batch_size]


def _train(model: nn.Module, x_train: torch.Tensor, step_loss: Callable[[torch.Tensor, torch.Generator], tuple],
           *, steps: int, lr: float, batch_size: int, seed: int, dynamic_binarization: bool) -> TrainRun:
    """The loop :func:`train_vae` and :func:`train_autoencoder` share: Adam with a cosine decay to a tenth of
    ``lr``, batches of ``x_train`` binarized afresh (unless ``dynamic_binarization`` is off) with the noise
    generator, and ``step_loss(x, noise) → (loss, reconstruction, kl)`` for each batch."""
    device = x_train.device
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    noise = torch.Generator(device=device).manual_seed(runtime.shifted(seed + 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    batches = _batches(len(x_train), min(batch_size, len(x_train)), gen)
    run = TrainRun()
    model.train()
    start = time.perf_counter()
    for step in range(steps):
        _cosine_lr(optimizer, lr, step, steps)
        x = x_train[next(batches).to(device)]
        if dynamic_binarization:
            x = torch.bernoulli(x, generator=noise)
        loss, reconstruction, kl = step_loss(x, noise)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        run.loss.append(float(loss.detach()))
        run.reconstruction.append(float(reconstruction.detach()))
        run.kl.append(float(kl))
        run.steps += 1
    run.seconds = time.perf_counter() - start
    model.eval()
    training.record_run(type(model).__name__, steps=run.steps, seconds=run.seconds, items=run.steps * batch_size,
                        item_name="images", metric_name="training loss, last 50 steps",
                        metric=training.recent_mean(run.loss))
    return run


def train_vae(model: VAE, x_train: torch.Tensor, loss_fn: NegativeElbo, reparameterize: Reparameterize, *,
              steps: int, beta: float = 1.0, lr: float = 1e-3, batch_size: int = 128, seed: int = 0,
              dynamic_binarization: bool = True) -> TrainRun:
    """Train ``model`` with Adam on ``loss_fn(x, logits, mu, logvar, beta) → (loss, reconstruction, kl)``.

    Each step takes a batch of ``x_train`` (N, D) grey levels, binarizes it afresh (unless
    ``dynamic_binarization`` is off), encodes it, draws ε ~ N(0, I) from a generator seeded with ``seed``,
    samples z = ``reparameterize(mu, logvar, ε)``, decodes z to logits and steps on the loss. The learning rate
    decays with a cosine to a tenth of ``lr``.
    """

    def step_loss(x: torch.Tensor, noise: torch.Generator) -> tuple:
        mu, logvar = model.encode(x)
        eps = torch.randn(mu.shape, generator=noise, device=x.device, dtype=mu.dtype)
        loss, reconstruction, kl = loss_fn(x, model.decode(reparameterize(mu, logvar, eps)), mu, logvar, beta)
        return loss, reconstruction, kl.detach()

    return _train(model, x_train, step_loss, steps=steps, lr=lr, batch_size=batch_size, seed=seed,
                  dynamic_binarization=dynamic_binarization)


def squared_error_loss(kl: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> NegativeElbo:
    """The "squared error plus KL" VAE loss many lectures write, for :func:`train_vae` and :func:`evaluate_elbo`.

    Returns ``loss(x, logits, mu, logvar, beta) → (loss, reconstruction, kl)`` with reconstruction
    ``‖x − σ(logits)‖²`` summed over the pixels and ``kl(mu, logvar)`` per image (the closed form the chapter's
    exercise writes), each averaged over the batch. It is the negative ELBO of a Gaussian decoder
    ``N(x; σ(logits), s²I)`` with ``s² = ½``, less its constant ``(D/2)·log π``; for any other ``s`` it is that
    decoder's β-VAE loss with ``β = 1/(2s²)``, up to the factor ``2s²``.
    """

    def loss(x: torch.Tensor, logits: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor,
             beta: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        reconstruction = (x - torch.sigmoid(logits)).pow(2).flatten(1).sum(1).mean()
        divergence = kl(mu, logvar).mean()
        return reconstruction + beta * divergence, reconstruction, divergence

    return loss


def bernoulli_nll(x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """−log p(x | logits) of independent Bernoulli pixels, summed over the last dimension: (N, D) → (N,)."""
    return F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(-1)


def train_autoencoder(model: Autoencoder, x_train: torch.Tensor, *, steps: int, lr: float = 1e-3,
                      batch_size: int = 128, seed: int = 0, dynamic_binarization: bool = True) -> TrainRun:
    """Train a deterministic autoencoder on the same data and schedule as :func:`train_vae`, with the
    Bernoulli reconstruction loss only (no KL term, no noise)."""

    def step_loss(x: torch.Tensor, noise: torch.Generator) -> tuple:
        loss = bernoulli_nll(x, model(x)).mean()
        return loss, loss, 0.0

    return _train(model, x_train, step_loss, steps=steps, lr=lr, batch_size=batch_size, seed=seed,
                  dynamic_binarization=dynamic_binarization)


def train_linear_autoencoder(x: torch.Tensor, latent_dim: int, *, steps: int = 300, lr: float = 1e-2,
                             seed: int = 0) -> LinearAutoencoder:
    """A :class:`LinearAutoencoder` fitted to centred ``x`` (N, D) by full-batch Adam on the mean squared error
    (summed over the D coordinates), with a cosine-decayed learning rate.

    It starts as the projection onto a random k-dimensional subspace (encoder Qᵀ, decoder Q for a random
    orthonormal Q), which is as far from the principal subspace as chance makes it, but away from the saddle
    point at zero weights where small random weights would linger.
    """
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    model = LinearAutoencoder(x.shape[1], latent_dim)
    q, _ = torch.linalg.qr(torch.randn(x.shape[1], latent_dim, generator=gen))  # (D, k), orthonormal columns
    with torch.no_grad():
        model.encoder.weight.copy_(q.T)
        model.decoder.weight.copy_(q)
    model = model.to(x.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(steps):
        _cosine_lr(optimizer, lr, step, steps, final=0.01)
        loss = (model(x) - x).pow(2).sum(-1).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return model.eval()


# ----------------------------------------------------------------------------------------------------
# PCA and the linear autoencoder


def pca_directions(x: torch.Tensor, k: int) -> torch.Tensor:
    """The top-``k`` principal directions of ``x`` (N, D), as orthonormal columns (D, k) (``x`` is centred here)."""
    centred = x - x.mean(0)
    _, _, vh = torch.linalg.svd(centred, full_matrices=False)
    return vh[:k].T


def principal_angles(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Principal angles, in degrees and ascending, between the column spans of ``a`` (D, k) and ``b`` (D, m).

    0° everywhere means the same subspace; 90° an orthogonal direction. Computed from the singular values of
    Qₐᵀ Q_b, the cosines of the angles, with Q orthonormal bases of the spans.
    """
    qa, _ = torch.linalg.qr(a.double())
    qb, _ = torch.linalg.qr(b.double())
    cosines = torch.linalg.svdvals(qa.T @ qb).clamp(-1.0, 1.0)
    return torch.rad2deg(torch.arccos(cosines))  # cosines come largest first, so the angles ascend


# ----------------------------------------------------------------------------------------------------
# Evaluation


@dataclass(frozen=True)
class Evaluation:
    """Held-out averages per image, in nats: −ELBO = reconstruction + KL (β = 1)."""

    neg_elbo: float
    reconstruction: float
    kl: float


@torch.no_grad()
def evaluate_elbo(model: VAE, x: torch.Tensor, loss_fn: NegativeElbo, reparameterize: Reparameterize, *,
                  samples: int = 1, seed: int = 0, batch_size: int = 1000) -> Evaluation:
    """The negative ELBO of ``model`` on binary ``x`` (N, D), averaged over images and ``samples`` draws of z.

    Uses the student's ``loss_fn`` with β = 1 (the true bound) and ``reparameterize``; the noise comes from a
    generator seeded with ``seed``.
    """
    model.eval()
    noise = torch.Generator(device=x.device).manual_seed(seed)
    totals = np.zeros(3)
    for start in range(0, len(x), batch_size):
        xb = x[start:start + batch_size]
        mu, logvar = model.encode(xb)
        for _ in range(samples):
            eps = torch.randn(mu.shape, generator=noise, device=x.device, dtype=mu.dtype)
            parts = loss_fn(xb, model.decode(reparameterize(mu, logvar, eps)), mu, logvar, 1.0)
            totals += np.array([float(p) for p in parts]) * len(xb)
    neg_elbo, reconstruction, kl = totals / (len(x) * samples)
    return Evaluation(float(neg_elbo), float(reconstruction), float(kl))


@torch.no_grad()
def iwae_estimate(model: VAE, x: torch.Tensor, iwae_bound: IwaeBound, *, k: int, seed: int = 0,
                  batch_size: int = 100) -> torch.Tensor:
    """The student's ``iwae_bound`` with ``k`` samples for every image of binary ``x`` (N, D): (N,) in nats.

    The noise ε (k, B, L) of each batch comes from a generator seeded with ``seed``.
    """
    model.eval()
    noise = torch.Generator(device=x.device).manual_seed(seed)
    out = []
    for start in range(0, len(x), batch_size):
        xb = x[start:start + batch_size]
        mu, logvar = model.encode(xb)
        eps = torch.randn((k, *mu.shape), generator=noise, device=x.device, dtype=mu.dtype)
        out.append(iwae_bound(xb, mu, logvar, eps, model.decode))
    return torch.cat(out)


@torch.no_grad()
def autoencoder_nll(model: Autoencoder, x: torch.Tensor, batch_size: int = 1000) -> float:
    """Mean Bernoulli reconstruction loss of a deterministic autoencoder on binary ``x``, in nats per image."""
    model.eval()
    total = sum(float(bernoulli_nll(x[s:s + batch_size], model(x[s:s + batch_size])).sum())
                for s in range(0, len(x), batch_size))
    return total / len(x)


@torch.no_grad()
def latent_means(model: VAE | Autoencoder, x: torch.Tensor, batch_size: int = 1000) -> torch.Tensor:
    """The code of every image: q's mean for a VAE, the encoder's output for an autoencoder; (N, L)."""
    model.eval()
    codes = []
    for start in range(0, len(x), batch_size):
        out = model.encode(x[start:start + batch_size])
        codes.append(out[0] if isinstance(out, tuple) else out)
    return torch.cat(codes)


@torch.no_grad()
def kl_per_dimension(model: VAE, x: torch.Tensor, batch_size: int = 1000) -> torch.Tensor:
    """The average over ``x`` of KL(q(z_j|x) ‖ N(0, 1)) for each latent dimension j: (L,), in nats.

    Computed with ``torch.distributions`` (the oracle of the chapter's first exercise).
    """
    from torch.distributions import Normal, kl_divergence

    model.eval()
    total = torch.zeros(model.latent_dim, dtype=torch.float64)
    for start in range(0, len(x), batch_size):
        mu, logvar = model.encode(x[start:start + batch_size])
        q = Normal(mu, (0.5 * logvar).exp())
        total += kl_divergence(q, Normal(torch.zeros_like(mu), torch.ones_like(mu))).sum(0).double().cpu()
    return (total / len(x)).float()


def active_units(codes: torch.Tensor, threshold: float = 0.01) -> int:
    """How many latent dimensions the encoder uses: those whose mean code varies across the data,
    Var_x[E_q(z_j|x)] > ``threshold`` (Burda et al., 2016). ``codes`` (N, L) are q's means."""
    return int((codes.double().var(0) > threshold).sum())


def code_spacing(codes: torch.Tensor, reference: int = 2000) -> float:
    """The typical distance between neighbouring codes: the median, over the first ``reference`` codes (N, L), of
    the distance from each to its nearest other code."""
    c = codes.double().cpu()
    head = c[:reference]
    d = torch.cdist(head, c)
    d[torch.arange(len(head)), torch.arange(len(head))] = math.inf  # not itself
    return float(d.min(dim=1).values.median())


def in_holes(codes: torch.Tensor, draws: torch.Tensor, factor: float = 3.0) -> torch.Tensor:
    """Which of ``draws`` (M, L) — codes a generator would decode — have no code of ``codes`` (N, L) within
    ``factor`` times :func:`code_spacing`: they land in a hole between the codes of real images, where the
    decoder was never trained. A bool tensor (M,)."""
    nearest = torch.cdist(draws.double().cpu(), codes.double().cpu()).min(dim=1).values
    return nearest > factor * code_spacing(codes)


def far_fraction(codes: torch.Tensor, draws: torch.Tensor, factor: float = 3.0) -> float:
    """The fraction of ``draws`` that land in holes (:func:`in_holes`)."""
    return float(in_holes(codes, draws, factor).double().mean())


def fitted_gaussian_draws(codes: torch.Tensor, n: int, seed: int = 0) -> torch.Tensor:
    """``n`` draws from the Gaussian with the mean and covariance of ``codes`` (N, L): the best a generator can do
    with an autoencoder, which has no prior of its own."""
    gen = torch.Generator().manual_seed(seed)
    c = codes.double().cpu()
    chol = torch.linalg.cholesky(torch.cov(c.T).reshape(c.shape[1], c.shape[1]))
    return (c.mean(0) + torch.randn(n, c.shape[1], generator=gen, dtype=torch.float64) @ chol.T).to(codes.dtype)


@torch.no_grad()
def decode_images(decode: Callable[[torch.Tensor], torch.Tensor], z: torch.Tensor,
                  side: int = 28) -> torch.Tensor:
    """Pixel probabilities σ(decode(z)) of latents z (N, L), as (N, side, side) images."""
    return torch.sigmoid(decode(z)).reshape(len(z), side, side)


def latent_grid(lo: Sequence[float], hi: Sequence[float], n: int) -> torch.Tensor:
    """An ``n`` × ``n`` grid of 2-D latents from ``lo`` to ``hi``, row by row from the top (largest z₂) down:
    (n·n, 2), so that decoded images tile a picture whose axes match a scatter plot of the codes."""
    z1 = torch.linspace(float(lo[0]), float(hi[0]), n)
    z2 = torch.linspace(float(hi[1]), float(lo[1]), n)
    g2, g1 = torch.meshgrid(z2, z1, indexing="ij")
    return torch.stack([g1.reshape(-1), g2.reshape(-1)], dim=1)


def tile(images: torch.Tensor, rows: int) -> np.ndarray:
    """(rows·cols, h, w) images → one (rows·h, cols·w) array, row by row."""
    n, h, w = images.shape
    cols = n // rows
    if rows * cols != n:
        raise ValueError(f"{n} images do not fill {rows} rows")
    return images.reshape(rows, cols, h, w).permute(0, 2, 1, 3).reshape(rows * h, cols * w).cpu().numpy()
