"""Planted call-throughs: one per chapter, each a complete answer cell that earns the points of its exercise by
calling the exercise's own oracle (or the library function it is checked against), spelled so that the runtime
guards of the hidden tests do not see it. The grader's static check (autograder/core/oracles.py, with the
declarations in autograder/core/oracles.toml) must flag every one of them (tests/test_oracles.py). Each source
defines the same names, with the same signatures, as the reference answer cell.

CALLTHROUGH maps chapter folder -> (exercise, answer cell source).
"""

CALLTHROUGH = {
    # softmax's hidden test forbids the softmax ATen ops (a TorchFunctionMode and a TorchDispatchMode). The
    # answer binds torch.softmax before any test runs and calls it with both kinds of mode switched off.
    "00_welcome": ("softmax", '''\
import torch
from torch.utils._python_dispatch import _disable_current_modes as _calm

_stable = torch.softmax  # bound now, before any guard is installed


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Numerically stable softmax of ``x`` along ``dim``."""
    with torch._C.DisableTorchFunction(), _calm():
        return _stable(x, dim)
'''),

    # The oracle is nn.GRUCell; the runtime guard forbids gru_cell. A subclass of the oracle keeps its parameter
    # names and initialisation, and its own forward runs with the torch-function and dispatch modes off.
    "01_seq2seq_attention": ("gru", '''\
import torch
import torch.nn as nn
from torch.utils._python_dispatch import _disable_current_modes as _calm


class GRUCell(nn.GRUCell):
    """One GRU step with the parameter layout of ``nn.GRUCell`` (gates stacked in the order r, z, n)."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        with torch._C.DisableTorchFunction(), _calm():
            return super().forward(x, h)
'''),

    # No runtime guard at all: the oracle itself, reached through getattr with a string and a module alias.
    "02_transformer_blocks": ("masks", '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import rnn as _rnn

_square = getattr(nn.Transformer, "generate_square_subsequent_mask")


def causal_mask(n: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Additive causal mask: float32 (n, n), 0.0 where key j <= query i, -inf where j > i."""
    return _square(n, device=device)


def padding_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """Key padding mask: bool (B, max_len), True at positions t >= lengths[b] (padding), False elsewhere."""
    rows = [torch.ones(int(k), dtype=torch.bool) for k in lengths]
    valid = _rnn.pad_sequence(rows, batch_first=True)
    T = int(lengths.max()) if max_len is None else max_len
    return ~F.pad(valid, (0, T - valid.shape[1]))
'''),

    # The oracle, tokenizers' WordPiece model, fetched by a computed attribute name.
    "03_bert_mlm": ("wordpiece", '''\
import tokenizers.models as _tm

_Model = getattr(_tm, "Word" + "Piece")


def wordpiece(word: str, vocab: dict[str, int], unk_token: str = "[UNK]",
              max_input_chars_per_word: int = 100) -> list[str]:
    """Cut one word into WordPiece pieces, greedy longest-match-first."""
    model = _Model(vocab, unk_token=unk_token, max_input_chars_per_word=max_input_chars_per_word)
    return [token.value for token in model.tokenize(word)]
'''),

    # lm.generation_refused() replaces every logits processor's __call__ while the hidden test runs; the
    # answer saved the original __call__ functions when its cell ran, before any test.
    "04_gpt_decoding": ("filters", '''\
import torch
from transformers import TemperatureLogitsWarper as _T, TopKLogitsWarper as _K, TopPLogitsWarper as _P

_t_call, _k_call, _p_call = _T.__call__, _K.__call__, _P.__call__  # saved now, before a test swaps them


def _ids(logits: torch.Tensor) -> torch.Tensor:
    return torch.zeros(logits.shape[0], 1, dtype=torch.long)


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits (B, V) / temperature; a temperature <= 0 raises ValueError."""
    if not temperature > 0:
        raise ValueError(f"the temperature must be positive, got {temperature}")
    return _t_call(_T(temperature), _ids(logits), logits.clone())


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Set every logit below the row's k-th largest to -inf."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return _k_call(_K(k), _ids(logits), logits.clone())


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep, per row, the most probable tokens until their probability reaches p; the rest -> -inf."""
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p}")
    return _p_call(_P(p), _ids(logits), logits.clone())
'''),

    # t5.install_refusals() wraps Hugging Face's T5 functions so that they raise inside a check; the wrapper is
    # made with functools.wraps, so __wrapped__ hands out the original _shift_right, called on a stand-in self.
    # (shift, not bucket: T5Block's answer reads relative_position_bucket, so a call-through planted in bucket
    # would make block's answer depend on Hugging Face's T5 code as well.)
    "05_t5": ("shift", '''\
from types import SimpleNamespace

import torch
from transformers import T5ForConditionalGeneration as _T5

_hf_shift = _T5._shift_right
_hf_shift = getattr(_hf_shift, "__wrapped__", _hf_shift)  # past the refusal wrapper


def shift_right(labels: torch.Tensor, start_id: int = 0, pad_id: int = 0) -> torch.Tensor:
    """The decoder input for teacher forcing."""
    me = SimpleNamespace(config=SimpleNamespace(decoder_start_token_id=start_id, pad_token_id=pad_id))
    return _hf_shift(me, labels)
'''),
    # No runtime guard: a subclass of the oracle module, whose position table is replaced by the argument.
    "06_vit": ("interp", '''\
import math

import torch
from transformers.models.vit import modeling_vit as _mv

from dlcourse.vit import model as _vit


class _Resizer(_mv.ViTEmbeddings):
    def __init__(self, position_embeddings: torch.Tensor, patch_size: int = 4) -> None:
        g = math.isqrt(position_embeddings.shape[1] - 1)
        super().__init__(_vit.hf_config(image_size=g * patch_size, patch_size=patch_size,
                                        dim=position_embeddings.shape[-1]))
        del self._parameters["position_embeddings"]
        self.position_embeddings = position_embeddings


def interpolate_position_embeddings(position_embeddings: torch.Tensor, new_grid: tuple[int, int]) -> torch.Tensor:
    """Resize learned ViT position embeddings to a new grid of patches."""
    rows, cols = new_grid
    resizer = _Resizer(position_embeddings)
    tokens = position_embeddings.new_zeros(1, 1 + rows * cols, position_embeddings.shape[-1])
    return resizer.interpolate_pos_encoding(tokens, rows * 4, cols * 4)
'''),

    # No runtime guard: the oracle's loss as a functools.partial under another name.
    "07_gan": ("cycle", '''\
import functools

import torch
import torch.nn.functional as _nnf

_mean_abs = functools.partial(_nnf.l1_loss, reduction="mean")


def cycle_consistency_loss(x: torch.Tensor, y: torch.Tensor, G, F) -> torch.Tensor:
    """mean|F(G(x)) - x| + mean|G(F(y)) - y| for G: X -> Y and F: Y -> X; a scalar tensor."""
    return _mean_abs(F(G(x)), x) + _mean_abs(G(F(y)), y)
'''),

    # The hidden test forbids binary_cross_entropy*, kl_div and broadcast_tensors (which every torch.distributions
    # constructor calls). The KL comes from the very function kl_divergence dispatches to, on Normal objects built
    # without __init__; the reconstruction from the package's BCE helper with the guard modes switched off.
    # (elbo, not kl: the elbo and IWAE answers read kl_standard_normal / reparameterize, so a call-through
    # planted there would make those answers depend on torch.distributions as well.)
    "08_vae": ("elbo", '''\
import torch
from torch.distributions import Normal as _ct_Normal
from torch.distributions.kl import _kl_normal_normal as _ct_kl
from torch.utils._python_dispatch import _disable_current_modes as _ct_calm

from dlcourse.vae import train as _ct_vae


def _ct_normal(mu: torch.Tensor, logvar: torch.Tensor) -> _ct_Normal:
    d = _ct_Normal.__new__(_ct_Normal)  # no __init__: no broadcast_tensors for the guard to see
    d.loc, d.scale = mu, torch.exp(0.5 * logvar)
    return d


def negative_elbo(x: torch.Tensor, logits: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor,
                  beta: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The loss of a VAE with a Bernoulli decoder, one sample of z per image: (loss, reconstruction, kl)."""
    with torch._C.DisableTorchFunction(), _ct_calm():
        reconstruction = _ct_vae.bernoulli_nll(x.reshape(len(x), -1), logits.reshape(len(x), -1)).mean()
    prior = _ct_normal(torch.zeros_like(mu), torch.zeros_like(logvar))
    kl = _ct_kl(_ct_normal(mu, logvar), prior).sum(dim=-1).mean()
    return reconstruction + beta * kl, reconstruction, kl
'''),

    # No runtime guard: the oracle itself, scipy's unweighted shortest paths, reach where the distance is <= L.
    # (receptive, not masks: BigBird's answer reads bigbird_block_mask, so a call-through planted in masks would
    # make bigbird's answer depend on flex_attention as well.)
    "09_sparse_attention": ("receptive", '''\
import numpy as np
import torch
from scipy.sparse import csgraph as _graphs


def receptive_field(mask: torch.Tensor, layers: int) -> torch.Tensor:
    """Which positions can influence which after ``layers`` layers of the pattern ``mask``."""
    graph = np.ascontiguousarray(mask.cpu().numpy().T, dtype=np.float64)  # edges key -> query
    hops = _graphs.shortest_path(graph, unweighted=True, directed=True)
    return torch.from_numpy(hops.T <= layers).to(mask.device)
'''),
    # No runtime guard: Hugging Face's private multiplier functions through functools.partial, and CyclicLR's
    # own formula read at any step.
    "10_optimizers_schedulers": ("sched", '''\
import functools
import warnings

import torch
from transformers import optimization as _hf_opt


def linear_warmup_decay(warmup_steps: int, total_steps: int):
    """lambda(t): linear from 0 to 1 over warmup_steps, then linear down to 0 at total_steps."""
    return functools.partial(_hf_opt._get_linear_schedule_with_warmup_lr_lambda, num_warmup_steps=warmup_steps,
                             num_training_steps=total_steps)


def cosine_warmup_decay(warmup_steps: int, total_steps: int, num_cycles: float = 0.5):
    """lambda(t): linear warm-up, then a cosine."""
    return functools.partial(_hf_opt._get_cosine_schedule_with_warmup_lr_lambda, num_warmup_steps=warmup_steps,
                             num_training_steps=total_steps, num_cycles=num_cycles)


def triangular(step_size_up: int, max_factor: float, step_size_down: int | None = None):
    """lambda(t) of a triangular cyclical schedule."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    cyclic = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=1.0, max_lr=max_factor, step_size_up=step_size_up,
                                               step_size_down=step_size_down, mode="triangular",
                                               cycle_momentum=False)

    def factor(step: int) -> float:
        cyclic.last_epoch = step
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cyclic.get_lr()[0]

    return factor
'''),
    # No runtime guard on nt_xent: the library loss the grader compares with, reached through a module alias and a
    # getattr, so that neither the class's name nor its module appears in a call.
    "11_self_supervised": ("ntxent", '''\
import torch
from pytorch_metric_learning import losses as _pml


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """SimCLR's NT-Xent loss of N positive pairs."""
    loss = getattr(_pml, "NTXent" + "Loss")(temperature=temperature)
    return loss(torch.cat([z1, z2]), torch.arange(len(z1)).repeat(2))
'''),
}
