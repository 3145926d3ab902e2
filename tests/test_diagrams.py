"""dlcourse.diagrams: every figure has its labels, none of its texts collide, and it renders to PNG."""

from __future__ import annotations

import importlib
import inspect
import io
import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import dlcourse  # noqa: E402
from dlcourse import diagrams  # noqa: E402
from dlcourse.bert import diagrams as bert_diagrams  # noqa: E402
from dlcourse.gan import diagrams as gan_diagrams  # noqa: E402
from dlcourse.gpt import diagrams as gpt_diagrams  # noqa: E402
from dlcourse.selfsup import diagrams as selfsup_diagrams  # noqa: E402
from dlcourse.seq2seq import diagrams as seq2seq_diagrams  # noqa: E402
from dlcourse.sparse import diagrams as sparse_diagrams  # noqa: E402
from dlcourse.t5 import diagrams as t5_diagrams  # noqa: E402
from dlcourse.transformer import diagrams as transformer_diagrams  # noqa: E402
from dlcourse.vae import diagrams as vae_diagrams  # noqa: E402
from dlcourse.vit import diagrams as vit_diagrams  # noqa: E402

DIAGRAMS = [
    seq2seq_diagrams.seq2seq_attention,
    transformer_diagrams.residual_layers,
    transformer_diagrams.encoder_decoder_transformer,
    gpt_diagrams.gpt_block,
    transformer_diagrams.attention_masks,
    vit_diagrams.vit_input_pipeline,
    gan_diagrams.gan_step_gradients,
    bert_diagrams.bert_input_embeddings,
    bert_diagrams.bert_pretraining_heads,
    selfsup_diagrams.simclr_pipeline,
    vae_diagrams.vae_reparameterization,
    t5_diagrams.t5_encoder_decoder,
    sparse_diagrams.bigbird_blocks,
]


def texts_of(fig: Figure) -> list[Text]:
    """Every visible, non-empty text of ``fig``: figure texts, axes texts and titles, legend entries."""
    found = list(fig.texts)
    for ax in fig.axes:
        found += ax.texts + [ax.title, ax._left_title, ax._right_title]
        if ax.get_legend() is not None:
            found += ax.get_legend().get_texts()
    for legend in fig.legends:
        found += legend.get_texts()
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def labels_of(fig: Figure) -> list[str]:
    return [t.get_text() for t in texts_of(fig)]


def assert_legible(fig: Figure, tolerance: float = 0.5) -> None:
    """No two texts of ``fig`` overlap (by more than ``tolerance`` pixels each way), every text lies inside
    the figure, and every box label (a text sharing a ``gid`` "box…" with a patch) lies inside its box.

    Draws on an Agg canvas: a figure closed in pyplot keeps only a base canvas, which cannot draw itself."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = texts_of(fig)
    boxes = {t: t.get_window_extent(renderer) for t in texts}
    for a, b in itertools.combinations(texts, 2):
        ba, bb = boxes[a], boxes[b]
        dx = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
        dy = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
        assert dx <= tolerance or dy <= tolerance, f"{a.get_text()!r} overlaps {b.get_text()!r}"
    page = fig.bbox
    for t, bb in boxes.items():
        assert (bb.x0 >= page.x0 - 1 and bb.x1 <= page.x1 + 1 and bb.y0 >= page.y0 - 1 and bb.y1 <= page.y1 + 1), \
            f"{t.get_text()!r} sticks out of the figure"
    for ax in fig.axes:
        patches = {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith("box")}
        for t in ax.texts:
            if (t.get_gid() or "").startswith("box"):
                outer, inner = patches[t.get_gid()].get_window_extent(renderer), boxes[t]
                assert (inner.x0 >= outer.x0 and inner.x1 <= outer.x1 and inner.y0 >= outer.y0
                        and inner.y1 <= outer.y1), f"label {t.get_text()!r} spills out of its box"


def png_bytes(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60)
    return buffer.getvalue()


def test_every_chapters_figure_is_checked_here():
    """Each chapter's figures live in its package's ``diagrams`` module; every function there that draws one
    (returns a Figure) is in DIAGRAMS, so a new figure cannot skip the checks below."""
    found = []
    for package in dlcourse.CHAPTERS.values():
        try:
            module = importlib.import_module(f"{package}.diagrams")
        except ModuleNotFoundError:
            continue
        found += [fn for name, fn in vars(module).items() if inspect.isfunction(fn) and not name.startswith("_")
                  and fn.__module__ == module.__name__ and fn.__annotations__.get("return") == "Figure"]
    assert len(found) == 13 and set(found) == set(DIAGRAMS)


@pytest.mark.parametrize("draw", DIAGRAMS, ids=lambda f: f.__name__)
def test_figure_is_closed_notebook_sized_legible_and_renders(draw):
    before = plt.get_fignums()
    fig = draw()
    assert isinstance(fig, Figure)
    assert plt.get_fignums() == before, "the figure must not stay open in pyplot (a notebook would show it twice)"
    assert 9 <= fig.get_figwidth() <= 11
    assert_legible(fig)
    assert png_bytes(fig).startswith(b"\x89PNG")


def test_seq2seq_attention_labels():
    labels = labels_of(seq2seq_diagrams.seq2seq_attention("3 mai 2021", "2021-05-03", step=3))
    for c in "3mai2021":
        assert c in labels
    assert labels.count("\u2423") == 2  # the two spaces of the source
    for key in ["<sos>", "query $s_{t-1}$", "$c_t$", "$h_{1}$", "$h_{10}$", "decoder GRU",
                "input $y_{t-1}$\n(teacher forcing)"]:
        assert key in labels, key
    assert labels.count("GRU") == 20
    assert any("step t = 3" in s for s in labels)


def attention_lines(fig: Figure):
    return [p for ax in fig.axes for p in ax.patches if p.get_gid() == "attention-weight"]


def test_seq2seq_attention_weights_are_a_distribution_drawn_by_width_and_opacity():
    source = "3 mai 2021"
    fig = seq2seq_diagrams.seq2seq_attention(source, "2021-05-03", step=3)
    lines = attention_lines(fig)
    assert len(lines) == len(source)
    widths = [p.get_linewidth() for p in lines]
    alphas = [p.get_alpha() for p in lines]
    assert sum(widths) / diagrams.ATTENTION_LINE_WIDTH == pytest.approx(1.0)
    assert max(widths) > 3 * min(widths) and max(alphas) > 2 * min(alphas)
    assert sorted(range(len(lines)), key=widths.__getitem__) == sorted(range(len(lines)), key=alphas.__getitem__)
    # Step 3 writes the third digit of the year: the widest line comes from h_9, the source's second "2".
    assert widths.index(max(widths)) == 8
    printed = [float(t.get_text()) for t in fig.axes[0].texts if t.get_text().startswith("0.")]
    assert len(printed) == len(source) and sum(printed) == pytest.approx(1.0, abs=0.01 * len(source))


def test_seq2seq_attention_takes_given_weights_and_checks_arguments():
    fig = seq2seq_diagrams.seq2seq_attention("abc", "cab", step=1, weights=[1, 2, 5])
    widths = [p.get_linewidth() / diagrams.ATTENTION_LINE_WIDTH for p in attention_lines(fig)]
    assert widths == pytest.approx([1 / 8, 2 / 8, 5 / 8])
    with pytest.raises(ValueError):
        seq2seq_diagrams.seq2seq_attention("abc", "cab", step=4)
    with pytest.raises(ValueError):
        seq2seq_diagrams.seq2seq_attention("abc", "cab", step=1, weights=[1, 2])
    assert sum(seq2seq_diagrams.alignment_weights("3 mai 2021", "2021-05-03", 10)) == pytest.approx(1.0)


@pytest.mark.parametrize(("source", "target", "step"), [
    ("03.03.21", "2021-03-03", 1), ("3 mai 2021", "2021-05-03", 10), ("on 12/4/99", "1999-12-04", 6),
])
def test_seq2seq_attention_stays_legible_for_other_steps_and_dates(source, target, step):
    fig = seq2seq_diagrams.seq2seq_attention(source, target, step=step)
    assert_legible(fig)
    assert len(attention_lines(fig)) == len(source)


def test_residual_layers_labels():
    labels = labels_of(transformer_diagrams.residual_layers())
    assert labels.count("LayerNorm") == 2
    assert labels.count("sublayer\n(attention or FFN)") == 2
    assert labels.count("residual") == 2
    assert any(s.startswith("post-norm") for s in labels) and any(s.startswith("pre-norm") for s in labels)
    assert r"$y = x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$" in labels


def test_encoder_decoder_transformer_labels():
    labels = labels_of(transformer_diagrams.encoder_decoder_transformer())
    for key in ["self-attention", "masked self-attention", "cross-attention", "keys,\nvalues", "linear",
                "softmax", "input embedding", "output embedding", "encoder\nlayer\n× N", "decoder\nlayer\n× N"]:
        assert key in labels, key
    assert labels.count("add & LayerNorm") == 5
    assert labels.count("feed-forward (FFN)") == 2
    assert labels.count("positional\nencoding") == 2


def test_gpt_block_labels():
    labels = labels_of(gpt_diagrams.gpt_block())
    for key in ["causal self-attention", "MLP (GELU)", "final LayerNorm", "token embedding $W_E$",
                "position embedding $W_P$", "softmax", "transformer\nblock\n× N"]:
        assert key in labels, key
    assert labels.count("LayerNorm") == 2
    assert any(s.startswith("LM head") for s in labels) and any(s.startswith("tied weights") for s in labels)


def test_mask_grids():
    grids = transformer_diagrams.mask_grids(6)
    assert grids["padding"][0] == [True] * 4 + [False] * 2
    assert grids["causal"][2] == [True] * 3 + [False] * 3
    assert grids["both"][5] == [True] * 4 + [False] * 2
    assert all(row[0] for grid in grids.values() for row in grid)  # no softmax row left empty
    with pytest.raises(ValueError):
        transformer_diagrams.mask_grids(1)


@pytest.mark.parametrize("n", [3, 6, 10])
def test_attention_masks(n):
    fig = transformer_diagrams.attention_masks(n)
    assert_legible(fig)
    labels = labels_of(fig)
    for key in ["padding (key) mask", "causal mask", "padding + causal", "allowed: score kept",
                "blocked: score → −∞", "$q_{1}$", f"$k_{{{n}}}$"]:
        assert key in labels, key
    grids = transformer_diagrams.mask_grids(n)
    for ax, grid in zip(fig.axes, grids.values(), strict=True):
        cells = [p for p in ax.patches if p.get_gid() is None]
        assert len(cells) == n * n
        allowed = to_rgba(diagrams.COLOURS["allowed"])
        assert sum(p.get_facecolor() == allowed for p in cells) == sum(map(sum, grid))


def test_assert_legible_catches_colliding_texts_and_spilling_labels():
    fig = Figure(figsize=(10, 3))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.text(0.5, 0.5, "attention")
    ax.text(0.51, 0.5, "weights")
    with pytest.raises(AssertionError, match="overlaps"):
        assert_legible(fig)
    fig, (ax,) = diagrams._canvas(10, 3)
    diagrams._box(ax, 5, 1.5, "a label far wider than its box", "norm", w=0.5)
    with pytest.raises(AssertionError, match="spills"):
        assert_legible(fig)
    plt.close(fig)


def test_vit_input_pipeline_labels_and_grid():
    fig = vit_diagrams.vit_input_pipeline(grid=4)
    labels = labels_of(fig)
    for key in ["flatten each\npatch", "linear\nprojection $E$", "put [CLS]\nin front", "position\nembeddings",
                "Transformer\nencoder × L", "LayerNorm,\nhead on [CLS]", "$(N,\\ C P^2)$", "$(N{+}1,\\ D)$"]:
        assert key in labels, key
    assert [str(i) for i in range(1, 17)] == [s for s in labels if s.isdigit()]  # patches numbered row by row
    assert_legible(vit_diagrams.vit_input_pipeline(grid=6))
    with pytest.raises(ValueError):
        vit_diagrams.vit_input_pipeline(grid=1)


def test_gan_step_gradients_cuts_the_discriminator_step_and_updates_one_network_per_step():
    fig = gan_diagrams.gan_step_gradients()
    left, right = ([t.get_text() for t in ax.texts] for ax in fig.axes)
    assert ".detach()" in left and ".detach()" not in right
    assert "$\\nabla J_D$" in left and "$\\nabla J_G$" in right and "through D" in right
    assert "opt_D.step(): only D moves" in left and "opt_G.step(): only G moves" in right
    for ax, updated in zip(fig.axes, ("D", "G"), strict=True):  # the updated network has the red outline
        boxes = {t.get_text(): t.get_gid() for t in ax.texts if (t.get_gid() or "").startswith("box")}
        edges = {p.get_gid(): p.get_edgecolor() for p in ax.patches if (p.get_gid() or "").startswith("box")}
        red = [name for name, gid in boxes.items() if edges[gid] == to_rgba(diagrams.ACCENT)]
        assert red == [updated]


def test_bert_input_embeddings_sums_three_embeddings_per_token():
    fig = bert_diagrams.bert_input_embeddings()
    labels = labels_of(fig)
    tokens = bert_diagrams.BERT_EXAMPLE
    assert bert_diagrams.bert_segments(tokens) == [0] * 6 + [1] * 4
    for key in ["token\nembeddings", "segment\nembeddings", "position\nembeddings", "[CLS]", "##s",
                "$E_{[\\mathrm{CLS}]}$", "$E_{\\#\\#\\mathrm{s}}$", "$E_{0}$", f"$E_{{{len(tokens) - 1}}}$"]:
        assert key in labels, key
    assert labels.count("$E_A$") == 6 and labels.count("$E_B$") == 4  # A up to and including the first [SEP]
    adds = [p for p in fig.axes[0].patches if type(p).__name__ == "Circle" and p.get_facecolor() == to_rgba("white")]
    assert len(adds) == 2 * len(tokens)  # token + segment + position: two additions per column
    assert any("LayerNorm" in s for s in labels)
    assert_legible(bert_diagrams.bert_input_embeddings(("[CLS]", "a", "[SEP]")))
    with pytest.raises(ValueError):
        bert_diagrams.bert_segments(["[CLS]", "a"])


def test_bert_pretraining_heads_put_mlm_on_masked_positions_and_nsp_on_cls():
    fig = bert_diagrams.bert_pretraining_heads()
    labels = labels_of(fig)
    assert labels.count("[MASK]") == 1 and "cannot" not in labels  # the input shows [MASK], not the word
    for key in ["pooler: tanh($W_p h_0 + b_p$)", "NSP: linear → 2", "IsNext or NotNext?",
                "dense → GELU → LayerNorm", "decoder $E_{\\mathrm{word}}^\\top$ + bias", "softmax over the vocabulary",
                "$h_{0}$", "$h_{9}$"]:
        assert key in labels, key
    assert any("\\sum_{i \\in M}" in s for s in labels) and any('original "cannot"' in s for s in labels)
    red = [t.get_text() for t in fig.axes[0].texts if to_rgba(t.get_color()) == to_rgba(diagrams.ACCENT)]
    assert "[MASK]" in red
    two = bert_diagrams.bert_pretraining_heads(masked=(2, 7), original="penguin")
    assert labels_of(two).count("[MASK]") == 2
    assert_legible(two)
    for bad in [(0,), (5,), ()]:  # [CLS], [SEP], nothing masked
        with pytest.raises(ValueError):
            bert_diagrams.bert_pretraining_heads(masked=bad)


def test_simclr_pipeline_has_two_branches_through_one_encoder_and_a_head():
    labels = labels_of(selfsup_diagrams.simclr_pipeline())
    assert labels.count("encoder $f$ (CNN)") == 2 and labels.count("projection head $g$") == 2
    for key in ["image $x$", "augment $t \\sim \\mathcal{T}$", "augment $t' \\sim \\mathcal{T}$", "shared weights",
                "$h_i$", "$h_j$", "$z_i$", "$z_j$"]:
        assert key in labels, key
    assert any(s.startswith("NT-Xent") for s in labels)
    assert any("drop $g$" in s for s in labels)


def test_vae_reparameterization_draws_the_noise_outside_and_the_gradient_into_mu_and_sigma():
    fig = vae_diagrams.vae_reparameterization()
    labels = labels_of(fig)
    for key in ["$x$", "encoder", "$\\mu$", "$\\log\\sigma^2$", "$z = \\mu + \\sigma \\odot \\varepsilon$",
                "$\\varepsilon \\sim \\mathcal{N}(0, I)$", "decoder", "logits", "$\\bar z$",
                "$\\bar\\mu = \\bar z$", "$\\bar\\sigma = \\bar z \\odot \\varepsilon$", "loss\n(sum)"]:
        assert key in labels, key
    assert any(s.startswith("reconstruction") for s in labels) and any("closed form" in s for s in labels)
    assert any("no gradient flows into" in s for s in labels)
    assert any("Sampling" in s and "directly" in s for s in labels)
    red = [p for p in fig.axes[0].patches if type(p).__name__ == "FancyArrowPatch"
           and p.get_edgecolor() == to_rgba(diagrams.ACCENT)]
    assert len(red) == 5  # recon → decoder → z → σ, z → μ, and on into the encoder; none ends at ε


def test_t5_encoder_decoder_labels():
    labels = labels_of(t5_diagrams.t5_encoder_decoder())
    for key in ["Thank you <X> me to your party <Y> week.", "<pad> <X> for inviting <Y> last", "final RMSNorm",
                "RMSNorm → self-attention + $B$", "RMSNorm → causal self-attention + $B$", "RMSNorm → cross-attention",
                "encoder outputs $E$", "targets: <X> for inviting <Y> last <Z>"]:
        assert key in labels, key
    assert labels.count("shared embedding") == 2 and labels.count("RMSNorm → feed-forward") == 2
    assert labels.count("× N") == 2
    assert any("every decoder block" in s for s in labels) and any("LM head" in s for s in labels)
    assert any(s.startswith("$B$: relative position bias") for s in labels)


def test_bigbird_block_layout():
    grid = sparse_diagrams.bigbird_block_layout(8, r=2, seed=0)
    assert grid[0] == ["global"] * 8 and grid[7] == ["global"] * 8
    for i in range(1, 7):
        row = grid[i]
        assert row[0] == row[7] == "global"
        assert row.count("random") == 2
        assert all(row[j] in ("window", "global") for j in (i - 1, i, i + 1))
    assert grid == sparse_diagrams.bigbird_block_layout(8, r=2, seed=0)  # seeded
    assert sparse_diagrams.bigbird_block_layout(6, r=0, seed=1)[3].count("random") == 0
    with pytest.raises(ValueError):
        sparse_diagrams.bigbird_block_layout(8, r=4)


def test_bigbird_blocks_gathers_five_plus_r_key_blocks_and_colours_the_grid():
    fig = sparse_diagrams.bigbird_blocks(n_blocks=8, r=2, query=3)
    labels = labels_of(fig)
    for key in ["window", "global", "random", "key block", "query block", "query block 3\n$(b \\times d)$"]:
        assert key in labels, key
    assert any("gathered" in s and "$(5 + r)\\,b \\times d$" in s for s in labels)
    assert any("dense" in s and "block product" in s for s in labels)
    grid = sparse_diagrams.bigbird_block_layout(8, r=2, seed=0)
    colours = {to_rgba(c): kind for kind, c in sparse_diagrams.BLOCK_KINDS.items()}
    cells = [colours.get(p.get_facecolor()) for p in fig.axes[0].patches if type(p).__name__ == "Rectangle"]
    # the key row (8), the gathered tensor (5 + r = 7), the grid (64), the legend (3)
    assert cells.count("random") == 2 + 2 + sum(row.count("random") for row in grid) + 1
    assert cells[8:15] == ["window"] * 3 + ["global"] * 2 + ["random"] * 2
    assert_legible(sparse_diagrams.bigbird_blocks(n_blocks=10, r=3, query=6, seed=2))
    with pytest.raises(ValueError):
        sparse_diagrams.bigbird_blocks(query=1)
