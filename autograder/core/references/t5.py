"""Reference ports of T5's span corruption, which the hidden tests of chapter 05 compare a student's answers with.

Ported from the algorithm of the T5 paper's preprocessing (Raffel et al., 2020; the ``random_spans_noise_mask``
and ``noise_span_to_unique_sentinel`` steps of its ``span_corruption`` task), in NumPy and written without
loops over tokens, so that it shares no code and no structure with the chapter's model answers:

* :func:`random_spans_noise_mask` — the number of noise tokens is ``round(length · density)``, clipped to
  [1, length − 1]; the number of noise spans ``round(noise / mean span length)``, at least 1; the noise tokens
  and the kept tokens are each cut into that many non-empty spans by a uniformly random composition, and the
  spans alternate, kept span first.
* :func:`noise_span_to_unique_sentinel` — every run of masked tokens becomes one sentinel, the k-th run the
  k-th sentinel; called with the mask for the inputs and with its negation for the targets.
"""

from __future__ import annotations

import numpy as np
import torch


def noise_counts(length: int, noise_density: float, mean_noise_span_length: float) -> tuple[int, int]:
    """(number of noise tokens, number of noise spans) of a sequence of ``length`` tokens."""
    num_noise = int(np.round(length * noise_density))
    num_noise = min(max(num_noise, 1), length - 1)
    num_spans = max(int(np.round(num_noise / mean_noise_span_length)), 1)
    return num_noise, num_spans


def _random_segmentation(num_items: int, num_segments: int, rng: np.random.Generator) -> np.ndarray:
    """Lengths of ``num_segments`` non-empty segments summing to ``num_items``, every composition equally likely:
    a segment starts after each of ``num_segments - 1`` of the ``num_items - 1`` gaps, chosen at random."""
    starts = np.zeros(num_items - 1, dtype=bool)
    starts[: num_segments - 1] = True
    rng.shuffle(starts)
    first_in_segment = np.concatenate([[False], starts])
    segment_id = np.cumsum(first_in_segment)
    return np.bincount(segment_id, minlength=num_segments)


def random_spans_noise_mask(length: int, noise_density: float, mean_noise_span_length: float,
                            rng: np.random.Generator) -> np.ndarray:
    """A bool (length,) noise mask with alternating kept and noise spans, kept first."""
    original = length
    length = max(length, 2)
    num_noise, num_spans = noise_counts(length, noise_density, mean_noise_span_length)
    noise_lengths = _random_segmentation(num_noise, num_spans, rng)
    kept_lengths = _random_segmentation(length - num_noise, num_spans, rng)
    interleaved = np.stack([kept_lengths, noise_lengths], axis=1).reshape(-1)
    span_starts = np.cumsum(interleaved)[:-1]
    indicator = np.zeros(length, dtype=np.int64)
    indicator[span_starts] = 1
    span_number = np.cumsum(indicator)
    return (span_number % 2 == 1)[:original]


def sample_masks(n: int, length: int, noise_density: float, mean_noise_span_length: float,
                 seed: int) -> torch.Tensor:
    """``n`` reference masks, bool (n, length)."""
    rng = np.random.default_rng(seed)
    return torch.from_numpy(np.stack([random_spans_noise_mask(length, noise_density, mean_noise_span_length, rng)
                                      for _ in range(n)]))


def noise_span_to_unique_sentinel(tokens: torch.Tensor, noise_mask: torch.Tensor,
                                  sentinel_ids: torch.Tensor) -> torch.Tensor:
    """``tokens`` (L,) with each run of masked tokens replaced by one sentinel: ``sentinel_ids[k]`` for the k-th."""
    previous = torch.cat([torch.zeros(1, dtype=torch.bool), noise_mask[:-1]])
    first = noise_mask & ~previous
    later = noise_mask & previous
    run = torch.cumsum(first.long(), 0) - 1
    replaced = torch.where(first, sentinel_ids[run.clamp(min=0)], tokens)
    return replaced[~later]


def span_corruption(tokens: torch.Tensor, noise_mask: torch.Tensor, sentinel_ids, eos_id: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) of span corruption, each followed by ``eos_id``."""
    sentinels = torch.as_tensor(sentinel_ids, dtype=torch.long)
    eos = torch.tensor([eos_id], dtype=torch.long)
    inputs = noise_span_to_unique_sentinel(tokens, noise_mask, sentinels)
    targets = noise_span_to_unique_sentinel(tokens, ~noise_mask, sentinels)
    return torch.cat([inputs, eos]), torch.cat([targets, eos])


def span_length_histogram(masks: torch.Tensor) -> dict[str, np.ndarray]:
    """Statistics of a batch of masks (n, L) that the statistical test compares: how often each position is
    noise, the length of the first noise span, and where it starts."""
    m = masks.numpy().astype(bool)
    n, length = m.shape
    first_start = m.argmax(axis=1)
    first_length = np.array([np.argmin(np.append(row[s:], False)) for row, s in zip(m, first_start, strict=True)])
    return {"position": m.sum(0), "first_length": np.bincount(first_length, minlength=length + 1),
            "first_start": np.bincount(first_start, minlength=length)}
