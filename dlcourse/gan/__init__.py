"""Chapter 07, generative adversarial networks.

* :mod:`~dlcourse.gan.train` — the 8-Gaussian ring, small generators and discriminators, the training loop;
* :mod:`~dlcourse.gan.widgets` — the loss landscape, the training scrubber, the latent walk;
* :mod:`~dlcourse.gan.diagrams` — one training step's gradients.
"""
