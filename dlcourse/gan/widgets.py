"""Chapter 07's widgets: the generator-loss landscape, a scrubber over training snapshots of the ring, and a
walk through an image generator's latent space.

Each takes what the notebook computed (the student's loss and coverage functions, a trained generator), so
it shows what the answers do. The logic — :func:`landscape_state`, :func:`scrubber_state`,
:func:`latent_path` — is plain and tested without a browser; drawing only plots what those return.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dlcourse import figures
from dlcourse.widgets.base import InteractiveView, KeptFigure, interactive_view

KINDS = ("minimax", "non_saturating")

# ----------------------------------------------------------------------------------------------------
# Loss landscape


@dataclass(frozen=True)
class LandscapeState:
    """Both generator losses over D(G(z)), their gradients with respect to the logit, and one marked point."""

    p: np.ndarray  # (n,) values of D(G(z))
    loss: dict[str, np.ndarray]  # kind -> (n,)
    grad: dict[str, np.ndarray]  # kind -> (n,)
    at: float  # the marked D(G(z))
    at_loss: dict[str, float]
    at_grad: dict[str, float]


def _loss_and_grad(generator_loss: Callable, p: torch.Tensor, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-point loss and d loss / d logit at D(G(z)) = p, one single-sample batch per point."""
    logit = torch.logit(p).requires_grad_()
    losses = torch.stack([generator_loss(logit[i:i + 1], kind) for i in range(len(p))])
    grad = torch.autograd.grad(losses.sum(), logit)[0]
    return losses.detach().numpy(), grad.numpy()


def landscape_state(generator_loss: Callable, at: float, n: int = 200) -> LandscapeState:
    """The curves of ``generator_loss(logits, kind)`` for both kinds on a grid of D(G(z)) in (0, 1), and their
    values at ``at``."""
    if not 0.0 < at < 1.0:
        raise ValueError(f"D(G(z)) must lie strictly between 0 and 1, got {at}")
    p = torch.linspace(1e-3, 1 - 1e-3, n, dtype=torch.float64)
    point = torch.tensor([at], dtype=torch.float64)
    loss, grad, at_loss, at_grad = {}, {}, {}, {}
    for kind in KINDS:
        loss[kind], grad[kind] = _loss_and_grad(generator_loss, p, kind)
        l_at, g_at = _loss_and_grad(generator_loss, point, kind)
        at_loss[kind], at_grad[kind] = float(l_at[0]), float(g_at[0])
    return LandscapeState(p.numpy(), loss, grad, at, at_loss, at_grad)


def _draw_landscape(state: LandscapeState):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.1))
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.85, wspace=0.3)
    fig._markers, fig._vlines = {}, []
    for ax, curves, values, what in ((axes[0], state.loss, state.at_loss, "loss"),
                                     (axes[1], state.grad, state.at_grad, "∂ loss / ∂ logit")):
        for kind in KINDS:
            (line,) = ax.plot(state.p, curves[kind], label=kind.replace("_", "-"))
            (marker,) = ax.plot([state.at], [values[kind]], "o", color=line.get_color())
            fig._markers[(what, kind)] = marker
        fig._vlines.append(ax.axvline(state.at, color="grey", lw=0.8))
        ax.set(xlabel="D(G(z))", ylabel=what)
    axes[0].legend(fontsize=8)
    fig._title = fig.suptitle("")
    _update_landscape(fig, state)
    return fig


def _update_landscape(fig: Any, state: LandscapeState) -> None:
    for (what, kind), marker in fig._markers.items():
        values = state.at_loss if what == "loss" else state.at_grad
        marker.set_data([state.at], [values[kind]])
    for line in fig._vlines:
        line.set_xdata([state.at, state.at])
    fig._title.set_text(f"D(G(z)) = {state.at:.3f}:  gradient minimax {state.at_grad['minimax']:+.3f}, "
                        f"non-saturating {state.at_grad['non_saturating']:+.3f}")


def loss_landscape(generator_loss: Callable, start: float = 0.05) -> InteractiveView:
    """Drag D(G(z)) and read both generator losses and their gradients off the curves."""
    import ipywidgets as W

    kept = KeptFigure(_draw_landscape, _update_landscape)
    curves: dict[str, LandscapeState] = {}

    def render(at: float):
        if "grid" not in curves:
            curves["grid"] = landscape_state(generator_loss, at)
        grid = curves["grid"]
        point = landscape_state(generator_loss, at, n=2)  # the marked point only; the curves stay
        return kept.show(LandscapeState(grid.p, grid.loss, grid.grad, at, point.at_loss, point.at_grad))

    slider = W.FloatSlider(value=start, min=0.001, max=0.999, step=0.001, readout_format=".3f",
                           description="D(G(z))", continuous_update=True)
    return interactive_view({"at": slider}, render, title="The generator's loss and its gradient")


# ----------------------------------------------------------------------------------------------------
# Training scrubber


@dataclass(frozen=True)
class ScrubberState:
    """One snapshot of every run: samples, and how they score against the modes."""

    step: int
    points: dict[str, np.ndarray]  # run -> (n, 2)
    covered: dict[str, int]
    quality: dict[str, float]
    centres: np.ndarray  # (M, 2)


def scrubber_state(shipped: dict, index: int, mode_coverage: Callable) -> ScrubberState:
    """Snapshot ``index`` of the shipped runs (``{"steps", "centres", "threshold", "min_count", "runs"}``),
    scored with ``mode_coverage(samples, centres, threshold, min_count) -> (counts, quality, covered)``."""
    steps = shipped["steps"]
    if not 0 <= index < len(steps):
        raise IndexError(f"snapshot {index} of {len(steps)}")
    centres = torch.tensor(shipped["centres"], dtype=torch.float32)
    points, covered, quality = {}, {}, {}
    for run, snapshots in shipped["runs"].items():
        x = torch.tensor(snapshots[index], dtype=torch.float32)
        _, q, c = mode_coverage(x, centres, shipped["threshold"], shipped["min_count"])
        points[run], covered[run], quality[run] = x.numpy(), int(c), float(q)
    return ScrubberState(int(steps[index]), points, covered, quality, centres.numpy())


def _draw_scrubber(state: ScrubberState):
    import matplotlib.pyplot as plt

    runs = list(state.points)
    fig, axes = plt.subplots(1, len(runs), figsize=(4 * len(runs), 4.2))
    axes = np.atleast_1d(axes)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.06, top=0.86, wspace=0.15)
    fig._scatters = {}
    for ax, run in zip(axes, runs, strict=True):
        ax.scatter(*state.centres.T, marker="x", color="black", s=40)
        fig._scatters[run] = (ax.scatter(*state.points[run].T, s=4, alpha=0.5), ax)
        ax.set(aspect="equal", xlim=(-3, 3), ylim=(-3, 3), xticks=[], yticks=[])
    fig._title = fig.suptitle("")
    _update_scrubber(fig, state)
    return fig


def _update_scrubber(fig: Any, state: ScrubberState) -> None:
    for run, (scatter, ax) in fig._scatters.items():
        scatter.set_offsets(state.points[run])
        ax.set_title(f"{run.replace('_', '-')}: {state.covered[run]} of {len(state.centres)} modes, "
                     f"{state.quality[run]:.0%} high-quality", fontsize=9)
    fig._title.set_text(f"step {state.step:,}")


def training_scrubber(shipped: dict, mode_coverage: Callable) -> InteractiveView:
    """A slider over the shipped snapshots of the ring runs, side by side."""
    import ipywidgets as W

    kept = KeptFigure(_draw_scrubber, _update_scrubber, key=lambda s: tuple(s.points))
    slider = W.IntSlider(value=len(shipped["steps"]) // 6, min=0, max=len(shipped["steps"]) - 1,
                         description="snapshot", continuous_update=True)
    return interactive_view({"index": slider}, lambda index: kept.show(scrubber_state(shipped, index, mode_coverage)),
                            title="Training on the ring, snapshot by snapshot")


# ----------------------------------------------------------------------------------------------------
# Latent walk


def latent_code(seed: int, latent: int) -> torch.Tensor:
    """The code (1, latent) drawn from N(0, I) with ``seed``: the same seed, the same code."""
    return torch.randn(1, latent, generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def latent_path(G: torch.nn.Module, z0: torch.Tensor, z1: torch.Tensor, t: float, strip: int = 8
                ) -> tuple[np.ndarray, np.ndarray]:
    """G's image at (1 - t)·z0 + t·z1, (H, W), and ``strip`` images evenly spaced along the path, (strip, H, W)."""
    ts = torch.cat([torch.tensor([float(t)]), torch.linspace(0, 1, strip)])[:, None]  # (1 + strip, 1)
    images = G((1 - ts) * z0 + ts * z1)[:, 0]  # (1 + strip, H, W)
    return images[0].numpy(), images[1:].numpy()


def _draw_walk(state: tuple[np.ndarray, np.ndarray, float]):
    import matplotlib.pyplot as plt

    image, strip, t = state
    fig = plt.figure(figsize=(9, 3.2))
    big = fig.add_axes([0.01, 0.04, 0.27, 0.86])
    row = fig.add_axes([0.31, 0.3, 0.68, 0.4])
    fig._big = big.imshow(image, cmap="gray", interpolation="nearest", vmin=-1, vmax=1)
    fig._row = row.imshow(np.concatenate(list(strip), axis=1), cmap="gray", interpolation="nearest", vmin=-1, vmax=1)
    row.set_title("the path from the first code to the second", fontsize=9)
    fig._mark = row.axvline(0, color=figures.CATEGORICAL[1], lw=2)
    for ax in (big, row):
        ax.axis("off")
    _update_walk(fig, state)
    return fig


def _update_walk(fig: Any, state: tuple[np.ndarray, np.ndarray, float]) -> None:
    image, strip, t = state
    fig._big.set_data(image)
    fig._row.set_data(np.concatenate(list(strip), axis=1))
    width = strip.shape[0] * strip.shape[2]
    x = t * (width - strip.shape[2]) + strip.shape[2] / 2 - 0.5  # the centre of where t falls on the strip
    fig._mark.set_xdata([x, x])
    fig._big.axes.set_title(f"t = {t:.2f}", fontsize=9)


def latent_walk(G: torch.nn.Module, latent: int, strip: int = 8) -> InteractiveView:
    """Two codes chosen by seed and a slider between them; ``G`` maps (B, latent) to (B, 1, H, W) in [-1, 1]."""
    import ipywidgets as W

    kept = KeptFigure(_draw_walk, _update_walk)

    def render(first: int, second: int, t: float):
        image, images = latent_path(G, latent_code(first, latent), latent_code(second, latent), t, strip)
        return kept.show((image, images, t))

    controls = {"first": W.IntSlider(value=0, min=0, max=99, description="first code"),
                "second": W.IntSlider(value=1, min=0, max=99, description="second code"),
                "t": W.FloatSlider(value=0.5, min=0.0, max=1.0, step=0.02, description="t")}
    return interactive_view(controls, render, title="A walk through the generator's latent space")
