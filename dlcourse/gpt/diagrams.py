"""Chapter 04's figure: a decoder-only GPT stack with its tied LM head.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from dlcourse.diagrams import ACCENT, _add, _arrow, _box, _canvas, _finish, _frame, _residual, _stack, _text


def gpt_block() -> Figure:
    """A GPT model, pre-norm: token + position embeddings → N × [LayerNorm → causal self-attention → add,
    LayerNorm → MLP → add] → final LayerNorm → LM head → softmax over the vocabulary.

    The residual stream runs straight up the middle; each sub-layer reads a normalised copy and adds its result
    back. The LM head is a linear layer whose weight is the token-embedding matrix (tied weights), drawn as
    the dashed link on the left.
    """
    width, height = 9.0, 9.6
    fig, (ax,) = _canvas(width, height)
    x, w, h, gap = 4.2, 2.6, 0.42, 0.28

    _text(ax, x, 0.3, "token ids $x_1 \\ldots x_T$", size=9.5)
    _arrow(ax, (x, 0.45), (x, 0.7))
    _box(ax, x, 0.91, "token embedding $W_E$", "embedding", w=w, h=h)
    _arrow(ax, (x, 1.12), (x, 1.4))
    _add(ax, x, 1.54)
    _box(ax, x + 3.0, 1.54, "position embedding $W_P$", "embedding", w=2.4, h=h)
    _arrow(ax, (x + 1.8, 1.54), (x + 0.14, 1.54))

    base = 2.25
    blocks = [("LayerNorm", "norm"), ("causal self-attention", "attention"), ("+", ""),
              ("LayerNorm", "norm"), ("MLP (GELU)", "ffn"), ("+", "")]
    frame_top = base + 4 * h + 2 * 0.28 + 5 * gap + 0.3
    _frame(ax, x - w / 2 - 0.3, base - 0.3, x + w / 2 + 0.6, frame_top)
    _arrow(ax, (x, 1.68), (x, base))
    centres = _stack(ax, x, base, blocks, gap=gap, h=h, w=w)
    _residual(ax, x, base - 0.15, centres[2], w / 2 + 0.35)
    _residual(ax, x, centres[2] + 0.14 + gap / 2, centres[5], w / 2 + 0.35)
    _text(ax, x + w / 2 + 0.85, (centres[0] + centres[-1]) / 2, "transformer\nblock\n× N", size=10.5,
          ha="left", weight="bold")
    _text(ax, x + w / 2 + 0.85, centres[1] - 0.05, "mask: token t\nsees tokens ≤ t", size=8.5, ha="left",
          color="0.35")

    y = centres[-1] + 0.14
    head = _stack(ax, x, y + 0.55, [("final LayerNorm", "norm"), ("LM head (linear, $W_E^\\top$)", "linear"),
                                    ("softmax", "softmax")], gap=gap, h=h, w=w)
    _arrow(ax, (x, y), (x, y + 0.55))
    _arrow(ax, (x, head[-1] + h / 2), (x, head[-1] + h / 2 + 0.3))
    _text(ax, x, head[-1] + h / 2 + 0.45, "next-token probabilities", size=9.5)

    # Tied weights: the LM head reuses the token-embedding matrix.
    tie = x - w / 2 - 0.75
    _arrow(ax, (x - w / 2, 0.91), (tie, 0.91), (tie, head[1]), (x - w / 2, head[1]), both=True, ls="--",
           color=ACCENT, lw=1.3)
    _text(ax, tie - 0.12, (0.91 + head[1]) / 2, "tied weights: the same matrix $W_E$", size=9, rotation=90,
          ha="right", color=ACCENT)
    _text(ax, x, height - 0.3, "GPT: a decoder-only, pre-norm Transformer", size=13, weight="bold")
    return _finish(fig, "A pre-norm GPT: token and position embeddings, then N blocks of layer norm, causal "
                        "self-attention and add, layer norm, MLP and add, then a final layer norm and the "
                        "language-model head, whose weight is the tied token-embedding matrix, and a softmax over "
                        "the vocabulary.")
