"""Causal language models: the output convention, tiny GPT-2 oracles, weight loading, and the power-law fit
of a scaling curve (chapter 04).

A course model's ``forward(input_ids, past=None)`` returns an :class:`LMOutput` whose ``.logits`` is
(B, T, V), as a Hugging Face model's output does, so the same decoding code runs on both. ``past`` is a
key–value cache: one ``(keys, values)`` pair per layer, each (B, heads, T_past, head_dim).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import hashlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from dlcourse.grading import guards

KVCache = list[tuple[torch.Tensor, torch.Tensor]]


class LMOutput(NamedTuple):
    logits: torch.Tensor  # (B, T, V)
    past: KVCache | None  # keys and values of every position so far, per layer


class PowerLaw(NamedTuple):
    """``loss ≈ a · n ** -alpha``: a straight line of slope ``-alpha`` on log–log axes."""

    a: float
    alpha: float

    def __call__(self, n: float | np.ndarray) -> float | np.ndarray:
        return self.a * np.asarray(n, dtype=float) ** -self.alpha


def fit_power_law(n: list[float] | np.ndarray, loss: list[float] | np.ndarray) -> PowerLaw:
    """Least-squares fit of ``log loss = log a - alpha · log n`` (e.g. held-out loss against parameters).

    Args:
        n: (K,) positive sizes (parameters, tokens, compute), at least two distinct values.
        loss: (K,) positive losses measured at those sizes.

    Returns:
        The fitted :class:`PowerLaw`; ``alpha > 0`` when the loss falls as ``n`` grows.
    """
    x, y = np.asarray(n, dtype=float), np.asarray(loss, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"n and loss must be 1-D and of one length, got {x.shape} and {y.shape}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("a power law is fitted on logarithms: n and loss must be positive")
    if len(np.unique(x)) < 2:
        raise ValueError("at least two distinct sizes are needed to fit a slope")
    slope, intercept = np.polyfit(np.log(x), np.log(y), deg=1)
    return PowerLaw(a=float(np.exp(intercept)), alpha=float(-slope))


def non_embedding_parameters(model: nn.Module) -> int:
    """Parameters outside the embedding tables (the ``N`` of Kaplan et al.'s scaling laws).

    Counts every parameter except those of ``nn.Embedding`` modules; a weight tied to an embedding (a GPT's
    output layer) is an embedding parameter too.
    """
    embedded = {id(p) for m in model.modules() if isinstance(m, nn.Embedding) for p in m.parameters()}
    return sum(p.numel() for p in model.parameters() if id(p) not in embedded)


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' logging (its warnings go to stderr) inside the block."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)


def tiny_gpt2(seed: int, vocab_size: int = 61, n_positions: int = 48, n_embd: int = 32, n_layer: int = 2,
              n_head: int = 4, dtype: torch.dtype = torch.float32, init_range: float = 0.3,
              eos_token_id: int | None = None) -> nn.Module:
    """A seeded, randomly initialised ``GPT2LMHeadModel`` in eval mode, as an oracle.

    ``init_range`` is larger than GPT-2's 0.02 so that next-token distributions are peaked enough for
    greedy and beam search to have no near-ties. ``eos_token_id`` defaults to the last id.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    eos = vocab_size - 1 if eos_token_id is None else eos_token_id
    # no pad id in the config (a prompt holding it would draw a warning); generate() pads with EOS
    config = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer,
                        n_head=n_head, initializer_range=init_range, bos_token_id=eos, eos_token_id=eos,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    with torch.random.fork_rng(devices=[]), quiet_transformers():
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
    model.loss_type = "ForCausalLM"  # GPT2LMHeadModel's own name is not in the loss table: say it
    model.generation_config.pad_token_id = eos
    for key in ("top_k", "top_p", "temperature"):  # no silent sampling defaults
        setattr(model.generation_config, key, None)
    return model.to(dtype).eval()


def swap_tokens(hf_model: nn.Module, a: int, b: int, *ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Exchange the ids ``a`` and ``b`` in a tied-embedding GPT-2 (in place) and in the given id tensors.

    The model then computes exactly what it did before, under new names: a test can make any token, id 0
    for instance, the one the model produces most.
    """
    with torch.no_grad():
        weight = hf_model.get_input_embeddings().weight
        weight[[a, b]] = weight[[b, a]]

    def swapped(t: torch.Tensor) -> torch.Tensor:
        return torch.where(t == a, b, torch.where(t == b, a, t))

    return tuple(swapped(t) for t in ids)


def gpt2_state_dict(hf_model: nn.Module, tensors: dict[str, torch.Tensor] | None = None
                    ) -> dict[str, torch.Tensor]:
    """A ``GPT2LMHeadModel``'s weights under the course's names, ready for ``load_state_dict``.

    The course GPT names its modules as GPT-2 does (``wte``, ``wpe``, ``h.0.ln_1``, ``h.0.attn.c_attn``,
    ``h.0.mlp.c_fc``, ``ln_f``, ``lm_head``), but uses ``nn.Linear``. GPT-2's ``Conv1D`` stores its weight
    as (in_features, out_features), the transpose of ``nn.Linear``'s (out, in): those are transposed here.
    ``tensors``, named and shaped like the model's parameters (their gradients, say), are converted the same
    way instead of the model's own weights.
    """
    from transformers.pytorch_utils import Conv1D

    conv = {name + ".weight" for name, m in hf_model.named_modules() if isinstance(m, Conv1D)}
    out = {}
    for key, value in (hf_model.state_dict() if tensors is None else tensors).items():
        value = value.detach().t().contiguous() if key in conv else value.detach().clone()
        out[key.removeprefix("transformer.")] = value
    return out


def as_gpt2(state: dict[str, torch.Tensor], n_head: int) -> nn.Module:
    """A ``GPT2LMHeadModel`` holding a course GPT's weights (the inverse of :func:`gpt2_state_dict`).

    The sizes are read from the weights; ``n_head`` cannot be, so it is given. The model is in eval mode.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    vocab_size, n_embd = state["wte.weight"].shape
    n_layer = 1 + max(int(k.split(".")[1]) for k in state if k.startswith("h."))
    config = GPT2Config(vocab_size=vocab_size, n_positions=state["wpe.weight"].shape[0], n_embd=n_embd,
                        n_layer=n_layer, n_head=n_head, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    with quiet_transformers():
        hf = GPT2LMHeadModel(config)
    linear = {name for name, value in gpt2_state_dict(hf).items() if value.dim() == 2} - {"wte.weight",
                                                                                          "wpe.weight",
                                                                                          "lm_head.weight"}
    converted = {("" if k == "lm_head.weight" else "transformer.") + k: v.t() if k in linear else v
                 for k, v in state.items()}
    hf.load_state_dict(converted)
    return hf.eval()


def load_gpt2_weights(model: nn.Module, hf_model: nn.Module) -> nn.Module:
    """Copy a ``GPT2LMHeadModel``'s weights into a course GPT (strict names and shapes); returns it."""
    from dlcourse.checks import load_weights

    load_weights(model, gpt2_state_dict(hf_model))
    return model


class CachedLM(nn.Module):
    """A Hugging Face causal LM behind the course GPT's interface, ``model(ids, past=past)`` → LMOutput.

    It records, per call, how many tokens were fed (``fed``) and whether the cache passed in was the one
    the previous call returned (``got_past``), so a test can tell cached generation from recomputation.
    While recording, each call hands out a cache of its own (Hugging Face's grows in place), so reusing a
    stale one gives stale results, as it would with the course GPT's tuples.
    """

    def __init__(self, hf_model: nn.Module, record: bool = True) -> None:
        super().__init__()
        self.hf = hf_model
        self.record = record
        self.fed: list[int] = []
        self.got_past: list[bool] = []
        self._last: object | None = None

    def forward(self, input_ids: torch.Tensor, past: object | None = None) -> LMOutput:
        if self.record:
            self.fed.append(int(input_ids.shape[1]))
            self.got_past.append(past is not None and past is self._last)
        if self.record and past is not None:
            past = copy.deepcopy(past)
        out = self.hf(input_ids, past_key_values=past, use_cache=True)
        self._last = out.past_key_values
        return LMOutput(out.logits, out.past_key_values)


@guards.travelling
@contextlib.contextmanager
def generation_refused(why: str = "write the decoding yourself") -> Iterator[None]:
    """Inside the block, Hugging Face's ``generate`` and every logits processor raise ForbiddenCall.

    Their modules are not imported for it: what is not imported yet is refused as soon as it is, if that happens
    inside the block (:mod:`dlcourse.onimport`)."""
    from dlcourse import onimport
    from dlcourse.checks import ForbiddenCall

    if guards.is_trusted():  # the grader: the refusal travels with each call into the student's kernel
        with guards.pushed(("dlcourse.gpt.lm.generation_refused", why)):
            yield
        return

    def refuse(name: str):
        def call(*args, **kwargs):
            raise ForbiddenCall(f"{name} is not allowed here: {why}")
        return call

    saved: list[tuple[type, str, Any]] = []

    def refuse_all(targets: list[tuple[type, str]]) -> None:
        for owner, attr in targets:
            saved.append((owner, attr, owner.__dict__.get(attr)))
            setattr(owner, attr, refuse(f"{owner.__name__}.{attr}"))

    def refuse_generate(utils: ModuleType) -> None:
        refuse_all([(utils.GenerationMixin, "generate")])

    def refuse_processors(logits_process: ModuleType) -> None:
        refuse_all([(cls, "__call__") for cls in vars(logits_process).values()
                    if isinstance(cls, type) and issubclass(cls, logits_process.LogitsProcessor)])

    cancels = [onimport.when_imported("transformers.generation.utils", refuse_generate),
               onimport.when_imported("transformers.generation.logits_process", refuse_processors)]
    try:
        yield
    finally:
        for cancel in cancels:
            cancel()
        for owner, attr, original in reversed(saved):
            if original is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)


_GENERATED: collections.OrderedDict[tuple, Any] = collections.OrderedDict()  # hf_generate's results, newest last
_GENERATED_KEEP = 512  # results kept
_GENERATED_MAX_VALUES = 4_000_000  # larger models are not fingerprinted: their results are not kept


def _tensor_key(t: torch.Tensor) -> tuple:
    raw = t.detach().cpu().reshape(-1).contiguous()
    return str(t.dtype), tuple(t.shape), hashlib.blake2b(raw.view(torch.uint8).numpy().tobytes(),
                                                         digest_size=16).digest()


def _generate_key(hf_model: nn.Module, input_ids: torch.Tensor, kwargs: dict) -> tuple | None:
    """What ``generate``'s greedy or beam result depends on: the model's class, configuration and every weight
    and buffer, the prompt, the arguments and torch's thread count; None when that cannot be said cheaply (a
    large model, an argument that is not plain data, sampling)."""
    if kwargs.get("do_sample") or not isinstance(input_ids, torch.Tensor):
        return None
    plain = (type(None), bool, int, float, str)
    if not all(isinstance(v, plain) or isinstance(v, torch.Tensor) for v in kwargs.values()):
        return None
    state = hf_model.state_dict()
    if sum(t.numel() for t in state.values()) > _GENERATED_MAX_VALUES:
        return None
    config = getattr(hf_model, "config", None)
    generation = getattr(hf_model, "generation_config", None)
    return (type(hf_model).__qualname__, hf_model.training, torch.get_num_threads(),
            repr(config.to_dict()) if config is not None else None,
            repr(generation.to_dict()) if generation is not None else None,
            tuple((name, _tensor_key(t)) for name, t in state.items()), _tensor_key(input_ids),
            tuple(sorted((k, _tensor_key(v) if isinstance(v, torch.Tensor) else (type(v).__name__, v))
                         for k, v in kwargs.items())))


@torch.no_grad()
def hf_generate(hf_model: nn.Module, input_ids: torch.Tensor, **kwargs):
    """``hf_model.generate(input_ids, do_sample=False, **kwargs)`` on unpadded prompts, quietly.

    The attention mask is given as all ones: without it, ``generate`` treats every prompt token equal to
    ``pad_token_id`` as padding. The oracle of chapter 04's decoding tests: its results are kept (a copy is
    returned) for the same model — class, configuration, every weight — prompt and arguments, so a grading
    process computes each expected output once, not once per submission.
    """
    key = _generate_key(hf_model, input_ids, kwargs)
    if key is not None and key in _GENERATED:
        _GENERATED.move_to_end(key)
        return copy.deepcopy(_GENERATED[key])
    with quiet_transformers():
        out = hf_model.generate(input_ids, attention_mask=torch.ones_like(input_ids),
                                **{"do_sample": False, **kwargs})
    if key is not None:
        _GENERATED[key] = copy.deepcopy(out)
        while len(_GENERATED) > _GENERATED_KEEP:
            _GENERATED.popitem(last=False)
    return out


def frequent_token(hf_model: nn.Module, input_ids: torch.Tensor, max_new_tokens: int) -> int:
    """The token a model generates most often from ``input_ids`` (greedy, no EOS): a test's EOS that
    the model really produces."""
    generated = hf_generate(hf_model, input_ids, max_new_tokens=max_new_tokens, eos_token_id=None,
                            pad_token_id=0)[:, input_ids.shape[1]:]
    return int(generated.flatten().mode().values)


SMOLLM2 = "smollm2-135m-instruct"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """No progress bars or warnings on stderr while a model loads.

    transformers' own bars have a switch; its GGUF reader uses a plain ``tqdm``, silenced here by handing it
    one that is disabled.
    """
    import functools
    import warnings

    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging

    bars = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    plain_tqdm = gguf_utils.tqdm
    gguf_utils.tqdm = functools.partial(plain_tqdm, disable=True)
    try:
        with quiet_transformers(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        gguf_utils.tqdm = plain_tqdm
        if bars:
            logging.enable_progress_bar()


def load_smollm2(device: torch.device | str = "cpu"):
    """SmolLM2-135M-Instruct (Apache-2.0) and its tokenizer, offline, in eval mode: ``(model, tokenizer)``.

    ``make setup`` fetches the GGUF file (Q4_1) and calls this once: the first load de-quantises it to
    float32 (≈ 20 s on two CPU cores) and keeps a ``save_pretrained`` copy beside it, which later loads in
    about a second.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dlcourse.assets import model_dir

    folder = model_dir(SMOLLM2)
    converted = folder / "transformers"
    with _quiet_loading():
        if (converted / "config.json").exists() and (converted / "model.safetensors").exists():
            tokenizer = AutoTokenizer.from_pretrained(converted)
            model = AutoModelForCausalLM.from_pretrained(converted)
        else:
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=_SMOLLM2_GGUF)
            model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=_SMOLLM2_GGUF)
            _save_dequantized(model, tokenizer, converted)
    return model.to(device).eval(), tokenizer


class OnFirstUse:
    """A stand-in for an object that is built the first time it is used: reading or setting an attribute, or a
    call, builds it (once) and hands the use on; ``len``, ``repr`` and ``dir`` are handed on too. Other
    operations on the object itself (``isinstance``, indexing, iteration, ``==``) are not: use :meth:`get`.
    The stand-in's own two names, :meth:`get` and :attr:`built`, hide the object's names of the same spelling."""

    _OWN = ("_build", "_value", "_built")

    def __init__(self, build) -> None:
        object.__setattr__(self, "_build", build)
        object.__setattr__(self, "_value", None)
        object.__setattr__(self, "_built", False)

    @property
    def built(self) -> bool:
        """Whether the object has been built yet."""
        return self._built

    def get(self):
        """The object, built now if this is its first use (a build that fails is tried again next time)."""
        if not self._built:
            object.__setattr__(self, "_value", self._build())
            object.__setattr__(self, "_built", True)
        return self._value

    def __getattr__(self, name: str):  # only for names the stand-in itself lacks
        if name in OnFirstUse._OWN or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)  # (copying or pickling the stand-in asks before __init__ ran)
        return getattr(self.get(), name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self.get(), name, value)

    def __call__(self, *args, **kwargs):
        return self.get()(*args, **kwargs)

    def __len__(self) -> int:  # len(), repr() and dir() look on the class, past __getattr__
        return len(self.get())

    def __repr__(self) -> str:
        return repr(self.get())

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self.get())) | {"get", "built"})


def smollm2_on_first_use(device: torch.device | str = "cpu") -> tuple[OnFirstUse, OnFirstUse, OnFirstUse]:
    """SmolLM2 as ``(model, tokenizer, cached)``, each loaded when it is first used, not now.

    ``cached`` is the model behind the course GPT's interface (:class:`CachedLM`, not recording). The model
    takes a few seconds to load, most of it ``transformers``' model classes; a lecture's Run All that does not
    use it (its demos switched off) does not pay for it, and the sampling explorer loads it the first time
    SmolLM2 is picked. The tokenizer loads on its own, in a fraction of a second."""
    import functools

    load = functools.cache(lambda: load_smollm2(device))
    model = OnFirstUse(lambda: load()[0])

    def tokenizer():
        alone = load_smollm2_tokenizer()
        return load()[1] if alone is None else alone  # (no converted copy yet: with the model, once)

    return model, OnFirstUse(tokenizer), OnFirstUse(lambda: CachedLM(model.get(), record=False))


def load_smollm2_tokenizer():
    """SmolLM2's tokenizer alone, from the converted copy ``make setup`` keeps; None when there is none yet
    (then :func:`load_smollm2` makes it, with the model)."""
    from transformers import AutoTokenizer

    from dlcourse.assets import model_dir

    converted = model_dir(SMOLLM2) / "transformers"
    if not (converted / "tokenizer.json").exists():
        return None
    with _quiet_loading():
        return AutoTokenizer.from_pretrained(converted)


def _save_dequantized(model: nn.Module, tokenizer, path) -> None:
    """Save a GGUF-loaded model as plain safetensors (its GGUF quantizer refuses ``save_pretrained``)."""
    config = type(model.config).from_dict({k: v for k, v in model.config.to_dict().items()
                                           if k != "quantization_config"})
    with torch.device("meta"):
        clean = type(model)(config)
    clean.load_state_dict(model.state_dict(), assign=True)
    clean.tie_weights()
    clean.generation_config = model.generation_config
    partial = path.with_name(path.name + ".partial")
    clean.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.replace(path)


if __name__ == "__main__":  # `python -m dlcourse.gpt.lm prepare`: convert SmolLM2 once (make setup)
    import sys
    import time

    if sys.argv[1:] != ["prepare"]:
        raise SystemExit("usage: python -m dlcourse.gpt.lm prepare")
    start = time.perf_counter()
    load_smollm2()
    print(f"SmolLM2-135M ready in {time.perf_counter() - start:.1f} s")
