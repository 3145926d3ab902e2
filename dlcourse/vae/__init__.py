"""Chapter 08, variational autoencoders.

* :mod:`~dlcourse.vae.train` — the MLP VAE and the autoencoders the demos train, their loops and evaluations;
* :mod:`~dlcourse.vae.widgets` — the latent explorer, latent interpolation, the β slider;
* :mod:`~dlcourse.vae.diagrams` — the reparameterised loss's graph.
"""
