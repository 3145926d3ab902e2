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

from dlcourse.widgets.base import InteractiveView, interactive_view

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


def draw_pattern(state: PatternState):
    """Three panels: the mask, its receptive field after L layers, and the scores stored against dense."""
    import matplotlib.pyplot as plt

    n = state.mask.shape[0]
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(11, 3.4), gridspec_kw={"width_ratios": [1, 1, 0.8]})
    ax1.imshow(state.mask.numpy(), cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
    ax1.set(title=f"pattern: {state.pairs / state.dense_pairs:.1%} of pairs", xlabel="key j", ylabel="query i")
    ax2.imshow(state.reach.numpy(), cmap="Blues", interpolation="nearest", vmin=0, vmax=1)
    middle = n // 2
    ax2.set(title=f"after {state.layers} layer(s): query {middle} hears {state.reach_of(middle)} of {n}",
            xlabel="key j")
    ax3.bar(["dense", "pattern"], [state.dense_pairs, state.pairs], color=["tab:red", "tab:blue"])
    ax3.set(yscale="log", ylabel="scores stored (log)", title=f"memory: {state.dense_pairs / state.pairs:.1f}× less")
    fig.tight_layout()
    return fig


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

    def render(**values: Any):
        return draw_pattern(pattern_state(build, reach, n, **values))

    return interactive_view(controls, render, title="Attention pattern designer")
