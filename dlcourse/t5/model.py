"""T5 in the course's parameter layout: Hugging Face's T5 modules seen through the names chapter 05 uses.

Chapter 05 builds T5 from its parts; its modules carry these names (Hugging Face's on the right):

=================================================  ===========================================================
course                                             Hugging Face ``T5ForConditionalGeneration``
=================================================  ===========================================================
``shared``                                         ``shared`` (also ``encoder/decoder.embed_tokens``, ``lm_head``:
                                                   one tied matrix)
``encoder_blocks.i.self_attn_norm``                ``encoder.block.i.layer.0.layer_norm``
``encoder_blocks.i.self_attn.{q,k,v,o}``           ``encoder.block.i.layer.0.SelfAttention.{q,k,v,o}``
``encoder_blocks.0.self_attn.``                     ``encoder.block.0.layer.0.SelfAttention.``
``relative_attention_bias``                        ``relative_attention_bias``
``encoder_blocks.i.ff_norm``                       ``encoder.block.i.layer.1.layer_norm``
``encoder_blocks.i.ff.{wi | wi_0, wi_1}, ff.wo``   ``encoder.block.i.layer.1.DenseReluDense.…``
``encoder_norm``                                   ``encoder.final_layer_norm``
``decoder_blocks.i.self_attn_norm``, ``self_attn``  ``decoder.block.i.layer.0.layer_norm``, ``….SelfAttention``
``decoder_blocks.i.cross_attn_norm``, ``cross_attn``  ``decoder.block.i.layer.1.layer_norm``, ``….EncDecAttention``
``decoder_blocks.i.ff_norm``, ``ff``               ``decoder.block.i.layer.2.layer_norm``, ``….DenseReluDense``
``decoder_norm``                                   ``decoder.final_layer_norm``
=================================================  ===========================================================

The views here register Hugging Face's own submodules under the course's names, so a state dict moves between a
student's module and the view unchanged, while the computation (and so every gradient) stays Hugging Face's:
they are the oracles of chapter 05's tests and the way its trained model is loaded into
``T5ForConditionalGeneration`` for decoding with ``generate()`` and for reading the attention weights.

Calls take boolean masks, True = may attend, of shape (B, L_query, L_key); the views turn them into the
additive masks Hugging Face uses (0 where allowed, the dtype's most negative number elsewhere).
"""

from __future__ import annotations

import torch
import torch.nn as nn


def hf_config(vocab_size: int, d_model: int, num_heads: int, d_kv: int, d_ff: int, num_layers: int = 1,
              num_decoder_layers: int | None = None, gated: bool = False, num_buckets: int = 32,
              max_distance: int = 128, eps: float = 1e-6, is_decoder: bool = False):
    """A ``T5Config`` for the course's keyword arguments: no dropout, ``<pad>`` = 0 starts the decoder, ``</s>`` = 1,
    eager attention (so that attention weights can be read), original T5's tied and rescaled output layer."""
    from transformers import T5Config

    return T5Config(vocab_size=vocab_size, d_model=d_model, num_heads=num_heads, d_kv=d_kv, d_ff=d_ff,
                    num_layers=num_layers, num_decoder_layers=num_decoder_layers,
                    feed_forward_proj="gated-gelu" if gated else "relu", relative_attention_num_buckets=num_buckets,
                    relative_attention_max_distance=max_distance, layer_norm_epsilon=eps, dropout_rate=0.0,
                    decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, is_decoder=is_decoder,
                    attn_implementation="eager")


def hf_model(seed: int, dtype: torch.dtype = torch.float32, init_scale: float = 1.0, **kwargs) -> nn.Module:
    """A seeded random ``T5ForConditionalGeneration`` for the course's keyword arguments (see :func:`hf_config`),
    in eval mode. ``init_scale`` multiplies every weight after Hugging Face's initialisation (its relative
    attention biases start tiny; tests scale them up so that a wrong bucket shows)."""
    from transformers import T5ForConditionalGeneration

    from dlcourse.gpt.lm import quiet_transformers

    torch.manual_seed(seed)
    with quiet_transformers():
        model = T5ForConditionalGeneration(hf_config(**kwargs))
    if init_scale != 1.0:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "relative_attention_bias" in name:
                    p.normal_(0.0, init_scale)
    return model.to(dtype).eval()


def additive(mask: torch.Tensor | None, batch: int, q_len: int, k_len: int, dtype: torch.dtype,
             device: torch.device | str) -> torch.Tensor:
    """Bool (B, Lq, Lk), True = attend (None = everything) → float (B, 1, Lq, Lk): 0 or the dtype's minimum."""
    out = torch.zeros(batch, 1, q_len, k_len, dtype=dtype, device=device)
    if mask is None:
        return out
    return out.masked_fill(~mask[:, None].to(torch.bool), torch.finfo(dtype).min)


class AttentionInCourseLayout(nn.Module):
    """A Hugging Face ``T5Attention`` with the course's call: ``forward(x (B, Lq, D), kv=None (B, Lk, D),
    mask=None (B, Lq, Lk) bool, position_bias=None (1 or B, H, Lq, Lk)) → (out (B, Lq, D), position_bias)``."""

    def __init__(self, hf_attention: nn.Module) -> None:
        super().__init__()
        object.__setattr__(self, "hf", hf_attention)  # not registered: the parameters carry the course's names
        for name in ("q", "k", "v", "o"):
            setattr(self, name, getattr(hf_attention, name))
        if hf_attention.has_relative_attention_bias:
            self.relative_attention_bias = hf_attention.relative_attention_bias

    def forward(self, x: torch.Tensor, kv: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                position_bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        k_len = (x if kv is None else kv).shape[1]
        out, bias, _ = self.hf(x, mask=additive(mask, x.shape[0], x.shape[1], k_len, x.dtype, x.device),
                               key_value_states=kv, position_bias=position_bias)
        return out, bias


class BlockInCourseLayout(nn.Module):
    """A Hugging Face ``T5Block`` with the course's names and call: ``forward(x, mask=None, position_bias=None,
    encoder_states=None, encoder_mask=None) → (x, position_bias)``; masks bool (B, Lq, Lk), True = attend."""

    def __init__(self, hf_block: nn.Module) -> None:
        super().__init__()
        object.__setattr__(self, "hf", hf_block)
        layers = hf_block.layer
        self.self_attn_norm = layers[0].layer_norm
        self.self_attn = AttentionInCourseLayout(layers[0].SelfAttention)
        if hf_block.is_decoder:
            self.cross_attn_norm = layers[1].layer_norm
            self.cross_attn = AttentionInCourseLayout(layers[1].EncDecAttention)
        self.ff_norm = layers[-1].layer_norm
        self.ff = layers[-1].DenseReluDense

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, position_bias: torch.Tensor | None = None,
                encoder_states: torch.Tensor | None = None, encoder_mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        B, L = x.shape[:2]
        self_mask = additive(mask, B, L, L, x.dtype, x.device)
        cross_mask = None
        if encoder_states is not None:
            cross_mask = additive(encoder_mask, B, L, encoder_states.shape[1], x.dtype, x.device)
        out, bias, _ = self.hf(x, attention_mask=self_mask, position_bias=position_bias,
                               encoder_hidden_states=encoder_states, encoder_attention_mask=cross_mask)
        return out, bias


class T5InCourseLayout(nn.Module):
    """A Hugging Face ``T5ForConditionalGeneration`` with the course's names and calls:

    * ``encode(input_ids (B, S), attention_mask=None (B, S)) → (B, S, D)``;
    * ``forward(input_ids (B, S), decoder_input_ids (B, T), attention_mask=None (B, S), 1/True = real token)
      → logits (B, T, V)``.
    """

    def __init__(self, hf: nn.Module) -> None:
        super().__init__()
        object.__setattr__(self, "hf", hf)
        self.shared = hf.shared
        self.encoder_blocks = nn.ModuleList(BlockInCourseLayout(b) for b in hf.encoder.block)
        self.encoder_norm = hf.encoder.final_layer_norm
        self.decoder_blocks = nn.ModuleList(BlockInCourseLayout(b) for b in hf.decoder.block)
        self.decoder_norm = hf.decoder.final_layer_norm

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.hf.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.hf(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits


def course_kwargs(config) -> dict:
    """The course's keyword arguments (those of :func:`hf_config`) of a ``T5Config``."""
    return {"vocab_size": config.vocab_size, "d_model": config.d_model, "num_heads": config.num_heads,
            "d_kv": config.d_kv, "d_ff": config.d_ff, "num_layers": config.num_layers,
            "num_decoder_layers": config.num_decoder_layers, "gated": config.is_gated_act,
            "num_buckets": config.relative_attention_num_buckets,
            "max_distance": config.relative_attention_max_distance, "eps": config.layer_norm_epsilon}


def to_hf(module: nn.Module, **kwargs) -> nn.Module:
    """A ``T5ForConditionalGeneration`` holding the weights of ``module``, a T5 in the course's layout (a
    student's, or a view), for the size given by ``kwargs`` (see :func:`hf_config`)."""
    hf = hf_model(seed=0, **kwargs)
    T5InCourseLayout(hf).load_state_dict({k: v.detach().float().cpu() for k, v in module.state_dict().items()})
    return hf


__all__ = ["hf_config", "hf_model", "additive", "AttentionInCourseLayout", "BlockInCourseLayout",
           "T5InCourseLayout", "course_kwargs", "to_hf"]
