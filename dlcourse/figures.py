"""Every figure the course shows carries a text alternative: what a screen reader reads, and what a page shows when
the picture cannot be seen.

A figure is shown as an HTML ``<img>`` whose ``alt`` is :func:`alt_text`: the description a figure was given with
:func:`describe` (every diagram says in a sentence what it draws), followed by what is read from the figure
itself — its titles, its axes' labels and ranges, and per panel what is drawn: each line's name with where it
starts, ends and its extremes, a cloud of markers by its size and centre, each bar's label and height, an
image's size and its largest cells. :func:`install` (called by every chapter's set-up cell) makes IPython show
every matplotlib figure this way, the ones a cell draws with pyplot too; the widgets show theirs through
:func:`shown`.

The PNG is drawn once at the figure's own size (see :func:`png`).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

# Colours for categories (lines, beams, kinds of token): five of the Okabe–Ito palette's colours — its orange, sky
# blue and yellow are too faint on white for a line. Under simulated deuteranomaly, protanomaly and tritanomaly at
# full severity every two of them stay at least 10 apart in CAM02-UCS, and each has at least 3:1 against white
# (tests/test_figures.py). Lines drawn one after another also change dash (:func:`install` sets both as
# matplotlib's cycle), so no line is told apart by its colour alone; a figure with more categories than colours
# writes each category's name in place.
CATEGORICAL = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000")
DASHES = ("-", "--", ":", "-.", (0, (5, 2, 1, 2, 1, 2)))

ALT = "_dlcourse_alt"
CAPTION = "_dlcourse_caption"
MAX_ITEMS = 12  # bars, lines or ticks listed by name before "and N more"
MAX_CHARS = 1200


def name_in_place(ax: Any, points: Any, labels: Any, names: Sequence[str], fontsize: float = 7) -> None:
    """Write each category's name at the median of its points (``points`` (N, 2), ``labels`` (N,) integers
    indexing ``names``): a map of more categories than :data:`CATEGORICAL` holds is read by its labels, not by
    colour alone. A category without points gets no label."""
    import numpy as np

    points, labels = np.asarray(points, dtype=float), np.asarray(labels)
    for k, name in enumerate(names):
        mine = points[labels == k]
        if len(mine):
            x, y = np.median(mine, axis=0)
            ax.text(float(x), float(y), name, fontsize=fontsize, ha="center", va="center", gid="category-name",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75})


def describe(fig: Any, text: str, caption: bool = False) -> Any:
    """Give ``fig`` the description ``text`` (a sentence or two: what the figure shows, and what it shows about
    the result). With ``caption``, the description is also printed under the picture for everyone to read.
    Returns ``fig``."""
    setattr(fig, ALT, " ".join(text.split()))
    setattr(fig, CAPTION, bool(caption))
    return fig


def _number(x: Any) -> str:
    try:
        return f"{float(x):.3g}"
    except (TypeError, ValueError):  # a category on the axis
        return _label(str(x))


def _label(text: str) -> str:
    return " ".join(text.replace("$", "").split())


def _listing(items: list[str]) -> str:
    if len(items) <= MAX_ITEMS:
        return ", ".join(items)
    return ", ".join(items[:MAX_ITEMS]) + f" and {len(items) - MAX_ITEMS} more"


def _lines(ax: Any) -> list[str]:
    import numpy as np

    found = []
    for line in ax.get_lines():
        try:
            y = np.asarray(line.get_ydata(), dtype=float).ravel()
        except (TypeError, ValueError):  # categories up the y axis: read by the x axis only
            continue
        x = np.asarray(line.get_xdata(), dtype=object).ravel()
        finite = np.isfinite(y)
        if len(y) < 2 or not finite.any() or not line.get_visible():
            continue
        name = line.get_label()
        if line.get_linestyle() in ("None", "", " ") and line.get_marker() not in (None, "None", "", " "):
            named = f" ({name})" if name and not name.startswith("_") else ""
            try:  # markers only: a cloud of points, read by where it lies
                xs = np.asarray(line.get_xdata(), dtype=float).ravel()[finite]
                where = f" around ({_number(np.median(xs))}, {_number(np.median(y[finite]))})"
            except (TypeError, ValueError):
                where = ""
            found.append(f"{int(finite.sum())} points{named}{where}")
            continue
        name = name if name and not name.startswith("_") else "a line"
        if len(y) == 2 and np.ptp(y[finite]) == 0:  # a reference line (axhline)
            found.append(f"{name} at {_number(y[finite][0])}")
            continue
        yf, xf = y[finite], x[finite] if len(x) == len(y) else np.arange(len(y))[finite]
        found.append(f"{name} from {_number(yf[0])} at {_number(xf[0])} to {_number(yf[-1])} at {_number(xf[-1])}"
                     f" (lowest {_number(yf.min())}, highest {_number(yf.max())})")
    return found


def _bars(ax: Any) -> list[str]:
    from matplotlib.container import BarContainer

    found = []
    for container in ax.containers:
        if not isinstance(container, BarContainer):
            continue
        horizontal = getattr(container, "orientation", "vertical") == "horizontal"
        where_ticks, labels = (ax.get_yticks(), ax.get_yticklabels()) if horizontal else (ax.get_xticks(),
                                                                                           ax.get_xticklabels())
        ticks = {round(t, 6): lab.get_text() for t, lab in zip(where_ticks, labels, strict=False)}
        values = []
        for patch in container.patches:
            if horizontal:
                where, value = patch.get_y() + patch.get_height() / 2, patch.get_width()
            else:
                where, value = patch.get_x() + patch.get_width() / 2, patch.get_height()
            name = _label(ticks.get(round(where, 6), "")) or _number(where)
            values.append(f"{name}: {_number(value)}")
        label = container.get_label()
        named = f"{label} " if label and not label.startswith("_") else ""
        found.append(f"{len(values)} bars {named}({_listing(values)})")
    return found


def _images(ax: Any) -> list[str]:
    import numpy as np

    found = []
    for image in ax.get_images():
        data = np.asarray(image.get_array())
        if data.ndim == 3:
            found.append(f"a picture of {data.shape[0]}×{data.shape[1]} pixels")
            continue
        rows, cols = data.shape[:2]
        text = f"a {rows}×{cols} grid of values from {_number(np.nanmin(data))} to {_number(np.nanmax(data))}"
        ylabels = [_label(t.get_text()) for t in ax.get_yticklabels()]
        xlabels = [_label(t.get_text()) for t in ax.get_xticklabels()]
        if len(ylabels) == rows and len(xlabels) == cols and all(ylabels) and all(xlabels) and data.size:
            flat = np.argsort(np.nan_to_num(data, nan=-np.inf), axis=None)[::-1][:3]
            top = [f"{ylabels[i // cols]} – {xlabels[i % cols]}: {_number(data.flat[i])}" for i in flat]
            text += f"; largest {', '.join(top)}"
        found.append(text)
    return found


def _scatter(ax: Any) -> list[str]:
    from matplotlib.collections import PathCollection

    found = []
    for collection in ax.collections:
        if isinstance(collection, PathCollection):
            n = len(collection.get_offsets())
            label = collection.get_label()
            named = f" ({label})" if label and not label.startswith("_") else ""
            found.append(f"{n} points{named}")
    return found


def _axes(ax: Any, labels: bool) -> str:
    parts = []
    title = _label(ax.get_title())
    if title:
        parts.append(f"'{title}'")
    drawn = []
    for reader in (_lines, _bars, _images, _scatter):
        try:
            drawn += reader(ax)
        except Exception:  # noqa: BLE001 — an artist read wrongly costs its sentence, never the figure
            continue
    if ax.axison and (drawn or ax.get_xlabel() or ax.get_ylabel()):
        for name, label, (low, high) in (("x", ax.get_xlabel(), ax.get_xlim()), ("y", ax.get_ylabel(), ax.get_ylim())):
            if label:
                parts.append(f"{name}: {_label(label)} ({_number(low)} to {_number(high)})")
    if drawn:
        parts.append("; ".join(drawn))
    elif labels and (ax.texts or ax.patches):
        words = [_label(t.get_text()) for t in ax.texts if t.get_text().strip()]
        if words:
            parts.append(f"labels {_listing(words)}")
    return ", ".join(parts)


def read(fig: Any, labels: bool = True) -> str:
    """What can be read from ``fig`` itself: its title and, per panel, titles, axes and what is drawn (with
    ``labels``, a panel without data is read by the words written in it: a diagram's labels)."""
    parts = []
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        parts.append(f"'{_label(suptitle.get_text())}'")
    panels = [ax for ax in fig.get_axes() if ax.get_visible() and not hasattr(ax, "_colorbar")]
    described = [d for d in (_axes(ax, labels) for ax in panels) if d]
    if len(panels) > 1 and described:
        parts.append(f"{len(panels)} panels")
        parts += [f"panel {i + 1}: {d}" for i, d in enumerate(described)]
    else:
        parts += described
    bars = [ax for ax in fig.get_axes() if hasattr(ax, "_colorbar")]
    for ax in bars:
        label = ax.get_ylabel() or ax.get_xlabel()
        if label:
            parts.append(f"colour scale: {_label(label)}")
    return "; ".join(parts)


def alt_text(fig: Any) -> str:
    """The figure's text alternative: its description (see :func:`describe`), then what :func:`read` finds (a
    described figure's labels are left out: the description says what they say)."""
    given = getattr(fig, ALT, "")
    try:
        found = read(fig, labels=not given)
    except Exception:  # noqa: BLE001 — a figure is always shown, with what can be said of it
        found = ""
    text = f"{given} Drawn: {found}." if given and found else given or (f"Figure: {found}." if found else "")
    text = text or "A figure without titles, labels or data the course can read."
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def png(fig: Any) -> bytes:
    """``fig`` as PNG bytes, drawn once at its own size.

    Jupyter's inline display draws twice (once more to find the tight bounding box), and matplotlib's ``savefig``
    lays the figure out again before drawing when it has a colour bar; both cost a redraw, most of a widget's
    latency. Figures drawn by the course lay themselves out (``tight_layout`` or fixed margins), so nothing is
    lost; a figure on another canvas is saved with ``savefig``."""
    buffer = io.BytesIO()
    canvas = fig.canvas
    if hasattr(canvas, "buffer_rgba"):  # Agg (the inline backend's canvas): draw once, encode the pixels
        from PIL import Image

        canvas.draw()
        width, height = canvas.get_width_height(physical=True)
        Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
            buffer, format="png", compress_level=1)
    else:
        fig.savefig(buffer, format="png")
    return buffer.getvalue()


def to_html(fig: Any, data: bytes | None = None, alt: str | None = None) -> str:
    """The figure as HTML: an ``<img>`` with its text alternative (and the description as a visible caption
    when :func:`describe` asked for one). ``data``: the PNG, when it is already drawn; else it is drawn as
    Jupyter's inline display draws a figure a cell shows (cropped to what is drawn). ``alt``: the text
    alternative, when it is already read (:func:`alt_text`)."""
    if data is None:
        from IPython.core.pylabtools import print_figure

        data = print_figure(fig, "png", bbox_inches="tight")
    alt = html.escape(alt_text(fig) if alt is None else alt, quote=True)
    img = (f'<img src="data:image/png;base64,{base64.b64encode(data).decode()}" alt="{alt}" '
           'style="max-width: 100%; height: auto">')
    if getattr(fig, CAPTION, False):
        caption = html.escape(getattr(fig, ALT, ""))
        return f'<figure style="margin: 0">{img}<figcaption>{caption}</figcaption></figure>'
    return img


class Shown:
    """A figure drawn for display: IPython shows it as :func:`to_html` (text: its text alternative). ``data`` is
    the PNG."""

    def __init__(self, fig: Any) -> None:
        self.data = png(fig)
        self.alt = alt_text(fig)
        self._html = to_html(fig, self.data, self.alt)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return {"text/html": self._html, "text/plain": self.alt}


def shown(fig: Any) -> Shown:
    """What a view displays for ``fig``: the picture with its text alternative, drawn once now."""
    return Shown(fig)


def install(shell: Any = None) -> bool:
    """Show every matplotlib figure in this IPython session as :func:`to_html` (with its text alternative)
    instead of a bare PNG, and draw lines in :data:`CATEGORICAL` colours and :data:`DASHES`; False (and nothing
    changed) outside IPython."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    plt.close(plt.figure())  # the backend loads now (the inline one registers its formatters), not after this

    from matplotlib import cycler

    plt.rcParams["axes.prop_cycle"] = cycler(color=list(CATEGORICAL), linestyle=list(DASHES))
    formatters = shell.display_formatter.formatters
    formatters["text/html"].for_type(Figure, to_html)
    formatters["text/plain"].for_type(Figure, lambda fig, p, cycle: p.text(alt_text(fig)))
    formatters["image/png"].pop(Figure, None)  # the same picture, once
    return True
