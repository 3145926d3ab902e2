"""Chapter 03's widgets: a masking viewer, a fill-mask explorer and MiniLM's attention heads over a sentence pair.

Each takes what the notebook computed (the student's ``mask_tokens``, a trained model's prediction function,
captured attention maps). The logic — :func:`masking_state`, :func:`fill_mask_state`, :func:`head_state` — is
plain and tested without a browser; the views only draw what those return (HTML for the first two, a kept
matplotlib figure for the heads).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dlcourse.widgets.base import InteractiveView, KeptFigure, interactive_view

# Text colours at least 4.5:1 on white; the three chosen kinds stay apart under colour-vision deficiencies
# (tests/test_figures.py), differ by their border too (solid, dashed, dotted) and are named in the legend; the
# special tokens are grey and in italics.
KIND_COLOURS = {"mask": "#B34700", "random": "#0072B2", "kept": "#9A3D73", "special": "#595959", "plain": "#000000"}
KIND_BORDERS = {"mask": "solid", "random": "dashed", "kept": "dotted"}

# ----------------------------------------------------------------------------------------------------
# Masking viewer


@dataclass(frozen=True)
class MaskingState:
    """One corrupted sequence: per position the original token, what the model sees, and what happened."""

    original: list[str]
    shown: list[str]
    kinds: list[str]  # "mask" | "random" | "kept" (chosen, loss taken) | "special" | "plain" (not chosen)

    @property
    def loss_positions(self) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k in ("mask", "random", "kept")]

    def counts(self) -> dict[str, int]:
        return {k: self.kinds.count(k) for k in ("mask", "random", "kept")}


def masking_state(ids: torch.Tensor, special_mask: torch.Tensor, vocab: Sequence[str], mask_tokens: Callable,
                  mask_id: int, rate: float, seed: int) -> MaskingState:
    """Corrupt ``ids`` (T,) with ``mask_tokens(ids[None], special[None], len(vocab), mask_id, seed, rate)`` and
    classify each position: chosen and replaced by [MASK], by a random token, or kept; or not chosen."""
    inputs, labels = mask_tokens(ids[None], special_mask[None], len(vocab), mask_id, seed, rate)
    inputs, labels = inputs[0].tolist(), labels[0].tolist()
    kinds = []
    for i, (orig, now, label) in enumerate(zip(ids.tolist(), inputs, labels, strict=True)):
        if label == -100:
            kinds.append("special" if int(special_mask[i]) else "plain")
        elif now == mask_id:
            kinds.append("mask")
        elif now != orig:
            kinds.append("random")
        else:
            kinds.append("kept")
    return MaskingState([vocab[i] for i in ids.tolist()], [vocab[i] for i in inputs], kinds)


def masking_html(state: MaskingState) -> str:
    """Tokens as coloured chips: what the model sees on top, the original (the label) below when chosen."""
    chips = []
    for orig, shown, kind in zip(state.original, state.shown, state.kinds, strict=True):
        colour = KIND_COLOURS[kind]
        below = html.escape(orig) if kind in ("mask", "random", "kept") else "&nbsp;"
        border = f"2px {KIND_BORDERS[kind]} {colour}" if kind in KIND_BORDERS else "1px solid #ddd"
        italic = ";font-style:italic" if kind == "special" else ""
        chips.append(f'<span style="display:inline-block;margin:2px;padding:1px 4px;border:{border};'
                     f'text-align:center;font-family:monospace"><span style="color:{colour}{italic}">'
                     f'{html.escape(shown)}</span><br><small style="color:#555">{below}</small></span>')
    c = state.counts()
    legend = (f'<div><b style="color:{KIND_COLOURS["mask"]}">[MASK] {c["mask"]} (solid)</b> · '
              f'<b style="color:{KIND_COLOURS["random"]}">random {c["random"]} (dashed)</b> · '
              f'<b style="color:{KIND_COLOURS["kept"]}">kept {c["kept"]} (dotted)</b> — the loss is taken at these '
              f'{len(state.loss_positions)} of {len(state.kinds)} positions (label shown under each)</div>')
    return legend + "<div>" + "".join(chips) + "</div>"


def masking_viewer(ids: torch.Tensor, special_mask: torch.Tensor, vocab: Sequence[str], mask_tokens: Callable,
                   mask_id: int) -> InteractiveView:
    """Sliders for the masking rate and the seed over one encoded sequence."""
    import ipywidgets as W

    controls = {"rate": W.FloatSlider(value=0.15, min=0.05, max=0.6, step=0.05, description="rate"),
                "seed": W.IntSlider(value=0, min=0, max=50, description="seed")}

    def render(rate: float, seed: int) -> str:
        return masking_html(masking_state(ids, special_mask, vocab, mask_tokens, mask_id, rate, seed))

    return interactive_view(controls, render, "MLM corruption: 15 % chosen → 80 % [MASK], 10 % random, 10 % kept")


# ----------------------------------------------------------------------------------------------------
# Fill-mask explorer


@dataclass(frozen=True)
class FillMaskState:
    tokens: list[str]  # the sentence's tokens, [CLS] … [SEP]
    slots: list[int]  # positions of the [MASK] tokens
    top: list[list[tuple[str, float]]]  # per slot: the k most probable tokens and their probabilities


def fill_mask_state(logits_fn: Callable[[list[int]], torch.Tensor], encode: Callable[[str], list[int]],
                    vocab: Sequence[str], sentence: str, k: int, mask_id: int) -> FillMaskState:
    """``encode(sentence)`` → ids with [CLS]/[SEP]; ``logits_fn(ids)`` → (T, V) MLM logits; the top ``k`` per
    [MASK]. A sentence without [MASK] gives no slots."""
    ids = encode(sentence)
    slots = [i for i, t in enumerate(ids) if t == mask_id]
    top = []
    if slots:
        probs = logits_fn(ids).softmax(-1)
        for s in slots:
            p, idx = probs[s].topk(k)
            top.append([(vocab[int(i)], float(q)) for q, i in zip(p, idx, strict=True)])
    return FillMaskState([vocab[i] for i in ids], slots, top)


def fill_mask_html(state: FillMaskState) -> str:
    """The tokens as the model reads them, then per [MASK] its top-k pieces as probability bars."""
    if not state.slots:
        return "<i>type a sentence with at least one [MASK]</i>"
    rows = []
    for n, (slot, top) in enumerate(zip(state.slots, state.top, strict=True)):
        bars = "".join(f'<div style="font-family:monospace">{html.escape(t):>12} '
                       f'<span style="display:inline-block;background:#1f77b4;height:0.8em;width:{int(300 * p)}px">'
                       f'</span> {p:.1%}</div>' for t, p in top)
        rows.append(f"<div><b>[MASK] #{n + 1}</b> (position {slot})</div>{bars}")
    return f'<div style="font-family:monospace">{html.escape(" ".join(state.tokens))}</div>' + "".join(rows)


def fill_mask_explorer(logits_fn: Callable, encode: Callable, vocab: Sequence[str], mask_id: int,
                       sentence: str = "to be , or not to [MASK] : that is the question") -> InteractiveView:
    import ipywidgets as W

    controls = {"sentence": W.Text(value=sentence, continuous_update=False, layout=W.Layout(width="60%")),
                "k": W.IntSlider(value=5, min=1, max=10, description="top k")}

    def render(sentence: str, k: int) -> str:
        return fill_mask_html(fill_mask_state(logits_fn, encode, vocab, sentence, k, mask_id))

    return interactive_view(controls, render, "fill-mask with the course's tiny BERT")


# ----------------------------------------------------------------------------------------------------
# Attention heads


@dataclass(frozen=True)
class HeadState:
    tokens: list[str]
    weights: np.ndarray  # (T, T): row = query, column = key
    layer: int
    head: int
    sep: int  # position of the first [SEP]: the boundary between the segments

    @property
    def cross_segment(self) -> float:
        """Share of the attention that crosses from one segment to the other (real tokens only)."""
        a, b = slice(1, self.sep), slice(self.sep + 1, len(self.tokens) - 1)
        w = self.weights
        return float(w[a, b].sum() + w[b, a].sum()) / max(float(w[a].sum() + w[b].sum()), 1e-12)


def head_state(maps: Sequence[torch.Tensor], tokens: Sequence[str], layer: int, head: int) -> HeadState:
    """``maps``: one (H, T, T) weight tensor per layer; the weights of (layer, head), with the segment boundary."""
    if not 0 <= layer < len(maps) or not 0 <= head < maps[layer].shape[0]:
        raise ValueError(f"no head {head} in layer {layer}")
    sep = list(tokens).index("[SEP]") if "[SEP]" in tokens else len(tokens) - 1
    return HeadState(list(tokens), maps[layer][head].numpy(), layer, head, sep)


def _draw_head(state: HeadState):
    import matplotlib.pyplot as plt

    n = len(state.tokens)
    fig, ax = plt.subplots(figsize=(5.2, 4.8))
    fig.subplots_adjust(left=0.2, bottom=0.2, right=0.97, top=0.92)
    ax.imshow(state.weights, cmap="viridis", interpolation="nearest", vmin=0, vmax=1)
    ax.set_xticks(range(n), state.tokens, rotation=90, fontsize=7)
    ax.set_yticks(range(n), state.tokens, fontsize=7)
    for pos in (state.sep + 0.5,):
        ax.axvline(pos, color="w", lw=0.8)
        ax.axhline(pos, color="w", lw=0.8)
    ax.set_title(_head_title(state), fontsize=9)
    return fig


def _head_title(state: HeadState) -> str:
    return f"layer {state.layer + 1}, head {state.head + 1}: {state.cross_segment:.0%} of attention crosses segments"


def _move_head(fig, state: HeadState) -> None:
    ax = fig.axes[0]
    ax.images[0].set_data(state.weights)
    ax.set_title(_head_title(state), fontsize=9)


def attention_heads_viewer(maps: Sequence[torch.Tensor], tokens: Sequence[str]) -> InteractiveView:
    """Layer and head sliders over captured attention maps (one (H, T, T) tensor per layer)."""
    import ipywidgets as W

    controls = {"layer": W.IntSlider(value=0, min=0, max=len(maps) - 1, description="layer (0-based)"),
                "head": W.IntSlider(value=0, min=0, max=maps[0].shape[0] - 1, description="head")}
    view = KeptFigure(_draw_head, _move_head, key=lambda s: tuple(s.tokens))

    def render(layer: int, head: int):
        return view.show(head_state(maps, tokens, layer, head))

    return interactive_view(controls, render, "attention heads over a sentence pair")
