"""Chapter 11's widget: the positive-pair explorer — views of a batch and their similarity matrix under an encoder.

:func:`pair_state` computes what the widget shows for given control values (two views of each image made by the
student's ``simclr_views``, their embeddings, the cosine-similarity matrix, NT-Xent by the student's
``nt_xent``); :func:`draw_pairs` plots it; :func:`pair_explorer` wires the controls. The state function is
plain and tested without a browser.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from dlcourse.selfsup import train as selfsup
from dlcourse.widgets.base import InteractiveView, KeptFigure, interactive_view

Views = Callable[..., tuple[torch.Tensor, torch.Tensor]]  # (images, generator, *, scale, jitter) -> two views
Embed = Callable[[torch.Tensor], torch.Tensor]  # images (B, 1, H, W) -> embeddings (B, D)
Loss = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]  # (z1, z2, τ) -> NT-Xent


@dataclass(frozen=True)
class PairState:
    """Two views of ``n`` images, their cosine similarities (2n, 2n; views of batch 1 first), and the loss."""

    first: np.ndarray  # (n, H, W) view 1 of each image
    second: np.ndarray  # (n, H, W) view 2
    similarity: np.ndarray  # (2n, 2n) cosine similarities of the 2n embeddings
    partner_probability: np.ndarray  # (2n,) each view's softmax probability (over the others, at τ) of its partner
    partner_nearest: float  # fraction of views whose most similar other view is their partner
    loss: float  # NT-Xent at τ
    temperature: float


def pair_state(images: torch.Tensor, views: Views, embed: Embed, loss_fn: Loss, *, seed: int, min_scale: float,
               jitter: float, temperature: float) -> PairState:
    """Views of ``images`` (n, 1, H, W) from a generator seeded with ``seed``, crop areas in [min_scale, 1],
    brightness jitter ``jitter``; their embeddings, similarities and NT-Xent at ``temperature``."""
    if not 0.0 < min_scale <= 1.0:
        raise ValueError(f"min_scale must lie in (0, 1], got {min_scale}")
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    first, second = views(images, torch.Generator().manual_seed(int(seed)), scale=(min_scale, 1.0), jitter=jitter)
    with torch.no_grad():
        z1, z2 = embed(first), embed(second)
        loss = float(loss_fn(z1, z2, temperature))
        z = F.normalize(torch.cat([z1, z2]).double(), dim=1).cpu()
    n = len(z1)
    similarity = z @ z.T
    others = (similarity / temperature).fill_diagonal_(-math.inf)
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    probability = torch.softmax(others, dim=1)[torch.arange(2 * n), partner]
    return PairState(first[:, 0].cpu().numpy(), second[:, 0].cpu().numpy(), similarity.numpy(),
                     probability.numpy(), selfsup.positive_top1(z1, z2), loss, float(temperature))


def _caption(state: PairState) -> str:
    return (f"NT-Xent {state.loss:.3f} at τ = {state.temperature:.3g}; partner is the most similar view for "
            f"{state.partner_nearest:.0%} of the views; mean partner probability "
            f"{state.partner_probability.mean():.2f}")


def draw_pairs(state: PairState):
    """Left: view 1 (top row) and view 2 (bottom row) of each image. Right: the similarity matrix, positives boxed."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    n = len(state.first)
    fig = plt.figure(figsize=(11, 4.4))
    grid = fig.add_gridspec(2, n + 5, left=0.02, right=0.97, bottom=0.08, top=0.84, wspace=0.08, hspace=0.1)
    for row, pictures in enumerate((state.first, state.second)):
        for i in range(n):
            ax = fig.add_subplot(grid[row, i])
            ax.imshow(pictures[i], cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            ax.set(xticks=[], yticks=[])
            if i == 0:
                ax.set_ylabel(f"view {row + 1}", fontsize=9)
            if row == 0:
                ax.set_title(f"{i}", fontsize=8)
    ax_sim = fig.add_subplot(grid[:, n + 1:])
    image = ax_sim.imshow(state.similarity, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    for i in range(n):  # the positive pairs: (i, n + i) and (n + i, i)
        for x, y in ((n + i, i), (i, n + i)):
            ax_sim.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="black", lw=1.5))
    ticks = list(range(2 * n))
    ax_sim.set_xticks(ticks, [f"{i % n}{'′' if i >= n else ''}" for i in ticks], fontsize=7)
    ax_sim.set_yticks(ticks, [f"{i % n}{'′' if i >= n else ''}" for i in ticks], fontsize=7)
    ax_sim.set_title("cosine similarity (i: view 1, i′: view 2; boxes: positive pairs)", fontsize=9)
    fig.colorbar(image, ax=ax_sim, fraction=0.046, pad=0.03)
    fig.suptitle(_caption(state), fontsize=10)
    return fig


def _move(fig: Any, state: PairState) -> None:
    n = len(state.first)
    view_axes = fig.axes[: 2 * n]
    for ax, picture in zip(view_axes, [*state.first, *state.second], strict=True):
        ax.images[0].set_data(picture)
    fig.axes[2 * n].images[0].set_data(state.similarity)
    fig._suptitle.set_text(_caption(state))


def pair_explorer(images: torch.Tensor, views: Views, embed: Embed, loss_fn: Loss) -> InteractiveView:
    """Seed, smallest crop area, brightness jitter and temperature: the views, their similarities and the loss."""
    import ipywidgets as W

    controls = {
        "seed": W.IntSlider(value=0, min=0, max=99, description="seed", continuous_update=False),
        "min_scale": W.FloatSlider(value=0.2, min=0.05, max=1.0, step=0.05, description="smallest crop area",
                                   continuous_update=False),
        "jitter": W.FloatSlider(value=0.4, min=0.0, max=0.8, step=0.05, description="brightness jitter",
                                continuous_update=False),
        "temperature": W.FloatLogSlider(value=0.5, base=10, min=-2, max=0.3, step=0.05, description="temperature τ",
                                        continuous_update=False),
    }
    view = KeptFigure(draw_pairs, _move)

    def render(seed: int, min_scale: float, jitter: float, temperature: float):
        return view.show(pair_state(images, views, embed, loss_fn, seed=seed, min_scale=min_scale, jitter=jitter,
                                    temperature=temperature))

    return interactive_view(controls, render, "positive-pair explorer")
