"""Chapter 08's figure: the reparameterised VAE loss, and where the gradients flow.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from dlcourse.diagrams import ACCENT, _arrow, _box, _canvas, _dot, _finish, _text


def vae_reparameterization() -> Figure:
    """One VAE loss as a computation graph: x → encoder → (μ, log σ²); ε ~ N(0, I) drawn outside the graph;
    z = μ + σ ⊙ ε → decoder → logits → the reconstruction term; (μ, log σ²) → the closed-form KL term; their
    sum is the loss.

    The backward pass is drawn dashed red: from the reconstruction term through the decoder to z, and from z
    to μ (z̄) and to σ (z̄ ⊙ ε), on into the encoder. No arrow runs into ε: it is an input, not a parameter.
    """
    width, height = 10.4, 4.8
    fig, (ax,) = _canvas(width, height)
    y = 2.4
    _box(ax, 0.45, y, "$x$", "embedding", w=0.6, h=0.5, size=11)
    _arrow(ax, (0.75, y), (1.0, y))
    _box(ax, 1.5, y, "encoder", "ffn", w=1.0, h=0.5)
    _arrow(ax, (2.0, y), (2.2, y), head=False)
    _dot(ax, 2.2, y)
    for ym, label in ((2.95, "$\\mu$"), (1.85, "$\\log\\sigma^2$")):
        _arrow(ax, (2.2, y), (2.2, ym), (2.55, ym))
        _box(ax, 3.0, ym, label, "linear", w=0.9, h=0.4)
        _arrow(ax, (3.45, ym), (4.0, y + (0.12 if ym > y else -0.12)))
    _text(ax, 3.82, 2.0, "$\\sigma$", size=9, color="0.3")
    _box(ax, 4.75, y, "$z = \\mu + \\sigma \\odot \\varepsilon$", "focus", w=1.5, h=0.5, size=9.5)
    _box(ax, 4.75, 3.35, "$\\varepsilon \\sim \\mathcal{N}(0, I)$", "blocked", w=1.3, h=0.42, size=9.5)
    _arrow(ax, (4.75, 3.14), (4.75, y + 0.25))
    _text(ax, 5.52, 3.35, "drawn outside the graph:\nno gradient flows into $\\varepsilon$", size=8, ha="left",
          color="0.3")
    _arrow(ax, (5.5, y), (5.72, y))
    _box(ax, 6.2, y, "decoder", "ffn", w=0.95, h=0.5)
    _arrow(ax, (6.68, y), (7.35, y))
    _text(ax, 7.0, y + 0.17, "logits", size=8, color="0.3")
    _box(ax, 8.15, y, "reconstruction\n$-\\log p_\\theta(x \\mid z)$", "softmax", w=1.6, h=0.6, size=8.5)
    # (μ, log σ²) → the KL term, along the top
    _arrow(ax, (2.2, 2.95), (2.2, 4.05), (7.35, 4.05))
    _text(ax, 3.0, 4.2, "$(\\mu, \\log\\sigma^2)$", size=8.5, color="0.3")
    _box(ax, 8.15, 4.05, "KL$(q \\,\\|\\, \\mathcal{N}(0, I))$\nclosed form", "norm", w=1.6, h=0.6, size=8.5)
    _box(ax, 9.8, 3.2, "loss\n(sum)", "attention", w=0.9, h=0.6, size=9)
    _arrow(ax, (8.95, y), (9.8, y), (9.8, 2.9))
    _arrow(ax, (8.95, 4.05), (9.8, 4.05), (9.8, 3.5))
    # the backward pass
    red = {"color": ACCENT, "ls": "--", "lw": 1.3}
    _arrow(ax, (8.15, 2.1), (8.15, 1.3), (6.35, 1.3), (6.35, 2.15), **red)
    _arrow(ax, (6.05, 2.15), (6.05, 1.3), (4.9, 1.3), (4.9, 2.15), **red)
    _text(ax, 5.48, 1.13, "$\\bar z$", size=9, color=ACCENT)
    _arrow(ax, (4.6, 2.15), (4.6, 1.3), (3.1, 1.3), (3.1, 1.65), **red)
    _text(ax, 3.85, 1.1, "$\\bar\\sigma = \\bar z \\odot \\varepsilon$", size=8.5, color=ACCENT)
    _arrow(ax, (4.3, 2.65), (4.3, 3.02), (3.45, 3.02), **red)
    _text(ax, 3.75, 3.3, "$\\bar\\mu = \\bar z$", size=8.5, color=ACCENT)
    _arrow(ax, (2.75, 1.65), (2.75, 1.3), (1.5, 1.3), (1.5, 2.15), **red)
    _text(ax, 2.0, 1.1, "from $\\mu$ and $\\sigma$ into $\\phi$", size=8.5, color=ACCENT)
    _text(ax, width / 2, 0.62, "dashed red: the gradient of the loss (the KL term sends its own straight to "
          "$\\mu$ and $\\log\\sigma^2$).", size=8.5, color="0.25")
    _text(ax, width / 2, 0.32, "Sampling $z \\sim \\mathcal{N}(\\mu, \\sigma^2)$ directly would give a number with no "
          "path back to $\\mu$ and $\\sigma$: the encoder would learn from the KL term alone.", size=8.5,
          color="0.25")
    _text(ax, width / 2, height - 0.25, "The reparameterization trick: the noise is an input, $z$ a function of "
          "$\\mu$ and $\\sigma$", size=12, weight="bold")
    return _finish(fig, "The VAE loss as a computation graph: the encoder gives mu and log sigma squared; noise "
                        "epsilon is drawn outside the graph; z equals mu plus sigma times epsilon goes through the "
                        "decoder to the reconstruction term, and mu and sigma give the closed-form KL term. Dashed "
                        "red arrows show the gradient reaching mu and sigma through z, and none into epsilon.")
