"""Shared pieces of chapter 10 (optimizers and schedulers).

* Two 2-D valleys to race optimizers on — Rosenbrock's banana and an ill-conditioned bowl — with their
  gradients in closed form, and :func:`trajectory`, which walks a valley with any *update function*.
* :class:`FunctionalOptimizer` turns an update function into a ``torch.optim.Optimizer`` (so PyTorch's
  learning-rate schedulers drive it), and :func:`state_numel` counts what an optimizer keeps.
* A small classifier on scikit-learn's digits and :func:`fit_classifier`, the loop the chapter's demos,
  the search and the shipped schedule runs share.

An *update function* is the functional form of one optimizer step for one tensor::

    new_param, new_state = update(param, grad, state, lr=..., **hyper)

``state`` is a dict the update function fills (``{}`` before the first step); it must not change its
arguments in place. The chapter's exercises write such functions; nothing here implements one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from dlcourse import runtime

Update = Callable[..., tuple[torch.Tensor, dict]]
LrLambda = Callable[[int], float]

# ----------------------------------------------------------------------------------------------------
# Valleys


@dataclass(frozen=True)
class Valley:
    """A 2-D test function ``f(x, y)`` with its gradient, a start point, its minimum and a view box."""

    name: str
    f: Callable[[torch.Tensor], torch.Tensor]  # (..., 2) -> (...)
    grad: Callable[[torch.Tensor], torch.Tensor]  # (2,) -> (2,)
    start: tuple[float, float]
    minimum: tuple[float, float]
    box: tuple[float, float, float, float]  # x_min, x_max, y_min, y_max


def rosenbrock(xy: torch.Tensor, a: float = 1.0, b: float = 100.0) -> torch.Tensor:
    """``(a - x)² + b (y - x²)²`` over the last dimension (size 2); minimum 0 at ``(a, a²)``."""
    x, y = xy[..., 0], xy[..., 1]
    return (a - x) ** 2 + b * (y - x**2) ** 2


def rosenbrock_grad(xy: torch.Tensor, a: float = 1.0, b: float = 100.0) -> torch.Tensor:
    """The gradient of :func:`rosenbrock`, (2,) -> (2,)."""
    x, y = xy[0], xy[1]
    return torch.stack([-2 * (a - x) - 4 * b * x * (y - x**2), 2 * b * (y - x**2)])


def bowl(xy: torch.Tensor, condition: float = 25.0) -> torch.Tensor:
    """``(x² + condition · y²) / 2``: curvature 1 along x and ``condition`` along y; minimum 0 at the origin."""
    return 0.5 * (xy[..., 0] ** 2 + condition * xy[..., 1] ** 2)


def bowl_grad(xy: torch.Tensor, condition: float = 25.0) -> torch.Tensor:
    """The gradient of :func:`bowl`, (2,) -> (2,)."""
    return torch.stack([xy[0], condition * xy[1]])


VALLEYS: dict[str, Valley] = {
    "bowl": Valley("ill-conditioned bowl (curvatures 1 and 25)", bowl, bowl_grad, (-4.5, 1.0), (0.0, 0.0),
                   (-5.0, 5.0, -1.6, 1.6)),
    "rosenbrock": Valley("Rosenbrock", rosenbrock, rosenbrock_grad, (-1.2, 1.0), (1.0, 1.0),
                         (-2.0, 2.0, -0.6, 2.2)),
}


def trajectory(update: Update, valley: Valley | str, steps: int, lr: float, **hyper: Any) -> torch.Tensor:
    """Points visited by ``update`` from the valley's start: float64 ``(n, 2)``, ``n <= steps + 1``.

    The walk stops early when a point stops being finite or leaves a box ten times the valley's view (a
    diverging run), so what is returned can always be drawn.
    """
    v = VALLEYS[valley] if isinstance(valley, str) else valley
    x0, x1, y0, y1 = v.box
    limit = 10 * max(x1 - x0, y1 - y0)
    p = torch.tensor(v.start, dtype=torch.float64)
    state: dict = {}
    points = [p]
    for _ in range(steps):
        p, state = update(p, v.grad(p), state, lr=lr, **hyper)
        if not bool(torch.isfinite(p).all()) or float(p.abs().max()) > limit:
            break
        points.append(p)
    return torch.stack(points)


# ----------------------------------------------------------------------------------------------------
# An optimizer made of an update function


class FunctionalOptimizer(torch.optim.Optimizer):
    """A ``torch.optim.Optimizer`` whose step calls ``update`` on every parameter that has a gradient.

    ``defaults`` (``lr`` and the update's other keyword arguments) become the param groups' settings, so
    ``torch.optim.lr_scheduler`` schedulers can change ``lr`` between steps. The per-parameter state the
    update returns is kept in ``self.state`` (what ``state_dict()`` saves).
    """

    def __init__(self, params: Iterable[torch.Tensor] | Iterable[dict], update: Update, **defaults: Any) -> None:
        if "lr" not in defaults:
            raise TypeError("FunctionalOptimizer needs lr=")
        self.update = update
        self.hyper_names = tuple(defaults)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One update of every parameter with a gradient; returns ``closure()`` when one is given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            hyper = {k: group[k] for k in self.hyper_names}
            for p in group["params"]:
                if p.grad is None:
                    continue
                new, state = self.update(p.detach(), p.grad, dict(self.state[p]), **hyper)
                p.copy_(new)
                self.state[p] = state
        return loss


def state_numel(optimizer: torch.optim.Optimizer) -> int:
    """How many numbers the optimizer's state holds (tensors in ``optimizer.state``; scalars count 1)."""
    total = 0
    for state in optimizer.state.values():
        for value in state.values():
            total += value.numel() if isinstance(value, torch.Tensor) else 1
    return total


# ----------------------------------------------------------------------------------------------------
# A small classifier on digits, and the loop the demos share


def mlp(depth: int = 3, width: int = 128, inputs: int = 64, classes: int = 10) -> torch.nn.Sequential:
    """``depth`` Linear+ReLU layers of ``width`` units, then a linear read-out to ``classes`` logits."""
    layers: list[torch.nn.Module] = []
    size = inputs
    for _ in range(depth):
        layers += [torch.nn.Linear(size, width), torch.nn.ReLU()]
        size = width
    return torch.nn.Sequential(*layers, torch.nn.Linear(size, classes))


@dataclass
class Run:
    """One training run: the loss of every step, and (step, validation loss, validation accuracy) triples."""

    loss: list[float] = field(default_factory=list)
    evals: list[tuple[int, float, float]] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    stopped_at: int | None = None  # the step at which early stopping ended the run, if it did

    @property
    def best_accuracy(self) -> float:
        return max((acc for _, _, acc in self.evals), default=math.nan)

    @property
    def final_accuracy(self) -> float:
        return self.evals[-1][2] if self.evals else math.nan

    @property
    def final_val_loss(self) -> float:
        return self.evals[-1][1] if self.evals else math.nan


def fit_classifier(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_val: torch.Tensor,
    y_val: torch.Tensor,
    steps: int,
    *,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    batch_size: int = 64,
    seed: int = 0,
    eval_every: int = 25,
    clip: Callable[[list[torch.Tensor], float], tuple[list[torch.Tensor], torch.Tensor]] | None = None,
    max_norm: float = 1.0,
    should_stop: Callable[[float], bool] | None = None,
) -> Run:
    """Train ``model`` with cross-entropy on minibatches drawn with replacement from a seeded generator.

    After each ``optimizer.step()`` the scheduler (if any) steps. ``clip(grads, max_norm)`` (e.g. the
    chapter's global-norm clipping) replaces the gradients before each step. Every ``eval_every`` steps and
    at the end the validation loss and accuracy are recorded; ``should_stop(val_loss)`` (e.g. an early
    stopper) may end the run there. A non-finite training loss ends the run too (the loss is recorded).
    """
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    run = Run()
    params = [p for p in model.parameters() if p.requires_grad]
    for step in range(1, steps + 1):
        model.train()
        idx = torch.randint(0, len(y_train), (batch_size,), generator=gen)
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        run.lrs.append(float(optimizer.param_groups[0]["lr"]))
        run.loss.append(loss.item())
        if not math.isfinite(run.loss[-1]):
            break
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            with torch.no_grad():
                clipped, _ = clip([p.grad for p in params], max_norm)
                for p, g in zip(params, clipped, strict=True):
                    p.grad.copy_(g)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if step % eval_every == 0 or step == steps:
            model.eval()
            with torch.no_grad():
                logits = model(x_val)
                val_loss = float(F.cross_entropy(logits, y_val))
                acc = float((logits.argmax(-1) == y_val).float().mean())
            run.evals.append((step, val_loss, acc))
            if should_stop is not None and should_stop(val_loss):
                run.stopped_at = step
                break
    return run


def smooth(values: Sequence[float], width: int = 20) -> list[float]:
    """Running mean over the last ``width`` values (shorter at the start), for noisy loss curves."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= width:
            total -= values[i - width]
        out.append(total / min(i + 1, width))
    return out
