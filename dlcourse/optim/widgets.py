"""Chapter 10's widgets: an optimizer playground on a 2-D valley, and a learning-rate schedule designer.

Both take the student's own functions (update functions, a schedule factory), so what they draw is what the
notebook's answers compute. Their logic — :func:`playground_state` and :func:`schedule_state` — is plain
and tested without a browser; the drawing functions only plot what those return.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dlcourse import figures
from dlcourse.optim.train import VALLEYS, LrLambda, Update, trajectory
from dlcourse.widgets.base import InteractiveView, KeptFigure, fixed_layout, grey_out_idle, interactive_view

# ----------------------------------------------------------------------------------------------------
# Optimizer playground


@dataclass(frozen=True)
class PlaygroundState:
    """Trajectories of several optimizers on one valley: label → float64 (n, 2) points."""

    valley: str
    paths: dict[str, torch.Tensor]

    def distances(self) -> dict[str, float]:
        """Distance from each path's last point to the valley's minimum (inf for a run that diverged)."""
        target = torch.tensor(VALLEYS[self.valley].minimum, dtype=torch.float64)
        return {k: float((p[-1] - target).norm()) if len(p) > 0 else math.inf for k, p in self.paths.items()}


@functools.lru_cache(maxsize=64)
def _walk(update: Update, valley: str, steps: int, lr: float, hyper: tuple) -> torch.Tensor:
    """:func:`trajectory`, remembered: moving one slider recomputes only the paths that depend on it."""
    return trajectory(update, valley, steps, lr, **dict(hyper))


def playground_state(sgd_update: Update, adam_update: Update, valley: str, sgd_lr: float, adam_lr: float,
                     momentum: float, beta1: float, beta2: float, steps: int) -> PlaygroundState:
    """Walk ``valley`` for ``steps`` steps with plain SGD, SGD with (Nesterov) momentum, and Adam."""
    paths = {
        "SGD": _walk(sgd_update, valley, steps, sgd_lr, ()),
        f"momentum {momentum:g}": _walk(sgd_update, valley, steps, sgd_lr, (("momentum", momentum),)),
        f"Nesterov {momentum:g}": _walk(sgd_update, valley, steps, sgd_lr,
                                        (("momentum", momentum), ("nesterov", True))),
        f"Adam β=({beta1:g}, {beta2:g})": _walk(adam_update, valley, steps, adam_lr, (("betas", (beta1, beta2)),)),
    }
    return PlaygroundState(valley, paths)


@functools.lru_cache(maxsize=8)
def _background(valley: str, n: int = 160) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The valley's log10 height over its box, computed once per valley: as grey RGBA bytes (light where
    low; rows are y, bottom row first) and as the grid (x, y, log height) for a few level lines."""
    x0, x1, y0, y1 = VALLEYS[valley].box
    gx, gy = np.meshgrid(np.linspace(x0, x1, n), np.linspace(y0, y1, n))
    z = np.log10(VALLEYS[valley].f(torch.from_numpy(np.stack([gx, gy], axis=-1))).numpy() + 1e-3)
    shade = 255 - 110 * (z - z.min()) / max(float(np.ptp(z)), 1e-12)
    rgba = np.empty((n, n, 4), dtype=np.uint8)
    rgba[..., :3] = shade[..., None].astype(np.uint8)
    rgba[..., 3] = 255
    return rgba, (gx, gy, z)


def _path_labels(state: PlaygroundState) -> list[str]:
    return [f"{label}: {dist:.2g} from the minimum" for label, dist in state.distances().items()]


def draw_valley(state: PlaygroundState, ax: Any = None):
    """The valley's log-height as a shaded image with level lines, its minimum, and every path on it;
    returns the figure. The shading is an image computed once per valley."""
    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.08, top=0.92)
    v = VALLEYS[state.valley]
    shade, (gx, gy, z) = _background(state.valley)
    ax.imshow(shade, extent=v.box, origin="lower", aspect="auto", interpolation="nearest")
    ax.contour(gx, gy, z, levels=10, colors="0.6", linewidths=0.5)
    ax.plot(*v.minimum, "k*", ms=12)
    for path, label in zip(state.paths.values(), _path_labels(state), strict=True):
        pts = path.numpy()
        ax.plot(pts[:, 0], pts[:, 1], ".-", ms=2, lw=1, label=label)
    ax.set(xlim=v.box[:2], ylim=v.box[2:])
    ax.set_title(f"{v.name} (shading: log height)", y=1.0)  # a fixed place: no layout pass per redraw
    ax.legend(fontsize=7, loc="lower right")
    return fig if fig is not None else ax.figure


def _move_paths(fig: Any, state: PlaygroundState) -> None:
    """Put ``state``'s paths and distances into a figure :func:`draw_valley` made for the same valley."""
    ax = fig.axes[0]
    for line, path in zip(ax.lines[1:], state.paths.values(), strict=True):  # lines[0]: the minimum
        pts = path.numpy()
        line.set_data(pts[:, 0], pts[:, 1])
    for text, label in zip(ax.get_legend().get_texts(), _path_labels(state), strict=True):
        text.set_text(label)


def valley_view() -> KeptFigure:
    """The playground's figure, kept across redraws: built again only when the valley changes."""
    return KeptFigure(draw_valley, _move_paths, key=lambda state: (state.valley, len(state.paths)))


def optimizer_playground(sgd_update: Update, adam_update: Update, steps: int = 100) -> InteractiveView:
    """Sliders for the learning rates, momentum, β₁ and β₂ above the paths they produce on a valley."""
    import ipywidgets as W

    controls = {
        "valley": W.Dropdown(options=list(VALLEYS), value="bowl", description="valley"),
        "sgd_lr": W.FloatLogSlider(value=0.03, base=10, min=-4, max=-0.5, step=0.05, description="SGD lr"),
        "adam_lr": W.FloatLogSlider(value=0.1, base=10, min=-3, max=0, step=0.05, description="Adam lr"),
        "momentum": W.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01, description="momentum"),
        "beta1": W.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01, description="β₁"),
        "beta2": W.FloatSlider(value=0.999, min=0.5, max=0.9999, step=0.0001, readout_format=".4f",
                               description="β₂"),
    }
    view = valley_view()

    def render(**values: Any):
        return view.show(playground_state(sgd_update, adam_update, steps=steps, **values))

    return interactive_view(controls, render, title=f"Optimizer playground ({steps} steps each)")


# ----------------------------------------------------------------------------------------------------
# Schedule designer

ScheduleFactory = Callable[[str, int, int, float], LrLambda]
SHAPES = ("constant", "linear", "cosine", "triangular")


@dataclass(frozen=True)
class ScheduleState:
    """The multiplier ``lr(t) / lr`` for every step, and the shipped run nearest to the chosen settings."""

    shape: str
    factors: list[float]
    run: dict | None  # one entry of the shipped runs, or None when none has this shape


def nearest_run(runs: list[dict], shape: str, warmup: float, cycles: float) -> dict | None:
    """The shipped run of ``shape`` whose warm-up fraction, then number of cycles, is closest."""
    same = [r for r in runs if r["shape"] == shape]
    if not same:
        return None
    return min(same, key=lambda r: (abs(r["warmup"] - warmup), abs(r["cycles"] - cycles)))


def schedule_state(make: ScheduleFactory, runs: list[dict], shape: str, warmup: float, total_steps: int,
                   cycles: float) -> ScheduleState:
    """``make(shape, warmup_steps, total_steps, cycles)`` evaluated at steps 0 … total_steps - 1."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    if not 0 <= warmup < 1:
        raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {warmup}")
    fn = make(shape, int(round(warmup * total_steps)), total_steps, cycles)
    return ScheduleState(shape, [float(fn(t)) for t in range(total_steps)], nearest_run(runs, shape, warmup, cycles))


def draw_schedule(state: ScheduleState, base_lr: float):
    """Left: lr(t). Right: the nearest shipped run's training loss (smoothed) against the fraction of training."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullLocator

    from dlcourse.optim.train import smooth

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.2))
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15, top=0.88, wspace=0.25)  # fixed: no layout pass
    fixed_layout(fig)
    ax1.plot([base_lr * f for f in state.factors])
    ax1.set(xlabel="step", ylabel="learning rate", title=f"{state.shape}: lr(t) = {base_lr:g} · λ(t)")
    if state.run is None:
        ax2.text(0.5, 0.5, "no shipped run of this shape", ha="center", va="center")
    else:
        r = state.run
        loss = smooth(r["loss"])
        frac = np.arange(1, len(loss) + 1) / len(loss)
        ax2.plot(frac, loss, color=figures.CATEGORICAL[1])
        ax2.set_yscale("log")
        ax2.yaxis.set_minor_locator(NullLocator())  # labelled minor ticks of a log axis cost most of a redraw
        ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))  # 0.01, not 10⁻² in mathtext
        ax2.set(xlabel="fraction of training", ylabel="training loss (smoothed)",
                title=f"shipped run: {r['shape']}, warm-up {r['warmup']:.0%}, cycles {r['cycles']:g} → "
                      f"{r['val_accuracy']:.1%}")
        ax2.title.set_fontsize(9)
    return fig


def schedule_designer(make: ScheduleFactory, runs: dict) -> InteractiveView:
    """Controls for shape, warm-up, total steps and cycles above lr(t) and the nearest shipped loss curve."""
    import ipywidgets as W

    controls = {
        "shape": W.Dropdown(options=list(SHAPES), value="linear", description="shape"),
        "warmup": W.FloatSlider(value=0.1, min=0.0, max=0.3, step=0.05, description="warm-up"),
        "total_steps": W.IntSlider(value=int(runs["steps"]), min=50, max=2000, step=50, description="steps"),
        "cycles": W.FloatSlider(value=1.0, min=0.5, max=4.0, step=0.5, description="cycles"),
    }

    def render(**values: Any):
        return draw_schedule(schedule_state(make, runs["runs"], **values), float(runs["lr"]))

    def outcome(**values: Any):  # what the figure shows: the schedule and the shipped run next to it
        state = schedule_state(make, runs["runs"], **values)
        return state.factors, id(state.run)

    grey_out_idle(controls, ["warmup", "cycles"], outcome, triggers=["shape"])  # cycles do nothing to "linear"
    return interactive_view(controls, render, title="Schedule designer")
