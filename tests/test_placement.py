"""Tensors created on the device of their inputs: every chapter's reference answers and the package's code, with
every input on a second device (pretended: :mod:`placement`, since this machine has no GPU)."""

from __future__ import annotations

import json
import subprocess
import sys

import placement
import pytest
import torch
import torch.nn.functional as F
from conftest import CHAPTERS, ROOT
from placement import DEVICE, Misplaced, OnDevice, on_the_device


def _nt_xent(z1, z2, temperature, labels_on_device=True):
    n = len(z1)
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = (z @ z.T / temperature).masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), -torch.inf)
    partner = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(logits, partner.to(z.device) if labels_on_device else partner)


@pytest.mark.parametrize(("answer", "said"), [
    (lambda x: x + torch.ones(x.shape[-1]), "meets one on the CPU"),  # a tensor made without the inputs' device
    (lambda x: _nt_xent(x, x.flip(0), 0.5, labels_on_device=False), "cross_entropy"),
    (lambda x: x.numpy(), ".numpy() of a tensor on the device"),
    (lambda x: x * torch.rand(x.shape, generator=torch.Generator().manual_seed(0), device=x.device),
     "a draw on the device from a generator on the CPU"),
    (lambda x: torch.bernoulli(x.sigmoid(), generator=torch.Generator()), "a draw on the device"),
    (lambda x: torch.randn(3)[x.argmax(-1)], "a tensor on the CPU indexed with indices on the device"),
    (lambda x: torch.where(x > 0, x, torch.zeros(x.shape)), "meets one on the CPU"),
])
def test_a_tensor_on_the_wrong_device_is_found(answer, said):
    x = torch.randn(4, 3)
    with pytest.raises(Misplaced, match=said.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        on_the_device(answer, (x,), {})


@pytest.mark.parametrize("answer", [
    lambda x: x + torch.ones(x.shape[-1], device=x.device),
    lambda x: x + torch.tensor(2.0),  # a 0-dim CPU tensor is a scalar on any device
    lambda x: x[torch.tensor([0, 2])] * x.new_ones(3),  # CPU indices into a tensor on the device
    lambda x: torch.zeros_like(x) + x.to(torch.float64).float() + torch.arange(3).to(x.device),
    lambda x: x.cpu().numpy().sum() + x.sum().item(),
    lambda x: _nt_xent(x, x.flip(0), 0.5),
    lambda x: x * torch.rand(x.shape, generator=placement.Generator(device=x.device).manual_seed(0),
                             device=x.device),
])
def test_code_that_follows_its_inputs_device_passes(answer):
    on_the_device(answer, (torch.randn(4, 3),), {})


def test_a_module_s_weights_go_to_the_device_with_it_and_gradients_flow_back():
    layer = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)

    def forward(module, inputs):
        assert module.weight.device == DEVICE and inputs.device == DEVICE  # what the student's code sees
        return module(inputs) + torch.zeros(2, device=inputs.device)

    out = on_the_device(forward, (layer, x), {})
    assert type(out) is torch.Tensor and type(layer.weight) is torch.nn.Parameter  # back as they were
    out.sum().backward()
    assert x.grad is not None and layer.weight.grad is not None
    with pytest.raises(Misplaced):  # a layer built inside, on the CPU, meets inputs on the device
        on_the_device(lambda inputs: torch.nn.Linear(3, 2)(inputs), (x,), {})


def test_a_tied_weight_stays_tied_when_a_module_moves():
    model = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 5, bias=False))
    model[1].weight = model[0].weight
    placement._place(model, True)
    assert isinstance(model[0].weight, OnDevice) and model[1].weight is model[0].weight
    assert isinstance(model[0].weight, torch.nn.Parameter) and model[0].weight.is_leaf
    placement._place(model, False)
    assert type(model[0].weight) is torch.nn.Parameter and model[1].weight is model[0].weight


@pytest.mark.notebook
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_runs_with_its_inputs_on_another_device(chapter):
    """The chapter's cells (reference answers, training, evaluation, widgets' first drawing) with the device the
    set-up cell picks being the pretended GPU, and its tests with every input to the student's code there."""
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "placement.py"), chapter], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    line = next((x for x in done.stdout.splitlines() if x.startswith("PLACEMENT ")), None)
    assert line, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(line.removeprefix("PLACEMENT "))
    assert result["error"] is None, f"{chapter}, {result['where']}: {result['error']}"
    assert result["operations_on_device"] > 0, result  # the device was used, not bypassed
