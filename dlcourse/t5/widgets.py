"""Chapter 05's widgets: a span-corruption explorer, an attention-mask explorer for the three Transformer
families, and a cross-attention heat map of the trained T5.

The first two take the student's own functions (the noise mask, span corruption, the attention masks), so what
they draw is what the notebook's answers compute. What to draw for given control values —
:func:`span_state`, :func:`mask_state`, :func:`cross_attention_state` — is plain and tested without a browser;
the drawing functions only plot what those return, into figures kept across redraws
(:class:`~dlcourse.widgets.base.KeptFigure`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dlcourse.widgets.base import InteractiveView, KeptFigure, interactive_view

# the mask explorer's cells: blocked, self-attention, cross-attention (apart under colour-vision deficiencies:
# tests/test_figures.py)
T5_KINDS = ("white", "#2e86ab", "#f18f01")

NoiseMask = Callable[..., torch.Tensor]  # (length, noise_density, mean_noise_span_length, generator) -> bool (L,)
Corrupt = Callable[..., tuple[torch.Tensor, torch.Tensor]]  # (tokens, noise_mask, sentinel_ids, eos_id) -> (in, out)
MaskFn = Callable[[str, torch.Tensor, torch.Tensor], torch.Tensor]  # (kind, prefix_lengths, padding) -> (B, L, L)

LECTURE_TEXT = "Thank you for inviting me to your party last week."
ARCHITECTURES = ("encoder–decoder", "decoder-only (causal LM)", "prefix LM")


# ----------------------------------------------------------------------------------------------------
# Span corruption


@dataclass(frozen=True)
class SpanState:
    """One draw of span corruption on ``text``: the mask and the two strings the model sees."""

    text: str
    mask: np.ndarray  # bool (L,), True = noise
    span_index: np.ndarray  # int (L,): which noise span each character is in (−1: kept)
    inputs: str
    targets: str
    noise_density: float
    mean_span: float

    @property
    def n_noise(self) -> int:
        return int(self.mask.sum())

    @property
    def n_spans(self) -> int:
        return int(self.span_index.max() + 1) if self.n_noise else 0


def span_state(text: str, noise_density: float, mean_span: float, seed: int, noise_mask: NoiseMask,
               corrupt: Corrupt, vocab: Any) -> SpanState:
    """The student's ``noise_mask`` and ``corrupt`` applied to ``text`` (characters) with a generator seeded by
    ``seed``; ``vocab`` encodes and decodes (see :class:`dlcourse.t5.train.Vocab`)."""
    if len(text) < 2:
        raise ValueError("type at least two characters")
    tokens = torch.tensor(vocab.encode(text))
    mask = noise_mask(len(text), noise_density, mean_span, torch.Generator().manual_seed(int(seed)))
    mask = torch.as_tensor(mask, dtype=torch.bool)
    if mask.shape != (len(text),):
        raise ValueError(f"the noise mask must have shape ({len(text)},), got {tuple(mask.shape)}")
    inputs, targets = corrupt(tokens, mask, vocab.sentinels, 1)
    m = mask.numpy()
    starts = m & ~np.concatenate([[False], m[:-1]])
    span_index = np.where(m, np.cumsum(starts) - 1, -1)
    return SpanState(text, m, span_index, vocab.decode(inputs, show_specials=True),
                     vocab.decode(targets, show_specials=True), float(noise_density), float(mean_span))


_SPAN_COLOURS = ["#e4572e", "#17bebb", "#ffc914", "#76b041", "#8e6c8a", "#2e86ab"]


def _cell_colours(state: SpanState) -> list[str]:
    return ["#eeeeee" if i < 0 else _SPAN_COLOURS[i % len(_SPAN_COLOURS)] for i in state.span_index]


def _span_caption(state: SpanState) -> str:
    return (f"{len(state.text)} characters, noise density {state.noise_density:.2f} → {state.n_noise} noise "
            f"characters in {state.n_spans} span(s) (mean span {state.mean_span:g})")


def draw_span_state(state: SpanState):
    """The text as a row of cells coloured by noise span, then the encoder's input and the decoder's target."""
    import matplotlib.pyplot as plt

    n = len(state.text)
    width = max(8.0, 0.16 * n + 1.0)
    fig = plt.figure(figsize=(width, 2.4))
    ax = fig.add_axes((0.01, 0.55, 0.98, 0.25))
    ax.set(xlim=(0, n), ylim=(0, 1), xticks=[], yticks=[])
    for side in ax.spines.values():
        side.set_visible(False)
    for i, (char, colour) in enumerate(zip(state.text, _cell_colours(state), strict=True)):
        ax.add_patch(plt.Rectangle((i + 0.04, 0.05), 0.92, 0.9, color=colour))
        ax.text(i + 0.5, 0.5, char, ha="center", va="center", family="monospace", fontsize=10)
    fig.text(0.01, 0.9, _span_caption(state), fontsize=9)
    fig.text(0.01, 0.33, "input:  " + state.inputs, family="monospace", fontsize=10)
    fig.text(0.01, 0.12, "target: " + state.targets, family="monospace", fontsize=10)
    return fig


def _update_span(fig: Any, state: SpanState) -> None:
    ax = fig.axes[0]
    for patch, colour in zip(ax.patches, _cell_colours(state), strict=True):
        patch.set_color(colour)
    caption, inputs, targets = fig.texts
    caption.set_text(_span_caption(state))
    inputs.set_text("input:  " + state.inputs)
    targets.set_text("target: " + state.targets)


def span_corruption_explorer(noise_mask: NoiseMask, corrupt: Corrupt, vocab: Any,
                             text: str = LECTURE_TEXT) -> InteractiveView:
    """Noise density, mean span length, seed and the text → the corrupted input and the target."""
    import ipywidgets as W

    controls = {
        "text": W.Text(value=text, description="text", continuous_update=False,
                       layout=W.Layout(width="420px")),
        "noise_density": W.FloatSlider(value=0.15, min=0.05, max=0.6, step=0.05, description="noise density"),
        "mean_span": W.FloatSlider(value=3.0, min=1.0, max=10.0, step=0.5, description="mean span"),
        "seed": W.IntSlider(value=0, min=0, max=50, description="seed"),
    }
    view = KeptFigure(draw_span_state, _update_span, key=lambda s: s.text)

    def render(text: str, noise_density: float, mean_span: float, seed: int):
        return view.show(span_state(text, noise_density, mean_span, seed, noise_mask, corrupt, vocab))

    return interactive_view(controls, render, title="Span corruption")


# ----------------------------------------------------------------------------------------------------
# Attention masks of the three families


BLOCKED, SELF, CROSS = 0, 1, 2


@dataclass(frozen=True)
class MaskState:
    """The (n + m)² picture of who attends to whom: codes BLOCKED, SELF (self-attention) or CROSS
    (the decoder's cross-attention to the encoder's outputs); rows are queries, columns keys."""

    architecture: str
    n: int  # input (prefix) tokens
    m: int  # target tokens
    codes: np.ndarray  # int (n + m, n + m)

    @property
    def allowed(self) -> int:
        return int((self.codes != BLOCKED).sum())

    def labels(self) -> list[str]:
        return [f"x{i + 1}" for i in range(self.n)] + [f"y{j + 1}" for j in range(self.m)]


def mask_state(architecture: str, n: int, m: int, mask_fn: MaskFn) -> MaskState:
    """The picture for ``architecture`` with ``n`` input and ``m`` target tokens, built from the student's
    ``mask_fn(kind, prefix_lengths (1,), padding (1, L)) → bool (1, L, L)``.

    * encoder–decoder: the encoder's inputs see each other (``"full"``); each target sees every input
      through cross-attention, and the targets before it (``"causal"``) — inputs never see targets;
    * decoder-only: one causal stack over inputs and targets together (``"causal"``);
    * prefix LM: one stack, the input fully visible to itself, causal afterwards (``"prefix"``).
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {architecture!r}; choose one of {ARCHITECTURES}")
    if n < 1 or m < 1:
        raise ValueError("need at least one input and one target token")

    def build(kind: str, length: int, prefix: int) -> np.ndarray:
        out = mask_fn(kind, torch.tensor([prefix]), torch.ones(1, length, dtype=torch.bool))
        return np.asarray(out[0], dtype=bool)

    codes = np.zeros((n + m, n + m), dtype=np.int64)
    if architecture == ARCHITECTURES[0]:
        codes[:n, :n] = build("full", n, 0) * SELF
        codes[n:, :n] = CROSS
        codes[n:, n:] = build("causal", m, 0) * SELF
    else:
        kind = "causal" if architecture == ARCHITECTURES[1] else "prefix"
        codes[:] = build(kind, n + m, n) * SELF
    return MaskState(architecture, n, m, codes)


def _mask_title(state: MaskState) -> str:
    total = (state.n + state.m) ** 2
    return f"{state.architecture}: {state.allowed} of {total} query–key pairs allowed"


def draw_mask_state(state: MaskState):
    """The coded matrix: white = blocked, blue = self-attention, orange = cross-attention."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    fig = plt.figure(figsize=(5.2, 5.4))
    ax = fig.add_axes((0.12, 0.08, 0.84, 0.8))
    ax.imshow(state.codes, cmap=ListedColormap(list(T5_KINDS)), vmin=0, vmax=2,
              interpolation="nearest")
    size = state.n + state.m
    labels = state.labels()
    ax.set_xticks(range(size), labels, fontsize=7, rotation=90)
    ax.set_yticks(range(size), labels, fontsize=7)
    ax.axhline(state.n - 0.5, color="k", lw=1)
    ax.axvline(state.n - 0.5, color="k", lw=1)
    ax.set_xlabel("key (attended to)", fontsize=8)
    ax.set_ylabel("query (attending)", fontsize=8)
    ax.set_title(_mask_title(state), fontsize=9)
    fig.text(0.12, 0.955, "blue: self-attention   orange: cross-attention (encoder–decoder)   white: blocked",
             fontsize=7)
    return fig


def _update_mask(fig: Any, state: MaskState) -> None:
    ax = fig.axes[0]
    ax.images[0].set_data(state.codes)
    ax.title.set_text(_mask_title(state))


def mask_explorer(mask_fn: MaskFn) -> InteractiveView:
    """Pick the architecture and the lengths n (input) and m (target) → the (n + m)² attention mask."""
    import ipywidgets as W

    controls = {
        "architecture": W.Dropdown(options=list(ARCHITECTURES), value=ARCHITECTURES[0], description="model"),
        "n": W.IntSlider(value=6, min=1, max=16, description="n (input)"),
        "m": W.IntSlider(value=4, min=1, max=16, description="m (target)"),
    }
    view = KeptFigure(draw_mask_state, _update_mask, key=lambda s: (s.n, s.m))

    def render(architecture: str, n: int, m: int):
        return view.show(mask_state(architecture, n, m, mask_fn))

    return interactive_view(controls, render, title="Attention masks of the three Transformer families")


# ----------------------------------------------------------------------------------------------------
# Cross-attention heat map


@dataclass(frozen=True)
class CrossAttentionState:
    """The model's greedy output for ``source`` and its cross-attention: ``weights[i, j]`` is how much output
    token i (predicting it, from the token before) attends to input token j, in ``layer`` and ``head``."""

    source: str
    output: str
    input_labels: list[str]
    output_labels: list[str]
    weights: np.ndarray  # (T, S)
    layer: int
    head: int | None  # None: the mean over heads


def cross_attention_run(hf_model: Any, vocab: Any, source: str, max_new_tokens: int = 16):
    """Decode ``source`` greedily with a Hugging Face ``T5ForConditionalGeneration`` (eager attention) and run
    the decoder once more over its output: (input ids (1, S), generated ids (T,), cross-attentions, one
    (1, H, T, S) tensor per decoder block)."""
    from dlcourse.t5 import train as t5
    from dlcourse.t5.model import T5InCourseLayout

    if not source:
        raise ValueError("type an input")
    ids = torch.tensor([vocab.encode(source, eos=True)])
    view = T5InCourseLayout(hf_model)
    with torch.no_grad():
        generated = t5.greedy(view, ids, max_new_tokens=max_new_tokens)[0]
        decoder_ids = torch.cat([torch.tensor([t5.PAD]), generated])[None, :-1] if len(generated) else \
            torch.tensor([[t5.PAD]])
        out = hf_model(input_ids=ids, decoder_input_ids=decoder_ids, output_attentions=True)
    return ids, generated, out.cross_attentions


def cross_attention_state(hf_model: Any, vocab: Any, source: str, layer: int, head: int | None,
                          max_new_tokens: int = 16, run: tuple | None = None) -> CrossAttentionState:
    """Decode ``source`` greedily with a Hugging Face ``T5ForConditionalGeneration`` (eager attention) and read
    the cross-attention weights of decoder block ``layer`` (0-based), head ``head`` or their mean. ``run``:
    what :func:`cross_attention_run` returned for ``source`` (a viewer keeps it while the block or head
    changes)."""
    ids, generated, cross = run if run is not None else cross_attention_run(hf_model, vocab, source, max_new_tokens)
    attn = cross[layer][0]  # (H, T, S)
    weights = attn.mean(0) if head is None else attn[head]
    input_labels = [vocab.itos[i] for i in ids[0].tolist()]
    output_labels = [vocab.itos[i] for i in generated.tolist()] or ["(none)"]
    return CrossAttentionState(source, vocab.decode(generated), input_labels, output_labels,
                               weights.numpy()[: len(output_labels)], layer, head)


def _pretty(label: str) -> str:
    return {" ": "␣", "</s>": "⏎"}.get(label, label)


def draw_cross_attention(state: CrossAttentionState):
    import matplotlib.pyplot as plt

    S, T = len(state.input_labels), len(state.output_labels)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.22 * S + 1.5), max(2.6, 0.3 * T + 1.6)))
    ax.imshow(state.weights, cmap="viridis", aspect="auto", vmin=0, vmax=max(float(state.weights.max()), 1e-6),
              interpolation="nearest")
    ax.set_xticks(range(S), [_pretty(s) for s in state.input_labels], fontsize=8, family="monospace")
    ax.set_yticks(range(T), [_pretty(s) for s in state.output_labels], fontsize=8, family="monospace")
    head = "mean of the heads" if state.head is None else f"head {state.head + 1}"
    ax.set_title(f"“{state.source}” → “{state.output}”\ncross-attention, decoder block {state.layer + 1}, {head}",
                 fontsize=9)
    ax.set_xlabel("input character", fontsize=8)
    ax.set_ylabel("output character", fontsize=8)
    fig.tight_layout()
    return fig


def cross_attention_viewer(hf_model: Any, vocab: Any, source: str = "date: 14 juillet 1989",
                           examples: Sequence[str] = ()) -> InteractiveView:
    """A text box (the lecturer types an input), the decoder block and the head → the heat map."""
    import ipywidgets as W

    n_layers, n_heads = hf_model.config.num_decoder_layers, hf_model.config.num_heads
    controls = {
        "source": W.Combobox(value=source, options=list(examples), description="input", continuous_update=False,
                             layout=W.Layout(width="420px")),
        "layer": W.Dropdown(options=[(str(i + 1), i) for i in range(n_layers)], value=n_layers - 1,
                            description="block"),
        "head": W.Dropdown(options=[("mean", -1)] + [(str(h + 1), h) for h in range(n_heads)], value=-1,
                           description="head"),
    }

    decode = functools.lru_cache(maxsize=16)(functools.partial(cross_attention_run, hf_model, vocab))

    def render(source: str, layer: int, head: int):  # a new block or head reads the same decoding
        state = cross_attention_state(hf_model, vocab, source, layer, None if head < 0 else head, run=decode(source))
        return draw_cross_attention(state)

    return interactive_view(controls, render, title="Cross-attention of the trained T5")
