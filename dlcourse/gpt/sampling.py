"""Sampling explorer: the next-token distribution before and after the decoding knobs (chapter 04).

The notebook supplies the language models and the decoding functions (the student's own), so the widget
shows exactly what the student's code does. :func:`next_token_state` decides what to draw and is tested
without a browser; :func:`next_token_html` draws it as HTML bars (fast enough to follow a slider);
:func:`sampling_explorer` wires the controls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from dlcourse.widgets.base import InteractiveView, legible, on_demand

# filter(logits (1, V), ids (1, T), settings) → filtered logits (1, V), −inf where removed
FilterFn = Callable[[torch.Tensor, torch.Tensor, dict], torch.Tensor]


@dataclass(frozen=True)
class LanguageModel:
    """What the explorer needs of a model: next-token logits for ids, and text ↔ ids."""

    name: str
    next_logits: Callable[[torch.Tensor], torch.Tensor]  # ids (1, T) → logits (1, V) of the next token
    encode: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]
    continue_text: Callable[[str, dict], str]  # prompt, settings → the generated continuation


@dataclass(frozen=True)
class NextTokenState:
    """The ``show`` most probable next tokens before filtering, and what the filters leave of them."""

    labels: list[str]
    before: torch.Tensor  # (show,) float64 probabilities of the raw distribution
    after: torch.Tensor  # (show,) float64 probabilities after the filters (renormalised; 0 = removed)
    kept: torch.Tensor  # (show,) bool
    kept_total: int  # tokens left in the whole vocabulary
    vocab_size: int


def token_label(text: str) -> str:
    """A token's text made visible: newline ⏎, space ␣, empty ∅."""
    return {"\n": "⏎", " ": "␣", "": "∅"}.get(text, text.replace("\n", "⏎").replace(" ", "␣"))


def next_token_state(logits: torch.Tensor, filtered: torch.Tensor, decode: Callable[[list[int]], str],
                     show: int = 20) -> NextTokenState:
    """Compare ``logits`` (V,) with ``filtered`` (V,) (−inf where a filter removed a token)."""
    if logits.shape != filtered.shape or logits.ndim != 1:
        raise ValueError(f"logits {tuple(logits.shape)} and filtered {tuple(filtered.shape)} must be equal 1-D")
    before = logits.double().softmax(-1)
    kept_all = torch.isfinite(filtered)
    if not kept_all.any():
        raise ValueError("the filters removed every token")
    after = filtered.double().softmax(-1)
    top = before.topk(min(show, logits.numel())).indices
    return NextTokenState([token_label(decode([int(i)])) for i in top], before[top], after[top], kept_all[top],
                          int(kept_all.sum()), logits.numel())


def next_token_html(state: NextTokenState, title: str = "") -> str:
    """The bars as HTML (a few kilobytes, drawn by the browser in a millisecond, unlike a figure).

    Grey: the model's probability; blue over it: after the filters; removed tokens' labels are greyed out.
    """
    from html import escape

    height = 140  # pixels for probability 1
    columns = []
    for label, before, after, kept in zip(state.labels, state.before.tolist(), state.after.tolist(),
                                          state.kept.tolist(), strict=True):
        columns.append(
            # as wide as its label (a subword token can be many characters), at least a bar's width
            '<div style="display:flex;flex-direction:column;align-items:center;min-width:34px;padding:0 3px">'
            f'<div style="position:relative;width:24px;height:{height}px">'
            f'<div title="model {before:.3f}" style="position:absolute;bottom:0;width:24px;'
            f'height:{before * height:.1f}px;background:#d3d3d3"></div>'
            f'<div title="after the filters {after:.3f}" style="position:absolute;bottom:0;left:6px;width:12px;'
            f'height:{after * height:.1f}px;background:#1f77b4"></div></div>'
            f'<div style="font-family:monospace;white-space:pre;color:{"#000" if kept else "#aaa"}">'
            f"{escape(label)}</div></div>")
    header = f"{escape(title)} &nbsp; {state.kept_total} of {state.vocab_size} tokens left"
    legend = ('<span style="color:#999">■</span> model &nbsp; <span style="color:#1f77b4">■</span> after the '
              "filters (renormalised) &nbsp; grey labels: removed")
    return (f'<div><b>{header}</b><div style="display:flex;align-items:flex-end;gap:2px;margin:6px 0">'
            + "".join(columns) + f"</div><small>{legend}</small></div>")


def sampling_explorer(models: list[LanguageModel], filter_fn: FilterFn, prompt: str = "",
                      max_prompt_chars: int = 400) -> InteractiveView:
    """Prompt, model and knobs above the next-token bars; "continue" samples a continuation.

    Temperature 0 means greedy. ``top k`` 0 and ``top p`` 1 switch those filters off; ``n-gram`` 0 too.
    """
    import ipywidgets as W

    by_name = {m.name: m for m in models}
    style = {"description_width": "initial"}
    controls = {
        "prompt": W.Textarea(value=prompt, description="prompt", layout=W.Layout(width="60%"), style=style),
        "model": W.Dropdown(options=list(by_name), description="model", style=style),
        "temperature": W.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.05, description="temperature", style=style),
        "top_k": W.IntSlider(value=0, min=0, max=100, description="top k (0 = off)", style=style),
        "top_p": W.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="top p", style=style),
        "no_repeat": W.IntSlider(value=0, min=0, max=6, description="n-gram block (0 = off)", style=style),
        "seed": W.IntText(value=0, description="seed", style=style, layout=W.Layout(width="140px")),
        "beams": W.IntSlider(value=1, min=1, max=5, description="beams", style=style),
        "length": W.IntSlider(value=120, min=10, max=400, step=10, description="new tokens", style=style),
    }
    shown = ["temperature", "top_k", "top_p", "no_repeat"]

    def settings(values: dict) -> dict:
        return {k: values[k] for k in ("temperature", "top_k", "top_p", "no_repeat", "seed", "beams", "length")}

    def render(**values):
        model = by_name[values["model"]]
        ids = torch.tensor([model.encode(values["prompt"][-max_prompt_chars:] or "\n")])
        logits = model.next_logits(ids)
        filtered = filter_fn(logits, ids, settings(values))
        state = next_token_state(logits[0], filtered[0], model.decode)
        return next_token_html(state, title=f"{model.name}: the next token")

    view = InteractiveView(controls, render, title="Sampling explorer")
    text_out = W.Output()
    button = W.Button(description="continue the prompt", button_style="primary")

    def on_click(_button=None):
        values = view.values()
        text_out.clear_output(wait=True)
        with text_out:
            continuation = by_name[values["model"]].continue_text(values["prompt"], settings(values))
            print(values["prompt"] + continuation)
        view.last_continuation = continuation

    button.on_click(on_click)
    on_demand(controls["seed"], controls["beams"], controls["length"], run=button)
    view.continue_prompt = on_click
    # controls on two rows: text and model, then the knobs
    view.children = (view.children[0], W.HBox([controls["prompt"], W.VBox([controls["model"], controls["seed"]])]),
                     W.HBox([controls[k] for k in shown], layout=W.Layout(flex_flow="row wrap")),
                     W.HBox([controls["beams"], controls["length"], legible(button)],
                            layout=W.Layout(flex_flow="row wrap")), view.output,
                     text_out)
    return view
