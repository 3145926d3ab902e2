"""Temperature explorer: a slider that redraws a softmax distribution (chapter 00)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from dlcourse import figures
from dlcourse.widgets.base import InteractiveView, interactive_view

SoftmaxFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class TemperatureState:
    """What the explorer shows for one temperature."""

    temperature: float
    probs: torch.Tensor  # (K,) float64, sums to 1
    entropy_bits: float  # 0 = all mass on one label; log2(K) = uniform
    top: int  # index of the most likely label


def temperature_state(logits: Sequence[float] | torch.Tensor, temperature: float,
                      softmax_fn: SoftmaxFn | None = None) -> TemperatureState:
    """Softmax of ``logits / temperature`` with its entropy and argmax.

    ``softmax_fn`` lets a notebook plug in the student's own softmax (default ``torch.softmax``).
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    z = torch.as_tensor(logits, dtype=torch.float64)
    if z.ndim != 1 or z.numel() == 0:
        raise ValueError("logits must be a non-empty 1-D sequence")
    fn = softmax_fn or (lambda t: torch.softmax(t, dim=-1))
    probs = fn(z / temperature).to(torch.float64)
    positive = probs[probs > 0]
    entropy = float(-(positive * positive.log2()).sum())
    return TemperatureState(float(temperature), probs, entropy, int(probs.argmax()))


def draw_temperature(state: TemperatureState, labels: Sequence[str]):
    """A bar chart of ``state.probs`` with the argmax highlighted; returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 2.8))
    colours = [figures.CATEGORICAL[1] if i == state.top else figures.CATEGORICAL[0] for i in range(len(labels))]
    ax.bar(range(len(labels)), state.probs.numpy(), color=colours)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylim(0, 1)
    ax.set_ylabel("probability")
    max_bits = math.log2(len(labels))
    ax.set_title(f"T = {state.temperature:.3g}   entropy = {state.entropy_bits:.2f} of {max_bits:.2f} bits")
    fig.tight_layout()
    return fig


def softmax_temperature(logits: Sequence[float] | torch.Tensor, labels: Sequence[str],
                        softmax_fn: SoftmaxFn | None = None) -> InteractiveView:
    """A log-scale temperature slider (0.05 to 20) above the distribution it produces."""
    import ipywidgets as W

    if len(labels) != len(logits):
        raise ValueError(f"{len(labels)} labels for {len(logits)} logits")
    slider = W.FloatLogSlider(value=1.0, base=10, min=-1.3, max=1.3, step=0.01, description="temperature",
                              continuous_update=True, readout_format=".2f")

    def render(temperature: float):
        return draw_temperature(temperature_state(logits, temperature, softmax_fn), labels)

    return interactive_view({"temperature": slider}, render, title="Softmax with temperature")
