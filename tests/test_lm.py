"""Chapter 04's package pieces and the Shakespeare corpus (a shared data set) it trains on: GPT-2 weight
conversion, the refusal guard, the cached-model adapter and the sampling explorer's logic."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from transformers import GPT2LMHeadModel, TopKLogitsWarper

from dlcourse import checks
from dlcourse.datasets import shakespeare
from dlcourse.gpt import beams, lm, sampling


def test_corpus_is_the_measured_text_split_by_whole_plays():
    train, val = shakespeare.split()
    assert shakespeare.sha256(shakespeare.text()) == shakespeare.TEXT_SHA256
    assert len(train) + len(val) == len(shakespeare.text())
    assert 0.08 < len(val) / (len(train) + len(val)) < 0.12
    assert val.startswith(shakespeare.text(("hamlet",))[:200])
    assert "**" not in train and "_Enter" not in train and "\\[" not in train  # markdown is gone
    corpus = shakespeare.char_corpus()
    assert corpus.tokenizer.decode(corpus.val[:500]) == val[:500]
    x, y = corpus.batch("train", 4, 16, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 16) and torch.equal(x[:, 1:], y[:, :-1])
    windows = corpus.windows("val", 64)  # the whole held-out text, in order, each character once
    assert windows.shape == (len(val) // 64, 64)
    assert corpus.tokenizer.decode(windows.flatten()) == val[: windows.numel()]


def test_char_tokenizer_refuses_unknown_characters():
    tok = shakespeare.CharTokenizer("abc\n")
    assert tok.decode(tok.encode("cab\n")) == "cab\n"
    with pytest.raises(ValueError, match="outside the alphabet"):
        tok.encode("abz")
    with pytest.raises(KeyError, match="unknown plays"):
        shakespeare.text(("no-such-play",))


def test_the_tensor_encoder_gives_the_same_ids_and_refuses_the_same_characters():
    tok = shakespeare.CharTokenizer("abc\n é")
    for text in ["", "cab\n", "é a", "ééé\n\nabc"]:
        ids = tok.encode_tensor(text)
        assert ids.dtype == torch.int64 and ids.tolist() == tok.encode(text)
    # below, inside and far beyond the table's code points
    for bad in ["\t", "abz", "ab€", "a\U0001F600"]:
        with pytest.raises(ValueError, match="outside the alphabet"):
            tok.encode_tensor(bad)


def test_bpe_is_deterministic_and_lossless():
    docs = shakespeare.text(("macbeth",)).split("\n\n")
    a, b = shakespeare.train_bpe(docs, 300), shakespeare.train_bpe(docs, 300)
    assert a.to_str() == b.to_str()
    line = "Is this a dagger which I see before me?"
    assert a.decode(a.encode(line).ids) == line
    assert len(a.encode(line).ids) < len(line.encode())


def test_gpt2_state_dict_transposes_conv1d_and_drops_the_prefix():
    hf = lm.tiny_gpt2(seed=0, n_embd=16, n_head=2, n_layer=1, vocab_size=20)
    state = lm.gpt2_state_dict(hf)
    assert "wte.weight" in state and not any(k.startswith("transformer.") for k in state)
    assert torch.equal(state["h.0.attn.c_attn.weight"], hf.transformer.h[0].attn.c_attn.weight.t())
    assert state["h.0.mlp.c_fc.weight"].shape == (64, 16)
    assert torch.equal(state["ln_f.bias"], hf.transformer.ln_f.bias)


def test_tiny_gpt2_is_seeded_and_has_no_sampling_defaults():
    a, b = lm.tiny_gpt2(seed=3), lm.tiny_gpt2(seed=3)
    assert isinstance(a, GPT2LMHeadModel) and not a.training
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.lm_head.weight, lm.tiny_gpt2(seed=4).lm_head.weight)
    assert a.generation_config.top_k is None and a.generation_config.pad_token_id == 60


def test_generation_refused_blocks_then_restores():
    hf = lm.tiny_gpt2(seed=0)
    ids = torch.tensor([[1, 2, 3]])
    expected = lm.hf_generate(hf, ids, max_new_tokens=3)
    with lm.generation_refused():
        with pytest.raises(checks.ForbiddenCall, match="generate"):
            hf.generate(ids, max_new_tokens=3)
        with pytest.raises(checks.ForbiddenCall, match="TopKLogitsWarper"):
            TopKLogitsWarper(2)(ids, torch.randn(1, 5))
    assert torch.equal(lm.hf_generate(hf, ids, max_new_tokens=3), expected)
    assert torch.isinf(TopKLogitsWarper(2)(ids, torch.randn(1, 5))).sum() == 3


def test_hf_generate_keeps_results_only_for_the_same_model_prompt_and_arguments(monkeypatch):
    hf = lm.tiny_gpt2(seed=5)
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    calls = []
    generate = type(hf).generate
    monkeypatch.setattr(type(hf), "generate", lambda self, *a, **k: calls.append(k) or generate(self, *a, **k))
    first = lm.hf_generate(hf, ids, max_new_tokens=4, eos_token_id=None, pad_token_id=0)
    first[:] = -1  # the caller's copy: what is kept is not changed
    again = lm.hf_generate(hf, ids, max_new_tokens=4, eos_token_id=None, pad_token_id=0)
    assert len(calls) == 1 and (again >= 0).all()
    lm.hf_generate(hf, ids, max_new_tokens=5, eos_token_id=None, pad_token_id=0)  # another argument
    lm.hf_generate(hf, ids[:1], max_new_tokens=4, eos_token_id=None, pad_token_id=0)  # another prompt
    beams = dict(num_beams=2, num_return_sequences=2, max_new_tokens=4, eos_token_id=60, pad_token_id=60,
                 output_scores=True, return_dict_in_generate=True)
    scored = lm.hf_generate(hf, ids[:1], **beams)
    assert torch.equal(lm.hf_generate(hf, ids[:1], **beams).sequences_scores, scored.sequences_scores)
    assert len(calls) == 4
    (swapped,) = lm.swap_tokens(hf, int(again[0, 3]), 0, ids)  # changed weights are another oracle
    changed = lm.hf_generate(hf, swapped, max_new_tokens=4, eos_token_id=None, pad_token_id=0)
    assert len(calls) == 5 and (changed[0, 3] == 0).all()
    (ids_back,) = lm.swap_tokens(hf, int(again[0, 3]), 0, swapped)
    lm.hf_generate(hf, ids, max_new_tokens=4, eos_token_id=None, pad_token_id=0)  # the same weights again
    assert len(calls) == 5 and torch.equal(ids_back, ids)
    with torch.no_grad():
        hf.transformer.ln_f.bias += 0.5
    lm.hf_generate(hf, ids, max_new_tokens=4, eos_token_id=None, pad_token_id=0)
    assert len(calls) == 6
    hf.generation_config.pad_token_id = 3  # and so is a changed configuration
    lm.hf_generate(hf, ids, max_new_tokens=4, eos_token_id=None)
    lm.hf_generate(hf, ids, max_new_tokens=4, eos_token_id=None)
    assert len(calls) == 7
    torch.manual_seed(0)
    lm.hf_generate(hf, ids, max_new_tokens=4, do_sample=True, top_k=5)  # sampling is never kept
    lm.hf_generate(hf, ids, max_new_tokens=4, do_sample=True, top_k=5)
    assert len(calls) == 9


def test_generation_refused_also_refuses_what_is_imported_inside_the_block():
    # the guard imports nothing (a graded kernel would pay seconds for transformers): generate and the logits
    # processors imported inside the block are refused there, and work again after it
    script = """
import sys, torch
from dlcourse import checks
from dlcourse.gpt import lm
with lm.generation_refused():
    assert "transformers.generation.utils" not in sys.modules
    from transformers import GPT2Config, GPT2LMHeadModel, TopKLogitsWarper
    hf = GPT2LMHeadModel(GPT2Config(vocab_size=11, n_positions=8, n_embd=8, n_layer=1, n_head=2)).eval()
    ids = torch.tensor([[1, 2]])
    for call in (lambda: hf.generate(ids, max_new_tokens=2, do_sample=False),
                 lambda: TopKLogitsWarper(2)(ids, torch.randn(1, 5))):
        try:
            call()
        except checks.ForbiddenCall:
            continue
        raise SystemExit("not refused")
assert hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, do_sample=False,
                   pad_token_id=0).shape == (1, 4)
assert torch.isinf(TopKLogitsWarper(2)(ids, torch.randn(1, 5))).sum() == 3
print("refused, then restored")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "refused, then restored"


def test_cached_lm_records_calls_and_matches_the_full_forward():
    hf = lm.tiny_gpt2(seed=1)
    model = lm.CachedLM(hf)
    ids = torch.randint(60, (2, 9))
    with torch.no_grad():
        first = model(ids[:, :6])
        rest = model(ids[:, 6:], past=first.past)
        full = hf(ids).logits
    torch.testing.assert_close(rest.logits, full[:, 6:], rtol=1e-5, atol=1e-5)
    assert model.fed == [6, 3] and model.got_past == [False, True]
    quiet = lm.CachedLM(hf, record=False)
    quiet(ids)
    assert quiet.fed == []


def test_next_token_state_shows_what_the_filters_removed():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0, float("-inf")])
    filtered = logits.clone()
    filtered[2:] = float("-inf")
    state = sampling.next_token_state(logits, filtered, lambda ids: "abcd "[ids[0]], show=4)
    assert state.labels == ["a", "b", "c", "d"]
    assert state.kept.tolist() == [True, True, False, False]
    assert state.kept_total == 2 and state.vocab_size == 5
    torch.testing.assert_close(state.after.sum(), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(state.after[0] / state.after[1], torch.tensor(2.718281828, dtype=torch.float64))
    assert state.after[2] == 0 and state.before[2] > 0
    html = sampling.next_token_html(state, title="toy")
    assert html.count("font-family:monospace") == 4 and "2 of 5 tokens left" in html
    assert "color:#aaa" in html  # removed tokens are greyed
    with pytest.raises(ValueError, match="removed every token"):
        sampling.next_token_state(logits, torch.full((5,), float("-inf")), str)


def test_sampling_explorer_redraws_and_continues():
    vocab = "ab\n"

    def next_logits(ids):
        return torch.tensor([[1.0, 0.5, -1.0]])

    model = sampling.LanguageModel("toy", next_logits, lambda s: [vocab.index(c) for c in s],
                                  lambda ids: "".join(vocab[i] for i in ids), lambda text, s: "ab" * s["length"])

    def keep_top(logits, ids, settings):
        k = settings["top_k"] or logits.shape[-1]
        return logits.masked_fill(logits < logits.topk(k).values[:, -1:], float("-inf"))

    view = sampling.sampling_explorer([model], keep_top, prompt="ab")
    renders = view.renders
    view.controls["top_k"].value = 1
    assert view.renders == renders + 1
    view.controls["length"].value = 10
    view.continue_prompt()
    assert view.last_continuation == "ab" * 10


def test_as_gpt2_inverts_the_conversion():
    hf = lm.tiny_gpt2(seed=5)
    back = lm.as_gpt2(lm.gpt2_state_dict(hf), n_head=hf.config.n_head)
    ids = torch.randint(60, (2, 11))
    with torch.no_grad():
        torch.testing.assert_close(back(ids).logits, hf(ids).logits, rtol=1e-5, atol=1e-5)


def test_beam_tree_is_rebuilt_from_the_model_calls():
    calls = [torch.tensor([[7, 1]]), torch.tensor([[7, 1, 3], [7, 1, 4]]), torch.tensor([[7, 1, 3, 5], [7, 1, 4, 6]])]
    sequences = torch.tensor([[7, 1, 3, 5, 9], [7, 1, 4, 9, 9]])  # the second ended with EOS 9, then padding
    tree = beams.beam_tree_state(calls, 2, sequences, [-0.5, -0.7], pad_id=9)
    assert tree.returned == {(3, 5, 9): 0, (4, 9): 1}
    assert {(), (3,), (4,), (3, 5), (4, 6)} <= tree.live
    assert tree.nodes[0] == () and set(tree.nodes) == {(), (3,), (4,), (3, 5), (4, 6), (3, 5, 9), (4, 9)}
    fig = beams.draw_beam_tree(tree, str)
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {"3", "5", "9", "6"} <= labels and "#1  -0.500" in labels
    recorder = beams.RecordingModel(lm.tiny_gpt2(seed=0))
    recorder(torch.tensor([[1, 2]]))
    assert len(recorder.calls) == 1 and recorder.calls[0].tolist() == [[1, 2]]


def test_swap_tokens_renames_without_changing_the_model():
    hf = lm.tiny_gpt2(seed=2)
    ids = torch.tensor([[0, 5, 7, 5]])
    with torch.no_grad():
        before = hf(ids).logits
    (renamed,) = lm.swap_tokens(hf, 5, 0, ids)
    assert renamed.tolist() == [[5, 0, 7, 0]]
    with torch.no_grad():
        after = hf(renamed).logits
    torch.testing.assert_close(after[..., [5, 0]], before[..., [0, 5]])
    torch.testing.assert_close(after[..., 7], before[..., 7])


def test_frequent_token_is_the_mode_of_the_greedy_continuation():
    hf = lm.tiny_gpt2(seed=10)
    prompt = torch.randint(60, (3, 4), generator=torch.Generator().manual_seed(0))
    generated = lm.hf_generate(hf, prompt, max_new_tokens=12, eos_token_id=None, pad_token_id=0)[:, 4:]
    token = lm.frequent_token(hf, prompt, 12)
    counts = torch.bincount(generated.flatten(), minlength=61)
    assert counts[token] == counts.max() > 1


def test_long_token_labels_get_columns_as_wide_as_themselves():
    """SmolLM2's tokens are words: a fixed 34-pixel column made neighbouring labels overprint."""
    state = sampling.next_token_state(torch.tensor([2.0, 1.0]), torch.tensor([2.0, 1.0]),
                                     lambda ids: [" Juliet", " wherefore"][ids[0]], show=2)
    html = sampling.next_token_html(state)
    assert "min-width:34px" in html and "width:34px\"" not in html and "white-space:pre" in html


def test_beam_tree_prompt_keeps_its_newline():
    """The default prompt "JULIET:\\nO" is two lines: a one-line box showed "JULIET:O" and lost the newline."""
    import ipywidgets as W

    seen = []

    def search(model, ids, beams, steps):
        seen.append(ids[0].tolist())
        return torch.cat([ids, ids[:, -1:]], 1), torch.tensor([0.0])

    view = beams.beam_tree_explorer(search, lm.tiny_gpt2(seed=0), lambda s: [ord(c) % 60 for c in s], str,
                                      "JULIET:\nO")
    box = view.controls["text"]
    assert isinstance(box, W.Textarea) and box.value == "JULIET:\nO" and not box.continuous_update
    assert seen[-1] == [ord(c) % 60 for c in "JULIET:\nO"]


def test_fit_power_law_recovers_a_known_exponent():
    n = np.array([2e4, 6e4, 1.5e5, 3e5, 8e5])
    noise = np.exp(np.random.default_rng(0).normal(0, 0.002, n.shape))  # 0.2 % multiplicative noise
    law = lm.fit_power_law(n, 7.0 * n ** -0.076 * noise)
    assert law.alpha == pytest.approx(0.076, abs=0.005) and law.a == pytest.approx(7.0, rel=0.1)
    assert law(1e6) == pytest.approx(7.0 * 1e6 ** -0.076, rel=0.01)
    exact = lm.fit_power_law([1, 10, 100], [4.0, 2.0, 1.0])  # halves per decade: alpha = log10(2)
    assert exact.alpha == pytest.approx(np.log10(2)) and exact.a == pytest.approx(4.0)
    with pytest.raises(ValueError, match="positive"):
        lm.fit_power_law([1, 10], [1.0, 0.0])
    with pytest.raises(ValueError, match="two distinct"):
        lm.fit_power_law([5, 5], [1.0, 2.0])


def test_non_embedding_parameters_leave_out_tied_embeddings():
    hf = lm.tiny_gpt2(seed=0)  # wte, wpe and an lm_head tied to wte
    embeddings = hf.transformer.wte.weight.numel() + hf.transformer.wpe.weight.numel()
    assert lm.non_embedding_parameters(hf) == sum(p.numel() for p in hf.parameters()) - embeddings


def test_a_stand_in_builds_its_object_once_at_first_use_and_passes_every_use_on():
    built = []

    def build():
        built.append(1)
        return [3, 1, 2]

    stand_in = lm.OnFirstUse(build)
    assert not stand_in.built and built == []  # made, not built
    assert len(stand_in) == 3 and stand_in.index(1) == 1 and stand_in.get() == [3, 1, 2]
    assert stand_in.built and built == [1]  # built once, whatever the uses
    call = lm.OnFirstUse(lambda: (lambda x, y=0: x + y))
    assert call(2, y=3) == 5
    with pytest.raises(AttributeError):
        stand_in.no_such_method()
    class Box:
        size = 1

    box = lm.OnFirstUse(Box)
    box.size = 5  # a setting reaches the object, as a reading does
    assert box.get().size == 5 and box.size == 5 and "size" not in vars(box)
    assert repr(lm.OnFirstUse(lambda: [1, 2])) == "[1, 2]" and "append" in dir(lm.OnFirstUse(list))
    failing = lm.OnFirstUse(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.get()
    assert not failing.built  # a failed build is tried again at the next use, never remembered as built


def test_smollm2_on_first_use_loads_nothing_until_used_and_then_once(monkeypatch):
    loads = []

    def load(device):
        loads.append(device)
        return torch.nn.Linear(2, 2), "the tokenizer"

    monkeypatch.setattr(lm, "load_smollm2", load)
    monkeypatch.setattr(lm, "load_smollm2_tokenizer", lambda: "the tokenizer alone")
    model, tokenizer, cached = lm.smollm2_on_first_use("cpu")
    assert loads == []
    assert tokenizer.get() == "the tokenizer alone" and loads == []  # the tokenizer does not load the model
    assert isinstance(cached.get(), lm.CachedLM) and cached.get().hf is model.get() and not cached.get().record
    assert loads == ["cpu"]
    monkeypatch.setattr(lm, "load_smollm2_tokenizer", lambda: None)  # no converted copy: with the model, once
    model, tokenizer, cached = lm.smollm2_on_first_use("cpu")
    assert tokenizer.get() == "the tokenizer" and cached.get().hf is model.get() and loads == ["cpu", "cpu"]
