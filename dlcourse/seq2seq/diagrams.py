"""Chapter 01's figure: the GRU encoder–decoder with attention, one decoder step in focus.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Circle

from dlcourse.diagrams import ACCENT, ATTENTION_LINE_WIDTH, INK, _arrow, _box, _canvas, _finish, _text


def _show_char(c: str) -> str:
    """A character as a label: a space becomes "␣", mathtext's "$" is escaped."""
    return {" ": "\u2423", "$": r"\$"}.get(c, c)


def alignment_weights(source: str, target: str, step: int) -> list[float]:
    """Illustrative attention weights α_{t,j} of decoder step ``step`` (1-based) over the source characters.

    The step looks mostly at the source character it copies (the k-th occurrence of the same character for the
    k-th occurrence in the target, e.g. the third digit of "2021" in both), else at the proportional position,
    and a little at the neighbours: ``softmax(-1.1 |j - p|)``. Sums to 1.
    """
    if not source or not target:
        raise ValueError("source and target must be non-empty")
    if not 1 <= step <= len(target):
        raise ValueError(f"step must be in 1..{len(target)}, got {step}")
    k = step - 1
    c = target[k]
    seen = target[:k].count(c)
    where = [j for j, s in enumerate(source) if s == c]
    if where:
        p = where[min(seen, len(where) - 1)]
    else:
        p = round(k * (len(source) - 1) / max(1, len(target) - 1))
    scores = [math.exp(-1.1 * abs(j - p)) for j in range(len(source))]
    total = sum(scores)
    return [s / total for s in scores]


def seq2seq_attention(source: str = "3 mai 2021", target: str = "2021-05-03", step: int = 3,
                      weights: Sequence[float] | None = None) -> Figure:
    """Chapter 01's model at decoder step ``step`` (1-based): which source characters it reads, and how.

    Bottom row: the source characters x_j, a bidirectional GRU encoder and its states h_j. Top row: the
    decoder GRU, fed the previous target character y_{t-1} (teacher forcing; its own previous prediction at
    inference) and producing y_t. For the highlighted step, the previous decoder state s_{t-1} is the query;
    the attention weights α_{t,j} (printed, and drawn as lines whose width and opacity grow with the weight)
    mix the encoder states into the context vector c_t = Σ_j α_{t,j} h_j that enters the step.

    ``weights`` (one per source character, e.g. a trained model's) replaces the illustrative
    :func:`alignment_weights`; they are normalised to sum to 1. Strings up to about 20 characters stay legible.
    """
    if weights is None:
        alpha = alignment_weights(source, target, step)
    else:
        if len(weights) != len(source):
            raise ValueError(f"{len(weights)} weights for {len(source)} source characters")
        if any(a < 0 for a in weights) or not sum(weights) > 0:
            raise ValueError("weights must be non-negative with a positive sum")
        alpha = [float(a) / float(sum(weights)) for a in weights]
        if not 1 <= step <= len(target):
            raise ValueError(f"step must be in 1..{len(target)}, got {step}")

    dx, left, right = 0.8, 2.0, 0.3
    columns = max(len(source), len(target))
    width, height = left + dx * columns + right, 7.0
    fig, (ax,) = _canvas(width, height)

    def xs(n: int) -> list[float]:
        start = left + dx * (columns - n) / 2
        return [start + dx * (i + 0.5) for i in range(n)]

    xe, xd = xs(len(source)), xs(len(target))
    bw, bh = 0.5, 0.46
    y_src, y_enc, y_h, y_alpha = 0.85, 1.5, 2.0, 2.33
    y_ctx, y_in, y_dec, y_out = 3.75, 4.85, 5.6, 6.3
    t = step - 1

    # Row labels, right-aligned in the left margin.
    for y, label in [(y_src, "source $x_j$"), (y_enc, "encoder\n(bidirectional GRU)"), (y_h, "states $h_j$"),
                     (y_alpha, r"weights $\alpha_{t,j}$"), (y_in, "input $y_{t-1}$\n(teacher forcing)"),
                     (y_dec, "decoder GRU"), (y_out, "output $y_t$")]:
        _text(ax, left - 0.2, y, label, size=9.5, ha="right")

    # Encoder: characters, GRU boxes, forward and backward arrows, states.
    for j, (x, c) in enumerate(zip(xe, source, strict=True)):
        _text(ax, x, y_src, _show_char(c), size=11, family="monospace")
        _arrow(ax, (x, y_src + 0.17), (x, y_enc - bh / 2), size=8)
        _box(ax, x, y_enc, "GRU", "rnn", w=bw, h=bh, size=8)
        _text(ax, x, y_h, f"$h_{{{j + 1}}}$", size=9)
        if j + 1 < len(xe):
            a, b = x + bw / 2, xe[j + 1] - bw / 2
            _arrow(ax, (a, y_enc + 0.1), (b, y_enc + 0.1), size=7, lw=1.0)
            _arrow(ax, (b, y_enc - 0.1), (a, y_enc - 0.1), size=7, lw=1.0)

    # Decoder: inputs y_{t-1}, GRU boxes joined by the state s, outputs y_t; step t highlighted.
    inputs = ["<sos>"] + [_show_char(c) for c in target[:-1]]
    for i, (x, c) in enumerate(zip(xd, target, strict=True)):
        focus = i == t
        colour = ACCENT if focus else INK
        weight = "bold" if focus else "normal"
        _text(ax, x, y_in, inputs[i], size=8 if i == 0 else 11, family="monospace", color=colour,
              weight=weight)
        _arrow(ax, (x, y_in + 0.17), (x, y_dec - bh / 2), size=8)
        _box(ax, x, y_dec, "GRU", "focus" if focus else "rnn", w=bw, h=bh, size=8, lw=2.0 if focus else 1.0)
        _arrow(ax, (x, y_dec + bh / 2), (x, y_out - 0.17), size=8)
        _text(ax, x, y_out, _show_char(c), size=11, family="monospace", color=colour, weight=weight)
        if i + 1 < len(xd):
            _arrow(ax, (x + bw / 2, y_dec), (xd[i + 1] - bw / 2, y_dec), size=8,
                   color=ACCENT if i + 1 == t else INK, lw=1.8 if i + 1 == t else 1.2)
    _arrow(ax, (xd[0] - dx / 2 - 0.05, y_dec), (xd[0] - bw / 2, y_dec), size=8, color=ACCENT if t == 0 else INK)

    # Attention: query s_{t-1} down to the context node; weighted lines from every h_j; c_t into step t.
    r = 0.24
    xq = xd[t] - dx / 2
    node = (xq, y_ctx)
    ax.add_patch(Circle(node, r, facecolor="white", edgecolor=ACCENT, linewidth=1.8, zorder=3))
    _text(ax, xq, y_ctx, "$c_t$", size=11, color=ACCENT)
    _arrow(ax, (xq, y_dec), (xq, y_ctx + r), color=ACCENT, ls="--", size=9)
    _text(ax, xq - 0.1, (y_dec + y_ctx) / 2 - 0.35, "query $s_{t-1}$", size=9, color=ACCENT, ha="right")
    _arrow(ax, (xq + r * 0.7, y_ctx + r * 0.7), (xd[t] - bw / 2 + 0.05, y_dec - bh / 2), color=ACCENT, lw=1.8,
           size=10)
    peak = max(alpha)
    for x, a in zip(xe, alpha, strict=True):
        _text(ax, x, y_alpha, f"{a:.2f}", size=7.5, color=ACCENT if a == peak else INK)
        dxn, dyn = x - node[0], y_alpha + 0.14 - node[1]
        norm = math.hypot(dxn, dyn)
        end = (node[0] + r * dxn / norm, node[1] + r * dyn / norm)
        _arrow(ax, (x, y_alpha + 0.14), end, head=False, color=ACCENT, lw=ATTENTION_LINE_WIDTH * a,
               alpha=0.2 + 0.8 * a / peak, gid="attention-weight")

    _text(ax, left + dx * columns / 2, 0.3,
          r"context $c_t = \sum_j \alpha_{t,j}\, h_j$, with weights $\alpha_{t,j}$ = softmax over $j$ of "
          r"score$(s_{t-1}, h_j)$;  line width $\propto \alpha_{t,j}$", size=9.5)
    _text(ax, left + dx * columns / 2, height - 0.3,
          f"Encoder–decoder with attention, decoder step t = {step}: producing "
          f"\u201c{_show_char(target[t])}\u201d", size=12, weight="bold")
    return _finish(fig, f"The attention model at decoder step {step}: the source characters '{source}' are read by a "
                        "bidirectional GRU encoder; the decoder state scores every encoder state, and the weights "
                        f"(drawn as line widths) form the context that helps produce character {step} of '{target}'.")
