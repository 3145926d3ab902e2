"""A small training loop with a tqdm.auto progress bar and a live loss plot.

It is deliberately plain — the chapters teach what goes inside a step — and it returns the history so
that a notebook can check the target it states.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from dlcourse import figures, runtime


@dataclass
class History:
    """What happened during training: one loss per step, and (step, metric) pairs from evaluations."""

    loss: list[float] = field(default_factory=list)
    evals: list[tuple[int, float]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def last_eval(self) -> float:
        return self.evals[-1][1] if self.evals else math.nan


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where figures can be displayed and updated)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class LiveLossPlot:
    """A matplotlib figure of the training loss (and an evaluation metric) that redraws in place.

    A redraw (a new figure, rendered to PNG for the notebook) costs a tenth of a second or more, so it happens
    at most once every ``redraw_seconds`` of training, whatever the steps asked for; the last picture of a run
    (``final=True``) is always drawn. A run shorter than that draws once, at its end.
    """

    def __init__(self, title: str = "training", metric_name: str = "eval", redraw_seconds: float = 2.0) -> None:
        self.title, self.metric_name, self.redraw_seconds = title, metric_name, redraw_seconds
        self._handle = None
        self._last = time.perf_counter()
        self.redraws = 0

    def figure(self, history: History):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3))
        ax.plot(history.loss, lw=1, label="training loss")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.set_title(self.title)
        if history.evals:
            ax2 = ax.twinx()
            steps, values = zip(*history.evals, strict=True)
            ax2.plot(steps, values, "o-", color=figures.CATEGORICAL[1], label=self.metric_name)
            ax2.set_ylabel(self.metric_name)
        fig.tight_layout()
        plt.close(fig)
        return fig

    def due(self, final: bool = False) -> bool:
        """Whether :meth:`update` would redraw now."""
        return final or time.perf_counter() - self._last >= self.redraw_seconds

    def update(self, history: History, final: bool = False) -> None:
        if not in_notebook() or not self.due(final):
            return
        from IPython.display import display

        fig = self.figure(history)
        if self._handle is None:
            self._handle = display(fig, display_id=True)
        else:
            self._handle.update(fig)
        self.redraws += 1
        self._last = time.perf_counter()


def train(
    model: torch.nn.Module,
    step_loss: Callable[[torch.nn.Module, object], torch.Tensor],
    batches: Iterator,
    optimizer: torch.optim.Optimizer,
    steps: int,
    *,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    evaluate: Callable[[torch.nn.Module], float] | None = None,
    eval_every: int = 100,
    plot_every: int = 50,
    title: str = "training",
    metric_name: str = "eval",
    live_plot: bool = True,
    clip_grad_norm: float | None = None,
    items_per_step: int | None = None,
    item_name: str = "tokens",
    final_evaluate: Callable[[torch.nn.Module], float] | None = None,
) -> History:
    """Run ``steps`` optimisation steps (and ``scheduler.step()`` after each, when given).

    ``step_loss(model, batch)`` returns a scalar loss for one batch drawn from ``batches`` (an iterator
    that is cycled through as long as needed). ``evaluate(model)`` returns a metric; it runs every
    ``eval_every`` steps and at the end, in ``eval`` mode and without gradients. ``clip_grad_norm`` rescales
    the gradients whenever their global norm exceeds it. ``items_per_step`` (``item_name``: tokens, examples)
    only goes into the run's record (:func:`record_run`), for the throughput. ``final_evaluate`` (a thorough
    evaluation, e.g. on a whole held-out text, too slow to run often) replaces ``evaluate`` after the last step;
    it runs after the clock stops, so ``History.seconds`` is the training time. In a notebook the live loss plot
    is redrawn every ``plot_every`` steps, but at most once every 2 s (:class:`LiveLossPlot`), and at the end.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if clip_grad_norm is not None and not clip_grad_norm > 0:
        raise ValueError(f"clip_grad_norm must be positive, got {clip_grad_norm}")
    history = History()
    plot = LiveLossPlot(title, metric_name) if live_plot else None
    start = time.perf_counter()
    bar = tqdm(range(1, steps + 1), desc=title, file=sys.stdout, leave=False)
    for step in bar:
        model.train()
        loss = step_loss(model, next(batches))
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss became {loss.item()} at step {step}; lower the learning rate?")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        history.loss.append(loss.item())
        last = step == steps
        if evaluate is not None and (last and final_evaluate is None or not last and step % eval_every == 0):
            model.eval()
            with torch.no_grad():
                history.evals.append((step, float(evaluate(model))))
            bar.set_postfix({metric_name: f"{history.last_eval:.4g}"})
        if plot is not None and (step % plot_every == 0 or last):
            plot.update(history, final=last and final_evaluate is None)
    bar.close()
    history.seconds = time.perf_counter() - start
    if final_evaluate is not None:
        model.eval()
        with torch.no_grad():
            history.evals.append((steps, float(final_evaluate(model))))
        if plot is not None:
            plot.update(history, final=True)
    record_run(title, steps=steps, seconds=history.seconds, metric_name=metric_name, metric=history.last_eval,
               items=None if items_per_step is None else items_per_step * steps, item_name=item_name)
    return history


RUN_LOG = "DLCOURSE_RUN_LOG"


def recent_mean(values: list[float], n: int = 50) -> float:
    """The mean of the last ``n`` values (the training loss a run ended at, less noisy than the last step)."""
    tail = values[-n:]
    return sum(tail) / len(tail) if tail else math.nan


def record_run(name: str, *, steps: int, seconds: float, metric_name: str, metric: float,
               items: int | None = None, item_name: str = "tokens") -> None:
    """Append one training run to the JSON-lines file named by ``$DLCOURSE_RUN_LOG`` (nothing when unset).

    ``make bench`` runs each chapter in full mode with it set and reports every training demo: steps,
    wall time, throughput (``items`` over the run, e.g. tokens or examples) and the metric reached.
    """
    path = os.environ.get(RUN_LOG)
    if not path:
        return
    entry = {"run": name, "steps": steps, "seconds": round(seconds, 2), "metric": metric_name,
             "value": None if math.isnan(metric) else round(float(metric), 5)}
    if items is not None:
        entry[f"{item_name}_per_s"] = round(items / seconds, 1) if seconds > 0 else None
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


def minibatches(*tensors: torch.Tensor, batch_size: int, seed: int = 0) -> Iterator[tuple[torch.Tensor, ...]]:
    """Endless shuffled minibatches over tensors that share their first dimension."""
    n = len(tensors[0])
    if any(len(t) != n for t in tensors):
        raise ValueError("all tensors must have the same length")
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    while True:
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            yield tuple(t[idx] for t in tensors)
