"""Sparse attention, chapter 09: watching what an attention computes, and measuring what it costs.

* :func:`allocation_limit` is the guard of the banded-attention exercise: inside the block, any torch
  operation that allocates a tensor of more than ``max_elements`` elements raises
  :class:`~dlcourse.checks.ForbiddenCall`. A TorchDispatchMode sees every operator, however it is reached,
  so an n × n score matrix (or an n × n mask) is caught at the moment it is made. Views (``unfold``,
  ``as_strided``, ``expand``) allocate nothing and pass.
* :func:`peak_memory` runs a function and returns what it allocated at its peak, *measured*: the CUDA
  allocator's peak on a GPU, the process's resident-set high-water mark on Linux otherwise.
* :func:`attention_costs` measures peak memory and time of several attention functions over sequence
  lengths (the chapter's demo and ``make bench`` share it); :func:`dense_attention` is the baseline they
  are measured against, chapter 02's scaled dot-product attention with a boolean mask.
* :func:`band_to_dense` and :func:`dense_to_band` convert between an (…, n, n) matrix and the (…, n, 2w + 1)
  band layout in which sliding-window attention keeps its scores.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from dlcourse.grading import guards

__all__ = ["allocation_limit", "Peak", "peak_memory", "dense_attention", "attention_costs", "band_to_dense",
           "dense_to_band"]


def _storage_key(t: torch.Tensor) -> int | None:
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # sparse, meta or functional tensors have no plain storage
        return None


class _AllocationWatch(TorchDispatchMode):
    """Raises when an operator returns a tensor whose new storage holds more than ``max_elements`` elements."""

    def __init__(self, max_elements: int, why: str) -> None:
        super().__init__()
        self.max_elements, self.why = max_elements, why

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        out = func(*args, **(kwargs or {}))
        inputs = {_storage_key(a) for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)}
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor) or _storage_key(t) in inputs:
                continue  # a view of an input allocates nothing
            try:
                elements = t.untyped_storage().nbytes() // max(1, t.element_size())
            except (RuntimeError, NotImplementedError):
                continue
            if elements > self.max_elements:
                from dlcourse.checks import ForbiddenCall

                raise ForbiddenCall(
                    f"`aten.{func.overloadpacket.__name__}` allocated a tensor of shape {tuple(t.shape)} "
                    f"({elements:,} elements); this exercise allows at most {self.max_elements:,} per tensor"
                    f"{self.why}")
        return out


@guards.travelling
@contextlib.contextmanager
def allocation_limit(max_elements: int, why: str = "") -> Iterator[None]:
    """Inside the block, an operation that allocates more than ``max_elements`` elements raises ForbiddenCall.

    In the grader the limit travels with each call into the student's kernel (as :func:`checks.forbid` does).
    """
    max_elements = int(max_elements)
    if guards.is_trusted():
        with guards.pushed(("dlcourse.sparse.measure.allocation_limit", max_elements, why)):
            yield
        return
    with _AllocationWatch(max_elements, f" ({why})" if why else ""):
        yield


# --------------------------------------------------------------------------------------------------
# Measured peak memory


@dataclass(frozen=True)
class Peak:
    """What one call of :func:`peak_memory` measured: the value returned, bytes at the peak, seconds."""

    value: Any
    bytes: int | None  # None where the peak cannot be measured (not Linux, no GPU)
    seconds: float
    how: str


_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _rss_peak_resettable() -> bool:
    try:
        _CLEAR_REFS.write_text("5")  # resets VmHWM, the resident-set high-water mark, to the current RSS
        return True
    except OSError:
        return False


def peak_memory(fn: Callable[[], Any], device: torch.device | str = "cpu") -> Peak:
    """Run ``fn()`` and measure the memory it needed at its peak, above what was in use before.

    On CUDA: ``torch.cuda.max_memory_allocated`` after a reset of the peak statistics. On a Linux CPU: the
    process's resident-set high-water mark (``VmHWM``), reset through ``/proc/self/clear_refs`` just before
    the call, minus the resident set at that moment — what the operating system actually had to provide,
    including temporaries freed before ``fn`` returned. Elsewhere ``bytes`` is None.
    """
    device = torch.device(device)
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        start = time.perf_counter()
        value = fn()
        torch.cuda.synchronize(device)
        seconds = time.perf_counter() - start
        return Peak(value, torch.cuda.max_memory_allocated(device) - before, seconds, "CUDA allocator peak")
    if _STATUS.exists() and _rss_peak_resettable():
        before = _status_kib("VmRSS")
        start = time.perf_counter()
        value = fn()
        seconds = time.perf_counter() - start
        return Peak(value, max(0, _status_kib("VmHWM") - before) * 1024, seconds, "resident-set high-water mark")
    start = time.perf_counter()
    value = fn()
    return Peak(value, None, time.perf_counter() - start, "not measurable here")


def dense_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """softmax(q kᵀ / √d, masked where ``allowed`` is False) v, with the (…, n, n) scores materialised.

    q, k: (…, n, d); v: (…, n, d_v); ``allowed``: bool, broadcastable to (…, n, n), at least one True per row.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ v


Attention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def attention_costs(methods: dict[str, Attention], lengths: list[int], d: int = 64, heads: int = 1,
                    device: torch.device | str = "cpu", seed: int = 0, warm_up: tuple[str, ...] = (),
                    skip: Callable[[str, int], bool] = lambda name, n: False) -> list[dict[str, Any]]:
    """Measured peak memory (:func:`peak_memory`) and time of ``method(q, k, v) -> output`` for each length.

    Inputs are seeded (1, heads, n, d) float32 tensors; the methods named in ``warm_up`` first run once
    untimed (compilation), then each method runs once, measured, under ``torch.no_grad``. Rows:
    ``{"method", "n", "peak_bytes", "seconds", "how"}``; ``skip(name, n)`` leaves a pair out.
    """
    rows = []
    gen = torch.Generator().manual_seed(seed)
    for n in lengths:
        q, k, v = torch.randn(3, 1, heads, n, d, generator=gen).to(device).unbind(0)
        for name, fn in methods.items():
            if skip(name, n):
                continue
            with torch.no_grad():
                if name in warm_up:
                    fn(q, k, v)
                peak = peak_memory(lambda fn=fn, q=q, k=k, v=v: fn(q, k, v), device)
            rows.append({"method": name, "n": n, "peak_bytes": peak.bytes, "seconds": peak.seconds,
                         "how": peak.how})
            del peak
    return rows


# --------------------------------------------------------------------------------------------------
# Band layout


def dense_to_band(dense: torch.Tensor, w: int, fill: float = 0.0) -> torch.Tensor:
    """(…, n, n) → (…, n, 2w + 1): ``band[..., i, w + (j - i)] = dense[..., i, j]``, ``fill`` for j outside 0…n-1."""
    n = dense.shape[-1]
    offsets = torch.arange(-w, w + 1, device=dense.device)
    cols = torch.arange(n, device=dense.device)[:, None] + offsets  # (n, 2w+1): the key of each band slot
    inside = (cols >= 0) & (cols < n)
    picked = dense.gather(-1, cols.clamp(0, n - 1).expand(*dense.shape[:-1], 2 * w + 1))
    return picked.masked_fill(~inside, fill)


def band_to_dense(band: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
    """(…, n, 2w + 1) → (…, n, n), the inverse of :func:`dense_to_band`; ``fill`` outside the band."""
    n, width = band.shape[-2], band.shape[-1]
    w = (width - 1) // 2
    cols = torch.arange(n, device=band.device)[:, None] + torch.arange(-w, w + 1, device=band.device)
    inside = (cols >= 0) & (cols < n)
    dense = band.new_full((*band.shape[:-1], n + 2 * w), fill)  # padded columns take what falls outside
    dense = dense.scatter(-1, (cols + w).expand(*band.shape), band.masked_fill(~inside, fill))
    return dense[..., w:w + n]
