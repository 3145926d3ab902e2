"""Every figure's text alternative (dlcourse/figures.py): what is read from a figure, a given description first,
and IPython showing every figure as an image with it."""

from __future__ import annotations

import base64
import html
import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from dlcourse import figures  # noqa: E402
from dlcourse.widgets.base import as_png  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_a_line_plot_is_read_with_its_title_axes_and_each_lines_course():
    fig, ax = plt.subplots()
    ax.plot([0, 10, 20], [2.5, 1.0, 0.4], label="training loss")
    ax.plot([0, 20], [0.7, 0.7], label="_nolegend_")  # a reference line
    ax.set(title="Loss", xlabel="step", ylabel="loss")
    text = figures.alt_text(fig)
    assert text.startswith("Figure: 'Loss'")
    assert "x: step" in text and "y: loss" in text
    assert "training loss from 2.5 at 0 to 0.4 at 20 (lowest 0.4, highest 2.5)" in text
    assert "a line at 0.7" in text


def test_categories_on_an_axis_are_read_as_words_and_nothing_stops_a_figure_from_showing(monkeypatch):
    fig, ax = plt.subplots()
    ax.plot(["1–12\n(91)", "13–24", "25+"], [0.9, 0.7, 0.2], "o-", label="exact match")
    assert "exact match from 0.9 at 1–12 (91) to 0.2 at 25+" in figures.alt_text(fig)
    ax.plot([0.1, 0.2], ["low", "high"], label="sideways")  # categories up the y axis: left out, no error
    monkeypatch.setattr(figures, "_images", lambda ax: 1 / 0)
    assert "exact match" in figures.alt_text(fig)
    monkeypatch.setattr(figures, "read", lambda fig, labels: 1 / 0)
    assert figures.alt_text(fig) and 'alt="' in figures.to_html(fig)


def test_bars_are_read_by_their_tick_labels_and_heights():
    fig, ax = plt.subplots()
    ax.bar(range(3), [0.1, 0.7, 0.2])
    ax.set_xticks(range(3), ["cat", "dog", "fish"])
    ax.set_ylabel("probability")
    assert "3 bars (cat: 0.1, dog: 0.7, fish: 0.2)" in figures.alt_text(fig)
    fig, ax = plt.subplots()
    ax.barh(range(20), np.arange(20.0))
    text = figures.alt_text(fig)
    assert "20 bars" in text and "and 8 more" in text  # long listings are cut


def test_a_labelled_heatmap_names_its_largest_cells_and_a_picture_its_size():
    fig, (a, b) = plt.subplots(1, 2)
    weights = np.array([[0.1, 0.9], [0.6, 0.4]])
    im = a.imshow(weights)
    a.set_xticks([0, 1], ["le", "chat"])
    a.set_yticks([0, 1], ["the", "cat"])
    fig.colorbar(im, ax=a, label="attention weight")
    b.imshow(np.zeros((28, 28, 3)))
    b.axis("off")
    text = figures.alt_text(fig)
    assert "2 panels" in text
    assert "a 2×2 grid of values from 0.1 to 0.9; largest the – chat: 0.9, cat – le: 0.6, cat – chat: 0.4" in text
    assert "a picture of 28×28 pixels" in text
    assert "colour scale: attention weight" in text


def test_points_a_diagrams_labels_and_a_given_description():
    fig, ax = plt.subplots()
    ax.scatter([0, 1, 2], [1, 0, 1], label="real")
    assert "3 points (real)" in figures.alt_text(fig)
    ax.plot([0, 2, 4, 6], [1, 1, 3, 5], ".", label="fakes")  # markers only: a cloud, not a line's course
    assert "4 points (fakes) around (3, 2)" in figures.alt_text(fig)
    fig, ax = plt.subplots()
    ax.axis("off")
    ax.text(0, 0, "Encoder")
    ax.text(1, 0, "Decoder")
    assert "labels Encoder, Decoder" in figures.alt_text(fig)
    figures.describe(fig, "The encoder  feeds\nthe decoder.")
    assert figures.alt_text(fig) == "The encoder feeds the decoder."  # the labels are the description's to say
    ax.plot([0, 1], [0, 2], label="signal")
    assert figures.alt_text(fig) == ("The encoder feeds the decoder. Drawn: signal from 0 at 0 to 2 at 1 "
                                     "(lowest 0, highest 2).")
    empty = plt.figure()
    assert figures.alt_text(empty)  # never empty


def test_the_html_carries_the_alt_escaped_and_a_caption_only_when_asked():
    fig, ax = plt.subplots()
    ax.set_title('say "<b>"')
    ax.plot([1, 2])
    page = figures.to_html(fig)
    alt = re.search(r'alt="([^"]*)"', page).group(1)
    assert html.unescape(alt) == figures.alt_text(fig) and "<b>" not in alt
    data = base64.b64decode(re.search(r"base64,([^\"]+)", page).group(1))
    assert Image.open(io.BytesIO(data)).format == "PNG"
    assert "<figcaption>" not in page
    figures.describe(fig, "A rising line.", caption=True)
    assert "<figcaption>A rising line.</figcaption>" in figures.to_html(fig)


def test_a_views_figure_is_drawn_once_at_its_size_with_its_alt():
    fig, ax = plt.subplots(figsize=(4, 2), dpi=50)
    ax.plot([3, 1])
    shown = as_png(fig)
    assert Image.open(io.BytesIO(shown.data)).size == (200, 100)
    bundle = shown._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"} and bundle["text/plain"] == figures.alt_text(fig)
    assert 'alt="Figure: a line from 3' in bundle["text/html"]


def test_ipython_shows_every_figure_with_its_text_alternative():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        assert figures.install(shell)
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], label="accuracy")
        data, _ = shell.display_formatter.format(fig)
        assert "image/png" not in data  # the picture once, inside the HTML
        assert data["text/plain"] == figures.alt_text(fig)
        assert 'alt="Figure: accuracy from 1' in data["text/html"]
    finally:
        InteractiveShell.clear_instance()
    assert figures.install(None) is False  # outside IPython: nothing to do


# Every set of colours that tells categories apart (the package's palettes, as drawn) ...
def _palettes() -> dict[str, list[str]]:
    from dlcourse import diagrams
    from dlcourse.bert.widgets import KIND_COLOURS
    from dlcourse.sparse.diagrams import BLOCK_KINDS
    from dlcourse.t5.widgets import T5_KINDS

    return {"lines and beams (figures.CATEGORICAL)": list(figures.CATEGORICAL),
            "BERT's masking kinds": [KIND_COLOURS[k] for k in ("mask", "random", "kept")],
            "BigBird's block kinds": list(BLOCK_KINDS.values()),
            "T5's attention kinds (blocked, self, cross)": list(T5_KINDS),
            "masks: kept and blocked cells": [diagrams.COLOURS["allowed"], diagrams.COLOURS["blocked"]],
            "the highlighted path and the rest": [diagrams.ACCENT, diagrams.INK]}


MIN_DELTA_E = 10.0  # CAM02-UCS; about where two colours stop being confused in a small mark
DEFICIENCIES = ("deuteranomaly", "protanomaly", "tritanomaly")


def _closest(colours: list[str], deficiency: str | None) -> tuple[float, str, str]:
    import itertools

    from colorspacious import cspace_convert, deltaE
    from matplotlib.colors import to_rgb

    rgb = np.array([to_rgb(c) for c in colours])
    if deficiency:
        rgb = np.clip(cspace_convert(rgb, {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}, "sRGB1"),
                      0, 1)
    return min((float(deltaE(rgb[i], rgb[j], input_space="sRGB1")), colours[i], colours[j])
               for i, j in itertools.combinations(range(len(colours)), 2))


@pytest.mark.parametrize("deficiency", (None,) + DEFICIENCIES)
def test_every_categorical_palette_stays_apart_under_colour_vision_deficiencies(deficiency):
    close = {name: _closest(colours, deficiency) for name, colours in _palettes().items()}
    failing = {name: c for name, c in close.items() if c[0] < MIN_DELTA_E}
    assert not failing, f"{deficiency or 'normal vision'}: colours closer than ΔE {MIN_DELTA_E}: {failing}"


def test_the_check_finds_matplotlibs_default_red_and_green_too_close():
    """tab10's orange and green: fine for normal vision, confused under protanomaly (so a pass above means
    something)."""
    pair = ["#ff7f0e", "#2ca02c"]
    assert _closest(pair, None)[0] > MIN_DELTA_E > _closest(pair, "protanomaly")[0]


def _contrast(a: str, b: str = "white") -> float:
    from matplotlib.colors import to_rgb

    def luminance(c: str) -> float:
        channels = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in to_rgb(c)]
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_category_colours_are_legible_on_white():
    from dlcourse.bert.widgets import KIND_COLOURS

    assert min(_contrast(c) for c in figures.CATEGORICAL) >= 3.0  # lines and marks (WCAG 1.4.11)
    assert min(_contrast(c) for c in KIND_COLOURS.values()) >= 4.5  # text (WCAG 1.4.3)


def test_lines_change_dash_as_well_as_colour_and_ten_classes_are_named_in_place():
    from IPython.core.interactiveshell import InteractiveShell

    before = plt.rcParams["axes.prop_cycle"]
    try:
        figures.install(InteractiveShell.instance())
        fig, ax = plt.subplots()
        lines = [ax.plot([0, 1], [i, i])[0] for i in range(len(figures.CATEGORICAL))]
        assert len({line.get_color() for line in lines}) == len(figures.CATEGORICAL)
        styles = {str(line._dash_pattern) for line in lines}
        assert len(styles) == len(figures.CATEGORICAL), styles
    finally:
        InteractiveShell.clear_instance()
        plt.rcParams["axes.prop_cycle"] = before
    from dlcourse.vae import widgets

    names = [f"class {i}" for i in range(10)]
    rng = np.random.default_rng(0)
    import torch

    labels = np.repeat(np.arange(10), 20)
    latent = widgets.LatentMap("toy", rng.normal(size=(200, 2)) + labels[:, None], labels,
                               lambda z: torch.zeros(len(z), 784))
    state = widgets.explorer_state(latent, 0.0, 0.0)
    fig = widgets.draw_latent_explorer(state, names)
    placed = [t.get_text() for t in fig.axes[0].texts if t.get_gid() == "category-name"]
    assert placed == names


# matplotlib's categorical palettes and named tableau colours: fine for normal vision, not checked for the rest
UNCHECKED = re.compile(r"""["']tab:[a-z]+["']|get_cmap\(\s*["'](tab10|tab20[bc]?|Set[123]|Paired|Dark2|Accent|"""
                       r"""Pastel[12])["']""")


def _scopes():
    """(where, source) for every function of the package and every code cell of the solution notebooks."""
    import ast
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parent.parent
    for path in sorted((root / "dlcourse").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{path.relative_to(root)}:{node.name}", ast.get_source_segment(text, node) or ""
    for path in sorted((root / "solutions").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                yield f"{path.name}, cell {cell.get('id')}", cell.source


def test_categories_are_coloured_from_the_checked_palette_or_named_in_place():
    """Any colour for categories outside figures.CATEGORICAL (a tableau name, a qualitative colour map) must come
    with the categories' names written in place (figures.name_in_place) in the same function or cell."""
    found = [where for where, source in _scopes() if UNCHECKED.search(source) and "name_in_place" not in source]
    assert not found, f"categorical colours not checked for colour-vision deficiencies, no names in place: {found}"
    assert UNCHECKED.search('color="tab:red"') and UNCHECKED.search("plt.get_cmap('tab10')(k)")
    assert not UNCHECKED.search('cmap="viridis"') and not UNCHECKED.search('color="C1"')
