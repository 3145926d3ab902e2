"""Chapter 07's package code: the ring, the models, the training loop, class scores and the widgets' logic."""

from __future__ import annotations

import math

import pytest
import torch

from dlcourse import checks
from dlcourse.gan import train as gan
from dlcourse.gan import widgets as gan_widgets
from dlcourse.grading import references
from dlcourse.grading.agent import Agent

REF = references.load("gan")


def test_ring_centres_lie_on_the_circle_evenly_spaced():
    c = gan.ring_centres(8, radius=2.0)
    assert c.shape == (8, 2)
    torch.testing.assert_close(c.norm(dim=1), torch.full((8,), 2.0))
    torch.testing.assert_close(c[0], torch.tensor([2.0, 0.0]))
    torch.testing.assert_close((c[1] - c[0]).norm(), torch.tensor(2 * 2.0 * math.sin(math.pi / 8)))


def test_ring_samples_are_close_to_a_centre_with_the_stated_spread():
    x = gan.sample_ring(4000, std=0.05, generator=torch.Generator().manual_seed(0))
    nearest = torch.cdist(x, gan.ring_centres()).min(dim=1)
    assert nearest.values.max() < 0.3
    spread = (x - gan.ring_centres()[nearest.indices]).std(0)
    torch.testing.assert_close(spread, torch.full((2,), 0.05), atol=0.005, rtol=0)
    assert torch.bincount(nearest.indices, minlength=8).min() > 400  # every mode, about equally


def test_toy_gan_is_seeded_and_leaves_the_global_random_state_alone():
    state = torch.random.get_rng_state()
    a, b = gan.toy_gan(3), gan.toy_gan(3)
    assert torch.equal(torch.random.get_rng_state(), state)
    for net_a, net_b in ((a[0], b[0]), (a[1], b[1])):
        checks.assert_close(net_a.state_dict(), net_b.state_dict())
    assert not torch.equal(gan.toy_gan(4)[0].net[0].weight, a[0].net[0].weight)
    assert isinstance(gan.toy_gan(0, optimizer="adam")[2], torch.optim.Adam)
    with pytest.raises(ValueError, match="optimizer"):
        gan.toy_gan(0, optimizer="rmsprop")


def test_image_models_have_the_documented_shapes_and_range():
    G, D = gan.ConvGenerator(latent=16, width=8), gan.ConvDiscriminator(width=8)
    images = G(torch.randn(5, 16))
    assert images.shape == (5, 1, 28, 28) and images.abs().max() <= 1.0
    assert D(images).shape == (5,)
    assert gan.MLPDiscriminator()(torch.randn(7, 2)).shape == (7,)


def test_reference_step_moves_only_what_it_should():
    G, D, opt_G, opt_D = gan.toy_gan(1)
    g0, d0 = ({k: v.clone() for k, v in net.state_dict().items()} for net in (G, D))
    REF.discriminator_step(G, D, opt_D, torch.randn(6, 2), torch.randn(6, 3))
    checks.assert_close(G.state_dict(), g0)
    assert all(p.grad is None for p in G.parameters())
    d1 = {k: v.clone() for k, v in D.state_dict().items()}
    assert any(not torch.equal(d1[k], d0[k]) for k in d0)
    REF.generator_step(G, D, opt_G, torch.randn(6, 3))
    checks.assert_close(D.state_dict(), d1)
    assert any(not torch.equal(G.state_dict()[k], g0[k]) for k in g0)


def test_train_gan_records_every_step_and_the_snapshots():
    G, D = gan.MLPGenerator(2, 16, 2), gan.MLPDiscriminator(2, 16)
    z = torch.randn(50, 2)
    run = gan.train_gan(G, D, REF.train_step, lambda n, g: gan.sample_ring(n, generator=g), 20, batch_size=32,
                        snapshot_every=5, fixed_z=z)
    assert len(run.d_loss) == len(run.g_loss) == 20
    assert [s for s, _ in run.snapshots] == [0, 5, 10, 15, 20]
    assert run.snapshots[-1][1].shape == (50, 2)
    with torch.no_grad():
        torch.testing.assert_close(run.snapshots[-1][1], G(z))


class _Fixed(torch.nn.Module):
    """A 'classifier' whose logits are the first pixels of each image."""

    def forward(self, images):
        return images.flatten(1)[:, :3]


def test_class_scores_by_their_definition():
    sure = torch.zeros(6, 1, 2, 2)
    for i in range(6):
        sure[i, 0].view(-1)[i % 3] = 50.0  # confident, classes 0, 1, 2 twice each
    s = gan.class_scores(_Fixed(), sure)
    torch.testing.assert_close(s.histogram, torch.full((3,), 1 / 3))
    assert s.confidence == pytest.approx(1.0) and s.score == pytest.approx(3.0, rel=1e-6)
    assert s.effective_classes == pytest.approx(3.0, rel=1e-6)
    same = torch.zeros(4, 1, 2, 2)
    same[:, 0, 0, 1] = 50.0  # pixel 1 of the flattened image  # all one class: collapsed
    collapsed = gan.class_scores(_Fixed(), same)
    assert collapsed.score == pytest.approx(1.0) and collapsed.effective_classes == pytest.approx(1.0)
    unsure = gan.class_scores(_Fixed(), torch.zeros(4, 1, 2, 2))  # uniform predictions
    assert unsure.score == pytest.approx(1.0) and unsure.confidence == pytest.approx(1 / 3)


def test_landscape_state_matches_the_closed_form_gradients():
    state = gan_widgets.landscape_state(REF.g_loss, at=0.2, n=50)
    p = state.p
    assert state.grad["minimax"] == pytest.approx(-p, rel=1e-9)
    assert state.grad["non_saturating"] == pytest.approx(-(1 - p), rel=1e-9)
    assert state.at_grad["minimax"] == pytest.approx(-0.2) and state.at_loss["non_saturating"] == pytest.approx(
        -math.log(0.2))
    with pytest.raises(ValueError):
        gan_widgets.landscape_state(REF.g_loss, at=1.0)


def _shipped():
    c = gan.ring_centres()
    return {"steps": [0, 10], "centres": c.tolist(), "threshold": 0.15, "min_count": 1,
            "runs": {"a": [[[0.0, 0.0]] * 4, c[:4].tolist()], "b": [c[:2].tolist() * 2, [[5.0, 5.0]] * 4]}}


def test_scrubber_state_scores_each_run_with_the_given_function():
    state = gan_widgets.scrubber_state(_shipped(), 1, REF.mode_coverage)
    assert state.step == 10
    assert state.covered == {"a": 4, "b": 0} and state.quality == {"a": 1.0, "b": 0.0}
    assert state.points["a"].shape == (4, 2)
    with pytest.raises(IndexError):
        gan_widgets.scrubber_state(_shipped(), 2, REF.mode_coverage)


def test_latent_path_interpolates_codes():
    G = gan.ConvGenerator(latent=4, width=4).eval()
    z0, z1 = gan_widgets.latent_code(0, 4), gan_widgets.latent_code(1, 4)
    torch.testing.assert_close(gan_widgets.latent_code(0, 4), z0)
    image, strip = gan_widgets.latent_path(G, z0, z1, 0.0, strip=5)
    assert image.shape == (28, 28) and strip.shape == (5, 28, 28)
    with torch.no_grad():
        torch.testing.assert_close(torch.from_numpy(image), G(z0)[0, 0])
        torch.testing.assert_close(torch.from_numpy(strip[-1]), G(z1)[0, 0])


def test_the_widgets_build_and_redraw():
    landscape = gan_widgets.loss_landscape(REF.g_loss, start=0.1)
    landscape.controls["at"].value = 0.7
    scrubber = gan_widgets.training_scrubber(_shipped(), REF.mode_coverage)
    scrubber.controls["index"].value = 1
    walk = gan_widgets.latent_walk(gan.ConvGenerator(latent=4, width=4).eval(), latent=4)
    walk.controls["t"].value = 1.0
    assert landscape.renders == scrubber.renders == walk.renders == 2
    assert "0.700" in landscape.last_result._title.get_text()


def test_build_in_kernel_builds_the_course_packages_objects_only():
    G, D, opt_G, opt_D = checks.build_in_kernel("dlcourse.gan.train.toy_gan", 2, optimizer="adam")
    checks.assert_close(G.state_dict(), gan.toy_gan(2)[0].state_dict())
    with pytest.raises(ValueError, match="course package"):
        checks.build_in_kernel("os.system", "true")
    with pytest.raises(PermissionError):
        Agent({}).op_build("subprocess.run", ["true"], {})
    with pytest.raises(PermissionError):
        Agent({}).op_build("dlcourse_evil.x", [], {})


def test_a_missing_reference_says_where_references_live():
    with pytest.raises(FileNotFoundError, match="instructor"):
        references.load("no_such_reference")


def test_mixture_1d_density_integrates_to_one_and_samples_match_it():
    mix = gan.Mixture1D(means=(-2.0, 2.0), stds=(0.5, 1.0), weights=(1.0, 3.0))
    x = torch.linspace(-10, 12, 20001, dtype=torch.float64)
    dx = float(x[1] - x[0])
    assert float(mix.pdf(x).sum() * dx) == pytest.approx(1.0, abs=1e-6)
    samples = mix.sample(40000, generator=torch.Generator().manual_seed(0))
    assert samples.shape == (40000,)
    assert float(samples.mean()) == pytest.approx(0.25 * -2 + 0.75 * 2, abs=0.05)
    with pytest.raises(ValueError):
        gan.Mixture1D(means=(0.0, 1.0), stds=(1.0,)).pdf(x)


def test_js_divergence_bounds_and_the_optimal_discriminator_value():
    x = torch.linspace(-12, 12, 24001, dtype=torch.float64)
    dx = float(x[1] - x[0])
    p = gan.Mixture1D((-2.0, 2.0), (0.5, 0.5)).pdf(x)
    q = gan.Mixture1D((0.5,), (1.5,)).pdf(x)
    assert gan.js_divergence(p, p, dx) == pytest.approx(0.0, abs=1e-12)
    far = gan.Mixture1D((8.0,), (0.3,)).pdf(x)
    assert gan.js_divergence(gan.Mixture1D((-8.0,), (0.3,)).pdf(x), far, dx) == pytest.approx(math.log(2), abs=1e-6)
    js = gan.js_divergence(p, q, dx)
    assert 0 < js < math.log(2)
    d_star = gan.optimal_discriminator(p, q)
    j_d = float(((-p * d_star.log()) + (-q * torch.log1p(-d_star))).sum() * dx)  # J_D at D*
    assert j_d == pytest.approx(2 * math.log(2) - 2 * js, abs=1e-6)
    assert float(gan.optimal_discriminator(torch.zeros(1), torch.zeros(1))) == 0.5
