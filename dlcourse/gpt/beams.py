"""Beam-search tree: which partial sequences beam search kept at each step, which it dropped, and which
hypotheses it returned (chapter 04).

The tree is rebuilt from what the model was asked: a beam search calls the model once per step on its
live beams, so recording those inputs (:class:`RecordingModel`) shows every beam, with no hook inside the
search itself — the student's own ``beam_search`` can be drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from dlcourse import figures


class RecordingModel(nn.Module):
    """Wraps a model and keeps a copy of every ``input_ids`` it is called with (in ``calls``)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.calls: list[torch.Tensor] = []

    def forward(self, input_ids: torch.Tensor, *args, **kwargs):
        self.calls.append(input_ids.detach().cpu().clone())
        return self.model(input_ids, *args, **kwargs)


@dataclass(frozen=True)
class BeamTree:
    """Nodes are generated-token prefixes (tuples of ids); ``returned`` maps each returned one to its rank."""

    nodes: list[tuple[int, ...]]  # every prefix seen, parents before children
    live: set[tuple[int, ...]]  # prefixes that were live beams at some step
    returned: dict[tuple[int, ...], int]  # returned hypotheses → rank (0 = best)
    scores: list[float]


def beam_tree_state(calls: Sequence[torch.Tensor], prompt_length: int, sequences: torch.Tensor,
                    scores: torch.Tensor | Sequence[float], pad_id: int | None = None) -> BeamTree:
    """Rebuild the tree from the model's inputs and the returned ``sequences`` (k, T + L).

    Returned sequences are cut after their first ``pad_id`` (the EOS that ended them); the padding after it
    is not part of the hypothesis.
    """
    live: set[tuple[int, ...]] = set()
    for ids in calls:
        for row in ids.tolist():
            live.add(tuple(row[prompt_length:]))
    returned: dict[tuple[int, ...], int] = {}
    for rank, row in enumerate(sequences.tolist()):
        generated = row[prompt_length:]
        if pad_id is not None and pad_id in generated:
            generated = generated[: generated.index(pad_id) + 1]
        returned.setdefault(tuple(generated), rank)
    nodes = {prefix[:n] for prefix in live | set(returned) for n in range(len(prefix) + 1)}
    ordered = sorted(nodes, key=lambda p: (len(p), p))
    return BeamTree(ordered, live, returned, [float(s) for s in scores])


def draw_beam_tree(tree: BeamTree, token_label: Callable[[int], str], title: str = ""):
    """Steps left to right; returned hypotheses in colour with their scores, dropped beams in grey."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    children: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for node in tree.nodes[1:]:
        children.setdefault(node[:-1], []).append(node)
    y: dict[tuple[int, ...], float] = {}

    def place(node: tuple[int, ...], next_leaf: list[float]) -> float:
        kids = children.get(node, [])
        if not kids:
            y[node] = next_leaf[0]
            next_leaf[0] += 1
        else:
            y[node] = sum(place(kid, next_leaf) for kid in kids) / len(kids)
        return y[node]

    leaves = [0.0]
    place((), leaves)
    on_path = {r[:n]: rank for r, rank in sorted(tree.returned.items(), key=lambda kv: -kv[1])
               for n in range(len(r) + 1)}
    def colours(rank: int) -> str:  # the course's colour-blind-safe categories; each beam is also labelled #rank
        return figures.CATEGORICAL[rank % len(figures.CATEGORICAL)]

    depth = max(len(n) for n in tree.nodes)
    width, height = min(max(6.0, 2 + 0.9 * depth), 16), max(2.5, 0.32 * leaves[0] + 1.2)
    fig, ax = plt.subplots(figsize=(width, height))
    # fixed margins in inches (no layout pass over a hundred labels): room for the title above, the step
    # axis below
    fig.subplots_adjust(left=0.2 / width, right=1 - 0.1 / width, bottom=0.55 / height, top=1 - 0.6 / height)
    edges, edge_colours, widths, label_colours = [], [], [], []
    for node in tree.nodes[1:]:  # one collection of edges and one of markers: far cheaper than an artist each
        parent = node[:-1]
        rank = on_path.get(node)
        colour = colours(rank) if rank is not None else "lightgrey"
        edges.append([(len(parent), y[parent]), (len(node), y[node])])
        edge_colours.append(colour)
        widths.append(2 if rank is not None else 1)
        label_colours.append(colour)
        ax.text(len(node), y[node], token_label(node[-1]), ha="center", va="center", fontsize=8, zorder=4)
    order = sorted(range(len(edges)), key=lambda i: widths[i])  # kept beams drawn over dropped ones
    ax.add_collection(LineCollection([edges[i] for i in order], colors=[edge_colours[i] for i in order],
                                     linewidths=[widths[i] for i in order], zorder=1))
    nodes = tree.nodes[1:]
    ax.scatter([len(n) for n in nodes], [y[n] for n in nodes], s=150, marker="s", facecolors="white",
               edgecolors=label_colours, linewidths=1, zorder=3)
    for hypothesis, rank in tree.returned.items():
        if rank < len(tree.scores):
            ax.text(len(hypothesis) + 0.45, y[hypothesis], f"#{rank + 1}  {tree.scores[rank]:.3f}",
                    va="center", fontsize=8, color=colours(rank))
    ax.plot([0], [y[()]], "ko")
    ax.set_xlim(-0.5, depth + 1.8)
    ax.set_ylim(leaves[0] - 0.4, -0.6)  # top to bottom, as the tree was laid out
    ax.set_yticks([])
    ax.set_xlabel("step")
    ax.set_title(title or "beam search: kept beams in colour, dropped ones in grey\n"
                          "returned hypotheses with their scores", fontsize=9)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return fig


def beam_tree_explorer(search: Callable[[nn.Module, torch.Tensor, int, int], tuple[torch.Tensor, torch.Tensor]],
                       model: nn.Module, encode: Callable[[str], list[int]], token_label: Callable[[int], str],
                       prompt: str, eos_id: int | None = None, max_steps: int = 20):
    """A prompt box and sliders for the beam width and the number of steps, above the tree that
    ``search(model, ids (1, T), num_beams, max_new_tokens)`` grows."""
    import ipywidgets as W

    from dlcourse.widgets.base import interactive_view

    controls = {
        # several lines (a play's prompt is "JULIET:\nO"); recomputed when the box loses focus, not per key
        "text": W.Textarea(value=prompt, description="prompt", rows=3, continuous_update=False,
                           layout=W.Layout(width="420px")),
        "beams": W.IntSlider(value=3, min=1, max=6, description="beams"),
        "steps": W.IntSlider(value=min(8, max_steps), min=1, max=max_steps, description="steps"),
    }

    def render(text: str, beams: int, steps: int):
        recorder = RecordingModel(model)
        device = next(model.parameters()).device
        ids = torch.tensor([encode(text or " ")], device=device)
        sequences, scores = search(recorder, ids, beams, steps)
        tree = beam_tree_state(recorder.calls, ids.shape[1], sequences.cpu(), scores, pad_id=eos_id)
        return draw_beam_tree(tree, token_label)

    return interactive_view(controls, render, title="Beam search, step by step")
