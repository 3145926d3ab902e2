"""The attention heat map: one head's weights (or the mean of the heads) with the cells a mask blocks, drawn by
chapter 01's alignment viewer and chapter 02's explorer; chapter 06's [CLS] maps share its head option, MEAN."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from dlcourse.attention import AttentionMap

MEAN = "mean of heads"


@dataclass(frozen=True)
class HeatmapState:
    """What one heatmap shows: ``weights`` (L, S), ``blocked`` (L, S) True where the mask forbids."""

    title: str
    weights: torch.Tensor
    blocked: torch.Tensor
    query_labels: list[str]
    key_labels: list[str]


def heatmap_state(amap: AttentionMap, head: int | str, query_labels: Sequence[str], key_labels: Sequence[str],
                  batch_index: int = 0) -> HeatmapState:
    """The (L, S) weights of one head (or their mean) for one example, and where the masks block attention."""
    w = amap.weights[batch_index]  # (H, L, S)
    n_heads, length, source = w.shape
    if head == MEAN:
        shown, head_name = w.mean(dim=0), MEAN
    else:
        if not 0 <= int(head) < n_heads:
            raise ValueError(f"head {head} out of range: this layer has {n_heads} heads")
        shown, head_name = w[int(head)], (f"head {int(head)}" if n_heads > 1 else "")
    blocked = torch.zeros(length, source, dtype=torch.bool)
    if amap.key_padding_mask is not None:
        blocked |= amap.key_padding_mask[batch_index].bool()[None, :]
    if amap.attn_mask is not None:
        m = amap.attn_mask
        blocked |= m if m.dtype == torch.bool else torch.isneginf(m)
    if len(query_labels) != length or len(key_labels) != source:
        raise ValueError(f"{len(query_labels)}×{len(key_labels)} labels for a {length}×{source} map")
    title = f"{amap.name} · {head_name}" if head_name else amap.name  # a one-head model has no head to name
    return HeatmapState(title, shown, blocked, list(query_labels), list(key_labels))


def heatmap_size(rows: int, columns: int, cell: float = 0.32) -> tuple[float, float]:
    """Figure (width, height) in inches for a rows × columns map of square cells: each side follows its own
    count (a 10 × 29 map is wide and short, not a 29-inch square), with room for the labels and the colour
    bar, and a cell size that shrinks so that the figure stays within 12 × 9 inches."""
    cell = min(cell, 9.5 / max(columns, 1), 7.5 / max(rows, 1))
    return max(4.0, cell * columns + 2.5), max(2.5, cell * rows + 1.5)


def draw_heatmap(state: HeatmapState, ax=None):
    """Heatmap of the weights, blocked cells hatched; returns the figure."""
    import matplotlib.pyplot as plt
    import numpy as np

    own_figure = ax is None
    if own_figure:
        fig, ax = plt.subplots(figsize=heatmap_size(len(state.query_labels), len(state.key_labels)))
    else:
        fig = ax.figure
    # nearest: one flat colour per cell, and no resampling pass at draw time
    im = ax.imshow(state.weights.numpy(), vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    if state.blocked.any():
        blocked = np.ma.masked_where(~state.blocked.numpy(), np.ones(state.blocked.shape))
        ax.imshow(blocked, cmap="Greys", vmin=0, vmax=1.5, alpha=0.85, interpolation="nearest")
    ax.set_xticks(range(len(state.key_labels)), state.key_labels)
    ax.set_yticks(range(len(state.query_labels)), state.query_labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(state.title, fontsize=10)
    if own_figure:  # margins in inches from the labels' lengths: no layout pass, a fifth of a redraw
        width, height = fig.get_size_inches()
        longest = max((len(label) for label in state.query_labels), default=1)
        fig.subplots_adjust(left=min(0.45, (0.5 + 0.085 * longest) / width), right=1 - 0.55 / width,
                            bottom=0.62 / height, top=1 - 0.42 / height)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if not own_figure:
        fig.tight_layout()
    return fig
