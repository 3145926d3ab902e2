"""Chapter 07's figure: one GAN training step, the discriminator's and the generator's, and where the gradients
flow.

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from dlcourse.diagrams import ACCENT, INK, _arrow, _box, _canvas, _finish, _text


def gan_step_gradients() -> Figure:
    """One alternating GAN step as two panels: the forward pass (grey) and the backward pass (dashed red).

    Left, the discriminator step: the generated batch is detached, so the gradient of $J_D$ reaches D and
    stops at the cut — G gets none; only D's optimizer steps. Right, the generator step: the gradient of
    $J_G$ runs back through D into G; D's weights receive gradients but are not stepped; only G's
    optimizer steps. An updated network has a thick red outline.
    """
    width, height = 5.2, 3.3
    fig, axes = _canvas(width, height, panels=2)
    y, h, w = 1.6, 0.55, 0.8
    xs = {"z": 0.3, "G": 1.2, "cut": 2.25, "D": 3.2, "J": 4.5}
    for ax, step in zip(axes, ("discriminator", "generator"), strict=True):
        d_step = step == "discriminator"
        loss = "$J_D$" if d_step else "$J_G$"
        _text(ax, xs["z"], y, "$z$", size=11)
        _arrow(ax, (xs["z"] + 0.15, y), (xs["G"] - w / 2, y))
        _box(ax, xs["G"], y, "G", "ffn", w=w, h=h, size=11, edge=INK if d_step else ACCENT, lw=1.0 if d_step else 2.4)
        _arrow(ax, (xs["G"] + w / 2, y), (xs["D"] - w / 2, y))
        _text(ax, (xs["G"] + xs["D"]) / 2 - 0.25, y + 0.2, "$G(z)$", size=9)
        if d_step:
            ax.plot([xs["cut"] + 0.2] * 2, [y - 0.28, y + 0.28], color=ACCENT, lw=2.5, zorder=4)
            _text(ax, xs["cut"] + 0.2, y - 0.5, ".detach()", size=8.5, color=ACCENT)
            _text(ax, xs["D"] + 0.3, y - 0.62, "real $x$", size=9, ha="left")
            _arrow(ax, (xs["D"] + 0.28, y - 0.62), (xs["D"], y - 0.62), (xs["D"], y - h / 2))
        _box(ax, xs["D"], y, "D", "attention", w=w, h=h, size=11, edge=ACCENT if d_step else INK,
             lw=2.4 if d_step else 1.0)
        _arrow(ax, (xs["D"] + w / 2, y), (xs["J"] - 0.35, y))
        _box(ax, xs["J"], y, loss, "norm", w=0.65, h=h, size=11)
        # the backward pass, above the forward one: into D, and (generator step only) on through D into G
        yb = y + 0.62
        _arrow(ax, (xs["J"], y + h / 2), (xs["J"], yb), (xs["D"] + w / 4, yb), (xs["D"] + w / 4, y + h / 2),
               color=ACCENT, ls="--", lw=1.4)
        _text(ax, (xs["J"] + xs["D"]) / 2 + 0.1, yb + 0.2, f"$\\nabla {loss[1:-1]}$", size=9, color=ACCENT)
        if not d_step:
            _arrow(ax, (xs["D"] - w / 4, y + h / 2), (xs["D"] - w / 4, yb), (xs["G"], yb), (xs["G"], y + h / 2),
                   color=ACCENT, ls="--", lw=1.4)
            _text(ax, (xs["D"] + xs["G"]) / 2, yb + 0.2, "through D", size=9, color=ACCENT)
        _text(ax, width / 2, height - 0.3, f"{step} step", size=12, weight="bold")
        if d_step:
            notes = ["the gradient reaches D's weights only:", "G(z) was detached, G gets none;",
                     "opt_D.step(): only D moves"]
        else:
            notes = ["the gradient runs through D into G;", "D's .grad is filled but not applied;",
                     "opt_G.step(): only G moves"]
        for i, note in enumerate(notes):
            _text(ax, width / 2, 0.6 - 0.22 * i, note, size=8.5, color="0.25")
    return _finish(fig, "One GAN training step in two panels. Left, the discriminator step: the generated batch is "
                        "detached, so gradients reach the discriminator only. Right, the generator step: gradients "
                        "flow back through the discriminator into the generator, and only the generator's optimizer "
                        "steps.")
