"""Chapter 02's figures: post-norm and pre-norm residual sub-layers, the 2017 encoder–decoder Transformer,
and the padding, causal and combined attention masks.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

import math

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from dlcourse.diagrams import (
    ACCENT,
    COLOURS,
    INK,
    _add,
    _arrow,
    _box,
    _canvas,
    _finish,
    _frame,
    _residual,
    _stack,
    _text,
)


def residual_layers() -> Figure:
    """One Transformer sub-layer (attention or FFN) with its residual connection, in the two orders.

    Left, post-norm (the 2017 Transformer, BERT): x → sublayer → add x → LayerNorm, y = LayerNorm(x +
    Sublayer(x)); the residual path itself passes through a LayerNorm at every layer. Right, pre-norm (GPT-2
    onwards): x → LayerNorm → sublayer → add x, y = x + Sublayer(LayerNorm(x)); the residual path is a clean
    identity from input to output, so deep stacks train without warm-up tricks and need one final LayerNorm.
    """
    width, height = 5.0, 6.0
    fig, axes = _canvas(width, height, panels=2)
    x, side, y_x, y_in = 2.5, -1.55, 1.0, 1.75
    post = [("sublayer\n(attention or FFN)", "attention"), ("+", ""), ("LayerNorm", "norm")]
    pre = [("LayerNorm", "norm"), ("sublayer\n(attention or FFN)", "attention"), ("+", "")]
    panels = [
        (axes[0], post, "post-norm (Transformer 2017, BERT)",
         r"$y = \mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$",
         "the residual path passes through\na LayerNorm in every layer"),
        (axes[1], pre, "pre-norm (GPT-2 onwards)",
         r"$y = x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$",
         "the residual path is the identity;\none final LayerNorm after the stack"),
    ]
    for ax, blocks, title, formula, note in panels:
        _text(ax, x, height - 0.3, title, size=12, weight="bold")
        _text(ax, x, height - 0.75, formula, size=10.5)
        _text(ax, x, y_x, "$x$", size=12)
        _arrow(ax, (x, y_x + 0.15), (x, y_in))
        centres = _stack(ax, x, y_in, blocks, gap=0.45, h=0.62, w=2.3)
        plus = centres[blocks.index(("+", ""))]
        branch = (y_x + y_in) / 2 + 0.1
        _residual(ax, x, branch, plus, side, color=ACCENT, lw=1.6)
        _text(ax, x + side - 0.1, (branch + plus) / 2, "residual", size=9, rotation=90, ha="right", color=ACCENT)
        top = centres[-1] + (0.14 if blocks[-1][0] == "+" else 0.31)
        _arrow(ax, (x, top), (x, top + 0.4))
        _text(ax, x, top + 0.56, "$y$", size=12)
        _text(ax, x, 0.35, note, size=9, color="0.35")
    return _finish(fig, "One sub-layer with its residual connection in two orders. Left, post-norm: the sub-layer "
                        "output is added to its input and then layer-normalised. Right, pre-norm: the input is "
                        "normalised before the sub-layer and the residual path stays a clean sum.")


def _embed(ax: Axes, x: float, y: float, tokens: str, embedding: str, w: float, side: float) -> float:
    """Tokens → embedding box → add circle fed by the positional encoding (from the ``side``); returns the
    height of the circle's top."""
    _text(ax, x, y, tokens, size=9.5)
    _arrow(ax, (x, y + 0.15), (x, y + 0.5))
    _box(ax, x, y + 0.71, embedding, "embedding", w=w)
    _arrow(ax, (x, y + 0.92), (x, y + 1.22))
    _add(ax, x, y + 1.36)
    _text(ax, x + side, y + 1.36, "positional\nencoding", size=9, ha="right" if side < 0 else "left")
    _arrow(ax, (x + side + (0.05 if side < 0 else -0.05), y + 1.36), (x + math.copysign(0.14, -side), y + 1.36))
    return y + 1.5


def encoder_decoder_transformer() -> Figure:
    """The encoder–decoder Transformer of "Attention Is All You Need" (2017), post-norm as in the paper.

    Left: source tokens → embedding + positional encoding → N × [self-attention, add & LayerNorm, feed-forward,
    add & LayerNorm]. Right: target tokens shifted right → embedding + positional encoding → N × [masked
    self-attention, add & LayerNorm, cross-attention whose keys and values are the encoder's output, add &
    LayerNorm, feed-forward, add & LayerNorm] → linear → softmax → next-token probabilities.
    """
    width, height = 9.6, 9.0
    fig, (ax,) = _canvas(width, height)
    xe, xd, w, h, gap = 2.9, 6.7, 2.2, 0.42, 0.3
    step = h + gap

    # Encoder.
    top = _embed(ax, xe, 0.3, "source tokens", "input embedding", w, -1.3)
    base = top + 0.55
    enc = [("self-attention", "attention"), ("add & LayerNorm", "norm"), ("feed-forward (FFN)", "ffn"),
           ("add & LayerNorm", "norm")]
    enc_y = [base + h / 2 + i * step for i in range(len(enc))]
    _frame(ax, xe - w / 2 - 0.45, base - 0.3, xe + w / 2 + 0.2, enc_y[-1] + h / 2 + 0.25)
    _arrow(ax, (xe, top), (xe, base))
    _stack(ax, xe, base, enc, gap=gap, h=h, w=w)
    for sub, norm in [(0, 1), (2, 3)]:
        _residual(ax, xe, enc_y[sub] - h / 2 - gap / 2, enc_y[norm], -(w / 2 + 0.25), into_box=w / 2)
    _text(ax, xe - w / 2 - 0.7, (enc_y[0] + enc_y[-1]) / 2, "encoder\nlayer\n× N", size=10.5, ha="right",
          weight="bold")

    # Decoder.
    top = _embed(ax, xd, 0.3, "target tokens (shifted right)", "output embedding", w, 1.3)
    dec = [("masked self-attention", "attention"), ("add & LayerNorm", "norm"), ("cross-attention", "attention"),
           ("add & LayerNorm", "norm"), ("feed-forward (FFN)", "ffn"), ("add & LayerNorm", "norm")]
    dec_y = [base + h / 2 + i * step for i in range(len(dec))]
    _frame(ax, xd - w / 2 - 0.2, base - 0.3, xd + w / 2 + 0.45, dec_y[-1] + h / 2 + 0.25)
    _arrow(ax, (xd, top), (xd, base))
    _stack(ax, xd, base, dec, gap=gap, h=h, w=w)
    for sub, norm in [(0, 1), (2, 3), (4, 5)]:
        _residual(ax, xd, dec_y[sub] - h / 2 - gap / 2, dec_y[norm], w / 2 + 0.25, into_box=w / 2)
    _text(ax, xd + w / 2 + 0.7, (dec_y[0] + dec_y[-1]) / 2, "decoder\nlayer\n× N", size=10.5, ha="left",
          weight="bold")

    # The encoder's output feeds every decoder layer's cross-attention as keys and values.
    out = enc_y[-1] + h / 2
    mid = (xe + xd) / 2 + 0.2
    _arrow(ax, (xe, out), (xe, out + 0.55), (mid, out + 0.55), (mid, dec_y[2]), (xd - w / 2, dec_y[2]),
           lw=1.6, color=ACCENT)
    _text(ax, mid - 0.1, (out + 0.55 + dec_y[2]) / 2 + 0.1, "keys,\nvalues", size=9, color=ACCENT, ha="right")
    _text(ax, xd - w / 2 + 0.05, dec_y[2] - h / 2 - 0.12, "queries", size=8, color="0.35", ha="left")

    # Output head.
    y = dec_y[-1] + h / 2
    head = _stack(ax, xd, y + 0.55, [("linear", "linear"), ("softmax", "softmax")], gap=gap, h=h, w=w)
    _arrow(ax, (xd, y), (xd, y + 0.55))
    _arrow(ax, (xd, head[-1] + h / 2), (xd, head[-1] + h / 2 + 0.3))
    _text(ax, xd, head[-1] + h / 2 + 0.45, "next-token probabilities", size=9.5)
    _text(ax, xe, height - 0.45, "Transformer (encoder–decoder, 2017)", size=13, weight="bold")
    return _finish(fig, "The encoder-decoder Transformer of 2017: left, the encoder stack of self-attention and "
                        "feed-forward layers, each followed by add and layer norm; right, the decoder stack of "
                        "masked self-attention, cross-attention to the encoder output and feed-forward layers, then "
                        "a linear layer and a softmax.")


def mask_grids(n: int, padded: int | None = None) -> dict[str, list[list[bool]]]:
    """The three ``n`` × ``n`` masks (True = the query may attend to the key) of :func:`attention_masks`.

    ``padded`` keys at the end are padding (default ``n // 3``, at least 1, at most ``n - 1``)."""
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    pad = max(1, n // 3) if padded is None else padded
    if not 0 <= pad < n:
        raise ValueError(f"padded must be in 0..{n - 1}, got {pad}")
    valid = [k < n - pad for k in range(n)]
    return {
        "padding": [[valid[k] for k in range(n)] for _ in range(n)],
        "causal": [[k <= q for k in range(n)] for q in range(n)],
        "both": [[valid[k] and k <= q for k in range(n)] for q in range(n)],
    }


def attention_masks(n: int = 6) -> Figure:
    """Padding (key) mask, causal mask and both combined, as ``n`` × ``n`` grids: query i on row i, key j on
    column j, a filled cell where the score is kept and a grey one where it is set to −∞ before the softmax.

    The last ``n // 3`` keys are padding. The combined mask is the logical AND; every row keeps key 1, so no
    softmax row is empty.
    """
    grids = mask_grids(n)
    pad = sum(1 for ok in grids["padding"][0] if not ok)
    cell = min(0.42, 2.6 / n)
    size = 9 if cell >= 0.3 else 7
    margin, width = 0.6, n * cell + 0.9
    height = n * cell + 2.1
    fig, axes = _canvas(width, height, panels=3)
    titles = {"padding": "padding (key) mask", "causal": "causal mask", "both": "padding + causal"}
    notes = {"padding": f"the last {pad} key{'s are' if pad > 1 else ' is'} <pad>",
             "causal": "query i sees keys ≤ i", "both": "both: logical AND"}
    for ax, (name, grid) in zip(axes, grids.items(), strict=True):
        x0, y_top = margin, n * cell + 0.9
        for q in range(n):
            for k in range(n):
                ok = grid[q][k]
                ax.add_patch(Rectangle((x0 + k * cell, y_top - (q + 1) * cell), cell, cell, zorder=2,
                                       facecolor=COLOURS["allowed" if ok else "blocked"], edgecolor="white",
                                       linewidth=1.5))
            _text(ax, x0 - 0.08, y_top - (q + 0.5) * cell, f"$q_{{{q + 1}}}$", size=size, ha="right")
        for k in range(n):
            _text(ax, x0 + (k + 0.5) * cell, y_top + 0.1, f"$k_{{{k + 1}}}$", size=size, va="bottom",
                  color=INK if k < n - pad else "0.6")
        _text(ax, x0 + n * cell / 2, y_top + 0.55, "keys", size=9, color="0.35")
        _text(ax, x0 - 0.45, y_top - n * cell / 2, "queries", size=9, rotation=90, color="0.35")
        _text(ax, x0 + n * cell / 2, height - 0.25, titles[name], size=11.5, weight="bold")
        _text(ax, x0 + n * cell / 2, 0.65, notes[name], size=9, color="0.3")
    fig.legend(handles=[Patch(facecolor=COLOURS["allowed"], label="allowed: score kept"),
                        Patch(facecolor=COLOURS["blocked"], edgecolor="0.7", label="blocked: score → −∞")],
               loc="lower center", ncol=2, frameon=False, fontsize=9, bbox_to_anchor=(0.5, 0.0))
    return _finish(fig, f"Three {n} by {n} attention masks, query on the rows and key on the columns: the padding "
                        f"mask (the last {n // 3} keys are padding), the causal mask (each query sees itself and "
                        "earlier keys) and both combined; filled cells are kept, grey cells are set to minus "
                        "infinity.")
