"""dlcourse.gpt.rotary: rotary positions checked against Hugging Face's Llama (its frequencies, its
``apply_rotary_pos_emb``, its attention layer) and the closed form of a rotation, and given to the chapter's own
GPT (the solution notebook's classes): cached decoding, copies and checkpoints."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from test_compare import _module
from torch import nn

from dlcourse.gpt import rotary


@pytest.fixture(scope="module")
def GPT():
    return _module("gpt").course_classes()["GPT"]


def _sharp(model: nn.Module) -> nn.Module:
    """Larger queries and keys than GPT-2's initialisation draws, so that attention (and with it each
    position) visibly changes the logits."""
    with torch.no_grad():
        for block in model.h:
            block.attn.c_attn.weight.mul_(25)
    return model


def _llama(width: int, heads: int):
    from transformers import LlamaConfig

    config = LlamaConfig(hidden_size=width, num_attention_heads=heads, num_key_value_heads=heads,
                         attention_bias=True, rope_theta=rotary.BASE, max_position_embeddings=64)
    config._attn_implementation = "sdpa"  # causal when no mask is given
    return config


def test_the_frequencies_are_llama_s():
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    torch.testing.assert_close(rotary.frequencies(32), LlamaRotaryEmbedding(_llama(128, 4)).inv_freq)
    with pytest.raises(ValueError, match="odd"):
        rotary.frequencies(7)


def test_rotate_is_llama_s_apply_rotary_pos_emb_at_any_offset():
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    torch.manual_seed(0)
    q, k = torch.randn(2, 4, 6, 32), torch.randn(2, 4, 6, 32)  # (B, H, T, D)
    positions = torch.arange(9, 15)  # six new tokens after a cache of nine
    cos, sin = LlamaRotaryEmbedding(_llama(128, 4))(q, positions[None])
    expected_q, expected_k = apply_rotary_pos_emb(q, k, cos, sin)
    theta = rotary.frequencies(32)
    torch.testing.assert_close(rotary.rotate(q, positions, theta), expected_q)
    torch.testing.assert_close(rotary.rotate(k, positions, theta), expected_k)


def test_a_pair_turns_by_position_times_frequency_and_scores_see_only_distance():
    D = 8
    theta = rotary.frequencies(D)
    x = torch.randn(5, D)
    y = rotary.rotate(x, torch.arange(5), theta)
    t, i = 3, 1  # position 3, pair 1: dimensions 1 and 1 + D/2
    a, b, angle = x[t, i], x[t, i + D // 2], t * float(theta[i])
    torch.testing.assert_close(y[t, i], a * math.cos(angle) - b * math.sin(angle))
    torch.testing.assert_close(y[t, i + D // 2], a * math.sin(angle) + b * math.cos(angle))
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))  # lengths kept
    q, k = torch.randn(D), torch.randn(D)
    rq, rk = (rotary.rotate(v.expand(12, D), torch.arange(12), theta) for v in (q, k))
    torch.testing.assert_close(rq[7] @ rk[4], rq[5] @ rk[2])  # the same distance, the same score
    assert not torch.allclose(rq[7] @ rk[4], rq[7] @ rk[6])


def test_the_course_gpt_s_attention_becomes_llama_s(GPT):
    """The chapter's attention with rotary positions, against Hugging Face's LlamaAttention holding its
    weights (q, k, v split out of c_attn): the same outputs."""
    from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding

    torch.manual_seed(1)
    model = rotary.use_rotary_positions(GPT(vocab_size=11, n_positions=16, n_embd=32, n_layer=1, n_head=4))
    attn = model.h[0].attn
    config = _llama(32, 4)
    llama = LlamaAttention(config, layer_idx=0)
    w, b = attn.c_attn.weight.split(32), attn.c_attn.bias.split(32)
    with torch.no_grad():
        for proj, weight, bias in zip((llama.q_proj, llama.k_proj, llama.v_proj), w, b, strict=True):
            proj.weight.copy_(weight)
            proj.bias.copy_(bias)
        llama.o_proj.weight.copy_(attn.c_proj.weight)
        llama.o_proj.bias.copy_(attn.c_proj.bias)
    x = torch.randn(2, 7, 32)
    position_embeddings = LlamaRotaryEmbedding(config)(x, torch.arange(7)[None])
    expected, _ = llama(x, position_embeddings=position_embeddings, attention_mask=None)
    model.rotary.offset = 0
    mine, _ = attn(x)
    torch.testing.assert_close(mine, expected, rtol=1e-5, atol=1e-5)


def test_the_position_table_is_gone_and_positions_still_count(GPT):
    torch.manual_seed(2)
    plain = GPT(vocab_size=11, n_positions=16, n_embd=32, n_layer=2, n_head=4)
    n_plain = sum(p.numel() for p in plain.parameters())
    model = rotary.use_rotary_positions(plain).eval()
    assert "wpe.weight" not in model.state_dict() and not any("rotary" in k for k in model.state_dict())
    assert sum(p.numel() for p in model.parameters()) == n_plain - 16 * 32
    with torch.no_grad():
        # without positions, one layer of causal attention reads its prefix as a bag: the order of the first
        # two tokens would not change the third's logits; rotary positions tell the orders apart
        one = _sharp(rotary.use_rotary_positions(GPT(vocab_size=11, n_positions=16, n_embd=32, n_layer=1,
                                                     n_head=4)))
        logits = one(torch.tensor([[1, 2, 3], [2, 1, 3]])).logits
        assert not torch.allclose(logits[0, 2], logits[1, 2], atol=1e-2)
        one.rotary.theta.zero_()  # no turning: the bag again
        logits = one(torch.tensor([[1, 2, 3], [2, 1, 3]])).logits
        torch.testing.assert_close(logits[0, 2], logits[1, 2])
    with pytest.raises(ValueError, match="already"):
        rotary.use_rotary_positions(model)
    with pytest.raises(ValueError, match="chapter 04"):
        rotary.use_rotary_positions(nn.Linear(3, 3))


def test_cached_decoding_puts_new_tokens_at_their_positions(GPT):
    torch.manual_seed(3)
    model = _sharp(rotary.use_rotary_positions(GPT(vocab_size=11, n_positions=16, n_embd=32, n_layer=2,
                                                   n_head=4))).eval()
    ids = torch.randint(11, (2, 9))
    with torch.no_grad():
        whole = model(ids).logits
        out = model(ids[:, :4])
        first, past = out.logits, out.past
        rest = []
        for t in range(4, 9):  # one token at a time, the cache passed by keyword and by position
            out = model(ids[:, t:t + 1], past=past) if t % 2 else model(ids[:, t:t + 1], past)
            rest.append(out.logits)
            past = out.past
    torch.testing.assert_close(torch.cat([first, *rest], dim=1), whole, rtol=1e-5, atol=1e-5)
    stuck = copy.deepcopy(model)  # a model that forgets the offset would place every new token at position 0
    stuck._forward_pre_hooks.clear()  # the hook that reads the cache's length
    with torch.no_grad():
        wrong = stuck(ids[:, 4:5], past=stuck(ids[:, :4]).past).logits
    assert not torch.allclose(wrong, whole[:, 4:5], atol=1e-2)


def test_a_copy_rotates_with_its_own_hooks_and_a_checkpoint_reloads(GPT):
    torch.manual_seed(4)
    model = rotary.use_rotary_positions(GPT(vocab_size=11, n_positions=16, n_embd=32, n_layer=2, n_head=4)).eval()
    twin = copy.deepcopy(model)
    assert twin.rotary is not model.rotary
    ids = torch.randint(11, (1, 5))
    with torch.no_grad():
        twin(ids[:, 4:], past=twin(ids[:, :4]).past)  # leaves the twin's offset at 4
        assert model.rotary.offset == 0 and twin.rotary.offset == 4
        torch.testing.assert_close(twin(ids).logits, model(ids).logits)
    reloaded = rotary.use_rotary_positions(GPT(vocab_size=11, n_positions=16, n_embd=32, n_layer=2, n_head=4))
    reloaded.load_state_dict(model.state_dict())  # strict: the same names
    with torch.no_grad():
        torch.testing.assert_close(reloaded.eval()(ids).logits, model(ids).logits)
