"""Architecture diagrams drawn with matplotlib: the conventions and drawing helpers every chapter's figures share.

Each chapter's figures are in its package (``dlcourse.<chapter>.diagrams``: seq2seq, transformer, bert, gpt, t5,
vit, gan, vae, sparse, selfsup). Each figure function returns a :class:`matplotlib.figure.Figure` made only of
patches, arrows and text (no image file is read), already closed in pyplot so that a notebook shows it once, as
the cell's value, and it never piles up in pyplot's list of open figures; ``fig.savefig`` still works. Figures
are about 10 inches wide. Data coordinates are inches (one axes fills each figure, or each panel, with equal
aspect), so the sizes in the figures read directly as inches on the page.

Artists carry a ``gid`` where a test or a reader may want to find them again: a box and its label share
``"box<n>"``; the attention-weight lines of chapter 01's ``seq2seq_attention`` are ``"attention-weight"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch
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


def _finish(fig: Figure, alt: str) -> Figure:
    """Take ``fig`` out of pyplot's figure list (so a notebook displays it once), give it its text alternative
    ``alt`` (what the diagram shows, in plain words: :mod:`dlcourse.figures`) and return it."""
    import matplotlib.pyplot as plt

    from dlcourse import figures

    plt.close(fig)
    return figures.describe(fig, alt)


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
