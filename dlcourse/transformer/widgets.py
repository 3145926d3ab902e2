"""Chapter 02's widgets: the attention explorer (pick a layer and a head, edit the input, see the weights and
the mask) and the positional-encoding figure."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from dlcourse.attention import AttentionMap
from dlcourse.widgets.attention import MEAN, draw_heatmap, heatmap_state
from dlcourse.widgets.base import InteractiveView, interactive_view

RunFn = Callable[[str], tuple[list[AttentionMap], list[str], list[str]]]


def attention_explorer(run: RunFn, default_text: str, output_labels: bool = True) -> InteractiveView:
    """Text box, layer and head pickers above a heatmap.

    ``run(text)`` returns the attention maps of one forward pass, the input tokens (key and query labels)
    and the model's output tokens (shown as query labels ``in→out`` when ``output_labels``).
    """
    import ipywidgets as W

    maps, _, _ = run(default_text)
    if not maps:
        raise ValueError("the model has no attention module that capture_attention can read")
    n_heads = maps[0].weights.shape[1]
    text = W.Text(value=default_text, description="input", continuous_update=False)
    layer = W.Dropdown(options=[m.name for m in maps], value=maps[-1].name, description="layer")
    head = W.Dropdown(options=[MEAN, *range(n_heads)], value=MEAN, description="head")

    forward = functools.lru_cache(maxsize=16)(run)  # a new layer or head needs no new forward pass

    def render(text: str, layer: str, head):
        found, tokens, outputs = forward(text)
        amap = next(m for m in found if m.name == layer)
        queries = [f"{t}→{o}" for t, o in zip(tokens, outputs, strict=False)] if output_labels else tokens
        return draw_heatmap(heatmap_state(amap, head, queries, tokens))

    return interactive_view({"text": text, "layer": layer, "head": head}, render, title="Attention explorer")


def draw_positional_encoding(pe: torch.Tensor, ax=None):
    """The (positions × dimensions) matrix of a positional encoding as an image; returns the figure."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 3))
    else:
        fig = ax.figure
    im = ax.imshow(pe.detach().cpu().numpy(), aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    ax.set_title("positional encoding")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    return fig
