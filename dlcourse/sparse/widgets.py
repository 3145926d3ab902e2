"""Chapter 09's figures and widget: attention patterns as n × n masks, and the pattern designer.

The designer takes the student's own functions — one that builds a mask from the controls' values, one that
computes the receptive field — so what it draws is what the notebook's answers compute. Its logic,
:func:`pattern_state`, is plain and tested without a browser; :func:`draw_pattern` only plots it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from dlcourse import figures
from dlcourse.widgets.base import InteractiveView, KeptFigure, grey_out_idle, interactive_view

MaskBuilder = Callable[..., torch.Tensor]  # (n, window, dilation, n_global, n_random, block, seed) -> bool (n, n)
Reach = Callable[[torch.Tensor, int], torch.Tensor]  # (mask, layers) -> bool (n, n)


def draw_masks(masks: dict[str, torch.Tensor], columns: int = 4, size: float = 2.6):
    """One panel per (title → bool (n, n) mask): dark where query i (row) may attend key j (column)."""
    import matplotlib.pyplot as plt

    rows = (len(masks) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(size * columns, size * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, (title, mask) in zip(axes.flat, masks.items(), strict=False):
        ax.imshow(mask.cpu().numpy(), cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
        ax.set_title(f"{title}\n{int(mask.sum()):,} of {mask.numel():,} pairs", fontsize=9)
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class PatternState:
    """A pattern, what it reaches after ``layers`` layers, and what it stores against dense attention."""

    mask: torch.Tensor  # bool (n, n): query i may attend key j
    reach: torch.Tensor  # bool (n, n): key j's information reaches query i within `layers` layers
    layers: int

    @property
    def pairs(self) -> int:
        """Scores the pattern computes (True entries)."""
        return int(self.mask.sum())

    @property
    def dense_pairs(self) -> int:
        """Scores dense attention computes: n²."""
        return self.mask.numel()

    def reach_of(self, i: int) -> int:
        """How many positions query ``i`` has heard from after ``layers`` layers."""
        return int(self.reach[i].sum())


def pattern_state(build: MaskBuilder, reach: Reach, n: int, window: int, dilation: int, n_global: int,
                  n_random: int, block: int, layers: int, seed: int = 0) -> PatternState:
    """``build(n, window, dilation, n_global, n_random, block, seed)`` and its receptive field after ``layers``."""
    if layers < 1:
        raise ValueError(f"layers must be at least 1, got {layers}")
    mask = build(n, window, dilation, n_global, n_random, block, seed)
    if mask.shape != (n, n) or mask.dtype != torch.bool:
        raise ValueError(f"the builder must return a bool ({n}, {n}) mask, got {mask.dtype} {tuple(mask.shape)}")
    return PatternState(mask, reach(mask, layers), layers)


def _pattern_titles(state: PatternState) -> tuple[str, str, str]:
    n, middle = state.mask.shape[0], state.mask.shape[0] // 2
    return (f"pattern: {state.pairs / state.dense_pairs:.1%} of pairs",
            f"after {state.layers} layer(s): query {middle} hears {state.reach_of(middle)} of {n}",
            f"memory: {state.dense_pairs / state.pairs:.1f}× less")


def draw_pattern(state: PatternState):
    """Three panels: the mask, its receptive field after L layers, and the scores stored against dense."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1, 1, 0.8]})
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.15, top=0.88, wspace=0.3)  # fixed: no layout pass
    titles = _pattern_titles(state)
    ax1.imshow(state.mask.numpy(), cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
    ax1.set(xlabel="key j", ylabel="query i")
    ax2.imshow(state.reach.numpy(), cmap="Blues", interpolation="nearest", vmin=0, vmax=1)
    ax2.set(xlabel="key j")
    ax3.bar(["dense", "pattern"], [state.dense_pairs, max(state.pairs, 1)],
            color=[figures.CATEGORICAL[1], figures.CATEGORICAL[0]])
    ax3.set(yscale="log", ylabel="scores stored (log)", ylim=(1, 2 * state.dense_pairs))
    ax3.yaxis.set_minor_locator(NullLocator())
    for ax in (ax1, ax2):
        ax.locator_params(nbins=4)  # few tick labels: text is most of a redraw's cost
    for ax, title in zip((ax1, ax2, ax3), titles, strict=True):
        ax.set_title(title, y=1.0)
    return fig


def _update_pattern(fig: Any, state: PatternState) -> None:
    """Put ``state`` into a figure :func:`draw_pattern` made for the same ``n``."""
    ax1, ax2, ax3 = fig.axes
    ax1.images[0].set_data(state.mask.numpy())
    ax2.images[0].set_data(state.reach.numpy())
    ax3.patches[1].set_height(max(state.pairs, 1))
    for ax, title in zip((ax1, ax2, ax3), _pattern_titles(state), strict=True):
        ax.set_title(title, y=1.0)


def pattern_view() -> KeptFigure:
    """The designer's figure, kept across redraws: built again only when the sequence length changes."""
    return KeptFigure(draw_pattern, _update_pattern, key=lambda state: state.mask.shape[0])


def pattern_designer(build: MaskBuilder, reach: Reach, n: int = 128) -> InteractiveView:
    """Sliders for window, dilation, global tokens, random blocks, block size and layers above the three panels."""
    import ipywidgets as W

    controls = {
        "window": W.IntSlider(value=4, min=1, max=32, description="window w"),
        "dilation": W.IntSlider(value=1, min=1, max=8, description="dilation"),
        "n_global": W.IntSlider(value=0, min=0, max=8, description="global"),
        "n_random": W.IntSlider(value=0, min=0, max=4, description="random blocks"),
        "block": W.Dropdown(options=[4, 8, 16], value=8, description="block"),
        "layers": W.IntSlider(value=2, min=1, max=8, description="layers L"),
    }

    view = pattern_view()

    def render(**values: Any):
        return view.show(pattern_state(build, reach, n, **values))

    def pattern(window, dilation, n_global, n_random, block, layers):  # the mask decides everything shown
        return build(n, window, dilation, n_global, n_random, block, 0).numpy().tobytes()

    grey_out_idle(controls, ["block"], pattern, triggers=["n_random"])  # the block size of no random blocks

    return interactive_view(controls, render, title="Attention pattern designer")
