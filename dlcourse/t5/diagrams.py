"""Chapter 05's figure: T5's pre-norm encoder–decoder, with cross-attention in every decoder block.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from dlcourse.diagrams import ACCENT, _arrow, _box, _canvas, _finish, _frame, _residual, _stack, _text


def t5_encoder_decoder() -> Figure:
    """T5 as an encoder–decoder: the corrupted input (with sentinels) → shared embedding → N pre-norm encoder
    blocks (RMSNorm before each sub-layer, relative position bias in self-attention) → final RMSNorm → the
    encoder outputs E, read by the cross-attention of *every* decoder block; the decoder's input is the
    target shifted right behind the start token <pad>, its self-attention causal; final RMSNorm and the tied LM head
    give the target tokens."""
    width, height = 10.4, 6.9
    fig, (ax,) = _canvas(width, height)
    xe, xd, w, h, gap = 2.6, 7.5, 2.6, 0.38, 0.22
    base = 0.95
    # the inputs and the shared embedding
    _box(ax, xe, base, "Thank you <X> me to your party <Y> week.", "blocked", w=3.3, h=0.4, size=9)
    _text(ax, xe, base - 0.38, "input text, spans replaced by sentinels", size=8, color="0.3")
    _box(ax, xd, base, "<pad> <X> for inviting <Y> last", "blocked", w=3.3, h=0.4, size=9)
    _text(ax, xd, base - 0.38, "decoder input: the targets shifted right behind <pad>", size=8, color="0.3")
    for x in (xe, xd):
        _arrow(ax, (x, base + 0.2), (x, base + 0.45))
        _box(ax, x, base + 0.65, "shared embedding", "embedding", w=w, h=h, size=9)
        _arrow(ax, (x, base + 0.84), (x, base + 1.25))
    y0 = base + 1.25
    enc = _stack(ax, xe, y0, [("RMSNorm → self-attention + $B$", "attention"), ("+", ""),
                              ("RMSNorm → feed-forward", "ffn"), ("+", "")], gap=gap, h=h, w=w, size=9)
    dec = _stack(ax, xd, y0, [("RMSNorm → causal self-attention + $B$", "attention"), ("+", ""),
                              ("RMSNorm → cross-attention", "attention"), ("+", ""),
                              ("RMSNorm → feed-forward", "ffn"), ("+", "")], gap=gap, h=h, w=w, size=9)
    for x, centres, side in ((xe, enc, -1.55), (xd, dec, 1.55)):
        for i in range(0, len(centres), 2):
            start = y0 - 0.1 if i == 0 else centres[i - 1] + 0.14 + gap / 2
            _residual(ax, x, start, centres[i + 1], side)
    frame_top_e, frame_top_d = enc[-1] + 0.3, dec[-1] + 0.3
    _frame(ax, 0.8, y0 - 0.2, 4.45, frame_top_e).set_zorder(0)
    _frame(ax, 5.75, y0 - 0.2, 9.6, frame_top_d).set_zorder(0)
    _text(ax, 4.2, frame_top_e - 0.2, "× N", size=9)
    _text(ax, 9.35, frame_top_d - 0.2, "× N", size=9)
    _arrow(ax, (xe, enc[-1] + 0.14), (xe, frame_top_e + 0.2))
    ye = frame_top_e + 0.2 + h / 2
    _box(ax, xe, ye, "final RMSNorm", "norm", w=w, h=h, size=9)
    _arrow(ax, (xe, ye + h / 2), (xe, ye + 0.5))
    _text(ax, xe, ye + 0.65, "encoder outputs $E$", size=9.5)
    # E feeds the cross-attention of every decoder block
    _arrow(ax, (xe + 0.85, ye + 0.65), (5.45, ye + 0.65), (5.45, dec[2]), (xd - w / 2, dec[2]), color=ACCENT,
           lw=1.5)
    _text(ax, 4.3, ye + 1.05, "keys and values of the cross-attention\nin every decoder block", size=8,
          color=ACCENT)
    _arrow(ax, (xd, dec[-1] + 0.14), (xd, frame_top_d + 0.2))
    yh = frame_top_d + 0.2 + h / 2
    _box(ax, xd, yh, "final RMSNorm → LM head (tied, ×$d^{-1/2}$)", "linear", w=3.3, h=h, size=9)
    _arrow(ax, (xd, yh + h / 2), (xd, yh + 0.45))
    _text(ax, xd, yh + 0.6, "targets: <X> for inviting <Y> last <Z>", size=9)
    _text(ax, width / 2, 0.22, "$B$: relative position bias, one learned scalar per head and bucket of $j - i$, "
          "added to the logits (bidirectional in the encoder, causal in the decoder); no linear map has a bias.",
          size=7.5, color="0.25")
    _text(ax, width / 2, height - 0.25, "T5: a pre-norm encoder–decoder with relative position bias", size=12,
          weight="bold")
    return _finish(fig, "T5 as an encoder-decoder: the corrupted input with sentinel tokens goes through a shared "
                        "embedding and N pre-norm encoder blocks with RMSNorm and relative position bias; every "
                        "decoder block cross-attends to the encoder output; the decoder reads the target shifted "
                        "right and predicts the spans behind the sentinels.")
