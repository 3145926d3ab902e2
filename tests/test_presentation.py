"""The projector scale (dlcourse.presentation): figures and widgets enlarged by one factor, undone by 1."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from dlcourse import presentation, runtime  # noqa: E402
from dlcourse.widgets.base import as_png  # noqa: E402


@pytest.fixture(autouse=True)
def restore():
    yield
    presentation.scale(1.0, show=False)


def _png_size(fig) -> tuple[int, int]:
    import io

    size = Image.open(io.BytesIO(as_png(fig).data)).size
    plt.close(fig)
    return size


def test_figures_made_after_the_call_are_drawn_larger_and_the_default_comes_back():
    plain = _png_size(plt.figure(figsize=(4, 2)))
    presentation.scale(1.6, show=False)
    presentation.scale(1.6, show=False)  # a second call does not compound
    big = _png_size(plt.figure(figsize=(4, 2)))
    assert big == (round(plain[0] * 1.6), round(plain[1] * 1.6))
    presentation.scale(1.0, show=False)
    assert _png_size(plt.figure(figsize=(4, 2))) == plain


def test_the_widgets_style_scales_fonts_rows_and_handles():
    css = presentation.widget_css(1.6)
    sizes = dict(re.findall(r"(--jp-widgets-[a-z-]+): (\d+)px", css))
    assert sizes["--jp-widgets-font-size"] == "21" and sizes["--jp-widgets-inline-height"] == "45"
    assert sizes["--jp-widgets-slider-handle-size"] == "26" and "font-size: 21px" in css
    assert presentation.widget_css(1.0).count("13px") >= 1


def test_the_environment_switch_and_its_errors(monkeypatch):
    for raw, factor in (("", None), ("0", None), ("off", None), ("1", 1.6), ("on", 1.6), ("2", 2.0), ("1.25", 1.25)):
        monkeypatch.setenv(presentation.ENV, raw)
        assert presentation.from_environment() == factor, raw
    monkeypatch.setenv(presentation.ENV, "big")
    with pytest.raises(ValueError, match="DLCOURSE_PRESENTATION='big'"):
        presentation.from_environment()
    for bad in (0.5, 5):
        with pytest.raises(ValueError, match="between 1 and 3"):
            presentation.scale(bad, show=False)


def test_every_chapters_set_up_cell_applies_the_environment_switch(monkeypatch, capsys):
    import warnings

    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # the set-up cell redirects warnings
    base = matplotlib.rcParams["figure.dpi"]
    monkeypatch.setenv(presentation.ENV, "2")
    runtime.setup_notebook(seed=0)
    assert matplotlib.rcParams["figure.dpi"] == 2 * base and presentation.current == 2
    assert "projector scale 2" in capsys.readouterr().out
