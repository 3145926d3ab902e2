"""bench/compare/modded.py: modded-nanogpt's elements checked against their definitions — ReLU², rotary
embeddings against the closed form of a rotation, the soft cap, QK-norm, zero-initialised projections, the U-net
skips and value embeddings, the record's Muon step and its schedule."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from test_compare import _module

from dlcourse.gpt.muon import orthogonalise

SIZE = dict(n_positions=64, n_embd=128, n_layer=4, n_head=4)


@pytest.fixture(scope="module")
def modded():
    return _module("modded")


def test_the_mlp_squares_a_relu_and_ablated_uses_gelu(modded):
    torch.manual_seed(0)
    mlp = modded.MLP(8, modded.Elements())
    x = torch.randn(3, 8)
    expected = F.linear(torch.relu(F.linear(x, mlp.c_fc.weight)) ** 2, mlp.c_proj.weight)
    torch.testing.assert_close(mlp(x), expected)
    gelu = modded.MLP(8, modded.Elements().without("relu2"))
    gelu.load_state_dict(mlp.state_dict())
    torch.testing.assert_close(gelu(x), F.linear(F.gelu(F.linear(x, mlp.c_fc.weight)), mlp.c_proj.weight))


def test_rotary_turns_each_pair_by_position_times_its_frequency(modded):
    D = 16
    w = modded.rotary_frequencies(D)
    assert w.shape == (D // 2,) and float(w[0]) == 1.0 and math.isclose(float(w[D // 4 - 1]), 1 / 1024, rel_tol=1e-6)
    assert bool((w[D // 4:] == 0).all())  # half of the pairs never turn
    torch.testing.assert_close(w[1] / w[0], w[2] / w[1])  # geometric
    x = torch.randn(2, 5, 3, D)
    y = modded.rotate(x, w)
    t, i, h = 3, 1, 2  # position 3, pair 1 (dimensions 1 and 1 + D/2), head 2: the closed form of a rotation
    a, b, angle = x[0, t, h, i], x[0, t, h, i + D // 2], t * float(w[i])
    torch.testing.assert_close(y[0, t, h, i], a * math.cos(angle) + b * math.sin(angle))
    torch.testing.assert_close(y[0, t, h, i + D // 2], -a * math.sin(angle) + b * math.cos(angle))
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))  # a rotation keeps lengths
    # the score of a rotated query and key depends on their distance only
    q, k = torch.randn(D), torch.randn(D)
    seq = lambda v: v.expand(1, 12, 1, D)  # noqa: E731 — the same vector at every position
    rq, rk = modded.rotate(seq(q), w)[0, :, 0], modded.rotate(seq(k), w)[0, :, 0]
    torch.testing.assert_close(rq[7] @ rk[4], rq[5] @ rk[2])
    assert not torch.allclose(rq[7] @ rk[4], rq[7] @ rk[6])


def test_queries_and_keys_are_rms_normalised_before_the_scores(modded):
    torch.manual_seed(1)
    attn = modded.Attention(16, 2, modded.Elements(rotary=False, value_embeddings=False), attn_scale=0.12)
    seen = {}
    original = F.scaled_dot_product_attention

    def spy(q, k, v, **kw):
        seen.update(q=q, k=k, scale=kw.get("scale"))
        return original(q, k, v, **kw)

    F.scaled_dot_product_attention = spy
    try:
        attn(torch.randn(2, 5, 16) * 7, None)
    finally:
        F.scaled_dot_product_attention = original
    for t in (seen["q"], seen["k"]):
        torch.testing.assert_close(t.pow(2).mean(-1), torch.ones(t.shape[:-1]), rtol=1e-4, atol=1e-4)
    assert seen["scale"] == 0.12


def test_the_soft_cap_bounds_the_logits_and_leaves_small_ones(modded):
    torch.manual_seed(2)
    model = modded.ModdedGPT(11, **SIZE, elements=modded.Elements(zero_init=False))
    with torch.no_grad():
        model.lm_head.weight.mul_(1000)
    logits = model(torch.randint(0, 11, (2, 9)))
    assert logits.abs().max() <= modded.SOFTCAP and logits.abs().max() > 0.99 * modded.SOFTCAP
    x = torch.tensor([0.01, -0.02])
    torch.testing.assert_close(modded.SOFTCAP * torch.tanh(x / modded.SOFTCAP), x, rtol=1e-5, atol=0)
    uncapped = modded.ModdedGPT(11, **SIZE, elements=modded.Elements(zero_init=False, softcap=False))
    uncapped.load_state_dict(model.state_dict())
    assert uncapped(torch.randint(0, 11, (2, 9))).abs().max() > 100


def test_zero_initialised_outputs_and_an_untied_head(modded):
    model = modded.ModdedGPT(11, **SIZE)
    ids = torch.randint(0, 11, (2, 9))
    assert bool((model(ids) == 0).all())  # a zero head: every character equally likely, loss log V at first
    assert model.lm_head.weight.data_ptr() != model.embed.weight.data_ptr()
    for block in model.blocks:
        assert not block.attn.c_proj.weight.any() and not block.mlp.c_proj.weight.any()
    tied = modded.ModdedGPT(11, **SIZE, elements=modded.Elements(untied=False))
    assert tied.lm_head.weight is tied.embed.weight
    assert tied(ids).abs().sum() > 0  # tied to the embedding, the head is not zero


def test_unet_skips_value_embeddings_and_the_x0_shortcut(modded):
    torch.manual_seed(3)
    model = modded.ModdedGPT(11, **SIZE, elements=modded.Elements(zero_init=False))
    assert model.value_pattern() == [0, 1, 0, 1] and len(model.value_embeds) == 2
    assert model.skip_weights.shape == (2,)
    ids = torch.randint(0, 11, (2, 9))
    base = model(ids)
    with torch.no_grad():
        model.skip_weights.zero_()  # no skips: a different output
    assert not torch.allclose(model(ids), base)
    plain = modded.ModdedGPT(11, **SIZE, elements=modded.Elements(zero_init=False, unet=False, value_embeddings=False,
                                                                  x0=False))
    assert modded.parameter_count(plain) < modded.parameter_count(model)  # no value tables
    # x0: a block's λ₁ mixes the normalised embedding in
    block, x, x0 = model.blocks[0], torch.randn(1, 3, 128), torch.randn(1, 3, 128)
    with torch.no_grad():
        block.lambdas.copy_(torch.tensor([0.0, 1.0]))
    torch.testing.assert_close(block(x, None, x0), block(x0, None, x0))
    with pytest.raises(ValueError, match="no element"):
        modded.Elements().without("bias")


def test_the_records_muon_step_and_schedule(modded):
    torch.manual_seed(4)
    w = torch.nn.Parameter(torch.randn(12, 4))
    opt = modded.ModdedMuon([w], lr=0.05, momentum=0.9)
    before = w.detach().clone()
    g1, g2 = torch.randn(12, 4), torch.randn(12, 4)
    w.grad = g1.clone()
    opt.step()
    buf = 0.1 * g1  # lerp(0, g, 1 − μ)
    update = g1.lerp(buf, 0.9)  # Nesterov: the gradient moved 90 % of the way to the momentum
    torch.testing.assert_close(w.detach(), before - 0.05 * math.sqrt(3) * orthogonalise(update))  # √(12 / 4)
    after_one = w.detach().clone()
    w.grad = g2.clone()
    opt.step()
    buf = buf.lerp(g2, 0.1)
    torch.testing.assert_close(w.detach(), after_one - 0.05 * math.sqrt(3) * orthogonalise(g2.lerp(buf, 0.9)))
    # constant, then a straight line to 0 over the last 40 %
    assert [modded.lr_factor(s, 100) for s in (0, 59, 60, 80, 99)] == pytest.approx([1, 1, 1, 0.5, 0.025])
    assert modded.muon_momentum(0) == 0.85 and modded.muon_momentum(150) == pytest.approx(0.9)
    assert modded.muon_momentum(300) == modded.muon_momentum(2000) == 0.95
    model = modded.ModdedGPT(11, **SIZE)
    adam, muon = modded.optimisers(model, lr_scale=0.5)
    assert adam.defaults["betas"] == (0.8, 0.95) and adam.defaults["weight_decay"] == 0
    assert sorted(g["lr"] for g in adam.param_groups) == pytest.approx([0.004, 0.02, 0.3])
    shapes = [tuple(p.shape) for p in muon.param_groups[0]["params"]]
    assert shapes.count((128, 128)) == 4 * 4  # q, k, v and the projection: each a matrix of its own
    modded.set_step(adam, muon, 90, 100)
    assert muon.param_groups[0]["lr"] == pytest.approx(0.025 * 0.25)
    assert muon.param_groups[0]["momentum"] == pytest.approx(0.85 + 0.1 * 0.3)
    owned = {id(p) for opt in (adam, muon) for g in opt.param_groups for p in g["params"]}
    assert owned == {id(p) for p in model.parameters()}  # every parameter, once


def test_the_harness_trains_the_record_with_its_own_rates_and_schedule(modded):
    from dataclasses import fields

    gpt = _module("gpt")
    assert set(gpt.ELEMENTS) == {f.name for f in fields(modded.Elements)}  # one ablation run per element
    assert gpt.VARIANTS["modded-without-unet"].without == ("unet",)
    assert [gpt.MODDED.lr_factor(s, 100) for s in (0, 60, 80)] == pytest.approx([1, 1, 0.5])
    model, _ = gpt.build(gpt.VARIANTS["modded-without-softcap"], 11)
    assert not model.elements.softcap and model.elements.unet
    pair = gpt.optimiser(gpt.MODDED, model, 0.5)
    assert sorted(g["rate"] for g in pair.param_groups) == pytest.approx([0.004, 0.02, 0.025, 0.3])
    record = gpt.run(gpt.MODDED, 0.25, steps=4, batch=2, eval_every=2)
    assert record["steps"] == 4 and [c["step"] for c in record["curve"]] == [2, 4]
    from dlcourse.datasets import shakespeare

    uniform = math.log(len(shakespeare.char_corpus().tokenizer))  # the zero head's loss at step 0
    assert record["curve"][1]["sample_loss"] < record["curve"][0]["sample_loss"] < uniform
    assert 0 < record["whole_held_out"] < uniform


def test_a_fused_qkv_matrix_is_orthogonalised_as_three(modded):
    torch.manual_seed(5)
    fused = torch.nn.Parameter(torch.randn(12, 4))
    apart = [torch.nn.Parameter(t.detach().clone()) for t in fused.detach().chunk(3)]
    together = modded.ModdedMuon([dict(params=[fused], parts=3)], lr=0.05, momentum=0.9)
    separate = modded.ModdedMuon(apart, lr=0.05, momentum=0.9)
    for _ in range(2):
        grad = torch.randn(12, 4)
        fused.grad = grad.clone()
        for p, g in zip(apart, grad.chunk(3), strict=True):
            p.grad = g.clone()
        together.step()
        separate.step()
    torch.testing.assert_close(fused.detach(), torch.cat([p.detach() for p in apart]))
    whole = torch.nn.Parameter(torch.randn(12, 4))  # one (12, 4) matrix moves another way
    whole.grad = torch.randn(12, 4)
    update = orthogonalise(whole.grad.lerp(0.1 * whole.grad, 0.9))
    assert not torch.allclose(update.chunk(3)[0], orthogonalise(whole.grad.chunk(3)[0]))


@pytest.fixture(scope="module")
def chapter_gpt():
    gpt = _module("gpt")
    return lambda: gpt.course_classes()["GPT"](11, **SIZE)


def test_a_graft_of_nothing_is_the_chapters_gpt(modded, chapter_gpt):
    torch.manual_seed(6)
    base = chapter_gpt()
    ids = torch.randint(0, 11, (2, 9))
    expected = base(ids).logits
    grafted = modded.GraftedGPT(base, 4, modded.Elements.only())
    torch.testing.assert_close(grafted(ids), expected)
    assert modded.parameter_count(grafted) == modded.parameter_count(base)
    assert modded.Elements.only("unet") == modded.Elements().without("relu2").without("qk_norm").without(
        "rotary").without("zero_init").without("untied").without("x0").without("value_embeddings").without("softcap")


def test_each_graft_changes_the_chapters_gpt_as_its_definition_says(modded, chapter_gpt):
    ids = torch.randint(0, 11, (2, 9))
    x = torch.randn(2, 9, 128)

    def grafted(*names):
        torch.manual_seed(7)
        return modded.GraftedGPT(chapter_gpt(), 4, modded.Elements.only(*names))

    plain = grafted()
    relu2 = grafted("relu2")
    mlp = relu2.blocks[0].mlp
    torch.testing.assert_close(relu2.feed_forward(0, x), mlp.c_proj(torch.relu(mlp.c_fc(x)) ** 2))
    rotary = grafted("rotary")
    assert rotary.wpe is None and modded.parameter_count(rotary) == modded.parameter_count(plain) - 64 * 128
    zero = grafted("zero_init")
    for block in zero.blocks:
        for proj in (block.attn.c_proj, block.mlp.c_proj):
            assert not proj.weight.any() and not proj.bias.any()
    blocks_do_nothing = zero.lm_head(zero.ln_f(zero.embed(ids) + zero.wpe(torch.arange(9))))
    torch.testing.assert_close(zero(ids), blocks_do_nothing)
    untied = grafted("untied")
    assert untied.lm_head.weight is not untied.embed.weight
    assert grafted("untied", "zero_init")(ids).abs().max() == 0
    assert plain.lm_head.weight is plain.embed.weight
    capped = grafted("softcap")
    with torch.no_grad():
        capped.embed.weight.mul_(1000)
    assert capped(ids).abs().max() <= modded.SOFTCAP
    values = grafted("value_embeddings")
    assert len(values.value_embeds) == 2 and values.value_pattern() == [0, 1, 0, 1]
    with torch.no_grad():
        for mix in values.value_lambdas:  # no table and λ₀ = 2: twice the values, as GPT-2 computes them
            mix.copy_(torch.tensor([2.0, 0.0]))
        plain_v = grafted()
        for block in plain_v.blocks:
            w, b = block.attn.c_attn.weight, block.attn.c_attn.bias
            w[256:] *= 2
            b[256:] *= 2
    torch.testing.assert_close(values(ids), plain_v(ids))
    x0 = grafted("x0")
    torch.testing.assert_close(x0(ids), plain(ids))  # λ = (1, 0) at first: no change
    with torch.no_grad():
        for mix in x0.x0_lambdas:  # every block starts again from the embedding: only the last block counts
            mix.copy_(torch.tensor([0.0, 1.0]))
    assert not torch.allclose(x0(ids), plain(ids))
    unet = grafted("unet")
    torch.testing.assert_close(unet.skip_weights, torch.ones(2))
    assert not torch.allclose(unet(ids), plain(ids))
    with torch.no_grad():
        unet.skip_weights.zero_()
    torch.testing.assert_close(unet(ids), plain(ids))
    qk = grafted("qk_norm")
    assert not torch.allclose(qk(ids), plain(ids))


def test_the_records_optimisers_on_the_chapters_gpt(modded, chapter_gpt):
    torch.manual_seed(8)
    model = modded.GraftedGPT(chapter_gpt(), 4, modded.Elements.only("value_embeddings"))
    adam, muon = modded.optimisers(model, lr_scale=1.0)
    owned = [id(p) for opt in (adam, muon) for g in opt.param_groups for p in g["params"]]
    assert sorted(owned) == sorted({id(p) for p in model.parameters()})  # every parameter, once
    rate = {id(p): g["lr"] for g in adam.param_groups for p in g["params"]}
    assert rate[id(model.embed.weight)] == modded.RATES["head"]  # the tied matrix takes the head's rate
    assert rate[id(model.value_embeds[0].weight)] == modded.RATES["embed"]
    assert rate[id(model.blocks[0].ln_1.weight)] == rate[id(model.blocks[0].attn.c_attn.bias)] == 0.04
    assert rate[id(model.value_lambdas[3])] == 0.04
    fused = [g for g in muon.param_groups if g.get("parts") == 3]
    assert len(fused) == 1 and [tuple(p.shape) for p in fused[0]["params"]] == [(384, 128)] * 4


def test_the_harness_runs_both_directions_of_the_ablation(modded):
    gpt = _module("gpt")
    for name in gpt.ELEMENTS:
        assert gpt.VARIANTS[f"course-with-{name}"].graft == (name,)
        assert gpt.VARIANTS[f"course-with-{name}"].optimiser == "muon"  # the chapter's optimiser
    model, _ = gpt.build(gpt.VARIANTS["course-with-untied"], 11)
    opt = gpt.optimiser(gpt.VARIANTS["course-with-untied"], model, 6e-3)
    muon_owned = {id(p) for g in opt.param_groups if g["muon"] for p in g["params"]}
    assert id(model.lm_head.weight) not in muon_owned  # an untied head is AdamW's, not Muon's
    assert id(model.blocks[0].attn.c_attn.weight) in muon_owned
    model, _ = gpt.build(gpt.VARIANTS["course-with-optimiser"], 11)
    assert not any(vars(model.elements).values())  # the chapter's own model
    assert isinstance(gpt.optimiser(gpt.VARIANTS["course-with-optimiser"], model, 0.5), gpt.ModdedPair)
    mine = gpt.VARIANTS["modded-without-optimiser"]
    assert (mine.model, mine.optimiser, mine.schedule, mine.clip) == ("modded", "muon", "linear", 1.0)
    record = gpt.run(gpt.VARIANTS["course-with-rotary"], 6e-3, steps=2, batch=2, eval_every=2, seed=1)
    assert record["seed"] == 1 and record["steps"] == 2
    assert gpt.run_file("modded", 0.5, 2200, 32, seed=2).name == "modded-lr0.5-2200x32-seed2.json"


def test_the_records_momentum_follows_the_schedules_step(modded):
    gpt = _module("gpt")
    model, _ = gpt.build(gpt.MODDED, 11)
    pair = gpt.optimiser(gpt.MODDED, model, 0.5)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    pair.at = 150  # under a time budget, run() sets the step the clock has reached
    pair.step()
    assert pair.muon.param_groups[0]["momentum"] == pytest.approx(0.9)
    pair.step()  # without one, it counts the steps
    assert pair.muon.param_groups[0]["momentum"] == pytest.approx(0.85 + 0.1 * 151 / 300)
    assert gpt.VARIANTS["modded-scale0.12"].attn_scale == 0.12


def test_the_ablation_table_pairs_each_run_with_its_sides_baseline_of_the_same_seed(modded):
    gpt = _module("gpt")

    def rec(name, lr, seed, loss, steps=1100):
        return {"recipe": {"name": name}, "lr": lr, "seed": seed, "whole_held_out": loss, "steps": steps,
                "batch": 32, "budget_seconds": None}

    runs = [rec("course-linear-muon", 6e-3, 0, 1.60), rec("course-linear-muon", 6e-3, 1, 1.62),
            rec("course-linear-muon", 4e-3, 0, 1.50),  # another rate: not the baseline
            rec("course-with-relu2", 6e-3, 0, 1.58), rec("course-with-relu2", 6e-3, 1, 1.61),
            rec("course-with-optimiser", 0.25, 0, 1.55), rec("course-with-optimiser", 0.25, 1, 1.61),
            rec("course-with-optimiser", 0.5, 0, 1.57),  # another rate, worse at seed 0: not counted
            rec("course-with-optimiser", 0.125, 0, 1.52),  # better at seed 0, but one seed only: not counted
            rec("modded", 0.25, 0, 1.50), rec("modded-without-rotary", 0.25, 0, 1.56),
            rec("modded-without-rotary", 0.25, 0, 9.0, steps=2200)]  # another length: not this table
    rows = {row["element"]: row for row in gpt.ablation(runs, 1100, 32)}
    assert rows["relu2"]["added"] == {"lr": 6e-3, "deltas": {0: -0.02, 1: -0.01}, "mean": -0.015, "spread": 0.01}
    assert rows["optimiser"]["added"]["deltas"] == {0: -0.05, 1: -0.01} and rows["optimiser"]["added"]["lr"] == 0.25
    assert rows["rotary"]["removed"]["deltas"] == {0: 0.06} and rows["rotary"]["added"]["mean"] is None
    assert set(rows) == {*gpt.ELEMENTS, "optimiser"}
