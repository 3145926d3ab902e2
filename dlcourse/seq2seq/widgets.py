"""Alignment viewer (chapter 01): a source string, the model's output, and the attention between them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import torch

from dlcourse.attention import AttentionMap
from dlcourse.widgets.attention import draw_heatmap, heatmap_state
from dlcourse.widgets.base import InteractiveView, interactive_view

# run(text, snapshot) -> (weights (L, S) of output step × source character, source chars, output chars)
AlignFn = Callable[[str, int], tuple[torch.Tensor, list[str], list[str]]]


def alignment_state(weights: torch.Tensor, source: Sequence[str], output: Sequence[str], title: str):
    """A heatmap state for one alignment matrix (rows: output characters, columns: source characters)."""
    if weights.dim() != 2:
        raise ValueError(f"weights must be (L, S), got shape {tuple(weights.shape)}")
    amap = AttentionMap(title, weights[None, None], None, None)
    return heatmap_state(amap, 0, list(output), list(source))


def alignment_viewer(run: AlignFn, examples: Sequence[str], snapshot_labels: Sequence[str]) -> InteractiveView:
    """Pick an example or type any text; a slider walks through snapshots saved during training."""
    import ipywidgets as W

    if not examples or not snapshot_labels:
        raise ValueError("need at least one example and one snapshot")
    text = W.Combobox(value=examples[0], options=list(examples), description="input", ensure_option=False,
                      continuous_update=False, layout=W.Layout(width="420px"))
    snap = W.SelectionSlider(options=[(label, i) for i, label in enumerate(snapshot_labels)],
                             value=len(snapshot_labels) - 1, description="trained for")

    forward = functools.lru_cache(maxsize=32)(run)  # moving back to a snapshot seen before costs no model call

    def render(text: str, snapshot: int):
        weights, source, output = forward(text, snapshot)
        title = f"{''.join(source)!r} → {''.join(output)!r} ({snapshot_labels[snapshot]})"
        return draw_heatmap(alignment_state(weights, source, output, title))

    return interactive_view({"text": text, "snapshot": snap}, render, title="Alignment viewer")
