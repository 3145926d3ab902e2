"""Projector scale: one switch that makes every figure and widget of a chapter readable from the back of a room.

At 1920×1080 and 100 % zoom, a figure's 8-point tick labels come out about 11 px high and a widget's labels
13 px; JupyterLab's Presentation Mode enlarges code and prose but neither of those. :func:`scale` enlarges
both by one factor:

* figures are drawn at ``factor`` times the resolution (matplotlib's ``figure.dpi``): every font, line and
  marker is ``factor`` times as many pixels, and the layout stays the same;
* widgets get ``factor`` times the font size, row height, label width and slider handle (the CSS variables
  of ipywidgets' own style sheet, set for the page by a style element in the cell's output).

Call it in a notebook (``presentation.scale(1.6)``), or set ``DLCOURSE_PRESENTATION=1.6`` before starting
Jupyter: every chapter's set-up cell then applies it (:func:`dlcourse.runtime.setup_notebook`). Figures made
after the call are scaled; call it before the widgets are built.
"""

from __future__ import annotations

import os

ENV = "DLCOURSE_PRESENTATION"
_TRUE = {"1", "true", "yes", "on"}  # the words an on/off switch of the environment accepts (runtime's too)
_FALSE = {"0", "false", "no", "off"}
DEFAULT = 1.6
LIMITS = (1.0, 3.0)

# ipywidgets' defaults (its style sheet), in px
_WIDGET_SIZES = {"--jp-widgets-font-size": 13, "--jp-widgets-inline-height": 28,
                 "--jp-widgets-inline-label-width": 80, "--jp-widgets-inline-width": 300,
                 "--jp-widgets-slider-handle-size": 16, "--jp-widgets-slider-track-thickness": 4,
                 "--jp-widgets-inline-margin": 4, "--jp-widgets-input-padding": 4}

_base_dpi: float | None = None  # figure.dpi before the first call, so calls do not compound
current = 1.0


def from_environment() -> float | None:
    """The factor ``DLCOURSE_PRESENTATION`` asks for: None when unset or off, :data:`DEFAULT` for a bare
    true value (``1``, ``on``...), else the number given. ValueError for anything else."""
    raw = os.environ.get(ENV, "").strip().lower()
    if raw in _FALSE | {""}:
        return None
    if raw in _TRUE:
        return DEFAULT
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{ENV}={raw!r}: give a factor such as 1.6, or 1 / on for {DEFAULT}") from None


def widget_css(factor: float) -> str:
    """A style element that scales ipywidgets' sizes (and the course's HTML widget content) by ``factor``."""
    sizes = "; ".join(f"{name}: {round(px * factor)}px" for name, px in _WIDGET_SIZES.items())
    font = round(_WIDGET_SIZES["--jp-widgets-font-size"] * factor)
    return (f"<style>:root, .jp-Notebook {{ {sizes}; }}\n"
            f".jp-OutputArea .widget-html-content, .jp-OutputArea .widget-label, .jp-OutputArea .widget-readout "
            f"{{ font-size: {font}px; line-height: 1.3; }}</style>")


def scale(factor: float = DEFAULT, show: bool = True) -> float:
    """Scale figures and widgets by ``factor`` (1 restores the defaults); returns it. ValueError outside
    :data:`LIMITS`. With ``show`` the widgets' style element is displayed in the calling cell's output."""
    global _base_dpi, current
    if not LIMITS[0] <= factor <= LIMITS[1]:
        raise ValueError(f"a presentation scale of {factor:g}: choose between {LIMITS[0]:g} and {LIMITS[1]:g}")
    import matplotlib as mpl
    import matplotlib.pyplot as plt  # noqa: F401 - the notebook backend sets its own resolution on import

    if _base_dpi is None:
        _base_dpi = float(mpl.rcParams["figure.dpi"])
    mpl.rcParams["figure.dpi"] = _base_dpi * factor
    current = factor
    if show:
        from IPython.display import HTML, display

        display(HTML(widget_css(factor)))
    return factor
