"""Chapter 03's figures: token + segment + position embeddings summed per position, and the MLM head at the
masked positions beside the NSP head on [CLS].

Drawn with the shared conventions and helpers of :mod:`dlcourse.diagrams`.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from dlcourse.diagrams import ACCENT, INK, _add, _arrow, _box, _canvas, _finish, _stack, _text

BERT_EXAMPLE = ("[CLS]", "the", "penguin", "cannot", "fly", "[SEP]", "it", "swim", "##s", "[SEP]")


def _piece(token: str) -> str:
    """A WordPiece token as mathtext for a subscript: "[CLS]" → "[\\mathrm{CLS}]", "##s" → "\\#\\#\\mathrm{s}"."""
    if token.startswith("[") and token.endswith("]"):
        return f"[\\mathrm{{{token[1:-1]}}}]"
    body = token.removeprefix("##")
    return "\\#\\#" * (body != token) + f"\\mathrm{{{body}}}"


def bert_segments(tokens: Sequence[str]) -> list[int]:
    """The segment id of each token of a BERT input: 0 up to and including the first [SEP], 1 after it."""
    if "[SEP]" not in tokens:
        raise ValueError("a BERT input has at least one [SEP]")
    first = list(tokens).index("[SEP]")
    return [0 if i <= first else 1 for i in range(len(tokens))]


def bert_input_embeddings(tokens: Sequence[str] = BERT_EXAMPLE) -> Figure:
    """BERT's input: for every position t, token embedding + segment embedding (A up to the first [SEP], B
    after it) + position embedding $E_t$, summed, then LayerNorm — one column per token, [CLS] first."""
    n = len(tokens)
    if not 2 <= n <= 12:
        raise ValueError(f"draw between 2 and 12 tokens, got {n}")
    segments = bert_segments(tokens)
    col, left = max(0.9, 8.0 / n), 1.55
    width, height = left + n * col + 0.2, 5.2
    fig, (ax,) = _canvas(width, height)
    w, h = col - 0.1, 0.42
    rows = {"token": 3.55, "segment": 2.6, "position": 1.65}
    _text(ax, width / 2, height - 0.3, "BERT's input: three embeddings, summed", size=13, weight="bold")
    for name, y in [("input", 4.35), ("token\nembeddings", rows["token"]), ("segment\nembeddings", rows["segment"]),
                    ("position\nembeddings", rows["position"])]:
        _text(ax, 0.1, y, name, size=9.5, ha="left", color="0.3")
    for i, (token, segment) in enumerate(zip(tokens, segments, strict=True)):
        x = left + (i + 0.5) * col
        special = token in ("[CLS]", "[SEP]")
        _text(ax, x, 4.35, token, size=9, weight="bold" if special else "normal")
        _arrow(ax, (x, 4.18), (x, rows["token"] + h / 2))
        _box(ax, x, rows["token"], f"$E_{{{_piece(token)}}}$", "embedding", w=w, h=h, size=9)
        _add(ax, x, (rows["token"] + rows["segment"]) / 2, r=0.11)
        _box(ax, x, rows["segment"], "$E_A$" if segment == 0 else "$E_B$", "ffn" if segment == 0 else "linear",
             w=w, h=h, size=9)
        _add(ax, x, (rows["segment"] + rows["position"]) / 2, r=0.11)
        _box(ax, x, rows["position"], f"$E_{{{i}}}$", "norm", w=w, h=h, size=9)
        _arrow(ax, (x, rows["position"] - h / 2), (x, 1.02))
    _box(ax, left + n * col / 2, 0.8, "sum per column → LayerNorm → dropout → encoder input $e_t$", "softmax",
         w=n * col - 0.1, h=h, size=9.5)
    _text(ax, 0.1, 0.8, "= $e_t$", size=9.5, ha="left", color="0.3")
    _text(ax, left + n * col / 2, 0.25, "segment A: [CLS], sentence A and its [SEP]; segment B: sentence B and "
          "the last [SEP]; positions are learned vectors $E_0 \\ldots E_{511}$", size=8.5, color="0.35")
    return _finish(fig, f"BERT's input embeddings: one column per token ({' '.join(tokens)}); in each column the "
                        "token, segment (A or B) and position embeddings are added and the sum is layer-normalised.")


def bert_pretraining_heads(tokens: Sequence[str] = BERT_EXAMPLE, masked: Sequence[int] = (3,),
                           original: str = "cannot") -> Figure:
    """BERT pre-training: the corrupted pair goes through the bidirectional encoder; the MLM head (dense → GELU
    → LayerNorm → tied decoder $E^\\top$ + bias → softmax) predicts the original token at each chosen position
    only, and the NSP head (pooler tanh → linear → 2 classes) reads the [CLS] state. The masked positions
    ``masked`` show [MASK]; the first of them gets the drawn MLM head, whose target is ``original``."""
    n = len(tokens)
    if not 2 <= n <= 12:
        raise ValueError(f"draw between 2 and 12 tokens, got {n}")
    if not masked or any(not 0 < m < n for m in masked) or tokens[0] != "[CLS]":
        raise ValueError("tokens start with [CLS] and at least one position after it is masked")
    if any(tokens[m] in ("[CLS]", "[SEP]") for m in masked):
        raise ValueError("[CLS] and [SEP] are never chosen for masking")
    col, left = 0.95, 0.3
    width, height = left + n * col + 0.3, 7.0
    fig, (ax,) = _canvas(width, height)
    xs = [left + (i + 0.5) * col for i in range(n)]
    w, h = col - 0.12, 0.4
    _text(ax, width / 2, height - 0.3, "BERT pre-training: two heads on one encoder", size=13, weight="bold")
    for i, token in enumerate(tokens):
        shown = "[MASK]" if i in masked else token
        _text(ax, xs[i], 0.35, shown, size=9, color=ACCENT if i in masked else INK,
              weight="bold" if i in masked else "normal")
        _arrow(ax, (xs[i], 0.52), (xs[i], 1.0))
        _arrow(ax, (xs[i], 2.0), (xs[i], 2.35))
        _box(ax, xs[i], 2.57, f"$h_{{{i}}}$", "frame", w=w, h=h, size=9,
             edge=ACCENT if i in masked or i == 0 else "0.6")
    _box(ax, left + n * col / 2, 1.5, "BERT encoder: embeddings, then L bidirectional layers (every token sees "
         "every token)", "attention", w=n * col - 0.1, h=0.8, size=9.5)
    # NSP head on [CLS]
    x0 = left + 1.0
    nsp = _stack(ax, x0, 3.3, [("pooler: tanh($W_p h_0 + b_p$)", "linear"), ("NSP: linear → 2", "linear"),
                               ("softmax", "softmax")], gap=0.3, h=h, w=2.0, size=9)
    _arrow(ax, (xs[0], 2.57 + h / 2), (xs[0], 3.3))
    _text(ax, x0, nsp[-1] + 0.5, "IsNext or NotNext?", size=9.5)
    _text(ax, x0, nsp[-1] + 0.88, "$\\mathcal{L}_{\\mathrm{NSP}}$: cross-entropy", size=9, color="0.3")
    # MLM head on the first masked position
    m = masked[0]
    xm = max(xs[m], x0 + 2.45)
    mlm = _stack(ax, xm, 3.3, [("dense → GELU → LayerNorm", "ffn"), ("decoder $E_{\\mathrm{word}}^\\top$ + bias",
                                                                        "embedding"),
                               ("softmax over the vocabulary", "softmax")], gap=0.3, h=h, w=2.7, size=9)
    _arrow(ax, (xs[m], 2.57 + h / 2), (xs[m], 3.3))
    _text(ax, xm, mlm[-1] + 0.5, f"$p(x_{{{m}}} \\mid \\tilde{{x}})$, target: the original \"{original}\"", size=9.5)
    _text(ax, xm, mlm[-1] + 0.88, "$\\mathcal{L}_{\\mathrm{MLM}} = -\\sum_{i \\in M} \\log p(x_i \\mid \\tilde{x})$",
          size=9, color="0.3")
    _text(ax, xm + 1.45, mlm[1], "tied to the\ntoken embeddings", size=8, ha="left", color=ACCENT)
    _text(ax, width / 2, height - 0.75, "the MLM head runs at the chosen positions $M$ only (red); the other "
          "positions give no loss; $\\mathcal{L} = \\mathcal{L}_{\\mathrm{MLM}} + \\mathcal{L}_{\\mathrm{NSP}}$",
          size=9, color="0.35")
    return _finish(fig, "BERT pre-training: the corrupted sentence pair goes through the bidirectional encoder; the "
                        "masked-language-model head predicts the original token at the masked position only, and "
                        "the next-sentence head reads the [CLS] state and picks one of two classes.")
