"""Chapter 08's widgets: a 2-D latent explorer, latent interpolation between two test images, and a β slider.

Each widget draws one figure once and then moves its artists (:class:`~dlcourse.widgets.base.KeptFigure`), so a
slider costs a decoder call and a PNG. What to draw for given control values — :func:`explorer_state`,
:func:`interpolation_state`, :func:`beta_run` — is plain and tested without a browser; the drawing functions
only plot what those return. The interpolation widget takes the student's ``lerp`` and ``slerp``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dlcourse import figures
from dlcourse.widgets.base import InteractiveView, KeptFigure, interactive_view

Decode = Callable[[torch.Tensor], torch.Tensor]  # latents (N, L) -> Bernoulli logits (N, 784)
Interpolate = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]  # (z0, z1, t (T,)) -> (T, ..., L)
SIDE = 28


def _image(decode: Decode, z: torch.Tensor) -> np.ndarray:
    """Pixel probabilities of the images decoded from z (N, L): (N, 28, 28)."""
    with torch.no_grad():
        return torch.sigmoid(decode(z)).reshape(len(z), SIDE, SIDE).cpu().numpy()


# ----------------------------------------------------------------------------------------------------
# Latent explorer


@dataclass(frozen=True)
class LatentMap:
    """A 2-D latent space: the codes of test images (N, 2), their labels (N,), and the decoder."""

    name: str
    codes: np.ndarray
    labels: np.ndarray
    decode: Decode

    def box(self, quantile: float = 0.005, pad: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
        """The range the sliders cover: the codes' ``quantile`` to 1 − ``quantile`` quantiles, widened by
        ``pad`` of the width on each side."""
        lo, hi = np.quantile(self.codes, quantile, axis=0), np.quantile(self.codes, 1 - quantile, axis=0)
        width = hi - lo
        return lo - pad * width, hi + pad * width


@dataclass(frozen=True)
class ExplorerState:
    """What the explorer shows at latent point ``z``: the decoded image and the nearest test code."""

    latent: LatentMap
    z: tuple[float, float]
    image: np.ndarray  # (28, 28) pixel probabilities
    nearest_label: int
    nearest_distance: float  # to the nearest code, in units of the codes' mean standard deviation


def explorer_state(latent: LatentMap, z1: float, z2: float) -> ExplorerState:
    """Decode the point (z1, z2) and find the test code nearest to it."""
    z = torch.tensor([[z1, z2]], dtype=torch.float32)
    image = _image(latent.decode, z)[0]
    distances = np.linalg.norm(latent.codes - np.array([z1, z2]), axis=1)
    i = int(np.argmin(distances))
    scale = float(np.mean(latent.codes.std(axis=0))) or 1.0
    return ExplorerState(latent, (float(z1), float(z2)), image, int(latent.labels[i]), float(distances[i]) / scale)


def _explorer_caption(state: ExplorerState, class_names: Sequence[str]) -> str:
    return (f"decoded at z = ({state.z[0]:.2f}, {state.z[1]:.2f})\nnearest test code: "
            f"{state.nearest_distance:.2f} spreads away ({class_names[state.nearest_label]})")


def draw_latent_explorer(state: ExplorerState, class_names: Sequence[str]):
    """Left: the test codes coloured by class with a cross at z. Right: the image decoded at z."""
    import matplotlib.pyplot as plt

    fig, (ax_map, ax_img) = plt.subplots(1, 2, figsize=(9.5, 4.2), gridspec_kw={"width_ratios": [1.35, 1]})
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.11, top=0.86, wspace=0.12)
    latent = state.latent
    for c, name in enumerate(class_names):  # one line of markers per class: far cheaper to draw than a scatter
        points = latent.codes[latent.labels == c]
        ax_map.plot(points[:, 0], points[:, 1], ".", ms=2, alpha=0.5, color=plt.get_cmap("tab10")(c % 10), label=name)
    figures.name_in_place(ax_map, latent.codes, latent.labels, class_names)  # ten classes: named, not only coloured
    ax_map.plot([state.z[0]], [state.z[1]], "kx", ms=14, mew=3)
    lo, hi = latent.box()
    ax_map.set(xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]), xlabel="z₁", ylabel="z₂")
    ax_map.set_title(f"{latent.name}: codes of {len(latent.codes):,} test images", fontsize=10)
    ax_img.imshow(state.image, cmap="gray", interpolation="nearest", vmin=0, vmax=1)
    ax_img.set(xticks=[], yticks=[])
    ax_img.set_title(_explorer_caption(state, class_names), fontsize=9)
    return fig


def _move_explorer(fig: Any, state: ExplorerState, class_names: Sequence[str]) -> None:
    ax_map, ax_img = fig.axes[:2]
    ax_map.lines[-1].set_data([state.z[0]], [state.z[1]])
    ax_img.images[0].set_data(state.image)
    ax_img.title.set_text(_explorer_caption(state, class_names))


def _set_range(slider: Any, lo: float, hi: float, value: float) -> None:
    """Give a FloatSlider a new range and value at once (validated together, one notification)."""
    with slider.hold_trait_notifications():
        slider.min, slider.max, slider.value = lo, hi, value
        slider.step = (hi - lo) / 100


def latent_explorer(maps: dict[str, LatentMap], class_names: Sequence[str]) -> InteractiveView:
    """Pick a model and drag z₁, z₂: the image the decoder makes there, on the map of the test set's codes."""
    import ipywidgets as W

    names = list(maps)
    lo, hi = maps[names[0]].box()
    controls = {
        "model": W.Dropdown(options=names, description="model"),
        "z1": W.FloatSlider(value=float((lo[0] + hi[0]) / 2), min=float(lo[0]), max=float(hi[0]),
                            step=float(hi[0] - lo[0]) / 100, description="z₁", continuous_update=True),
        "z2": W.FloatSlider(value=float((lo[1] + hi[1]) / 2), min=float(lo[1]), max=float(hi[1]),
                            step=float(hi[1] - lo[1]) / 100, description="z₂", continuous_update=True),
    }

    def on_model(change: dict) -> None:
        lo, hi = maps[change["new"]].box()
        _set_range(controls["z1"], float(lo[0]), float(hi[0]), float((lo[0] + hi[0]) / 2))
        _set_range(controls["z2"], float(lo[1]), float(hi[1]), float((lo[1] + hi[1]) / 2))

    controls["model"].observe(on_model, names="value")
    view = KeptFigure(lambda s: draw_latent_explorer(s, class_names),
                      lambda fig, s: _move_explorer(fig, s, class_names), key=lambda s: s.latent.name)

    def render(model: str, z1: float, z2: float):
        return view.show(explorer_state(maps[model], z1, z2))

    return interactive_view(controls, render, "latent explorer")


# ----------------------------------------------------------------------------------------------------
# Interpolation


@dataclass(frozen=True)
class InterpolationState:
    """A path from the code of one image to another's, decoded; and the latent norm along each kind of path."""

    kind: str
    t: float
    ends: np.ndarray  # (2, 28, 28): the two input images
    strip: np.ndarray  # (steps, 28, 28): decoded at t = 0, 1/(steps-1), ..., 1
    image: np.ndarray  # (28, 28): decoded at t
    ts: np.ndarray  # (steps,)
    norms: dict[str, np.ndarray]  # kind -> (steps,) ‖z(t)‖ along that kind's path
    radius: float  # √L: where N(0, I) puts almost all of its samples in L dimensions


def interpolation_state(encode: Callable[[torch.Tensor], torch.Tensor], decode: Decode, x0: torch.Tensor,
                        x1: torch.Tensor, interpolate: dict[str, Interpolate], kind: str, t: float,
                        steps: int = 9, shown: torch.Tensor | None = None) -> InterpolationState:
    """Encode images ``x0`` and ``x1`` (each (D,)) to codes z0, z1 (L,), walk from one to the other with
    ``interpolate[kind](z0, z1, ts)`` and decode every point. ``shown`` (2, D), if given, is what to show as
    the two ends (e.g. the grey images of which ``x0`` and ``x1`` are binarized draws)."""
    if kind not in interpolate:
        raise ValueError(f"kind must be one of {sorted(interpolate)}, got {kind!r}")
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"t must lie in [0, 1], got {t}")
    with torch.no_grad():
        z0, z1 = encode(torch.stack([x0, x1]))  # (2, L) -> two (L,) codes
        ts = torch.linspace(0.0, 1.0, steps, dtype=z0.dtype)
        paths = {k: fn(z0, z1, ts) for k, fn in interpolate.items()}  # kind -> (steps, L)
        here = interpolate[kind](z0, z1, torch.tensor([float(t)], dtype=z0.dtype))  # (1, L)
    ends = (torch.stack([x0, x1]) if shown is None else shown).reshape(2, SIDE, SIDE).cpu().numpy()
    return InterpolationState(kind, float(t), ends, _image(decode, paths[kind]), _image(decode, here)[0],
                              ts.numpy(), {k: p.norm(dim=-1).cpu().numpy() for k, p in paths.items()},
                              float(np.sqrt(z0.shape[-1])))


def draw_interpolation(state: InterpolationState):
    """Top: image A, the decoded path, image B. Bottom: the image at t, and ‖z(t)‖ along each kind of path."""
    import matplotlib.pyplot as plt

    steps = len(state.strip)
    fig = plt.figure(figsize=(10, 4.6))
    grid = fig.add_gridspec(2, steps + 2, height_ratios=[1, 2.2], left=0.03, right=0.98, bottom=0.1, top=0.92,
                            hspace=0.35, wspace=0.08)
    panels = [state.ends[0], *state.strip, state.ends[1]]
    titles = ["image A", *[f"t = {v:.2f}" for v in state.ts], "image B"]
    for i, (picture, title) in enumerate(zip(panels, titles, strict=True)):
        ax = fig.add_subplot(grid[0, i])
        ax.imshow(picture, cmap="gray", interpolation="nearest", vmin=0, vmax=1)
        ax.set(xticks=[], yticks=[])
        ax.set_title(title, fontsize=7)
    ax_big = fig.add_subplot(grid[1, : steps // 2])
    ax_big.imshow(state.image, cmap="gray", interpolation="nearest", vmin=0, vmax=1)
    ax_big.set(xticks=[], yticks=[])
    ax_big.set_title(f"{state.kind}, t = {state.t:.2f}", fontsize=9)
    ax_norm = fig.add_subplot(grid[1, steps // 2 + 1:])
    for kind, norms in state.norms.items():
        ax_norm.plot(state.ts, norms, "o-", ms=3, label=f"{kind} path")
    ax_norm.axhline(state.radius, color="k", lw=0.8, ls="--", label="√L (typical ‖z‖ under the prior)")
    ax_norm.axvline(state.t, color=figures.CATEGORICAL[1], lw=1)
    top = max(state.radius, *(float(n.max()) for n in state.norms.values()))
    ax_norm.set(xlabel="t", ylabel="‖z(t)‖", ylim=(0, 1.15 * top), xlim=(-0.02, 1.02))
    ax_norm.legend(fontsize=7, loc="lower center")
    return fig


def _move_interpolation(fig: Any, state: InterpolationState) -> None:
    steps = len(state.strip)
    axes = fig.axes
    for ax, picture in zip(axes[: steps + 2], [state.ends[0], *state.strip, state.ends[1]], strict=True):
        ax.images[0].set_data(picture)
    ax_big, ax_norm = axes[steps + 2], axes[steps + 3]
    ax_big.images[0].set_data(state.image)
    ax_big.title.set_text(f"{state.kind}, t = {state.t:.2f}")
    for line, norms in zip(ax_norm.lines, state.norms.values(), strict=False):
        line.set_data(state.ts, norms)
    ax_norm.lines[-1].set_xdata([state.t, state.t])
    top = max(state.radius, *(float(n.max()) for n in state.norms.values()))
    ax_norm.set_ylim(0, 1.15 * top)


def interpolation_viewer(encode: Callable[[torch.Tensor], torch.Tensor], decode: Decode, images: torch.Tensor,
                         interpolate: dict[str, Interpolate], steps: int = 9, first: int = 0, second: int = 1,
                         shown: torch.Tensor | None = None) -> InteractiveView:
    """Pick two test images (``images`` (N, D), encoded as they are; ``shown`` (N, D), if given, is what the
    figure shows of them), a kind of path and t: the decoded walk between their codes."""
    import ipywidgets as W

    count = len(images)
    controls = {
        "first": W.BoundedIntText(value=first, min=0, max=count - 1, description="image A"),
        "second": W.BoundedIntText(value=second, min=0, max=count - 1, description="image B"),
        "kind": W.ToggleButtons(options=list(interpolate), description="path"),
        "t": W.FloatSlider(value=0.5, min=0.0, max=1.0, step=0.05, description="t"),
    }
    view = KeptFigure(draw_interpolation, _move_interpolation, key=lambda s: len(s.strip))

    def render(first: int, second: int, kind: str, t: float):
        ends = None if shown is None else shown[[first, second]]
        return view.show(interpolation_state(encode, decode, images[first], images[second], interpolate, kind, t,
                                             steps, ends))

    return interactive_view(controls, render, "latent interpolation")


# ----------------------------------------------------------------------------------------------------
# β slider


@dataclass(frozen=True)
class BetaRun:
    """One β-VAE as the slider shows it: reconstructions, samples from the prior, and what each latent carries."""

    beta: float
    originals: np.ndarray  # (n, 28, 28)
    reconstructions: np.ndarray  # (n, 28, 28): decoded at q's mean
    samples: np.ndarray  # (m, 28, 28): decoded from z ~ N(0, I), the same z for every β
    kl_per_dim: np.ndarray  # (L,) average KL of each latent dimension, nats
    metrics: dict[str, float]  # held-out "reconstruction", "kl", "neg_elbo", "active_units"


def beta_run(model: Any, beta: float, x: torch.Tensor, noise: torch.Tensor, kl_per_dim: torch.Tensor,
             metrics: dict[str, float], shown: torch.Tensor | None = None) -> BetaRun:
    """Decode ``x`` (n, D) through q's mean and decode the prior draws ``noise`` (m, L) with ``model``.
    ``shown`` (n, D), if given, is what to show as the originals (e.g. the grey images ``x`` was drawn from)."""
    with torch.no_grad():
        mu, _ = model.encode(x)
    originals = x if shown is None else shown
    return BetaRun(float(beta), originals.reshape(len(x), SIDE, SIDE).cpu().numpy(), _image(model.decode, mu),
                   _image(model.decode, noise), kl_per_dim.detach().cpu().numpy(), dict(metrics))


def _grid(images: np.ndarray, rows: int) -> np.ndarray:
    n = len(images)
    cols = n // rows
    return images[: rows * cols].reshape(rows, cols, SIDE, SIDE).transpose(0, 2, 1, 3).reshape(rows * SIDE, -1)


def _beta_title(run: BetaRun) -> str:
    m = run.metrics
    return (f"β = {run.beta:g}: held-out reconstruction {m['reconstruction']:.1f} nats + KL {m['kl']:.1f} nats "
            f"= −ELBO {m['neg_elbo']:.1f}; {int(m['active_units'])} of {len(run.kl_per_dim)} latents active")


def draw_beta(run: BetaRun, kl_top: float):
    """Left: test images over their reconstructions. Middle: samples from the prior. Right: KL per latent."""
    import matplotlib.pyplot as plt

    fig, (ax_rec, ax_smp, ax_kl) = plt.subplots(1, 3, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 1, 1.1]})
    fig.subplots_adjust(left=0.02, right=0.98, bottom=0.14, top=0.82, wspace=0.18)
    ax_rec.imshow(np.concatenate([_grid(run.originals, 2), _grid(run.reconstructions, 2)]), cmap="gray",
                  interpolation="nearest", vmin=0, vmax=1)
    ax_rec.axhline(2 * SIDE - 0.5, color=figures.CATEGORICAL[1], lw=1)
    ax_rec.set(xticks=[], yticks=[])
    ax_rec.set_title("test images (top) and reconstructions", fontsize=9)
    ax_smp.imshow(_grid(run.samples, 4), cmap="gray", interpolation="nearest", vmin=0, vmax=1)
    ax_smp.set(xticks=[], yticks=[])
    ax_smp.set_title("decoded from z ~ N(0, I)", fontsize=9)
    ax_kl.bar(np.arange(len(run.kl_per_dim)), run.kl_per_dim, color=figures.CATEGORICAL[0])
    ax_kl.set(ylim=(0, kl_top), xlabel="latent dimension", ylabel="average KL (nats)")
    ax_kl.set_title("what each latent carries", fontsize=9)
    fig.suptitle(_beta_title(run), fontsize=10)
    return fig


def _move_beta(fig: Any, run: BetaRun) -> None:
    ax_rec, ax_smp, ax_kl = fig.axes[:3]
    ax_rec.images[0].set_data(np.concatenate([_grid(run.originals, 2), _grid(run.reconstructions, 2)]))
    ax_smp.images[0].set_data(_grid(run.samples, 4))
    for bar, height in zip(ax_kl.patches, run.kl_per_dim, strict=True):
        bar.set_height(float(height))
    fig.texts[0].set_text(_beta_title(run))


def beta_explorer(runs: dict[float, BetaRun]) -> InteractiveView:
    """A slider over the shipped β-VAEs: the trade-off between reconstruction and KL, sample quality, and how
    many latent dimensions stay in use."""
    import ipywidgets as W

    betas = sorted(runs)
    kl_top = 1.1 * max(float(r.kl_per_dim.max()) for r in runs.values())
    controls = {"beta": W.SelectionSlider(options=betas, value=1.0 if 1.0 in runs else betas[0], description="β")}
    view = KeptFigure(lambda r: draw_beta(r, kl_top), _move_beta, key=lambda r: len(r.kl_per_dim))

    def render(beta: float):
        return view.show(runs[beta])

    return interactive_view(controls, render, "β-VAE: reconstruction against KL")
