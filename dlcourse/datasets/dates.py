"""Human-written dates → ISO 8601, a small "translation" task for seq2seq models (chapters 01,
02 and 05).

Dates between 1950 and 2049 are drawn with ``faker`` and written with ``babel`` in eight locales and many
formats ("3 mars 2021", "Wednesday, March 3, 2021", "03.03.21", ...); the target is "2021-03-03". Every
format is chosen so that the mapping is a function: no string can mean two dates (US month-first dates
always have a two-digit year and no zero padding, day-first ones a four-digit year or dots). Two-digit
years mean 1950–2049. Optionally the date sits inside a sentence, which makes inputs longer without
changing the answer, and an input may hold several dates ("3 mars 2021; 12/4/99"), whose ISO forms the
target lists in order, separated by spaces ("2021-03-03 1999-12-04"): the answer then grows with the input,
which is what a fixed-size context vector cannot keep up with.

Strings are normalised: babel's narrow no-break spaces (U+202F) and no-break spaces become spaces.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import torch

PAD, SOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]

# (locale, babel pattern) pairs; "medium", "long", "full" are the locale's own formats.
FORMATS: list[tuple[str, str]] = [
    ("en_US", "M/d/yy"), ("en_US", "medium"), ("en_US", "long"), ("en_US", "full"), ("en_US", "MMM d, y"),
    ("en_GB", "dd/MM/y"), ("en_GB", "medium"), ("en_GB", "long"), ("en_GB", "full"),
    ("fr_FR", "dd/MM/y"), ("fr_FR", "medium"), ("fr_FR", "full"),
    ("de_DE", "dd.MM.yy"), ("de_DE", "dd.MM.y"), ("de_DE", "long"), ("de_DE", "full"),
    ("es_ES", "medium"), ("es_ES", "long"), ("es_ES", "full"),
    ("it_IT", "medium"), ("it_IT", "long"), ("it_IT", "full"),
    ("pt_BR", "dd/MM/y"), ("pt_BR", "long"), ("pt_BR", "full"),
    ("nl_NL", "dd-MM-y"), ("nl_NL", "medium"), ("nl_NL", "long"), ("nl_NL", "full"),
    ("en_US", "y-MM-dd"),
]

SENTENCES = [
    "{}", "on {}", "due {}", "{} (confirmed)", "meeting on {} at noon", "deadline: {}",
    "the invoice dated {} is still unpaid", "please confirm your appointment for {} by email",
    "our records show that the parcel was delivered on {}", "booked {}, cancelled the next week",
]

FIRST, LAST = dt.date(1950, 1, 1), dt.date(2049, 12, 31)
SEPARATOR = "; "  # between dates in an input; the target separates ISO dates by a space


def normalise(text: str) -> str:
    """Replace the no-break spaces babel emits by plain spaces."""
    return text.replace("\u202f", " ").replace("\u00a0", " ")


def write_date(day: dt.date, locale: str, pattern: str) -> str:
    """``day`` as babel writes it with ``pattern`` (a pattern or "short"/"medium"/"long"/"full")."""
    from babel.dates import format_date

    return normalise(format_date(day, format=pattern, locale=locale))


@dataclass(frozen=True)
class DatePair:
    source: str  # as a person wrote it; several dates are separated by SEPARATOR
    target: str  # ISO 8601, YYYY-MM-DD; several dates are separated by spaces
    fmt: str  # "locale pattern" of each date (joined by " | "), for error analysis


def generate(n: int, seed: int, sentences: bool = False, max_dates: int = 1) -> list[DatePair]:
    """``n`` seeded examples of 1 to ``max_dates`` dates each (uniformly many).

    With ``sentences`` half of the dates sit inside a sentence template. ``max_dates=1`` draws exactly the
    examples it always has for a given seed.
    """
    from faker import Faker

    if max_dates < 1:
        raise ValueError(f"max_dates must be at least 1, got {max_dates}")
    fake = Faker()
    fake.seed_instance(seed)
    pairs = []
    for _ in range(n):
        count = 1 if max_dates == 1 else fake.random_int(1, max_dates)
        sources, targets, fmts = [], [], []
        for _ in range(count):
            day = fake.date_between(start_date=FIRST, end_date=LAST)
            locale, pattern = fake.random_element(FORMATS)
            text = write_date(day, locale, pattern)
            if sentences and fake.boolean():
                text = fake.random_element(SENTENCES[1:]).format(text)
            sources.append(text)
            targets.append(day.isoformat())
            fmts.append(f"{locale} {pattern}")
        pairs.append(DatePair(SEPARATOR.join(sources), " ".join(targets), " | ".join(fmts)))
    return pairs


def count_dates(pair: DatePair) -> int:
    """How many dates ``pair`` holds (its target lists one ISO date per date)."""
    return len(pair.target.split())


class CharVocab:
    """Characters ↔ ids, with <pad>=0, <sos>=1, <eos>=2, <unk>=3."""

    def __init__(self, texts: list[str]) -> None:
        chars = sorted({c for t in texts for c in t})
        self.itos = SPECIALS + chars
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str, eos: bool = False) -> list[int]:
        ids = [self.stoi.get(c, UNK) for c in text]
        return ids + [EOS] if eos else ids

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        """Characters up to the first <eos>; padding and <sos> are skipped."""
        out = []
        for i in ids.tolist() if isinstance(ids, torch.Tensor) else ids:
            if i == EOS:
                break
            if i > UNK:
                out.append(self.itos[i])
            elif i == UNK:
                out.append("?")
        return "".join(out)


def pad_batch(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id lists: (B, T) int64 ids and (B,) int64 lengths."""
    lengths = torch.tensor([len(s) for s in seqs])
    out = torch.full((len(seqs), int(lengths.max())), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out, lengths


def exact_match(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per example, whether a decoded output is the whole target: bool (B,).

    Args:
        predictions: (B, T') int64 ids as a decoder emitted them, of any length T'; whatever follows an
            example's first <eos> is ignored (a batched decoder keeps writing after it).
        targets: (B, T) int64 ids, each ending in <eos> and then padding, as :meth:`DateData.tensors` gives.

    An example counts only when every target position up to and including its <eos> is predicted, so an
    output that stops early, runs past the target's end or never emits <eos> is wrong.
    """
    if predictions.dim() != 2 or targets.dim() != 2 or len(predictions) != len(targets):
        raise ValueError(f"need (B, T') predictions and (B, T) targets, got {tuple(predictions.shape)} "
                         f"and {tuple(targets.shape)}")
    T = targets.shape[1]
    pred = predictions[:, :T]
    is_eos = (pred == EOS).long()
    after_eos = (is_eos.cumsum(dim=1) - is_eos) > 0  # (B, min(T', T)): positions after the first <eos>
    pred = torch.nn.functional.pad(pred.masked_fill(after_eos, PAD), (0, T - pred.shape[1]), value=PAD)
    return (pred == targets).all(dim=1)


@dataclass(frozen=True)
class DateData:
    """Encoded splits: sources (N, S) with lengths, targets (N, 11·k) = k ISO dates, separators, <eos>."""

    vocab_in: CharVocab
    vocab_out: CharVocab
    train: list[DatePair]
    test: list[DatePair]

    def tensors(self, pairs: list[DatePair]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        src, lengths = pad_batch([self.vocab_in.encode(p.source) for p in pairs])
        tgt, _ = pad_batch([self.vocab_out.encode(p.target, eos=True) for p in pairs])
        return src, lengths, tgt


def vocabularies() -> tuple[CharVocab, CharVocab]:
    """Input and output vocabularies covering every character any format or sentence can produce.

    They do not depend on a sample, so a checkpoint fits whatever data size a notebook generates.
    """
    texts = [s.format("") for s in SENTENCES] + ["0123456789", SEPARATOR]
    for locale, pattern in FORMATS:
        for month in range(1, 13):
            for day in range(1, 8):  # seven consecutive days: every weekday name
                texts.append(write_date(dt.date(2021, month, day), locale, pattern))
    return CharVocab(texts), CharVocab(["0123456789- "])


def load(n_train: int = 20000, n_test: int = 2000, seed: int = 0, sentences: bool = True,
         max_dates: int = 1) -> DateData:
    """Train and held-out test sets of 1 to ``max_dates`` dates per input; test strings never occur in
    the training set."""
    train = generate(n_train, seed, sentences, max_dates)
    seen = {p.source for p in train}
    extra = generate(n_test + n_test // 4, seed + 1, sentences, max_dates)
    test = [p for p in extra if p.source not in seen][:n_test]
    vocab_in, vocab_out = vocabularies()
    return DateData(vocab_in, vocab_out, train, test)
