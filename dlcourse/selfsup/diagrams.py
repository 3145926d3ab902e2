"""Chapter 11's figure: SimCLR's two views, shared encoder, projection head and NT-Xent.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from dlcourse.diagrams import ACCENT, _arrow, _box, _canvas, _finish, _text


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
    return _finish(fig, "SimCLR: one image, two random augmentations, the same encoder f for both, a projection "
                        "head g, and the NT-Xent loss on the two projections; after pre-training the head is "
                        "dropped and the encoder's features are used downstream.")
