"""Chapter 05's package code: the character vocabulary with sentinels, the pre-training objectives the chapter
compares, the text-to-text tasks, batching, training, decoding and evaluation of a small T5.

The chapter's exercises — the random span mask, span corruption with sentinels, ``shift_right``, relative
position buckets, the three attention masks and the T5 model itself — are the student's; the functions here
take them as arguments wherever they need them and never compute those quantities themselves.

Tokens are characters. Id 0 is ``<pad>`` (T5 also starts every decoder input with it), 1 is ``</s>`` (end of
sequence), 2 is ``<unk>``, 3 is ``<M>`` (the mask token of the BERT-style objective); then come the characters,
and the :data:`N_SENTINELS` sentinels sit at the top of the vocabulary, as in T5: sentinel *k* has id
``V - 1 - k``. They print as ``<X>``, ``<Y>``, ``<Z>``, ``<S3>``, ``<S4>``, … .

:func:`install_refusals` wraps the Hugging Face T5 functions that the exercises re-implement (the bucket
function, ``_shift_right``, the mask functions of ``transformers.masking_utils``, the T5 layers' forward
passes) so that they raise :class:`~dlcourse.checks.ForbiddenCall` while a check runs the student's code under
``checks.forbid([..., REFUSED])``; outside such a check they behave exactly as before.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
import torch.nn as nn

from dlcourse import onimport, training

PAD, EOS, UNK, MASK = 0, 1, 2, 3
SPECIALS = ["<pad>", "</s>", "<unk>", "<M>"]
N_SENTINELS = 32
IGNORE = -100
REFUSED = "hf_t5_reference"  # the pseudo-pattern of checks.forbid that refuses Hugging Face's T5 functions

# The demo's model size: a tiny T5 (original T5's ReLU feed-forward, tied embeddings).
DEMO_SIZE = {"d_model": 64, "num_heads": 4, "d_kv": 16, "d_ff": 256, "num_layers": 2, "num_decoder_layers": 2,
             "gated": False, "num_buckets": 32, "max_distance": 128}

# The sizes of the published T5 checkpoints (Raffel et al., 2020, section 3.7): all use d_kv = 64.
PUBLISHED = {
    "T5-Small": {"d_model": 512, "d_ff": 2048, "num_layers": 6, "num_heads": 8},
    "T5-Base": {"d_model": 768, "d_ff": 3072, "num_layers": 12, "num_heads": 12},
    "T5-Large": {"d_model": 1024, "d_ff": 4096, "num_layers": 24, "num_heads": 16},
    "T5-3B": {"d_model": 1024, "d_ff": 16384, "num_layers": 24, "num_heads": 32, "d_kv": 128},
    "T5-11B": {"d_model": 1024, "d_ff": 65536, "num_layers": 24, "num_heads": 128, "d_kv": 128},
}


# ----------------------------------------------------------------------------------------------------
# Vocabulary


def sentinel_name(k: int) -> str:
    """How sentinel ``k`` prints: ``<X>``, ``<Y>``, ``<Z>`` (the lecture's names), then ``<S3>``, ``<S4>``, …"""
    return ["<X>", "<Y>", "<Z>"][k] if k < 3 else f"<S{k}>"


class Vocab:
    """Characters ↔ ids, with the specials first and the sentinels at the top (see the module docstring)."""

    def __init__(self, characters: str) -> None:
        chars = sorted(set(characters))
        self.itos = SPECIALS + chars + [sentinel_name(k) for k in reversed(range(N_SENTINELS))]
        self.stoi = {c: i for i, c in enumerate(SPECIALS + chars)}
        self.n_chars = len(chars)

    def __len__(self) -> int:
        return len(self.itos)

    @property
    def sentinels(self) -> list[int]:
        """The sentinel ids in order of use: ``sentinels[k]`` is ``V - 1 - k``."""
        return [len(self) - 1 - k for k in range(N_SENTINELS)]

    def is_sentinel(self, i: int) -> bool:
        return i >= len(self) - N_SENTINELS

    def encode(self, text: str, eos: bool = False) -> list[int]:
        ids = [self.stoi.get(c, UNK) for c in text]
        return ids + [EOS] if eos else ids

    def decode(self, ids: Sequence[int] | torch.Tensor, stop_at_eos: bool = True, show_specials: bool = False) -> str:
        """Text of ``ids``: sentinels by name; up to the first ``</s>`` (when ``stop_at_eos``); padding, and the
        other specials unless ``show_specials``, left out; ids ≥ V (``-100``…) are skipped."""
        out = []
        for i in ids.tolist() if isinstance(ids, torch.Tensor) else ids:
            if i == EOS and stop_at_eos:
                break
            if not 0 <= i < len(self) or i == PAD:
                continue
            if i < len(SPECIALS) and not show_specials:
                continue
            out.append(self.itos[i])
        return "".join(out)


@cache
def vocab() -> Vocab:
    """The chapter's vocabulary: every character of the Shakespeare corpus and of chapter 01's dates."""
    from dlcourse.datasets import dates, shakespeare

    date_chars = "".join(dates.vocabularies()[0].itos[len(dates.SPECIALS):])
    return Vocab("".join(shakespeare.char_corpus().tokenizer.itos) + date_chars + "0123456789-:")


@cache
def corpus_ids() -> tuple[torch.Tensor, torch.Tensor]:
    """The Shakespeare corpus in this vocabulary: (training ids, held-out ids), int64; the held-out plays are
    chapter 04's."""
    from dlcourse.datasets import shakespeare

    corpus = shakespeare.char_corpus()
    table = torch.tensor([vocab().stoi[c] for c in corpus.tokenizer.itos])
    return table[corpus.train], table[corpus.val]


# ----------------------------------------------------------------------------------------------------
# Refusing Hugging Face's own T5 functions inside a check


def _refused_now() -> bool:
    from dlcourse.grading import guards

    return any(spec[0] == "dlcourse.checks.forbid" and REFUSED in spec[1] for spec in guards._ACTIVE.get())


def _refusing(name: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        if _refused_now():
            from dlcourse.checks import ForbiddenCall

            raise ForbiddenCall(f"this exercise asks you to write it yourself, but your code called {name} "
                                "(Hugging Face's implementation, the oracle of the test)")
        return fn(*args, **kwargs)

    guarded._dlcourse_refusal = True
    return guarded


_MASK_FUNCTIONS = ("and_masks", "or_masks", "causal_mask_function", "bidirectional_mask_function",
                   "blockwise_overlay", "padding_mask_function", "sdpa_mask", "eager_mask", "create_causal_mask",
                   "create_bidirectional_mask", "prepare_padding_mask")


def _wrap_masking(mu: Any) -> None:
    """Wrap the attention-mask functions of ``transformers.masking_utils`` (the module, already run)."""
    for attr in _MASK_FUNCTIONS:
        fn = getattr(mu, attr)
        if not getattr(fn, "_dlcourse_refusal", False):
            setattr(mu, attr, _refusing(f"transformers.masking_utils.{attr}", fn))


def _wrap_t5(m5: Any) -> None:
    """Wrap the bucket function, ``_shift_right`` and the forward passes of ``modeling_t5`` (already run)."""
    methods = [(m5.T5PreTrainedModel, "_shift_right"), (m5.T5Attention, "compute_bias")]
    methods += [(cls, "forward") for cls in (m5.T5LayerNorm, m5.T5DenseActDense, m5.T5DenseGatedActDense,
                                             m5.T5LayerFF, m5.T5Attention, m5.T5LayerSelfAttention,
                                             m5.T5LayerCrossAttention, m5.T5Block, m5.T5Stack, m5.T5Model,
                                             m5.T5ForConditionalGeneration, m5.T5EncoderModel)]
    for owner, attr in methods:
        fn = owner.__dict__[attr]
        if not getattr(fn, "_dlcourse_refusal", False):
            setattr(owner, attr, _refusing(f"{owner.__name__}.{attr}", fn))
    bucket = m5.T5Attention.__dict__["_relative_position_bucket"]
    if not getattr(bucket.__func__, "_dlcourse_refusal", False):
        m5.T5Attention._relative_position_bucket = staticmethod(
            _refusing("T5Attention._relative_position_bucket", bucket.__func__))


_WRAPS: dict[str, Callable[[Any], None]] = {"transformers.masking_utils": _wrap_masking,
                                            "transformers.models.t5.modeling_t5": _wrap_t5}


@cache
def install_refusals() -> None:
    """Wrap Hugging Face's T5 functions and attention-mask functions (see the module docstring); idempotent.

    Modules already imported are wrapped now, the others as soon as they are imported (:mod:`dlcourse.onimport`),
    so a kernel that never touches Hugging Face's T5 code does not pay seconds to import it."""
    for name, wrap in _WRAPS.items():
        onimport.when_imported(name, wrap)


def sample_masks(noise_mask: Callable[..., torch.Tensor], n: int, length: int, noise_density: float,
                 mean_noise_span_length: float, seed: int) -> torch.Tensor:
    """``n`` masks from ``noise_mask(length, noise_density, mean_noise_span_length, generator)`` (the student's
    function), one generator seeded with ``seed`` for all: bool (n, length). The statistical test of chapter 05
    draws its thousands of masks with it, in one call."""
    generator = torch.Generator().manual_seed(seed)
    return torch.stack([torch.as_tensor(noise_mask(length, noise_density, mean_noise_span_length, generator))
                        for _ in range(n)])


# ----------------------------------------------------------------------------------------------------
# Pre-training objectives other than span corruption (which is the student's)


def prefix_lm_example(tokens: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Prefix language modelling: split at a uniformly random point; the input is the part before it, the
    target the part after (each followed by ``</s>``)."""
    cut = int(torch.randint(1, len(tokens), (1,), generator=generator))
    eos = tokens.new_tensor([EOS])
    return torch.cat([tokens[:cut], eos]), torch.cat([tokens[cut:], eos])


def bert_style_example(tokens: torch.Tensor, generator: torch.Generator, vocab_size: int, density: float = 0.15,
                       n_chars: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT-style denoising with BERT's own 80/10/10 split (chapter 03): ``density`` of the tokens are picked
    i.i.d.; of those, 80 % become ``<M>``, 10 % a random character and 10 % stay; the target is the whole
    original sequence. (The T5 paper's BERT-style objective, Section 3.3.1, replaced 90 % of the picked tokens
    by the mask token and 10 % by a random token, keeping none unchanged.)"""
    picked = torch.rand(len(tokens), generator=generator) < density
    roll = torch.rand(len(tokens), generator=generator)
    first_char = len(SPECIALS)
    last_char = vocab_size - N_SENTINELS if n_chars is None else first_char + n_chars
    random_chars = torch.randint(first_char, last_char, (len(tokens),), generator=generator)
    corrupted = torch.where(picked & (roll < 0.8), torch.full_like(tokens, MASK), tokens)
    corrupted = torch.where(picked & (roll >= 0.8) & (roll < 0.9), random_chars, corrupted)
    eos = tokens.new_tensor([EOS])
    return torch.cat([corrupted, eos]), torch.cat([tokens, eos])


def deshuffle_example(tokens: torch.Tensor, generator: torch.Generator, chunk: int = 1
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Deshuffling: the input is the sequence in a random order (of chunks of ``chunk`` tokens, words in the
    paper), the target the original."""
    pieces = list(tokens.split(chunk))
    order = torch.randperm(len(pieces), generator=generator).tolist()
    eos = tokens.new_tensor([EOS])
    return torch.cat([pieces[i] for i in order] + [eos]), torch.cat([tokens, eos])


def iid_drop_example(tokens: torch.Tensor, generator: torch.Generator, density: float = 0.15
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """I.i.d. noise, drop tokens: each token is dropped with probability ``density``; the target is the dropped
    tokens in order, with no sentinel to say where they were."""
    dropped = torch.rand(len(tokens), generator=generator) < density
    eos = tokens.new_tensor([EOS])
    return torch.cat([tokens[~dropped], eos]), torch.cat([tokens[dropped], eos])


def drop_spans_example(tokens: torch.Tensor, noise_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop corrupted spans: like span corruption, but the noise is removed from the input without a sentinel,
    and the target is the removed tokens alone."""
    eos = tokens.new_tensor([EOS])
    return torch.cat([tokens[~noise_mask], eos]), torch.cat([tokens[noise_mask], eos])


# ----------------------------------------------------------------------------------------------------
# Text-to-text tasks


TASKS = ("date", "reverse", "real", "count")
PREFIXES = {"date": "date: ", "reverse": "reverse: ", "fill": "fill: ", "real": "real or shuffled: ",
            "count": "count words: "}
ALL_TASKS = ("date", "reverse", "fill", "real", "count")


@dataclass(frozen=True)
class Example:
    task: str
    source: str  # with its task prefix
    target: str


def _words(text: str, lo: int, hi: int) -> list[str]:
    return sorted({w for w in text.split() if w.isalpha() and lo <= len(w) <= hi})


def _snippets(text: str, n: int, rng: random.Random, lo: int = 18, hi: int = 30) -> list[str]:
    """``n`` pieces of single lines, cut at word boundaries, between ``lo`` and ``hi`` characters long."""
    lines = [ln.strip() for ln in text.splitlines() if len(ln.strip()) >= lo]
    out = []
    while len(out) < n:
        words = rng.choice(lines).split()
        start = rng.randrange(len(words))
        piece = ""
        for w in words[start:]:
            if len((piece + " " + w).strip()) > hi:
                break
            piece = (piece + " " + w).strip()
        if len(piece) >= lo:
            out.append(piece)
    return out


def _shuffled_words(text: str, rng: random.Random) -> str:
    """The letters of each word of ≥ 3 letters in a new random order (punctuation stays where it was)."""
    words = []
    for w in text.split(" "):
        slots = [i for i, c in enumerate(w) if c.isalpha()]
        letters = [w[i] for i in slots]
        if len(slots) >= 3 and len(set(letters)) > 1:
            shuffled = letters[:]
            while shuffled == letters:
                rng.shuffle(shuffled)
            chars = list(w)
            for i, c in zip(slots, shuffled, strict=True):
                chars[i] = c
            w = "".join(chars)
        words.append(w)
    return " ".join(words)


@cache
def _test_words(lo: int, hi: int) -> list[str]:
    """Words of the held-out plays that never occur in the training plays."""
    train_text, test_text = _texts()
    return sorted(set(_words(test_text, lo, hi)) - set(_words(train_text, lo, hi)))


@cache
def _texts() -> tuple[str, str]:
    from dlcourse.datasets import shakespeare

    return shakespeare.split()


def task_examples(task: str, n: int, seed: int, split: str = "train") -> list[Example]:
    """``n`` seeded examples of one task; ``split="test"`` draws from held-out material (dates with another
    seed; lines from chapter 04's held-out plays, and words that occur in them but never in the training plays).

    * ``date``: chapter 01's human-written dates (no sentence around them) → ISO 8601;
    * ``reverse``: a word of 3–7 letters → the word backwards;
    * ``fill``: a piece of a line with one word of 3–7 letters replaced by ``_`` → that word;
    * ``real``: a word of 4–7 letters, as written or with its letters shuffled → ``real`` or ``shuffled``
      (classification as text);
    * ``count``: a piece of a line → its number of words, in digits (regression as text).
    """
    if task not in ALL_TASKS:
        raise ValueError(f"unknown task {task!r}; the tasks are {ALL_TASKS}")
    rng = random.Random(f"{task}-{split}-{seed}")
    train_text, test_text = _texts()
    text = train_text if split == "train" else test_text
    prefix = PREFIXES[task]
    if task == "date":
        from dlcourse.datasets import dates

        pairs = dates.generate(n, seed if split == "train" else seed + 10_000)
        return [Example(task, prefix + p.source, p.target) for p in pairs]
    if task == "reverse":
        words = _test_words(3, 7) if split == "test" else _words(text, 3, 7)
        picked = [rng.choice(words) for _ in range(n)]
        return [Example(task, prefix + w, w[::-1]) for w in picked]
    if task == "real":
        words = _test_words(4, 7) if split == "test" else _words(text, 4, 7)
        out = []
        for w in (rng.choice(words) for _ in range(n)):
            real = rng.random() < 0.5
            out.append(Example(task, prefix + (w if real else _shuffled_words(w, rng)), "real" if real else "shuffled"))
        return out
    snippets = _snippets(text, n, rng)
    if task == "fill":
        out = []
        for s in snippets:
            words = s.split(" ")
            slots = [i for i, w in enumerate(words) if w.isalpha() and 3 <= len(w) <= 7]
            if not slots:
                slots = [max(range(len(words)), key=lambda i: len(words[i]))]
            i = rng.choice(slots)
            out.append(Example(task, prefix + " ".join(words[:i] + ["_"] + words[i + 1:]), words[i]))
        return out
    return [Example(task, prefix + s, str(len(s.split()))) for s in snippets]


def multitask_examples(n_per_task: int, seed: int, split: str = "train",
                       tasks: Sequence[str] = TASKS) -> list[Example]:
    """``n_per_task`` examples of each task, interleaved (task 1, task 2, …, task 1, …)."""
    per_task = [task_examples(t, n_per_task, seed + i, split) for i, t in enumerate(tasks)]
    return [ex for group in zip(*per_task, strict=True) for ex in group]


# ----------------------------------------------------------------------------------------------------
# Batches


def pad(sequences: Sequence[torch.Tensor], value: int) -> torch.Tensor:
    """Right-pad 1-D int64 tensors to one (B, L) tensor with ``value``."""
    out = torch.full((len(sequences), max(len(s) for s in sequences)), value, dtype=torch.long)
    for i, s in enumerate(sequences):
        out[i, : len(s)] = s
    return out


@dataclass(frozen=True)
class Batch:
    """``input_ids`` (B, S) padded with ``<pad>``, ``attention_mask`` (B, S) bool (True = real token),
    ``labels`` (B, T) padded with -100 (not counted by the loss)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.input_ids.to(device), self.attention_mask.to(device), self.labels.to(device))


def make_batch(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> Batch:
    """A :class:`Batch` of (input ids, target ids) pairs, each 1-D and ending in ``</s>``."""
    inputs = pad([p[0] for p in pairs], PAD)
    lengths = torch.tensor([len(p[0]) for p in pairs])
    return Batch(inputs, torch.arange(inputs.shape[1])[None, :] < lengths[:, None], pad([p[1] for p in pairs], IGNORE))


def encode_examples(examples: Sequence[Example]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    v = vocab()
    return [(torch.tensor(v.encode(e.source, eos=True)), torch.tensor(v.encode(e.target, eos=True)))
            for e in examples]


def windows(ids: torch.Tensor, n: int, length: int, generator: torch.Generator) -> list[torch.Tensor]:
    """``n`` random windows of ``length`` tokens of the corpus ``ids``."""
    starts = torch.randint(len(ids) - length, (n,), generator=generator).tolist()
    return [ids[s: s + length] for s in starts]


# ----------------------------------------------------------------------------------------------------
# Training


@dataclass
class TrainRun:
    steps: int = 0
    seconds: float = 0.0
    loss: list[float] = field(default_factory=list)
    target_tokens: int = 0  # labels counted by the loss, summed over the run


def train(model: nn.Module, next_batch: Callable[[int], Batch], loss_fn: Callable[[nn.Module, Batch], torch.Tensor],
          steps: int, lr: float = 3e-3, warmup: int = 50, device: torch.device | str = "cpu",
          progress: bool = True) -> TrainRun:
    """AdamW for ``steps`` steps on ``next_batch(step)``, with a linear warm-up and a linear decay to 0;
    ``loss_fn(model, batch)`` is the loss (the chapter's teacher-forced cross-entropy). Leaves the model in
    eval mode."""
    from tqdm.auto import tqdm

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, 1 - s / max(1, steps)))
    run = TrainRun()
    model.train()
    start = time.perf_counter()
    bar = tqdm(range(steps), disable=not progress, mininterval=1.0, leave=False)
    for step in bar:
        batch = next_batch(step).to(device)
        loss = loss_fn(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        run.loss.append(loss.item())
        run.target_tokens += int((batch.labels != IGNORE).sum())
        if step % 50 == 0:
            bar.set_postfix(loss=f"{run.loss[-1]:.3f}")
    run.steps, run.seconds = steps, time.perf_counter() - start
    model.eval()
    training.record_run("T5 training", steps=steps, seconds=run.seconds, items=run.target_tokens,
                        item_name="target tokens", metric_name="training loss, last 50 steps",
                        metric=training.recent_mean(run.loss))
    return run


# ----------------------------------------------------------------------------------------------------
# Decoding


class DecoderView:
    """An encoder–decoder seen as a decoder-only language model, for chapter 04's decoding functions:
    ``view(decoder_ids).logits`` is (B, T, V) — the model's next-token logits given ``input_ids``."""

    def __init__(self, model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> None:
        self.model, self.input_ids, self.attention_mask = model, input_ids, attention_mask

    def __call__(self, decoder_ids: torch.Tensor):
        from dlcourse.gpt.lm import LMOutput

        return LMOutput(self.model(self.input_ids, decoder_ids, self.attention_mask), None)


@torch.no_grad()
def greedy(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
           max_new_tokens: int = 16, start_id: int = PAD, eos_id: int = EOS) -> torch.Tensor:
    """Greedy decoding of an encoder–decoder ``model(input_ids, decoder_ids, attention_mask) → logits``: the
    decoder starts from ``start_id`` and appends its argmax until every row has produced ``eos_id`` (finished
    rows get ``eos_id`` again). Returns the generated ids after the start token, (B, n ≤ max_new_tokens)."""
    view = DecoderView(model, input_ids, attention_mask)
    ids = torch.full((len(input_ids), 1), start_id, dtype=torch.long, device=input_ids.device)
    finished = torch.zeros(len(input_ids), dtype=torch.bool, device=input_ids.device)
    for _ in range(max_new_tokens):
        nxt = view(ids).logits[:, -1].argmax(-1).masked_fill(finished, eos_id)
        finished |= nxt == eos_id
        ids = torch.cat([ids, nxt[:, None]], dim=1)
        if finished.all():
            break
    return ids[:, 1:]


def exact_match(model: nn.Module, examples: Sequence[Example], batch_size: int = 128,
                device: torch.device | str = "cpu", max_new_tokens: int = 14) -> dict[str, float]:
    """Greedy-decoded exact match per task (and ``"mean"`` over the tasks) on ``examples``."""
    v = vocab()
    hits: dict[str, list[bool]] = {}
    model.eval()
    for i in range(0, len(examples), batch_size):
        chunk = examples[i: i + batch_size]
        batch = make_batch(encode_examples(chunk)).to(device)
        out = greedy(model, batch.input_ids, batch.attention_mask, max_new_tokens=max_new_tokens)
        for ex, row in zip(chunk, out.cpu(), strict=True):
            hits.setdefault(ex.task, []).append(v.decode(row) == ex.target)
    scores = {t: sum(h) / len(h) for t, h in hits.items()}
    scores["mean"] = sum(scores.values()) / len(scores)
    return scores


def generate_text(model: nn.Module, sources: Sequence[str], device: torch.device | str = "cpu",
                  max_new_tokens: int = 16) -> list[str]:
    """Greedy outputs of ``model`` for the strings ``sources`` (task prefixes included)."""
    v = vocab()
    batch = make_batch([(torch.tensor(v.encode(s, eos=True)), torch.tensor([EOS])) for s in sources]).to(device)
    out = greedy(model, batch.input_ids, batch.attention_mask, max_new_tokens=max_new_tokens)
    return [v.decode(row) for row in out.cpu()]


# ----------------------------------------------------------------------------------------------------
# Model sizes


def parameter_count(**config) -> int:
    """Parameters of a ``T5ForConditionalGeneration`` built on the meta device (no memory, no weights)."""
    from transformers import T5Config, T5ForConditionalGeneration

    with torch.device("meta"):
        model = T5ForConditionalGeneration(T5Config(**config))
    return sum(p.numel() for p in model.parameters())


def parameter_formula(vocab_size: int, d_model: int, d_ff: int, num_layers: int, num_heads: int, d_kv: int = 64,
                      num_buckets: int = 32, gated: bool = False) -> int:
    """The same count by hand: a shared embedding (tied to the output layer); per encoder layer self-attention
    (4 matrices of d × h·d_kv), a feed-forward (2 or, gated, 3 matrices of d × d_ff) and 2 RMSNorm weights; per
    decoder layer also cross-attention and a third norm; a final norm per stack; one bucket table per stack."""
    attention = 4 * d_model * num_heads * d_kv
    ff = (3 if gated else 2) * d_model * d_ff
    encoder = num_layers * (attention + ff + 2 * d_model) + d_model + num_buckets * num_heads
    decoder = num_layers * (2 * attention + ff + 3 * d_model) + d_model + num_buckets * num_heads
    return vocab_size * d_model + encoder + decoder


__all__ = [
    "PAD", "EOS", "UNK", "MASK", "N_SENTINELS", "IGNORE", "REFUSED", "DEMO_SIZE", "PUBLISHED", "Vocab", "vocab",
    "sentinel_name", "corpus_ids", "install_refusals", "sample_masks", "prefix_lm_example", "bert_style_example",
    "deshuffle_example", "iid_drop_example", "drop_spans_example", "TASKS", "ALL_TASKS", "PREFIXES", "Example",
    "task_examples", "multitask_examples", "pad", "Batch", "make_batch", "encode_examples", "windows", "TrainRun",
    "train", "DecoderView", "greedy", "exact_match", "generate_text", "parameter_count", "parameter_formula",
]
