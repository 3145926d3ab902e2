"""Chapter 06's figure: image → patches → tokens → the encoder's input.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from dlcourse.diagrams import INK, _add, _arrow, _box, _canvas, _finish, _text


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
    return _finish(fig, f"How an image becomes the Vision Transformer's input: the image cut into {grid} by {grid} "
                        "patches, each flattened and projected by one shared linear layer, a [CLS] vector put in "
                        "front, position embeddings added, then the Transformer encoder and a classification head "
                        "on the [CLS] state; each stage is labelled with its tensor shape.")
