"""dlcourse.gpt.muon: Muon with AdamW for the rest, checked against torch.optim.Muon and torch.optim.AdamW."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.optim._muon as torch_muon
from torch import nn

from dlcourse.gpt import muon


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Embedding(11, 8), nn.Linear(8, 24), nn.LayerNorm(24), nn.Linear(24, 8), nn.Linear(8, 11))


def _groups(model: nn.Module) -> list[dict]:
    matrices = [p for name, p in model.named_parameters() if p.dim() == 2 and not name.startswith("0.")]
    embeddings = [model[0].weight]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": matrices, "muon": True}, {"params": embeddings}, {"params": rest, "weight_decay": 0.0}]


def _loss(model: nn.Module, step: int) -> torch.Tensor:
    ids = torch.randint(11, (6,), generator=torch.Generator().manual_seed(step))
    return nn.functional.cross_entropy(model(ids), ids.roll(1))


def _float32_newton_schulz(grad, ns_coefficients, ns_steps, eps):
    """torch.optim.Muon's iteration with its bfloat16 cast left out (the reference for an exact comparison)."""
    a, b, c = ns_coefficients
    x = grad.float()
    if grad.size(0) > grad.size(1):
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        x = torch.addmm(x, torch.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if grad.size(0) > grad.size(1) else x


def _pytorchs(model: nn.Module, lr: float) -> list[torch.optim.Optimizer]:
    matrices, embeddings, rest = (g["params"] for g in _groups(model))
    return [torch.optim.Muon(matrices, lr=lr, weight_decay=0.1, momentum=0.95, nesterov=True,
                             adjust_lr_fn="match_rms_adamw"),
            torch.optim.AdamW([{"params": embeddings, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                              lr=lr, betas=(0.9, 0.99))]


@pytest.mark.parametrize("steps", [1, 6])
def test_the_steps_are_pytorchs_muon_and_adamw(monkeypatch, steps):
    """With PyTorch's iteration run in float32 too, every parameter after each step is PyTorch's, to rounding."""
    monkeypatch.setattr(torch_muon, "_zeropower_via_newtonschulz", _float32_newton_schulz)
    ours, theirs = _model(), _model()
    opt = muon.MuonAdamW(_groups(ours), lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)
    ref = _pytorchs(theirs, 0.01)
    for step in range(steps):
        for model, opts in ((ours, [opt]), (theirs, ref)):
            for o in opts:
                o.zero_grad()
            _loss(model, step).backward()
            for o in opts:
                o.step()
        for (name, a), b in zip(ours.named_parameters(), theirs.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7, msg=f"{name} after step {step + 1}")
    assert not torch.equal(ours[1].weight, _model()[1].weight)


def test_pytorchs_own_bfloat16_muon_takes_nearly_the_same_step():
    ours, theirs = _model(), _model()
    start = ours[1].weight.detach().clone()
    opt = muon.MuonAdamW(_groups(ours), lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)
    ref = _pytorchs(theirs, 0.01)
    for model, opts in ((ours, [opt]), (theirs, ref)):
        _loss(model, 0).backward()
        for o in opts:
            o.step()
    mine, pytorch = ours[1].weight - start, theirs[1].weight - start
    # bfloat16 keeps about 3 significant digits, and the iteration compounds the rounding
    assert torch.nn.functional.cosine_similarity(mine.flatten(), pytorch.flatten(), dim=0) > 0.9


@pytest.mark.parametrize("shape", [(8, 24), (24, 8), (16, 16)])
def test_orthogonalise_keeps_the_singular_vectors_and_flattens_the_values(shape):
    g = torch.randn(*shape, generator=torch.Generator().manual_seed(3)) * torch.logspace(0, 1.5, shape[1])
    u, _, vt = torch.linalg.svd(g, full_matrices=False)
    o = muon.orthogonalise(g)
    assert o.shape == g.shape and o.dtype == torch.float32
    values = torch.linalg.svdvals(o)
    assert values.min() > 0.5 and values.max() < 1.3, values
    cosine = (o * (u @ vt)).sum() / (o.norm() * (u @ vt).norm())
    assert cosine > 0.95
    before = torch.linalg.svdvals(g)
    assert before.max() / before.min() > 10  # the input was far from it


def test_a_scheduler_sets_the_rate_of_both_kinds():
    model = _model()
    opt = muon.MuonAdamW(_groups(model), lr=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5 ** step)
    for step in range(3):
        opt.zero_grad()
        _loss(model, step).backward()
        opt.step()
        schedule.step()
    assert [g["lr"] for g in opt.param_groups] == [0.01 / 8] * 3
    assert [g["lr"] for g in opt.adamw.param_groups] == [0.01 / 8] * 2
    assert all(g in opt.param_groups for g in opt.adamw.param_groups)  # the same dicts


def test_a_saved_state_goes_on_as_if_never_stopped():
    a = _model()
    opt_a = muon.MuonAdamW(_groups(a), lr=0.01)
    for step in range(3):
        opt_a.zero_grad()
        _loss(a, step).backward()
        opt_a.step()
    b = copy.deepcopy(a)
    opt_b = muon.MuonAdamW(_groups(b), lr=0.5)  # another rate: the saved one must win
    opt_b.load_state_dict(copy.deepcopy(opt_a.state_dict()))
    assert opt_b.param_groups[1]["lr"] == 0.01 and all(g in opt_b.param_groups for g in opt_b.adamw.param_groups)
    for step in range(3, 5):
        for model, opt in ((a, opt_a), (b, opt_b)):
            opt.zero_grad()
            _loss(model, step).backward()
            opt.step()
    for x, y in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_muon_groups_hold_matrices_only_and_the_arguments_are_checked():
    model = _model()
    with pytest.raises(ValueError, match="2-D"):
        muon.MuonAdamW([{"params": list(model.parameters()), "muon": True}])
    with pytest.raises(TypeError, match="parameter groups"):
        muon.MuonAdamW(model.parameters())
    with pytest.raises(ValueError, match="momentum"):
        muon.MuonAdamW(_groups(model), momentum=1.0)
    with pytest.raises(ValueError, match="matrices"):
        muon.orthogonalise(torch.ones(3))
