"""Chapter 08's package code: the VAE and autoencoders, their training and evaluation, and the widgets' logic.

The losses are the notebook's exercises; the tests here pass their own small versions of them to the
training and evaluation functions, which must use exactly what they are given.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dlcourse import checks
from dlcourse.vae import train as vae
from dlcourse.vae import widgets as wvae

matplotlib.use("Agg")


def reparameterize(mu, logvar, eps):
    return mu + torch.exp(0.5 * logvar) * eps


def negative_elbo(x, logits, mu, logvar, beta=1.0):
    reconstruction = F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(-1).mean()
    kl = 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(-1).mean()
    return reconstruction + beta * kl, reconstruction, kl


def toy_images(n: int = 256, seed: int = 0) -> torch.Tensor:
    """Grey-level 'images' of 784 pixels made of two prototypes, so that a VAE has something to learn."""
    gen = torch.Generator().manual_seed(seed)
    protos = torch.rand(2, 784, generator=gen)
    which = torch.randint(0, 2, (n,), generator=gen)
    return (0.8 * protos[which] + 0.2 * torch.rand(n, 784, generator=gen)).clamp(0, 1)


def test_the_models_have_the_shapes_their_docstrings_promise():
    model = vae.VAE(3, hidden=(32,))
    mu, logvar = model.encode(torch.rand(5, 784))
    assert mu.shape == logvar.shape == (5, 3)
    assert model.decode(torch.randn(4, 7, 3)).shape == (4, 7, 784)
    ae = vae.Autoencoder(2, data_dim=10, hidden=(8, 4))
    assert ae.encode(torch.rand(6, 10)).shape == (6, 2) and ae(torch.rand(6, 10)).shape == (6, 10)
    layers = [m for m in vae.mlp([10, 8, 4, 2]) if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in layers] == [(10, 8), (8, 4), (4, 2)]
    assert not isinstance(vae.mlp([10, 8, 4])[-1], torch.nn.ReLU)  # no non-linearity after the last layer


def test_binarize_draws_zeros_and_ones_with_the_grey_level_as_probability_and_is_seeded():
    x = torch.full((200, 784), 0.3)
    b = vae.binarize(x, seed=1)
    assert set(b.unique().tolist()) <= {0.0, 1.0}
    assert abs(float(b.mean()) - 0.3) < 0.01
    assert torch.equal(b, vae.binarize(x, seed=1)) and not torch.equal(b, vae.binarize(x, seed=2))
    assert vae.flatten(torch.zeros(3, 1, 28, 28)).shape == (3, 784)


def test_train_vae_lowers_the_loss_it_is_given_and_uses_the_given_reparameterization():
    x = toy_images()
    torch.manual_seed(0)
    model = vae.VAE(2, hidden=(64,))
    run = vae.train_vae(model, x, negative_elbo, reparameterize, steps=150, batch_size=64, lr=3e-3)
    assert run.steps == 150 == len(run.loss) == len(run.kl) and run.seconds > 0
    assert np.mean(run.loss[-20:]) < np.mean(run.loss[:20]) - 50
    assert not model.training
    calls = []

    def recording(mu, logvar, eps):
        calls.append(eps.shape)
        return reparameterize(mu, logvar, eps)

    vae.train_vae(vae.VAE(2, hidden=(8,)), x, negative_elbo, recording, steps=3, batch_size=16)
    assert calls == [(16, 2)] * 3
    losses = []
    for _ in range(2):  # the same initial weights and seed give the same run
        torch.manual_seed(0)
        losses.append(vae.train_vae(vae.VAE(2, hidden=(8,)), x, negative_elbo, reparameterize, steps=5, seed=5).loss)
    assert losses[0] == losses[1]


def test_beta_weights_the_kl_term_in_training():
    x = toy_images()
    seen = []

    def loss_fn(x, logits, mu, logvar, beta=1.0):
        seen.append(beta)
        return negative_elbo(x, logits, mu, logvar, beta)

    vae.train_vae(vae.VAE(2, hidden=(8,)), x, loss_fn, reparameterize, steps=2, beta=4.0)
    assert seen == [4.0, 4.0]


def test_train_autoencoder_lowers_the_reconstruction_loss():
    x = toy_images()
    torch.manual_seed(0)
    run = vae.train_autoencoder(vae.Autoencoder(2, hidden=(64,)), x, steps=150, batch_size=64, lr=3e-3)
    assert np.mean(run.loss[-20:]) < np.mean(run.loss[:20]) - 50 and run.kl == [0.0] * 150


def test_a_linear_autoencoder_learns_the_principal_subspace():
    gen = torch.Generator().manual_seed(0)
    basis, _ = torch.linalg.qr(torch.randn(40, 3, generator=gen))  # a 3-D subspace of R^40
    x = torch.randn(500, 3, generator=gen) * torch.tensor([5.0, 3.0, 2.0]) @ basis.T + 0.05 * torch.randn(500, 40,
                                                                                                          generator=gen)
    x = x - x.mean(0)
    pcs = vae.pca_directions(x, 3)
    checks.assert_close(pcs.T @ pcs, torch.eye(3), tol=checks.Tolerance(1e-5, 1e-5))
    assert vae.principal_angles(pcs, basis).max() < 1.0
    model = vae.train_linear_autoencoder(x, 3, steps=300)
    assert vae.principal_angles(model.decoder.weight.detach(), pcs).max() < 2.0
    assert vae.principal_angles(torch.randn(40, 3, generator=gen), pcs).max() > 30.0


def test_principal_angles_see_spans_not_bases():
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(10, 3, generator=gen)
    mixed = a @ torch.randn(3, 3, generator=gen)  # same span, another basis
    checks.assert_close(vae.principal_angles(a, mixed), torch.zeros(3, dtype=torch.float64),
                        tol=checks.Tolerance(0, 1e-4))
    e = torch.eye(4)
    checks.assert_close(vae.principal_angles(e[:, :2], e[:, 1:3]), torch.tensor([0.0, 90.0], dtype=torch.float64),
                        tol=checks.Tolerance(0, 1e-6))


def test_evaluate_elbo_averages_the_given_loss_over_images_and_samples():
    model = vae.VAE(2, hidden=(8,))
    x = (toy_images(30) > 0.5).float()
    calls = []

    def loss_fn(x, logits, mu, logvar, beta):
        calls.append((len(x), beta))
        return negative_elbo(x, logits, mu, logvar, beta)

    ev = vae.evaluate_elbo(model, x, loss_fn, reparameterize, samples=3, batch_size=20)
    assert calls == [(20, 1.0)] * 3 + [(10, 1.0)] * 3
    assert ev.neg_elbo == pytest.approx(ev.reconstruction + ev.kl, rel=1e-6)
    with torch.no_grad():
        mu, logvar = model.encode(x)
        exact_kl = float(0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(-1).mean())
    assert ev.kl == pytest.approx(exact_kl, rel=1e-5)  # the KL term does not depend on the sample
    assert vae.evaluate_elbo(model, x, negative_elbo, reparameterize, seed=3) == vae.evaluate_elbo(
        model, x, negative_elbo, reparameterize, seed=3)


def test_iwae_estimate_passes_k_samples_of_noise_and_the_decoder():
    model = vae.VAE(3, hidden=(8,))
    x = (toy_images(25) > 0.5).float()
    shapes = []

    def bound(xb, mu, logvar, eps, decode):
        shapes.append((tuple(xb.shape), tuple(eps.shape)))
        assert decode(torch.zeros(2, 3)).shape == (2, 784)
        return eps.sum(dim=(0, 2))  # (B,)

    out = vae.iwae_estimate(model, x, bound, k=7, batch_size=10)
    assert shapes == [((10, 784), (7, 10, 3)), ((10, 784), (7, 10, 3)), ((5, 784), (7, 5, 3))]
    assert out.shape == (25,)
    assert torch.equal(out, vae.iwae_estimate(model, x, bound, k=7, batch_size=10))


def test_kl_per_dimension_and_active_units():
    model = vae.VAE(4, hidden=(8,))
    x = toy_images(50)
    per_dim = vae.kl_per_dimension(model, x, batch_size=16)
    with torch.no_grad():
        mu, logvar = model.encode(x)
    expected = (0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar)).mean(0)
    checks.assert_close(per_dim, expected, tol=checks.Tolerance(1e-5, 1e-6))
    codes = torch.zeros(100, 5)
    codes[:, 1] = torch.linspace(-1, 1, 100)
    codes[:, 3] = 0.001 * torch.linspace(-1, 1, 100)  # varies, but below the threshold
    assert vae.active_units(codes) == 1


def test_far_fraction_counts_draws_that_land_between_the_codes():
    gen = torch.Generator().manual_seed(0)
    filled = torch.rand(4000, 2, generator=gen)
    assert vae.code_spacing(filled) == pytest.approx(0.5 / math.sqrt(4000), rel=0.3)  # about half the mean gap
    assert vae.far_fraction(filled, torch.rand(1000, 2, generator=gen)) < 0.01
    islands = torch.cat([torch.randn(1000, 2, generator=gen) * 0.05 + torch.tensor(c) for c in
                         ([0.0, 0.0], [1.0, 1.0], [0.0, 1.0])])
    assert vae.far_fraction(islands, torch.rand(1000, 2, generator=gen)) > 0.8
    draws = vae.fitted_gaussian_draws(islands, 20_000, seed=1)
    checks.assert_close(draws.mean(0), islands.mean(0), tol=checks.Tolerance(0, 0.02))
    checks.assert_close(torch.cov(draws.T), torch.cov(islands.T), tol=checks.Tolerance(0.05, 0.01))
    assert vae.far_fraction(islands, draws) > 0.3  # a Gaussian over three islands puts much of its mass between them


def test_latent_grid_and_tile_lay_images_out_as_the_scatter_plot():
    grid = vae.latent_grid((-1.0, -2.0), (1.0, 2.0), 3)
    assert grid.shape == (9, 2)
    assert grid[0].tolist() == [-1.0, 2.0] and grid[2].tolist() == [1.0, 2.0] and grid[-1].tolist() == [1.0, -2.0]
    images = torch.arange(6).float()[:, None, None].expand(6, 2, 2)
    tiled = vae.tile(images, rows=2)
    assert tiled.shape == (4, 6) and tiled[0, 0] == 0 and tiled[0, 2] == 1 and tiled[2, 0] == 3
    with pytest.raises(ValueError):
        vae.tile(images, rows=4)
    decoded = vae.decode_images(lambda z: torch.zeros(len(z), 784), torch.zeros(2, 5))
    assert decoded.shape == (2, 28, 28) and bool((decoded == 0.5).all())


def test_the_autoencoder_loss_is_the_summed_bernoulli_negative_log_likelihood():
    x = torch.tensor([[1.0, 0.0]])
    logits = torch.tensor([[0.0, 0.0]])
    assert float(vae.bernoulli_nll(x, logits)[0]) == pytest.approx(2 * math.log(2))
    model = vae.Autoencoder(2, data_dim=2, hidden=(3,))
    assert vae.autoencoder_nll(model, x) == pytest.approx(float(vae.bernoulli_nll(x, model(x).detach())[0]))


# ----------------------------------------------------------------------------------------------------
# Widgets


def linear_decoder(z: torch.Tensor) -> torch.Tensor:
    """Logits that make pixel (0, 0) bright where z₁ > 0 and pixel (0, 1) bright where z₂ > 0."""
    logits = torch.full((len(z), 784), -10.0)
    logits[:, 0] = 20 * z[:, 0]
    logits[:, 1] = 20 * z[:, 1]
    return logits


def latent_map(name: str = "toy") -> wvae.LatentMap:
    codes = np.array([[-1.0, -1.0], [1.0, 1.0], [1.0, -1.0], [0.0, 0.0]])
    return wvae.LatentMap(name, codes, np.array([0, 1, 2, 3]), linear_decoder)


def test_explorer_state_decodes_the_point_and_finds_the_nearest_code():
    state = wvae.explorer_state(latent_map(), 0.9, -0.8)
    assert state.image.shape == (28, 28)
    assert state.image[0, 0] > 0.99 and state.image[0, 1] < 0.01
    assert state.nearest_label == 2
    scale = np.mean(latent_map().codes.std(axis=0))
    assert state.nearest_distance == pytest.approx(math.hypot(0.1, 0.2) / scale)
    lo, hi = latent_map().box()
    assert (lo < latent_map().codes.min(0)).all() and (hi > latent_map().codes.max(0)).all()


def test_the_latent_explorer_moves_its_cross_in_place_and_rescales_its_sliders_per_model():
    import matplotlib.pyplot as plt

    wide = wvae.LatentMap("wide", latent_map().codes * 10, np.array([0, 1, 2, 3]), linear_decoder)
    explorer = wvae.latent_explorer({"toy": latent_map(), "wide": wide}, [f"class {i}" for i in range(10)])
    figure = explorer.last_result
    explorer.controls["z1"].value = 0.5
    assert explorer.last_result is figure  # updated, not rebuilt
    cross = figure.axes[0].lines[-1].get_xydata()[0]
    assert cross[0] == pytest.approx(0.5)
    assert figure.axes[1].images[0].get_array()[0, 0] > 0.99
    explorer.controls["model"].value = "wide"
    assert explorer.controls["z1"].max > 10 and explorer.last_result is not figure
    assert explorer.last_values["model"] == "wide"
    plt.close("all")


def test_interpolation_state_walks_between_the_two_codes():
    def encode(x):  # (2, 784) -> (2, 2): the first two pixels are the code
        return x[:, :2]

    x0, x1 = torch.zeros(784), torch.zeros(784)
    x0[0], x1[1] = 1.0, 1.0  # codes (1, 0) and (0, 1)

    def lerp(z0, z1, t):
        return (1 - t[:, None]) * z0 + t[:, None] * z1

    def slerp(z0, z1, t):
        w = t[:, None] * math.pi / 2
        return torch.cos(w) * z0 + torch.sin(w) * z1  # exact for these orthonormal codes

    state = wvae.interpolation_state(encode, linear_decoder, x0, x1, {"linear": lerp, "spherical": slerp},
                                     "linear", 0.5, steps=5)
    assert state.strip.shape == (5, 28, 28) and state.ends.shape == (2, 28, 28)
    assert state.strip[0][0, 0] > 0.99 and state.strip[-1][0, 1] > 0.99
    np.testing.assert_allclose(state.norms["spherical"], np.ones(5), rtol=1e-6)
    assert state.norms["linear"][2] == pytest.approx(math.sqrt(0.5))
    assert state.radius == pytest.approx(math.sqrt(2))
    grey = torch.full((2, 784), 0.25)
    shown = wvae.interpolation_state(encode, linear_decoder, x0, x1, {"linear": lerp}, "linear", 0.5, steps=5,
                                     shown=grey)
    assert (shown.ends == 0.25).all() and np.array_equal(shown.strip, state.strip)  # shown, not encoded
    with pytest.raises(ValueError):
        wvae.interpolation_state(encode, linear_decoder, x0, x1, {"linear": lerp}, "spherical", 0.5)
    with pytest.raises(ValueError):
        wvae.interpolation_state(encode, linear_decoder, x0, x1, {"linear": lerp}, "linear", 1.5)


def test_the_interpolation_viewer_updates_in_place():
    import matplotlib.pyplot as plt

    images = torch.rand(4, 784)

    def lerp(z0, z1, t):
        return (1 - t[:, None]) * z0 + t[:, None] * z1

    viewer = wvae.interpolation_viewer(lambda x: x[:, :3], linear_decoder, images, {"linear": lerp, "also": lerp},
                                       steps=5)
    figure = viewer.last_result
    viewer.controls["t"].value = 0.75
    viewer.controls["second"].value = 3
    assert viewer.last_result is figure and viewer.renders == 3
    assert figure.axes[-1].lines[-1].get_xdata()[0] == pytest.approx(0.75)
    np.testing.assert_allclose(figure.axes[6].images[0].get_array(), images[3].reshape(28, 28).numpy())
    plt.close("all")


def test_the_beta_slider_shows_each_run_in_place():
    import matplotlib.pyplot as plt

    torch.manual_seed(0)
    runs = {}
    for beta in (0.5, 1.0, 4.0):
        model = vae.VAE(4, hidden=(8,))
        x = toy_images(8)
        metrics = {"reconstruction": 100.0 * beta, "kl": 10.0 / beta, "neg_elbo": 100.0 * beta + 10.0 / beta,
                   "active_units": 4}
        runs[beta] = wvae.beta_run(model, beta, x, torch.randn(16, 4), vae.kl_per_dimension(model, x), metrics)
    assert runs[1.0].reconstructions.shape == (8, 28, 28) and runs[1.0].samples.shape == (16, 28, 28)
    np.testing.assert_array_equal(runs[1.0].originals, toy_images(8).reshape(8, 28, 28).numpy())
    grey = wvae.beta_run(model, 1.0, x, torch.randn(16, 4), vae.kl_per_dimension(model, x), metrics,
                         shown=torch.zeros(8, 784))
    assert (grey.originals == 0).all()
    view = wvae.beta_explorer(runs)
    assert view.last_values == {"beta": 1.0}
    figure = view.last_result
    view.controls["beta"].value = 4.0
    assert view.last_result is figure
    heights = [bar.get_height() for bar in figure.axes[2].patches]
    np.testing.assert_allclose(heights, runs[4.0].kl_per_dim, rtol=1e-6)
    assert figure.texts[0].get_text().startswith("β = 4: held-out reconstruction 400.0")
    plt.close("all")


def test_the_squared_error_loss_is_a_gaussian_decoders_negative_elbo_at_half_variance():
    from torch.distributions import Normal, kl_divergence

    gen = torch.Generator().manual_seed(3)
    x, logits = torch.rand(5, 12, generator=gen, dtype=torch.float64), torch.randn(5, 12, generator=gen,
                                                                                   dtype=torch.float64)
    mu, logvar = torch.randn(5, 3, generator=gen, dtype=torch.float64), torch.randn(5, 3, generator=gen,
                                                                                    dtype=torch.float64)

    def kl(m, lv):  # KL(N(m, e^lv) ‖ N(0, I)) per image, from torch.distributions
        return kl_divergence(Normal(m, (0.5 * lv).exp()), Normal(torch.zeros_like(m), 1.0)).sum(-1)

    loss, reconstruction, divergence = vae.squared_error_loss(kl)(x, logits, mu, logvar, beta=3.0)
    gaussian_nll = -Normal(torch.sigmoid(logits), math.sqrt(0.5)).log_prob(x).sum(-1)  # s² = ½
    torch.testing.assert_close(reconstruction, (gaussian_nll - 12 / 2 * math.log(math.pi)).mean())
    torch.testing.assert_close(divergence, kl(mu, logvar).mean())
    torch.testing.assert_close(loss, reconstruction + 3.0 * divergence)
    assert not torch.allclose(reconstruction, (x - logits).pow(2).sum(-1).mean())  # the mean is σ(logits)
