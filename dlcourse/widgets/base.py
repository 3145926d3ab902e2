"""The widget pattern: state is computed by plain functions, a thin ipywidgets view draws it.

:func:`interactive_view` wires controls to a ``render(**values)`` function that draws into an
``Output`` widget whenever a control changes. Everything a widget decides (what to show for given control
values) lives in ``render``'s helpers, which are ordinary functions tested without a browser.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import ipywidgets as W


class InteractiveView(W.VBox):
    """Controls above an output area; ``render`` is called with the controls' values on every change."""

    def __init__(self, controls: dict[str, W.ValueWidget], render: Callable[..., Any], title: str = "") -> None:
        self.controls = controls
        self._render = render
        self.output = W.Output()
        self.last_values: dict[str, Any] = {}
        self.last_result: Any = None
        self.renders = 0
        header = [W.HTML(f"<b>{title}</b>")] if title else []
        for control in controls.values():
            legible(control)
            if isinstance(control, W.Text | W.Textarea) and not control.continuous_update:
                control.add_class(ON_LEAVE)  # (Combobox is a Text)
        row = W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap"))  # wrap, never squeeze
        super().__init__(header + [row, self.output])
        for control in controls.values():
            control.observe(lambda _change: self.refresh(), names="value")
        self.refresh(raise_errors=True)  # a broken render fails the cell that builds the widget, visibly

    def values(self) -> dict[str, Any]:
        return {name: control.value for name, control in self.controls.items()}

    def refresh(self, raise_errors: bool = False) -> None:
        """Redraw for the current control values (the figure goes into ``self.output``).

        An error while rendering is raised when ``raise_errors`` (the first render), else shown in the output
        area, where the person moving the slider sees it.
        """
        import traceback

        import matplotlib.pyplot as plt
        from IPython.display import HTML, display

        self.last_values = self.values()
        try:
            result = self._render(**self.last_values)
        except Exception:
            if raise_errors:
                raise
            self.output.clear_output(wait=True)
            with self.output:
                print(traceback.format_exc())
            return
        self.output.clear_output(wait=True)
        with self.output:
            if isinstance(result, plt.Figure):
                display(as_png(result))
                plt.close(result)
            elif isinstance(result, str):  # an HTML fragment
                display(HTML(result))
        self.last_result = result
        self.renders += 1


SLIDERS = (W.IntSlider, W.FloatSlider, W.FloatLogSlider, W.IntRangeSlider, W.FloatRangeSlider, W.SelectionSlider)


def legible(control: W.Widget, slider_width: str = "420px") -> W.Widget:
    """The same look in every chapter, readable on a lecture screen: a description is never cut short
    ("temperat…"), and a slider without a width of its own gets ``slider_width`` (ipywidgets' default leaves
    a long-labelled slider a track of about 120 px, where a small drag jumps across the range)."""
    style = getattr(control, "style", None)
    if getattr(control, "description", "") and style is not None and hasattr(style, "description_width"):
        style.description_width = "initial"
    if isinstance(control, SLIDERS) and not control.layout.width:
        control.layout.width = slider_width
    if isinstance(control, W.Button) and not control.layout.width:
        control.layout.width = "auto"  # as wide as its text
    return control


def interactive_view(
    controls: dict[str, W.ValueWidget], render: Callable[..., Any], title: str = ""
) -> InteractiveView:
    """Build an :class:`InteractiveView` (see the module docstring)."""
    return InteractiveView(controls, render, title)


# CSS classes that tell a reader of the page (the browser tests) how a view works: a control marked ON_DEMAND
# changes nothing on screen until the view's RUN button is pressed (a sampler's seed, say).
ON_DEMAND = "dlcourse-on-demand"
RUN = "dlcourse-run"
# and a text box marked ON_LEAVE sends its text when it is left (or Enter is pressed), not as it is typed in
ON_LEAVE = "dlcourse-on-leave"


def on_demand(*controls: W.Widget, run: W.Button) -> None:
    """Mark ``controls`` as taking effect only when ``run`` is pressed (see :data:`ON_DEMAND`)."""
    for control in controls:
        control.add_class(ON_DEMAND)
    run.add_class(RUN)


def grey_out_idle(controls: dict[str, W.ValueWidget], knobs: Sequence[str], outcome: Callable[..., Any],
                  triggers: Sequence[str]) -> Callable[[], None]:
    """Disable each control in ``knobs`` while moving it could change nothing on screen, as decided by
    ``outcome(**values)`` (what the figure depends on, compared with ``==``): a block size with no random
    blocks, cycles of a linear schedule. A control that silently does nothing misleads; a greyed-out one
    says so. Re-checked whenever a control in ``triggers`` changes; returns the check."""

    def another(control: W.ValueWidget) -> Any:
        options = getattr(control, "options", None)
        if options:
            values = [o[1] if isinstance(o, tuple) else o for o in options]
            return next((v for v in values if v != control.value), control.value)
        return control.max if control.value != control.max else control.min

    def check(_change: Any = None) -> None:
        values = {name: control.value for name, control in controls.items()}
        here = outcome(**values)
        for knob in knobs:
            controls[knob].disabled = outcome(**dict(values, **{knob: another(controls[knob])})) == here

    for name in triggers:
        controls[name].observe(check, names="value")
    check()
    return check


FIXED_LAYOUT = "_dlcourse_fixed_layout"


def fixed_layout(fig: Any) -> Any:
    """Mark ``fig`` as laid out by hand (fixed margins, everything inside the figure), so that moving its
    artists later never needs a new layout (what :class:`KeptFigure` relies on). Returns ``fig``."""
    setattr(fig, FIXED_LAYOUT, True)
    return fig


def as_png(fig: Any) -> Any:
    """``fig`` ready to display: the PNG drawn once at its own size, shown as an image with its text alternative
    (see :mod:`dlcourse.figures`; ``.data`` holds the PNG). This is how a view shows every figure."""
    from dlcourse import figures

    return figures.shown(fig)


class KeptFigure:
    """A figure drawn once and then updated in place, so a slider's redraw costs only what changed.

    ``draw(state)`` builds the figure, with fixed margins and every artist inside it (see
    :func:`fixed_layout`); ``update(figure, state)`` moves its artists to a new state; the figure is built
    again whenever ``key(state)`` changes (a different layout: another valley, another size).
    """

    def __init__(self, draw: Callable[[Any], Any], update: Callable[[Any, Any], None],
                 key: Callable[[Any], Hashable] = lambda state: None) -> None:
        self.draw, self.update, self.key = draw, update, key
        self.figure: Any = None
        self._key: Hashable = None

    def show(self, state: Any):
        """The figure for ``state``."""
        import matplotlib.pyplot as plt

        key = self.key(state)
        if self.figure is None or key != self._key:
            if self.figure is not None:
                plt.close(self.figure)
            self.figure, self._key = fixed_layout(self.draw(state)), key
        else:
            self.update(self.figure, state)
        return self.figure
