"""dlcourse.selfsup.train and chapter 11's widget: the crop, the loops, the probes and the pair explorer's state."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from dlcourse.selfsup import train as selfsup
from dlcourse.selfsup import widgets as ssl_widgets


def _crop_then_resize(images, top, left, height, width):
    """The independent route: slice each box, then F.interpolate it (bilinear, pixel centres)."""
    size = images.shape[-2:]
    return torch.cat([F.interpolate(images[i:i + 1, :, t:t + h, c:c + w], size=size, mode="bilinear",
                                    align_corners=False)
                      for i, (t, c, h, w) in enumerate(zip(top.tolist(), left.tolist(), height.tolist(),
                                                           width.tolist(), strict=True))])


def test_resized_crop_equals_slicing_and_interpolating_inside_the_box():
    gen = torch.Generator().manual_seed(0)
    images = torch.rand(6, 2, 12, 10, generator=gen, dtype=torch.float64)
    height, width = torch.tensor([12, 6, 9, 4, 12, 8]), torch.tensor([10, 5, 7, 10, 3, 8])
    top, left = torch.tensor([0, 3, 2, 5, 0, 4]), torch.tensor([0, 2, 3, 0, 7, 1])
    got = selfsup.resized_crop(images, top, left, height, width)
    want = _crop_then_resize(images, top, left, height, width)
    # interpolate clamps at the box's edge, grid_sample at the image's: they agree wherever no sample falls
    # outside the box, i.e. away from the box's first and last output row and column
    torch.testing.assert_close(got[..., 2:-2, 2:-2], want[..., 2:-2, 2:-2], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got[0], images[0], rtol=1e-12, atol=1e-12)  # the whole image: unchanged


@pytest.mark.parametrize("bad", [dict(top=torch.tensor([3])), dict(height=torch.tensor([0])),
                                 dict(width=torch.tensor([5])), dict(left=torch.tensor([0, 0]))])
def test_resized_crop_refuses_a_box_outside_the_image(bad):
    box = dict(top=torch.tensor([0]), left=torch.tensor([0]), height=torch.tensor([2]), width=torch.tensor([4]))
    box.update(bad)
    with pytest.raises(ValueError):
        selfsup.resized_crop(torch.zeros(1, 1, 4, 4), **box)


def test_jigsaw_permutations_are_the_24_orders_identity_first():
    perms = selfsup.jigsaw_permutations()
    assert perms.shape == (24, 4) and perms.dtype == torch.int64
    assert perms[0].tolist() == [0, 1, 2, 3]
    assert len({tuple(p) for p in perms.tolist()}) == 24
    assert (perms.sort(dim=1).values == torch.arange(4)).all()


def test_the_encoder_takes_any_image_size_and_the_head_projects():
    encoder = selfsup.ConvEncoder(width=8)
    assert encoder(torch.zeros(3, 1, 28, 28)).shape == (3, 32)
    assert encoder(torch.zeros(2, 1, 8, 8)).shape == (2, 32)
    assert selfsup.ProjectionHead(32, 16, 8)(torch.zeros(5, 32)).shape == (5, 8)


def test_features_are_frozen_and_the_training_mode_comes_back():
    encoder = selfsup.ConvEncoder(width=4)
    encoder.train()
    images = torch.rand(10, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    feats = selfsup.features(encoder, images, batch=3)
    assert feats.shape == (10, 16) and not feats.requires_grad
    assert encoder.training
    for key, value in encoder.state_dict().items():  # running statistics untouched: evaluation mode
        assert torch.equal(value, before[key]), key
    encoder.eval()
    torch.testing.assert_close(feats, encoder(images).detach())


def test_balanced_subset_keeps_the_fraction_of_every_class():
    labels = torch.tensor([0] * 50 + [1] * 30 + [2] * 20)
    picked = selfsup.balanced_subset(labels, 0.1, seed=3)
    assert torch.bincount(labels[picked]).tolist() == [5, 3, 2]
    assert torch.equal(picked, picked.sort().values) and len(set(picked.tolist())) == len(picked)
    assert torch.equal(picked, selfsup.balanced_subset(labels, 0.1, seed=3))
    assert not torch.equal(picked, selfsup.balanced_subset(labels, 0.1, seed=4))
    assert torch.bincount(labels[selfsup.balanced_subset(labels, 0.001)]).tolist() == [1, 1, 1]
    assert len(selfsup.balanced_subset(labels, 1.0)) == 100
    with pytest.raises(ValueError):
        selfsup.balanced_subset(labels, 0.0)


def test_a_linear_probe_separates_separable_features_and_not_noise():
    gen = torch.Generator().manual_seed(2)
    labels = torch.randint(0, 3, (300,), generator=gen)
    centres = 3 * torch.randn(3, 8, generator=gen)
    feats = centres[labels] + torch.randn(300, 8, generator=gen)
    assert selfsup.linear_probe(feats[:200], labels[:200], feats[200:], labels[200:]) > 0.9
    noise = torch.randn(300, 8, generator=gen)
    assert selfsup.linear_probe(noise[:200], labels[:200], noise[200:], labels[200:]) < 0.6


def test_positive_top1_counts_views_whose_nearest_other_view_is_the_partner():
    z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert selfsup.positive_top1(z1, z1.clone()) == 1.0
    assert selfsup.positive_top1(z1, z1.flip(0)) == 0.0  # each view's nearest is the other image's view


def _nt_xent(z1, z2, temperature=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = len(z1)
    logits = (z @ z.T / temperature).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    return F.cross_entropy(logits, torch.cat([torch.arange(n, 2 * n), torch.arange(n)]))


def _views(images, generator, *, scale=(0.2, 1.0), jitter=0.4):
    b, _, h, w = images.shape
    size = torch.full((b,), h // 2)
    corner = (torch.rand(b, generator=generator) * (h - h // 2 + 1)).long()
    view = selfsup.resized_crop(images, corner, corner, size, size)
    return view, (images * (1 + jitter * (torch.rand(b, 1, 1, 1, generator=generator) - 0.5))).clamp(0, 1)


def _rotations(images):
    turns = [torch.rot90(images, k, dims=(-2, -1)) for k in range(4)]
    return torch.cat(turns), torch.arange(4).repeat_interleave(len(images))


def test_the_pretraining_loops_lower_their_losses():
    torch.manual_seed(0)
    images = torch.rand(64, 1, 8, 8, generator=torch.Generator().manual_seed(5))
    images[:, :, :4] *= 0.2  # a dark top half: which way up an image is can be learned
    encoder, head = selfsup.ConvEncoder(width=4), nn.Linear(16, 4)
    run = selfsup.pretrain_rotation(encoder, head, images, _rotations, steps=60, batch=16, lr=1e-2, every=10)
    assert run.steps[0] == 0 and run.steps[-1] == 59 and len(run.loss) == len(run.accuracy)
    assert np.mean(run.loss[-2:]) < run.loss[0]
    encoder, head = selfsup.ConvEncoder(width=4), selfsup.ProjectionHead(16, 16, 8)
    run = selfsup.pretrain_simclr(encoder, head, images, _views, _nt_xent, steps=40, batch=16, lr=1e-2, every=10)
    assert run.loss[-1] < run.loss[0] and all(0.0 <= a <= 1.0 for a in run.accuracy) and run.seconds > 0
    labels = (images[:, 0, :4].mean(dim=(1, 2)) > 0.1).long()
    encoder, head = selfsup.ConvEncoder(width=4), nn.Linear(16, 2)
    run = selfsup.train_supervised(encoder, head, images, labels, steps=40, batch=16, lr=1e-2, every=10)
    assert run.loss[-1] < run.loss[0]
    assert 0.0 <= selfsup.accuracy(encoder, head, images, labels) <= 1.0


def test_generative_pretext_pairs():
    photo = np.zeros((4, 6, 3), dtype=np.uint8)
    photo[..., 0] = 255  # pure red
    grey, colour = selfsup.colourisation_pair(photo)
    assert grey.shape == (4, 6) and np.allclose(grey, 0.299) and np.allclose(colour[..., 0], 1.0)
    image = torch.arange(16.0).reshape(1, 4, 4)
    small, full = selfsup.super_resolution_pair(image, 2)
    assert small.tolist() == [[[2.5, 4.5], [10.5, 12.5]]] and torch.equal(full, image)
    with pytest.raises(ValueError):
        selfsup.super_resolution_pair(image, 3)
    masked, hidden = selfsup.masked_patches(image + 1, 2, 0.5, seed=0)
    assert hidden.shape == (4, 4) and int(hidden.sum()) == 8
    assert torch.equal(masked[0][hidden], torch.zeros(8)) and torch.equal(masked[0][~hidden], (image + 1)[0][~hidden])


def test_the_pair_explorer_state_shows_views_similarities_and_the_loss():
    images = torch.rand(4, 1, 12, 12, generator=torch.Generator().manual_seed(6))
    encoder = selfsup.ConvEncoder(width=4).eval()
    state = ssl_widgets.pair_state(images, _views, encoder, _nt_xent, seed=1, min_scale=0.3, jitter=0.2,
                                   temperature=0.5)
    assert state.first.shape == (4, 12, 12) and state.similarity.shape == (8, 8)
    np.testing.assert_allclose(np.diag(state.similarity), 1.0, rtol=1e-9)
    np.testing.assert_allclose(state.similarity, state.similarity.T)
    first, second = _views(images, torch.Generator().manual_seed(1), jitter=0.2)
    with torch.no_grad():
        want = float(_nt_xent(encoder(first), encoder(second), 0.5))
    assert math.isclose(state.loss, want, rel_tol=1e-6)
    assert 0.0 <= state.partner_nearest <= 1.0
    assert ((state.partner_probability > 0) & (state.partner_probability <= 1)).all()
    colder = ssl_widgets.pair_state(images, _views, encoder, _nt_xent, seed=1, min_scale=0.3, jitter=0.2,
                                    temperature=0.05)
    np.testing.assert_allclose(colder.similarity, state.similarity)  # τ changes the loss, not the similarities
    assert colder.loss != state.loss
    with pytest.raises(ValueError):
        ssl_widgets.pair_state(images, _views, encoder, _nt_xent, seed=1, min_scale=0.0, jitter=0.2, temperature=0.5)


def test_the_pair_explorer_redraws_when_a_control_moves():
    import matplotlib

    matplotlib.use("Agg")
    images = torch.rand(3, 1, 12, 12, generator=torch.Generator().manual_seed(7))
    encoder = selfsup.ConvEncoder(width=4).eval()
    view = ssl_widgets.pair_explorer(images, _views, encoder, _nt_xent)
    renders = view.renders
    for name, value in (("seed", 3), ("min_scale", 0.5), ("jitter", 0.1), ("temperature", 0.1)):
        view.controls[name].value = value
    assert view.renders == renders + 4
    assert view.last_values["temperature"] == pytest.approx(0.1, rel=0.15)
