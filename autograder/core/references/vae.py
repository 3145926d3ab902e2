"""Reference importance-sampling estimates of chapter 08, which the hidden tests compare a student's IWAE bound with.

Written with ``torch.distributions`` rather than by hand: q(z|x) = N(mu, diag exp(logvar)), p(z) = N(0, I) and
p(x|z) = independent Bernoulli pixels with the decoder's logits, each an ``Independent`` distribution whose
``log_prob`` sums over the event dimension. Sample k of image b is z = mu[b] + σ[b] · eps[k, b], the same noise
the student's function receives, so the two computations see the same samples and must agree to rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch.distributions import Bernoulli, Independent, Normal


def log_weights(x: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor, eps: torch.Tensor,
                decode: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """log p(x|z_k) + log p(z_k) − log q(z_k|x) for every sample: (K, B).

    x (B, D) pixels in [0, 1]; mu, logvar (B, L); eps (K, B, L); decode maps (N, L) latents to (N, D) logits.
    """
    q = Independent(Normal(mu, torch.exp(0.5 * logvar), validate_args=False), 1)
    prior = Independent(Normal(torch.zeros_like(mu), torch.ones_like(mu), validate_args=False), 1)
    z = q.base_dist.loc + q.base_dist.scale * eps  # (K, B, L): what q.rsample() computes with this noise
    k, b, latent = eps.shape
    logits = decode(z.reshape(k * b, latent)).reshape(k, b, -1)  # (K, B, D)
    likelihood = Independent(Bernoulli(logits=logits, validate_args=False), 1)
    return likelihood.log_prob(x.expand_as(logits)) + prior.log_prob(z) - q.log_prob(z)


def iwae_bound(x: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor, eps: torch.Tensor,
               decode: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """log (1/K) Σ_k w_k for each image, w_k = p(x, z_k) / q(z_k|x): (B,) in nats (Burda et al., 2016)."""
    weights = log_weights(x, mu, logvar, eps, decode)
    return torch.logsumexp(weights, dim=0) - math.log(weights.shape[0])


def elbo_estimate(x: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor, eps: torch.Tensor,
                  decode: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """The Monte-Carlo ELBO on the same samples, (1/K) Σ_k log w_k: (B,). By Jensen it never exceeds
    :func:`iwae_bound`, and with K = 1 the two are equal."""
    return log_weights(x, mu, logvar, eps, decode).mean(dim=0)
