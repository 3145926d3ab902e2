"""Architecture diagrams drawn with matplotlib: the pictures the chapters explain in words.

Each function returns a :class:`matplotlib.figure.Figure` made only of patches, arrows and text (no image
file is read), already closed in pyplot so that a notebook shows it once, as the cell's value, and it
never piles up in pyplot's list of open figures; ``fig.savefig`` still works. Figures are about 10 inches
wide. Data coordinates are inches (one axes fills each figure, or each panel, with equal aspect), so the
sizes below read directly as inches on the page.

* :func:`seq2seq_attention` — chapter 01's GRU encoder–decoder with attention, one decoder step in focus;
* :func:`residual_layers` — post-norm and pre-norm residual sub-layers side by side;
* :func:`encoder_decoder_transformer` — the 2017 encoder–decoder Transformer;
* :func:`gpt_block` — a decoder-only GPT stack with its tied LM head;
* :func:`attention_masks` — padding, causal and combined masks as query × key grids.
* :func:`vit_input_pipeline` — chapter 06's image → patches → tokens → encoder input;
* :func:`gan_step_gradients` — chapter 07's discriminator and generator steps, where the gradients flow;
* :func:`bert_input_embeddings` — chapter 03's token + segment + position embeddings, summed per position;
* :func:`bert_pretraining_heads` — chapter 03's MLM head at the masked positions and NSP head on [CLS];
* :func:`simclr_pipeline` — chapter 11's two views, shared encoder, projection head and NT-Xent.
* :func:`vae_reparameterization` — chapter 08's reparameterised VAE loss, where the gradients flow;
* :func:`t5_encoder_decoder` — chapter 05's pre-norm encoder–decoder, cross-attention in every decoder block;
* :func:`bigbird_blocks` — chapter 09's gathered key blocks and the block grid by kind.

Artists carry a ``gid`` where a test or a reader may want to find them again: a box and its label share
``"box<n>"``; the attention-weight lines of :func:`seq2seq_attention` are ``"attention-weight"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Patch, Rectangle
from matplotlib.path import Path
from matplotlib.text import Text

# Fill colours by kind of block, the same in every diagram.
COLOURS = {
    "attention": "#f9d9b0",
    "ffn": "#c6e0f5",
    "norm": "#f6efb4",
    "embedding": "#f5cdd7",
    "linear": "#ddd3f0",
    "softmax": "#cfe8c8",
    "rnn": "#d6e6f2",
    "focus": "#f4a259",
    "frame": "#f2f2f2",
    "allowed": "#5b9bd5",
    "blocked": "#e9e9e9",
}
ACCENT = "#c0392b"  # the attention path of seq2seq_attention
INK = "0.2"
ATTENTION_LINE_WIDTH = 9.0  # points: the line of a weight α carries width α · ATTENTION_LINE_WIDTH

_MAX_WIDTH = 10.5  # inches


# ---------------------------------------------------------------------------------------------------------
# Drawing helpers shared by every diagram
# ---------------------------------------------------------------------------------------------------------


def _canvas(width: float, height: float, panels: int = 1) -> tuple[Figure, list[Axes]]:
    """A figure of ``panels`` side-by-side axes, each ``width`` × ``height`` data units without frame.

    One unit is one inch unless the whole figure would be wider than 10.5 inches; then it is scaled down.
    """
    import matplotlib.pyplot as plt

    scale = min(1.0, _MAX_WIDTH / (width * panels))
    fig = plt.figure(figsize=(width * panels * scale, height * scale))
    axes = []
    for i in range(panels):
        ax = fig.add_axes((i / panels, 0.0, 1.0 / panels, 1.0))
        ax.set_xlim(0, width)
        ax.set_ylim(0, height)
        ax.set_aspect("equal")
        ax.axis("off")
        axes.append(ax)
    return fig, axes


def _finish(fig: Figure) -> Figure:
    """Take ``fig`` out of pyplot's figure list (so a notebook displays it once) and return it."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


def _text(ax: Axes, x: float, y: float, s: str, *, size: float = 10, **kw) -> Text:
    """Centred text above every patch."""
    kw.setdefault("ha", "center")
    kw.setdefault("va", "center")
    kw.setdefault("color", INK)
    return ax.text(x, y, s, fontsize=size, zorder=5, **kw)


def _box(ax: Axes, x: float, y: float, label: str, kind: str, *, w: float = 2.4, h: float = 0.42,
         size: float = 10, edge: str = INK, lw: float = 1.0, **text_kw) -> FancyBboxPatch:
    """A rounded box centred on ``(x, y)`` filled with ``COLOURS[kind]``, its label in the middle.

    The box and its label share a ``gid`` ("box0", "box1", ... per axes) so that tests can pair them.
    """
    gid = f"box{sum(1 for p in ax.patches if (p.get_gid() or '').startswith('box'))}"
    patch = FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.07",
                           facecolor=COLOURS[kind], edgecolor=edge, linewidth=lw, zorder=3, gid=gid)
    ax.add_patch(patch)
    _text(ax, x, y, label, size=size, gid=gid, **text_kw)
    return patch


def _frame(ax: Axes, x0: float, y0: float, x1: float, y1: float) -> FancyBboxPatch:
    """A grey rounded background for a layer that is repeated N times."""
    patch = FancyBboxPatch((x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0,rounding_size=0.15",
                           facecolor=COLOURS["frame"], edgecolor="0.55", linewidth=1.0, zorder=1)
    ax.add_patch(patch)
    return patch


def _arrow(ax: Axes, *points: tuple[float, float], color: str = INK, lw: float = 1.2, head: bool = True,
           both: bool = False, ls: str = "-", alpha: float = 1.0, size: float = 11,
           gid: str | None = None) -> FancyArrowPatch:
    """A polyline through ``points`` with an arrow head at the end (``both``: at both ends; ``head=False``:
    none)."""
    if len(points) < 2:
        raise ValueError("an arrow needs at least two points")
    style = "<|-|>" if both else ("-|>" if head else "-")
    path = Path(list(points), [Path.MOVETO] + [Path.LINETO] * (len(points) - 1))
    arrow = FancyArrowPatch(path=path, arrowstyle=style, mutation_scale=size, color=color, linewidth=lw,
                            linestyle=ls, alpha=alpha, zorder=2, gid=gid, capstyle="round", joinstyle="round")
    ax.add_patch(arrow)
    return arrow


def _dot(ax: Axes, x: float, y: float, color: str = INK) -> Circle:
    """A small filled dot where a path branches."""
    return ax.add_patch(Circle((x, y), 0.045, facecolor=color, edgecolor=color, zorder=4))


def _add(ax: Axes, x: float, y: float, r: float = 0.14) -> Circle:
    """A circled plus: the residual addition."""
    circle = ax.add_patch(Circle((x, y), r, facecolor="white", edgecolor=INK, linewidth=1.2, zorder=3))
    d = 0.6 * r
    _arrow(ax, (x - d, y), (x + d, y), head=False, lw=1.2).set_zorder(4)
    _arrow(ax, (x, y - d), (x, y + d), head=False, lw=1.2).set_zorder(4)
    return circle


def _residual(ax: Axes, x: float, y_from: float, y_to: float, side: float, *, into_box: float = 0.0,
              color: str = INK, lw: float = 1.2) -> None:
    """The skip connection: branch off the stream at ``(x, y_from)``, run up at ``x + side`` and come back
    into the stream at height ``y_to`` — into an add circle (``into_box=0``) or the side of a box of half
    width ``into_box``."""
    _dot(ax, x, y_from, color)
    edge = x + math.copysign(into_box if into_box else 0.14, side)
    _arrow(ax, (x, y_from), (x + side, y_from), (x + side, y_to), (edge, y_to), color=color, lw=lw)


def _stack(ax: Axes, x: float, y: float, blocks: Sequence[tuple[str, str]], *, gap: float = 0.3,
           h: float = 0.42, w: float = 2.4, size: float = 10) -> list[float]:
    """Boxes (label, kind) from ``y`` upwards joined by arrows; ``"+"`` as a label draws an add circle.

    Returns the centre height of every block."""
    centres = []
    top = None
    for label, kind in blocks:
        half = 0.14 if label == "+" else h / 2
        centre = y + half if top is None else top + gap + half
        if top is not None:
            _arrow(ax, (x, top), (x, centre - half))
        if label == "+":
            _add(ax, x, centre)
        else:
            _box(ax, x, centre, label, kind, w=w, h=h, size=size)
        centres.append(centre)
        top = centre + half
    return centres


# ---------------------------------------------------------------------------------------------------------
# 1. RNN encoder–decoder with attention (chapter 01)
# ---------------------------------------------------------------------------------------------------------


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
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 2. Post-norm versus pre-norm residual sub-layers
# ---------------------------------------------------------------------------------------------------------


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
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 3. The encoder–decoder Transformer
# ---------------------------------------------------------------------------------------------------------


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
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 4. The decoder-only GPT stack
# ---------------------------------------------------------------------------------------------------------


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
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 5. Attention masks
# ---------------------------------------------------------------------------------------------------------


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
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 6. The ViT's input pipeline (chapter 06)
# ---------------------------------------------------------------------------------------------------------


def vit_input_pipeline(grid: int = 4) -> Figure:
    """How an image becomes the ViT encoder's input: image → ``grid`` × ``grid`` patches → flattened
    vectors (N, C·P²) → the shared linear projection E (N, D) → [CLS] put in front (N + 1, D) → learned
    position embeddings added → Transformer encoder → head on the [CLS] state.

    Each stage carries its tensor shape underneath; the patches of the image are numbered row by row, as
    the tokens they become.
    """
    if not 2 <= grid <= 6:
        raise ValueError(f"grid must be between 2 and 6 patches per side, got {grid}")
    width, height = 10.4, 3.9
    fig, (ax,) = _canvas(width, height)
    y, h, w, size = 1.75, 0.95, 1.3, 9
    side = 1.3  # the image, in inches
    x0, y0 = 0.3, y - side / 2
    cell = side / grid
    for r in range(grid):
        for c in range(grid):
            shade = 0.93 - 0.05 * ((r + c) % 2)
            ax.add_patch(Rectangle((x0 + c * cell, y0 + side - (r + 1) * cell), cell, cell, zorder=2,
                                   facecolor=str(shade), edgecolor=INK, linewidth=0.8))
            if grid <= 4:
                _text(ax, x0 + (c + 0.5) * cell, y0 + side - (r + 0.5) * cell, str(r * grid + c + 1), size=7.5)
    _text(ax, x0 + side / 2, y0 - 0.3, "image\n$H \\times W \\times C$", size=8.5)
    _text(ax, x0 + side / 2, y0 + side + 0.22, f"{grid} × {grid} patches\nof $P \\times P$", size=8.5, va="bottom")
    stages = [(2.55, "flatten each\npatch", "embedding", "$(N,\\ C P^2)$"),
              (4.05, "linear\nprojection $E$", "linear", "$(N,\\ D)$"),
              (5.55, "put [CLS]\nin front", "embedding", "$(N{+}1,\\ D)$")]
    _arrow(ax, (x0 + side + 0.05, y), (stages[0][0] - w / 2, y))
    for i, (x, label, kind, shape) in enumerate(stages):
        _box(ax, x, y, label, kind, w=w, h=h, size=size)
        _text(ax, x, y - h / 2 - 0.25, shape, size=8.5, color="0.3")
        if i:
            _arrow(ax, (stages[i - 1][0] + w / 2, y), (x - w / 2, y))
    _text(ax, stages[1][0], y + h / 2 + 0.22, "the same $E$ for\nevery patch", size=8, color="0.35", va="bottom")
    xa = 6.75
    _arrow(ax, (stages[-1][0] + w / 2, y), (xa - 0.14, y))
    _add(ax, xa, y)
    _box(ax, xa, y + 1.35, "position\nembeddings", "embedding", w=1.2, h=0.75, size=size)
    _text(ax, xa + 0.72, y + 1.35, "$E_{pos}$", size=8.5, color="0.3", ha="left")
    _arrow(ax, (xa, y + 1.35 - 0.375), (xa, y + 0.14))
    _text(ax, xa, y - 0.45, "$z_0$", size=9)
    xe, xh = 8.0, 9.55
    _arrow(ax, (xa + 0.14, y), (xe - w / 2, y))
    _box(ax, xe, y, "Transformer\nencoder × L", "attention", w=w, h=h, size=size)
    _text(ax, xe, y - h / 2 - 0.25, "$(N{+}1,\\ D)$", size=8.5, color="0.3")
    _arrow(ax, (xe + w / 2, y), (xh - 0.6, y))
    _box(ax, xh, y, "LayerNorm,\nhead on [CLS]", "softmax", w=1.2, h=h, size=size)
    _text(ax, xh, y - h / 2 - 0.25, "(classes,)", size=8.5, color="0.3")
    _text(ax, width / 2, height - 0.25, "ViT input: an image becomes a sequence of N + 1 tokens", size=12,
          weight="bold")
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 7. One GAN training step: where the gradients flow (chapter 07)
# ---------------------------------------------------------------------------------------------------------


def gan_step_gradients() -> Figure:
    """One alternating GAN step as two panels: the forward pass (grey) and the backward pass (dashed red).

    Left, the discriminator step: the generated batch is detached, so the gradient of $J_D$ reaches D and
    stops at the cut — G gets none; only D's optimizer steps. Right, the generator step: the gradient of
    $J_G$ runs back through D into G; D's weights receive gradients but are not stepped; only G's
    optimizer steps. An updated network has a thick red outline.
    """
    width, height = 5.2, 3.3
    fig, axes = _canvas(width, height, panels=2)
    y, h, w = 1.6, 0.55, 0.8
    xs = {"z": 0.3, "G": 1.2, "cut": 2.25, "D": 3.2, "J": 4.5}
    for ax, step in zip(axes, ("discriminator", "generator"), strict=True):
        d_step = step == "discriminator"
        loss = "$J_D$" if d_step else "$J_G$"
        _text(ax, xs["z"], y, "$z$", size=11)
        _arrow(ax, (xs["z"] + 0.15, y), (xs["G"] - w / 2, y))
        _box(ax, xs["G"], y, "G", "ffn", w=w, h=h, size=11, edge=INK if d_step else ACCENT, lw=1.0 if d_step else 2.4)
        _arrow(ax, (xs["G"] + w / 2, y), (xs["D"] - w / 2, y))
        _text(ax, (xs["G"] + xs["D"]) / 2 - 0.25, y + 0.2, "$G(z)$", size=9)
        if d_step:
            ax.plot([xs["cut"] + 0.2] * 2, [y - 0.28, y + 0.28], color=ACCENT, lw=2.5, zorder=4)
            _text(ax, xs["cut"] + 0.2, y - 0.5, ".detach()", size=8.5, color=ACCENT)
            _text(ax, xs["D"] + 0.3, y - 0.62, "real $x$", size=9, ha="left")
            _arrow(ax, (xs["D"] + 0.28, y - 0.62), (xs["D"], y - 0.62), (xs["D"], y - h / 2))
        _box(ax, xs["D"], y, "D", "attention", w=w, h=h, size=11, edge=ACCENT if d_step else INK,
             lw=2.4 if d_step else 1.0)
        _arrow(ax, (xs["D"] + w / 2, y), (xs["J"] - 0.35, y))
        _box(ax, xs["J"], y, loss, "norm", w=0.65, h=h, size=11)
        # the backward pass, above the forward one: into D, and (generator step only) on through D into G
        yb = y + 0.62
        _arrow(ax, (xs["J"], y + h / 2), (xs["J"], yb), (xs["D"] + w / 4, yb), (xs["D"] + w / 4, y + h / 2),
               color=ACCENT, ls="--", lw=1.4)
        _text(ax, (xs["J"] + xs["D"]) / 2 + 0.1, yb + 0.2, f"$\\nabla {loss[1:-1]}$", size=9, color=ACCENT)
        if not d_step:
            _arrow(ax, (xs["D"] - w / 4, y + h / 2), (xs["D"] - w / 4, yb), (xs["G"], yb), (xs["G"], y + h / 2),
                   color=ACCENT, ls="--", lw=1.4)
            _text(ax, (xs["D"] + xs["G"]) / 2, yb + 0.2, "through D", size=9, color=ACCENT)
        _text(ax, width / 2, height - 0.3, f"{step} step", size=12, weight="bold")
        if d_step:
            notes = ["the gradient reaches D's weights only:", "G(z) was detached, G gets none;",
                     "opt_D.step(): only D moves"]
        else:
            notes = ["the gradient runs through D into G;", "D's .grad is filled but not applied;",
                     "opt_G.step(): only G moves"]
        for i, note in enumerate(notes):
            _text(ax, width / 2, 0.6 - 0.22 * i, note, size=8.5, color="0.25")
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 8. BERT: the summed input embeddings and the two pre-training heads (chapter 03)
# ---------------------------------------------------------------------------------------------------------

BERT_EXAMPLE = ("[CLS]", "the", "penguin", "cannot", "fly", "[SEP]", "it", "swim", "##s", "[SEP]")


def _piece(token: str) -> str:
    """A WordPiece token as mathtext for a subscript: "[CLS]" → "[\\mathrm{CLS}]", "##s" → "\\#\\#\\mathrm{s}"."""
    if token.startswith("[") and token.endswith("]"):
        return f"[\\mathrm{{{token[1:-1]}}}]"
    body = token.removeprefix("##")
    return "\\#\\#" * (body != token) + f"\\mathrm{{{body}}}"


def bert_segments(tokens: Sequence[str]) -> list[int]:
    """The segment id of each token of a BERT input: 0 up to and including the first [SEP], 1 after it."""
    if "[SEP]" not in tokens:
        raise ValueError("a BERT input has at least one [SEP]")
    first = list(tokens).index("[SEP]")
    return [0 if i <= first else 1 for i in range(len(tokens))]


def bert_input_embeddings(tokens: Sequence[str] = BERT_EXAMPLE) -> Figure:
    """BERT's input: for every position t, token embedding + segment embedding (A up to the first [SEP], B
    after it) + position embedding $E_t$, summed, then LayerNorm — one column per token, [CLS] first."""
    n = len(tokens)
    if not 2 <= n <= 12:
        raise ValueError(f"draw between 2 and 12 tokens, got {n}")
    segments = bert_segments(tokens)
    col, left = max(0.9, 8.0 / n), 1.55
    width, height = left + n * col + 0.2, 5.2
    fig, (ax,) = _canvas(width, height)
    w, h = col - 0.1, 0.42
    rows = {"token": 3.55, "segment": 2.6, "position": 1.65}
    _text(ax, width / 2, height - 0.3, "BERT's input: three embeddings, summed", size=13, weight="bold")
    for name, y in [("input", 4.35), ("token\nembeddings", rows["token"]), ("segment\nembeddings", rows["segment"]),
                    ("position\nembeddings", rows["position"])]:
        _text(ax, 0.1, y, name, size=9.5, ha="left", color="0.3")
    for i, (token, segment) in enumerate(zip(tokens, segments, strict=True)):
        x = left + (i + 0.5) * col
        special = token in ("[CLS]", "[SEP]")
        _text(ax, x, 4.35, token, size=9, weight="bold" if special else "normal")
        _arrow(ax, (x, 4.18), (x, rows["token"] + h / 2))
        _box(ax, x, rows["token"], f"$E_{{{_piece(token)}}}$", "embedding", w=w, h=h, size=9)
        _add(ax, x, (rows["token"] + rows["segment"]) / 2, r=0.11)
        _box(ax, x, rows["segment"], "$E_A$" if segment == 0 else "$E_B$", "ffn" if segment == 0 else "linear",
             w=w, h=h, size=9)
        _add(ax, x, (rows["segment"] + rows["position"]) / 2, r=0.11)
        _box(ax, x, rows["position"], f"$E_{{{i}}}$", "norm", w=w, h=h, size=9)
        _arrow(ax, (x, rows["position"] - h / 2), (x, 1.02))
    _box(ax, left + n * col / 2, 0.8, "sum per column → LayerNorm → dropout → encoder input $e_t$", "softmax",
         w=n * col - 0.1, h=h, size=9.5)
    _text(ax, 0.1, 0.8, "= $e_t$", size=9.5, ha="left", color="0.3")
    _text(ax, left + n * col / 2, 0.25, "segment A: [CLS], sentence A and its [SEP]; segment B: sentence B and "
          "the last [SEP]; positions are learned vectors $E_0 \\ldots E_{511}$", size=8.5, color="0.35")
    return _finish(fig)


def bert_pretraining_heads(tokens: Sequence[str] = BERT_EXAMPLE, masked: Sequence[int] = (3,),
                           original: str = "cannot") -> Figure:
    """BERT pre-training: the corrupted pair goes through the bidirectional encoder; the MLM head (dense → GELU
    → LayerNorm → tied decoder $E^\\top$ + bias → softmax) predicts the original token at each chosen position
    only, and the NSP head (pooler tanh → linear → 2 classes) reads the [CLS] state. The masked positions
    ``masked`` show [MASK]; the first of them gets the drawn MLM head, whose target is ``original``."""
    n = len(tokens)
    if not 2 <= n <= 12:
        raise ValueError(f"draw between 2 and 12 tokens, got {n}")
    if not masked or any(not 0 < m < n for m in masked) or tokens[0] != "[CLS]":
        raise ValueError("tokens start with [CLS] and at least one position after it is masked")
    if any(tokens[m] in ("[CLS]", "[SEP]") for m in masked):
        raise ValueError("[CLS] and [SEP] are never chosen for masking")
    col, left = 0.95, 0.3
    width, height = left + n * col + 0.3, 7.0
    fig, (ax,) = _canvas(width, height)
    xs = [left + (i + 0.5) * col for i in range(n)]
    w, h = col - 0.12, 0.4
    _text(ax, width / 2, height - 0.3, "BERT pre-training: two heads on one encoder", size=13, weight="bold")
    for i, token in enumerate(tokens):
        shown = "[MASK]" if i in masked else token
        _text(ax, xs[i], 0.35, shown, size=9, color=ACCENT if i in masked else INK,
              weight="bold" if i in masked else "normal")
        _arrow(ax, (xs[i], 0.52), (xs[i], 1.0))
        _arrow(ax, (xs[i], 2.0), (xs[i], 2.35))
        _box(ax, xs[i], 2.57, f"$h_{{{i}}}$", "frame", w=w, h=h, size=9,
             edge=ACCENT if i in masked or i == 0 else "0.6")
    _box(ax, left + n * col / 2, 1.5, "BERT encoder: embeddings, then L bidirectional layers (every token sees "
         "every token)", "attention", w=n * col - 0.1, h=0.8, size=9.5)
    # NSP head on [CLS]
    x0 = left + 1.0
    nsp = _stack(ax, x0, 3.3, [("pooler: tanh($W_p h_0 + b_p$)", "linear"), ("NSP: linear → 2", "linear"),
                               ("softmax", "softmax")], gap=0.3, h=h, w=2.0, size=9)
    _arrow(ax, (xs[0], 2.57 + h / 2), (xs[0], 3.3))
    _text(ax, x0, nsp[-1] + 0.5, "IsNext or NotNext?", size=9.5)
    _text(ax, x0, nsp[-1] + 0.88, "$\\mathcal{L}_{\\mathrm{NSP}}$: cross-entropy", size=9, color="0.3")
    # MLM head on the first masked position
    m = masked[0]
    xm = max(xs[m], x0 + 2.45)
    mlm = _stack(ax, xm, 3.3, [("dense → GELU → LayerNorm", "ffn"), ("decoder $E_{\\mathrm{word}}^\\top$ + bias",
                                                                        "embedding"),
                               ("softmax over the vocabulary", "softmax")], gap=0.3, h=h, w=2.7, size=9)
    _arrow(ax, (xs[m], 2.57 + h / 2), (xs[m], 3.3))
    _text(ax, xm, mlm[-1] + 0.5, f"$p(x_{{{m}}} \\mid \\tilde{{x}})$, target: the original \"{original}\"", size=9.5)
    _text(ax, xm, mlm[-1] + 0.88, "$\\mathcal{L}_{\\mathrm{MLM}} = -\\sum_{i \\in M} \\log p(x_i \\mid \\tilde{x})$",
          size=9, color="0.3")
    _text(ax, xm + 1.45, mlm[1], "tied to the\ntoken embeddings", size=8, ha="left", color=ACCENT)
    _text(ax, width / 2, height - 0.75, "the MLM head runs at the chosen positions $M$ only (red); the other "
          "positions give no loss; $\\mathcal{L} = \\mathcal{L}_{\\mathrm{MLM}} + \\mathcal{L}_{\\mathrm{NSP}}$",
          size=9, color="0.35")
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# SimCLR (chapter 11)
# ---------------------------------------------------------------------------------------------------------


def simclr_pipeline() -> Figure:
    """SimCLR: an image, two random augmentations, one encoder f with shared weights, a projection head g, and
    NT-Xent on the two projections (against the other views of the batch); after pre-training g is dropped and
    the features h = f(x) are what a downstream task uses."""
    width, height = 10.5, 4.6
    fig, (ax,) = _canvas(width, height)
    top, bottom, middle = 3.25, 1.45, 2.35
    _box(ax, 0.75, middle, "image $x$", "embedding", w=1.1, h=0.5)
    columns = [(2.45, "augment $t \\sim \\mathcal{T}$", "augment $t' \\sim \\mathcal{T}$", "linear", 1.9),
               (4.6, "encoder $f$ (CNN)", "encoder $f$ (CNN)", "attention", 1.8),
               (6.75, "projection head $g$", "projection head $g$", "ffn", 1.9)]
    for y in (top, bottom):
        _arrow(ax, (1.3, middle), (1.45, middle), (1.45, y), (2.45 - 0.95, y))
    for (x, label_top, label_bottom, kind, w), nxt in zip(columns, [c[0] - c[4] / 2 for c in columns[1:]] + [8.05],
                                                         strict=True):
        for y, label in ((top, label_top), (bottom, label_bottom)):
            _box(ax, x, y, label, kind, w=w, h=0.46, size=9.5)
            _arrow(ax, (x + w / 2, y), (nxt, y))
    for y, view, h, z in ((top, "$\\tilde x_i$", "$h_i$", "$z_i$"), (bottom, "$\\tilde x_j$", "$h_j$", "$z_j$")):
        _text(ax, 3.55, y + 0.22, view, size=10)
        _text(ax, 5.67, y + 0.22, h, size=10)
        _text(ax, 7.9, y + 0.22, z, size=10)
    _arrow(ax, (4.6, top - 0.23), (4.6, bottom + 0.23), both=True, ls="--", color="0.45", lw=1.0)
    _text(ax, 4.67, middle, "shared weights", size=8.5, ha="left", color="0.35")
    _box(ax, 9.25, middle, "NT-Xent:\npull $z_i$, $z_j$ together,\npush the other\n$2N-2$ views away", "softmax",
         w=2.2, h=1.3, size=9)
    for y in (top, bottom):
        _arrow(ax, (8.05, y), (8.35, y), (8.35, middle + (0.3 if y > middle else -0.3)),
               (9.25 - 1.1, middle + (0.3 if y > middle else -0.3)))
    _text(ax, width / 2, 0.45, "after pre-training: keep $f$, drop $g$ — a downstream task (a linear probe, $k$-NN, "
          "fine-tuning) reads $h = f(x)$", size=9.5, color=ACCENT)
    _text(ax, width / 2, height - 0.3, "SimCLR: two views of every image, one encoder", size=13, weight="bold")
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 11. The VAE's reparameterised computation graph (chapter 08)
# ---------------------------------------------------------------------------------------------------------


def vae_reparameterization() -> Figure:
    """One VAE loss as a computation graph: x → encoder → (μ, log σ²); ε ~ N(0, I) drawn outside the graph;
    z = μ + σ ⊙ ε → decoder → logits → the reconstruction term; (μ, log σ²) → the closed-form KL term; their
    sum is the loss.

    The backward pass is drawn dashed red: from the reconstruction term through the decoder to z, and from z
    to μ (z̄) and to σ (z̄ ⊙ ε), on into the encoder. No arrow runs into ε: it is an input, not a parameter.
    """
    width, height = 10.4, 4.8
    fig, (ax,) = _canvas(width, height)
    y = 2.4
    _box(ax, 0.45, y, "$x$", "embedding", w=0.6, h=0.5, size=11)
    _arrow(ax, (0.75, y), (1.0, y))
    _box(ax, 1.5, y, "encoder", "ffn", w=1.0, h=0.5)
    _arrow(ax, (2.0, y), (2.2, y), head=False)
    _dot(ax, 2.2, y)
    for ym, label in ((2.95, "$\\mu$"), (1.85, "$\\log\\sigma^2$")):
        _arrow(ax, (2.2, y), (2.2, ym), (2.55, ym))
        _box(ax, 3.0, ym, label, "linear", w=0.9, h=0.4)
        _arrow(ax, (3.45, ym), (4.0, y + (0.12 if ym > y else -0.12)))
    _text(ax, 3.82, 2.0, "$\\sigma$", size=9, color="0.3")
    _box(ax, 4.75, y, "$z = \\mu + \\sigma \\odot \\varepsilon$", "focus", w=1.5, h=0.5, size=9.5)
    _box(ax, 4.75, 3.35, "$\\varepsilon \\sim \\mathcal{N}(0, I)$", "blocked", w=1.3, h=0.42, size=9.5)
    _arrow(ax, (4.75, 3.14), (4.75, y + 0.25))
    _text(ax, 5.52, 3.35, "drawn outside the graph:\nno gradient flows into $\\varepsilon$", size=8, ha="left",
          color="0.3")
    _arrow(ax, (5.5, y), (5.72, y))
    _box(ax, 6.2, y, "decoder", "ffn", w=0.95, h=0.5)
    _arrow(ax, (6.68, y), (7.35, y))
    _text(ax, 7.0, y + 0.17, "logits", size=8, color="0.3")
    _box(ax, 8.15, y, "reconstruction\n$-\\log p_\\theta(x \\mid z)$", "softmax", w=1.6, h=0.6, size=8.5)
    # (μ, log σ²) → the KL term, along the top
    _arrow(ax, (2.2, 2.95), (2.2, 4.05), (7.35, 4.05))
    _text(ax, 3.0, 4.2, "$(\\mu, \\log\\sigma^2)$", size=8.5, color="0.3")
    _box(ax, 8.15, 4.05, "KL$(q \\,\\|\\, \\mathcal{N}(0, I))$\nclosed form", "norm", w=1.6, h=0.6, size=8.5)
    _box(ax, 9.8, 3.2, "loss\n(sum)", "attention", w=0.9, h=0.6, size=9)
    _arrow(ax, (8.95, y), (9.8, y), (9.8, 2.9))
    _arrow(ax, (8.95, 4.05), (9.8, 4.05), (9.8, 3.5))
    # the backward pass
    red = {"color": ACCENT, "ls": "--", "lw": 1.3}
    _arrow(ax, (8.15, 2.1), (8.15, 1.3), (6.35, 1.3), (6.35, 2.15), **red)
    _arrow(ax, (6.05, 2.15), (6.05, 1.3), (4.9, 1.3), (4.9, 2.15), **red)
    _text(ax, 5.48, 1.13, "$\\bar z$", size=9, color=ACCENT)
    _arrow(ax, (4.6, 2.15), (4.6, 1.3), (3.1, 1.3), (3.1, 1.65), **red)
    _text(ax, 3.85, 1.1, "$\\bar\\sigma = \\bar z \\odot \\varepsilon$", size=8.5, color=ACCENT)
    _arrow(ax, (4.3, 2.65), (4.3, 3.02), (3.45, 3.02), **red)
    _text(ax, 3.75, 3.3, "$\\bar\\mu = \\bar z$", size=8.5, color=ACCENT)
    _arrow(ax, (2.75, 1.65), (2.75, 1.3), (1.5, 1.3), (1.5, 2.15), **red)
    _text(ax, 2.0, 1.1, "from $\\mu$ and $\\sigma$ into $\\phi$", size=8.5, color=ACCENT)
    _text(ax, width / 2, 0.62, "dashed red: the gradient of the loss (the KL term sends its own straight to "
          "$\\mu$ and $\\log\\sigma^2$).", size=8.5, color="0.25")
    _text(ax, width / 2, 0.32, "Sampling $z \\sim \\mathcal{N}(\\mu, \\sigma^2)$ directly would give a number with no "
          "path back to $\\mu$ and $\\sigma$: the encoder would learn from the KL term alone.", size=8.5,
          color="0.25")
    _text(ax, width / 2, height - 0.25, "The reparameterization trick: the noise is an input, $z$ a function of "
          "$\\mu$ and $\\sigma$", size=12, weight="bold")
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 12. T5's encoder–decoder (chapter 05)
# ---------------------------------------------------------------------------------------------------------


def t5_encoder_decoder() -> Figure:
    """T5 as an encoder–decoder: the corrupted input (with sentinels) → shared embedding → N pre-norm encoder
    blocks (RMSNorm before each sub-layer, relative position bias in self-attention) → final RMSNorm → the
    encoder outputs E, read by the cross-attention of *every* decoder block; the decoder's input is the
    target shifted right behind a start token, its self-attention causal; final RMSNorm and the tied LM head
    give the target tokens."""
    width, height = 10.4, 6.9
    fig, (ax,) = _canvas(width, height)
    xe, xd, w, h, gap = 2.6, 7.5, 2.6, 0.38, 0.22
    base = 0.95
    # the inputs and the shared embedding
    _box(ax, xe, base, "Thank you <X> me to your party <Y> week.", "blocked", w=3.3, h=0.4, size=9)
    _text(ax, xe, base - 0.38, "input text, spans replaced by sentinels", size=8, color="0.3")
    _box(ax, xd, base, "<s> <X> for inviting <Y> last", "blocked", w=3.3, h=0.4, size=9)
    _text(ax, xd, base - 0.38, "decoder input: the targets shifted right", size=8, color="0.3")
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
    return _finish(fig)


# ---------------------------------------------------------------------------------------------------------
# 13. BigBird's block-sparse attention, as it is computed (chapter 09)
# ---------------------------------------------------------------------------------------------------------

BLOCK_KINDS = {"window": "#5b9bd5", "global": "#e8877a", "random": "#f4c542"}


def bigbird_block_layout(n_blocks: int = 8, r: int = 2, seed: int = 0) -> list[list[str | None]]:
    """The kind of every (query block, key block) pair in BigBird's pattern: "global" for the first and last
    query blocks (whole rows) and key blocks (whole columns), "window" for key blocks I − 1, I, I + 1 of a
    middle query block I, "random" for r further key blocks drawn per middle row (seeded), None elsewhere."""
    import random

    if n_blocks < 5 or not 0 <= r <= n_blocks - 5:
        raise ValueError(f"need at least 5 blocks and 0 <= r <= n_blocks - 5, got {n_blocks=}, {r=}")
    rng = random.Random(seed)
    grid: list[list[str | None]] = []
    for i in range(n_blocks):
        if i in (0, n_blocks - 1):
            grid.append(["global"] * n_blocks)
            continue
        row: list[str | None] = [None] * n_blocks
        row[0] = row[-1] = "global"
        for j in (i - 1, i, i + 1):
            row[j] = row[j] or "window"  # blocks 1 and n_b - 2 see a global block in their window
        free = [j for j in range(n_blocks) if row[j] is None]
        for j in rng.sample(free, r):
            row[j] = "random"
        grid.append(row)
    return grid


def bigbird_blocks(n_blocks: int = 8, r: int = 2, query: int = 3, seed: int = 0) -> Figure:
    """BigBird as it computes: the sequence cut into ``n_blocks`` blocks of b tokens; for the middle query block
    ``query``, its 3 window key blocks, the 2 global blocks and its r random blocks are gathered into one
    contiguous (5 + r)·b × d key tensor, and the scores are one dense b × (5 + r)·b product. Right: the block
    grid (query blocks × key blocks) coloured by kind, the row of ``query`` outlined."""
    grid = bigbird_block_layout(n_blocks, r, seed)
    if not 2 <= query <= n_blocks - 3:  # a window that touches no global block: 5 + r distinct key blocks
        raise ValueError(f"query must be a block from 2 to {n_blocks - 3}, got {query}")
    width, height = 10.4, 4.8
    fig, (ax,) = _canvas(width, height)
    cell, x0, y_seq = min(0.6, 6.0 / n_blocks), 0.5, 3.55
    row = grid[query]
    for j, kind in enumerate(row):
        ax.add_patch(Rectangle((x0 + j * cell, y_seq), cell, 0.45, facecolor=BLOCK_KINDS[kind] if kind else "white",
                               edgecolor=INK, linewidth=0.9, zorder=2))
        _text(ax, x0 + (j + 0.5) * cell, y_seq + 0.225, str(j), size=9)
    _text(ax, x0 + n_blocks * cell / 2, y_seq + 0.7, f"key blocks $0 \\ldots {n_blocks - 1}$, $b$ tokens each",
          size=9)
    order = ([j for j in range(n_blocks) if row[j] == "window"] + [0, n_blocks - 1]
             + [j for j in range(n_blocks) if row[j] == "random"])
    gx0, y_g, gcell = 0.9, 1.95, min(0.55, 3.85 / len(order))
    for slot, j in enumerate(order):
        ax.add_patch(Rectangle((gx0 + slot * gcell, y_g), gcell, 0.45, facecolor=BLOCK_KINDS[row[j]],
                               edgecolor=INK, linewidth=0.9, zorder=2))
        _text(ax, gx0 + (slot + 0.5) * gcell, y_g + 0.225, str(j), size=9)
        _arrow(ax, (x0 + (j + 0.5) * cell, y_seq), (gx0 + (slot + 0.5) * gcell, y_g + 0.47), color="0.55",
               lw=0.8, size=7)
    gright = gx0 + len(order) * gcell
    _text(ax, gright + 0.15, y_g + 0.225, f"gathered: one contiguous\n$(5 + r)\\,b \\times d$ key tensor ($r = {r}$)",
          size=8.5, ha="left")
    _box(ax, 1.3, 0.95, f"query block {query}\n$(b \\times d)$", "focus", w=1.3, h=0.6, size=9)
    _arrow(ax, (1.95, 0.95), (2.75, 0.95))
    _box(ax, 4.3, 0.95, "$Q_I K_{\\mathrm{gathered}}^\\top$: one dense\n$b \\times (5 + r)\\,b$ block product",
         "attention", w=3.0, h=0.6, size=9)
    _arrow(ax, (gx0 + len(order) * gcell / 2, y_g), (gx0 + len(order) * gcell / 2, 1.25))
    # the block grid
    gs, left, bottom = min(0.3, 2.7 / n_blocks), 7.35, 0.95
    for i, kinds in enumerate(grid):
        for j, kind in enumerate(kinds):
            ax.add_patch(Rectangle((left + j * gs, bottom + (n_blocks - 1 - i) * gs), gs, gs,
                                   facecolor=BLOCK_KINDS[kind] if kind else "white", edgecolor="0.6",
                                   linewidth=0.6, zorder=2))
        _text(ax, left - 0.15, bottom + (n_blocks - 0.5 - i) * gs, str(i), size=7.5)
    for j in range(n_blocks):
        _text(ax, left + (j + 0.5) * gs, bottom + n_blocks * gs + 0.13, str(j), size=7.5)
    ax.add_patch(Rectangle((left, bottom + (n_blocks - 1 - query) * gs), n_blocks * gs, gs, fill=False,
                           edgecolor=ACCENT, linewidth=2.0, zorder=3))
    _text(ax, left + n_blocks * gs / 2, bottom + n_blocks * gs + 0.38, "key block", size=8.5)
    _text(ax, left - 0.45, bottom + n_blocks * gs / 2, "query block", size=8.5, rotation=90)
    for k, kind in enumerate(BLOCK_KINDS):
        lx = left - 0.2 + 1.0 * k
        ax.add_patch(Rectangle((lx, 0.35), 0.22, 0.22, facecolor=BLOCK_KINDS[kind], edgecolor=INK, linewidth=0.6))
        _text(ax, lx + 0.3, 0.46, kind, size=8.5, ha="left")
    _text(ax, width / 2, height - 0.25, "BigBird: gather whole key blocks, multiply dense blocks", size=12,
          weight="bold")
    return _finish(fig)
