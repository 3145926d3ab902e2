"""Chapter 06's package code (the ViT weight layout, timed training, widgets), and chapter 02's reference attention
block that the chapter's layers use."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from dlcourse import checks
from dlcourse.attention import capture_attention
from dlcourse.transformer.model import MultiHeadAttention
from dlcourse.vit import model as vit
from dlcourse.vit import train as vision
from dlcourse.vit import widgets as wvit


def test_reference_attention_equals_nn_multiheadattention_with_masks():
    torch.manual_seed(0)
    q, kv = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    pad = torch.tensor([[False] * 7, [False] * 4 + [True] * 3])
    bias = torch.randn(5, 7)
    for kwargs in ({}, {"key_padding_mask": pad}, {"attn_mask": bias, "key_padding_mask": pad},
                   {"attn_mask": torch.rand(5, 7) < 0.3, "average_attn_weights": False}):
        ref = nn.MultiheadAttention(16, 4, batch_first=True)
        checks.compare_modules(MultiHeadAttention(16, 4), ref, q, kv, kv, tol=checks.Tolerance(1e-5, 2e-5),
                               output_names=("output", "weights"), **kwargs)
    out, none = MultiHeadAttention(16, 4)(q, q, q, need_weights=False)
    assert none is None and out.shape == (2, 5, 16)
    with pytest.raises(ValueError):
        MultiHeadAttention(10, 3)


def test_reference_attention_is_refused_where_chapter_02_forbids_the_fused_kernel():
    block = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    with pytest.raises(checks.ForbiddenCall), checks.forbid(("scaled_dot_product_attention",)):
        block(x, x, x)


def test_capture_attention_reads_the_reference_block():
    block = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    (amap,) = capture_attention(block, x, x, x, need_weights=False)
    assert amap.weights.shape == (1, 2, 3, 3)
    checks.assert_close(amap.weights.sum(-1), torch.ones(1, 2, 3))


@pytest.mark.parametrize(("hf_name", "course"), [
    ("vit.embeddings.cls_token", ("embeddings.cls_token", None)),
    ("vit.embeddings.patch_embeddings.projection.weight", ("embeddings.projection.weight", None)),
    ("patch_embeddings.projection.bias", ("projection.bias", None)),
    ("vit.layers.3.attention.k_proj.weight", ("layers.3.self_attn.in_proj_weight", 1)),
    ("attention.v_proj.bias", ("self_attn.in_proj_bias", 2)),
    ("vit.layers.0.attention.o_proj.bias", ("layers.0.self_attn.out_proj.bias", None)),
    ("vit.layers.1.layernorm_before.weight", ("layers.1.norm1.weight", None)),
    ("layernorm_after.bias", ("norm2.bias", None)),
    ("vit.layers.1.mlp.fc2.weight", ("layers.1.mlp.fc2.weight", None)),
    ("vit.layernorm.weight", ("norm.weight", None)),
    ("classifier.bias", ("head.bias", None)),
])
def test_course_names(hf_name, course):
    assert vit.course_names(hf_name) == course


def test_in_course_layout_computes_what_hugging_face_computes_with_its_gradients():
    from transformers import ViTForImageClassification

    hf = vit.randomize(ViTForImageClassification(vit.hf_config()), seed=1).eval()
    wrapped = vit.InCourseLayout(hf, lambda out: out.logits)
    state = vit.course_state_dict(hf)
    assert set(state) == set(dict(wrapped.named_parameters()))
    assert state["embeddings.projection.weight"].shape == (32, 3 * 4 * 4)
    checks.assert_close(state["layers.1.self_attn.in_proj_weight"][32:64],
                        hf.state_dict()["vit.layers.1.attention.k_proj.weight"])
    x = torch.randn(2, 3, 16, 16, requires_grad=True)
    checks.assert_close(wrapped(x), hf(x).logits, tol=checks.Tolerance(1e-6, 1e-6))
    wrapped(x).sum().backward()
    hf(x).logits.sum().backward()
    conv = hf.vit.embeddings.patch_embeddings.projection.weight.grad
    checks.assert_close(wrapped.embeddings.projection.weight.grad, conv.reshape(32, -1),
                        tol=checks.Tolerance(1e-5, 1e-6))
    value_grad = getattr(wrapped.layers, "0").self_attn.in_proj_weight.grad[64:]  # rows 2D..3D: W_V
    checks.assert_close(value_grad, hf.vit.layers[0].attention.v_proj.weight.grad, tol=checks.Tolerance(1e-5, 1e-6))


def test_randomize_makes_every_parameter_matter():
    from transformers.models.vit.modeling_vit import ViTEmbeddings

    emb = vit.randomize(ViTEmbeddings(vit.hf_config()), seed=0)
    assert float(emb.cls_token.detach().abs().min()) > 0
    assert float(emb.patch_embeddings.projection.bias.detach().abs().min()) > 0
    again = vit.randomize(ViTEmbeddings(vit.hf_config()), seed=0)
    checks.assert_close(dict(emb.state_dict()), dict(again.state_dict()))


def test_small_cnn_shapes_and_refuses_sizes_it_cannot_pool():
    assert vision.SmallCNN(28)(torch.randn(3, 1, 28, 28)).shape == (3, 10)
    assert vision.SmallCNN(8, classes=4)(torch.randn(2, 1, 8, 8)).shape == (2, 4)
    with pytest.raises(ValueError):
        vision.SmallCNN(30)


def test_lr_factor_warms_up_then_decays_to_zero():
    checks.assert_close([vision.lr_factor(f) for f in (0.0, 0.025, 0.05, 0.525, 1.0, 1.5)],
                        [0.0, 0.5, 1.0, 0.5, 0.0, 0.0], tol=checks.Tolerance(0, 1e-12))


def test_fit_for_learns_a_separable_problem_within_its_step_budget():
    torch.manual_seed(0)
    x = torch.randn(512, 1, 8, 8)
    y = (x.mean(dim=(1, 2, 3)) > 0).long()
    model = vision.SmallCNN(8, classes=2, width=8)
    run = vision.fit_for(model, x, y, seconds=60, max_steps=150, test=(x, y), lr=1e-2, batch_size=64)
    assert run.steps == 150 and len(run.loss) == 150 and run.seconds < 60
    assert run.accuracy > 0.9 and run.loss[-1] < run.loss[0]
    assert run.parameters == vision.parameter_count(model) and run.images_per_second > 0
    assert vision.accuracy(model, x, y, batch_size=100) == run.accuracy


def test_patch_grid_counts_and_cost():
    grid = wvit.patch_grid_state((224, 224, 3), 16)
    assert (grid.rows, grid.num_patches, grid.sequence_length, grid.vector_size) == (14, 196, 197, 768)
    assert grid.attention_entries == 197**2 and grid.attention_flops(768) == 2 * 197**2 * 768
    assert wvit.patch_grid_state((28, 28), 7).vector_size == 49
    with pytest.raises(ValueError):
        wvit.patch_grid_state((28, 28), 5)
    assert wvit.patch_sizes(28, 28) == [2, 4, 7, 14]


def test_cls_attention_state_picks_the_cls_row_without_itself():
    from dlcourse.attention import AttentionMap

    weights = torch.softmax(torch.randn(1, 2, 5, 5), dim=-1)
    maps = [AttentionMap("layers.0", weights, None, None)]
    head1 = wvit.cls_attention_state(maps, 0, 1, (2, 2))
    np.testing.assert_allclose(head1, weights[0, 1, 0, 1:].reshape(2, 2).numpy())
    mean = wvit.cls_attention_state(maps, 0, wvit.MEAN, (2, 2))
    np.testing.assert_allclose(mean, weights[0, :, 0, 1:].mean(0).reshape(2, 2).numpy(), rtol=1e-6)
    for bad in (lambda: wvit.cls_attention_state(maps, 1, 0, (2, 2)),
                lambda: wvit.cls_attention_state(maps, 0, 2, (2, 2)),
                lambda: wvit.cls_attention_state(maps, 0, 0, (3, 2))):
        with pytest.raises(ValueError):
            bad()


def test_position_similarity_finds_a_learned_layout_and_not_a_random_one():
    rows = cols = 4
    ii, jj = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    freqs = torch.arange(1, 9, dtype=torch.float32) * 0.4
    smooth = torch.cat([torch.sin(ii.reshape(-1, 1) * freqs), torch.cos(ii.reshape(-1, 1) * freqs),
                        torch.sin(jj.reshape(-1, 1) * freqs), torch.cos(jj.reshape(-1, 1) * freqs)], dim=1)
    pos = torch.cat([torch.randn(1, 32), smooth])[None]  # (1, 17, 32), [CLS] first
    sim = wvit.position_similarity(pos, (rows, cols))
    assert sim.shape == (4, 4, 4, 4)
    np.testing.assert_allclose(np.einsum("ijij->ij", sim), np.ones((4, 4)), rtol=1e-9)
    assert wvit.neighbour_score(sim) > 0.1
    random_sim = wvit.position_similarity(torch.randn(1, 17, 256, generator=torch.Generator().manual_seed(0)), (4, 4))
    assert abs(wvit.neighbour_score(random_sim)) < 0.05
    with pytest.raises(ValueError):
        wvit.position_similarity(pos, (3, 4))


def test_the_widgets_render():
    import matplotlib

    matplotlib.use("Agg")
    image = np.random.default_rng(0).random((28, 28))
    explorer = wvit.patch_explorer({"random": image, "colour": np.random.default_rng(1).random((56, 56, 3))})
    assert explorer.renders == 1
    explorer.controls["patch"].value = 14
    assert explorer.renders == 2 and explorer.last_values["patch"] == 14
    explorer.controls["image"].value = "colour"
    assert explorer.last_values["image"] == "colour"

    weights = torch.softmax(torch.randn(1, 2, 17, 17), dim=-1)
    from dlcourse.attention import AttentionMap

    maps = [AttentionMap(f"layers.{i}", weights, None, None) for i in range(3)]
    viewer = wvit.cls_attention_viewer(lambda i: (maps, image, f"image {i}"), count=5, grid=(4, 4), layers=3, heads=2)
    viewer.controls["head"].value = 1
    viewer.controls["index"].value = 3
    assert viewer.renders == 3 and viewer.last_values == {"index": 3, "layer": 2, "head": 1}
    sims = wvit.position_similarity_viewer({"a": (torch.randn(1, 17, 8), (4, 4)), "b": (torch.randn(1, 50, 8), (7, 7))})
    sims.controls["model"].value = "b"
    assert sims.controls["row"].max == 6 and sims.controls["col"].max == 6  # the sliders follow the grid
    sims.controls["row"].value = 5
    assert sims.renders == 3 and sims.last_result.axes[1].get_title() == "patch (5, 2) against every position"
    sims.controls["model"].value = "a"
    assert sims.controls["row"].max == 3 and sims.controls["row"].value == 3


def test_principal_components_order_variance_and_share_it():
    gen = torch.Generator().manual_seed(0)
    filters = torch.randn(200, 3, generator=gen) * torch.tensor([3.0, 1.0, 0.1])  # variance mostly on axis 0
    components, share = vision.principal_components(filters)
    assert components.shape == (3, 3) and share.shape == (3,)
    assert float(share.sum()) == pytest.approx(1.0)
    assert bool((share[:-1] >= share[1:]).all()) and float(share[0]) > 0.85
    assert abs(float(components[0, 0])) == pytest.approx(1.0, abs=0.01)


def test_dct_basis_is_orthonormal_and_low_frequency_share_tells_smooth_from_noise():
    basis = vision.dct_basis(7)
    assert torch.allclose(basis @ basis.T, torch.eye(7, dtype=torch.float64), atol=1e-12)
    ramp = torch.linspace(-1, 1, 7).repeat(7, 1)  # a smooth horizontal ramp
    checker = torch.tensor([[(-1.0) ** (i + j) for j in range(7)] for i in range(7)])  # the highest frequency
    shares = vision.low_frequency_share(torch.stack([ramp, checker, torch.ones(7, 7)]), 7)
    assert float(shares[0]) > 0.95 and float(shares[1]) < 0.01 and float(shares[2]) == pytest.approx(1.0)
    noise = torch.randn(4000, 49, generator=torch.Generator().manual_seed(1))
    assert float(vision.low_frequency_share(noise, 7).mean()) == pytest.approx(6 / 49, abs=0.01)


def test_attention_entropy_is_zero_for_one_token_and_log_t_for_uniform():
    weights = torch.zeros(2, 1, 4, 4)
    weights[0, 0, 0, 2] = 1.0
    weights[1, 0, 0] = 0.25
    entropy = vision.attention_entropy(weights)
    assert entropy.shape == (2, 1)
    assert float(entropy[0, 0]) == pytest.approx(0.0) and float(entropy[1, 0]) == pytest.approx(np.log(4))
