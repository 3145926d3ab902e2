"""Chapter 03's package code: the BERT layout adapter, chapter 02's encoder layer in BERT form, the data and
training helpers, and the widgets' logic. The exercises are the notebook's; small versions are defined here."""

from __future__ import annotations

import matplotlib
import pytest
import torch
import torch.nn as nn

from dlcourse import data
from dlcourse.bert import model as bert_models
from dlcourse.bert import train as bert
from dlcourse.bert import widgets as wbert

matplotlib.use("Agg")


def mask_tokens(input_ids, special, vocab_size, mask_id, seed, p=0.15):
    g = torch.Generator().manual_seed(seed)
    prob = torch.full(input_ids.shape, p).masked_fill(special.bool(), 0.0)
    chosen = torch.bernoulli(prob, generator=g).bool()
    labels = torch.where(chosen, input_ids, -100)
    inputs = input_ids.clone()
    to_mask = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=g).bool() & chosen
    inputs[to_mask] = mask_id
    to_random = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=g).bool() & chosen & ~to_mask
    inputs[to_random] = torch.randint(vocab_size, input_ids.shape, generator=g)[to_random]
    return inputs, labels


def test_course_names_map_hugging_face_bert():
    assert bert_models.course_names("encoder.layer.3.attention.self.key.weight") == (
        "layers.3.self_attn.in_proj_weight", 1)
    assert bert_models.course_names("bert.encoder.layer.0.output.dense.bias") == ("bert.layers.0.ff.linear2.bias", None)
    assert bert_models.course_names("encoder.layer.1.attention.output.LayerNorm.weight")[0] == "layers.1.norm1.weight"
    assert bert_models.course_names("embeddings.LayerNorm.bias")[0] == "embeddings.norm.bias"
    assert bert_models.course_names("cls.predictions.transform.dense.weight")[0] == "mlm_transform.weight"


def test_encoder_layer_is_post_norm_transformer_encoder_layer():
    torch.manual_seed(0)
    ours = bert_models.EncoderLayer(16, 4, 32).eval()
    ref = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation="gelu", batch_first=True,
                                     layer_norm_eps=1e-12).train()
    state = {k.replace("ff.", ""): v for k, v in ours.state_dict().items()}
    ref.load_state_dict(state)
    x = torch.randn(2, 5, 16)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    torch.testing.assert_close(ours(x, src_key_padding_mask=pad)[0], ref(x, src_key_padding_mask=pad)[0],
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        bert_models.FeedForward(4, 8, activation="tanh")


def test_in_course_layout_reproduces_bert_for_pretraining_with_tied_weights():
    from transformers import BertForPreTraining

    hf = bert_models.randomize(BertForPreTraining(bert_models.hf_config()), seed=1)
    wrapped = bert_models.InCourseLayout(hf, lambda o: o.loss, keywords=("input_ids", "labels", "next_sentence_label"))
    names = dict(wrapped.named_parameters())
    assert "bert.layers.0.self_attn.in_proj_weight" in names and names["mlm_bias"].shape == (50,)
    assert not any("decoder" in n for n in names)  # the decoder is the word-embedding matrix
    ids = torch.randint(5, 50, (2, 7))
    labels = torch.full((2, 7), -100)
    labels[0, 2], labels[1, 4] = 9, 11
    nsp = torch.tensor([0, 1])
    torch.testing.assert_close(wrapped(ids, labels, nsp), hf(ids, labels=labels, next_sentence_label=nsp).loss)
    wrapped(ids, labels, nsp).backward()
    assert names["bert.embeddings.word_embeddings.weight"].grad.abs().sum() > 0
    state = bert_models.course_state_dict(hf)
    assert set(state) == set(names)


def test_parameter_counts_of_bert_base_and_large():
    assert bert.parameter_count() == 109_482_240  # "110 M"
    assert round(bert.parameter_count(dim=1024, depth=24, heads=16), -6) == 335_000_000  # "340 M"


def test_wordpiece_vocabulary_and_genre_task():
    vocab = bert.train_wordpiece(["the penguin is a flightless bird"] * 20 + ["birds fly"] * 5, vocab_size=80)
    assert vocab[:5] == list(bert.SPECIALS) and any(t.startswith("##") for t in vocab)
    task = bert.genre_task(per_class_train=20, per_class_test=10)
    assert len(task.train_text) == 40 and len(task.test_text) == 20
    assert task.train_labels.sum() == 20 and task.test_labels.sum() == 10
    assert not set(task.train_text) & set(task.test_text)


def test_pretraining_helpers_use_the_given_functions():
    docs = [[[5, 6], [7, 8], [9]], [[10], [11, 12]]]
    seen = []

    def nsp_pairs(documents, seed):
        seen.append(seed)
        return [(documents[0][0], documents[0][1], 0), (documents[0][1], documents[1][0], 1)]

    def encode_pair(a, b, cls_id, sep_id, max_length):
        ids = [cls_id] + a + [sep_id] + b + [sep_id]
        return ids, [0] * (len(a) + 2) + [1] * (len(b) + 1)

    data = bert.build_pairs(docs, nsp_pairs, encode_pair, seed=4, max_length=8)
    assert seen == [4]
    assert data.input_ids[0].tolist() == [2, 5, 6, 3, 7, 8, 3, 0]
    assert data.attention_mask[1].tolist() == [1, 1, 1, 1, 1, 1, 0, 0]
    assert data.special_mask()[0].tolist() == [1, 0, 0, 1, 0, 0, 1, 1]


def test_masking_state_classifies_every_position():
    ids = torch.tensor([2] + list(range(5, 45)) + [3])
    special = torch.zeros_like(ids)
    special[0] = special[-1] = 1
    vocab = list(bert.SPECIALS) + [f"w{i}" for i in range(60)]
    state = wbert.masking_state(ids, special, vocab, mask_tokens, bert.MASK, rate=0.5, seed=0)
    assert state.kinds[0] == state.kinds[-1] == "special"
    counts = state.counts()
    assert counts["mask"] > counts["random"] and sum(counts.values()) == len(state.loss_positions) > 0
    assert all(state.shown[i] == "[MASK]" for i, k in enumerate(state.kinds) if k == "mask")
    assert "[MASK]" in wbert.masking_html(state)


def test_fill_mask_state_ranks_the_logits():
    vocab = list(bert.SPECIALS) + ["a", "b", "c"]

    def logits_fn(ids):
        out = torch.zeros(len(ids), len(vocab))
        out[:, 6] = 5.0
        out[:, 5] = 3.0
        return out

    state = wbert.fill_mask_state(logits_fn, lambda s: [2, 5, 4, 3], vocab, "a [MASK]", k=2, mask_id=4)
    assert state.slots == [2] and [t for t, _ in state.top[0]] == ["b", "a"]
    assert wbert.fill_mask_state(logits_fn, lambda s: [2, 5, 3], vocab, "a", 2, 4).slots == []


def test_head_state_and_viewer_redraw():
    tokens = ["[CLS]", "a", "[SEP]", "b", "[SEP]"]
    w = torch.zeros(1, 2, 5, 5)
    w[0, 0] = torch.eye(5)
    w[0, 1, :, 3] = 1.0
    state = wbert.head_state([w[0]], tokens, 0, 1)
    assert state.sep == 2 and state.cross_segment == pytest.approx(0.5)
    with pytest.raises(ValueError):
        wbert.head_state([w[0]], tokens, 1, 0)
    view = wbert.attention_heads_viewer([w[0], w[0]], tokens)
    view.controls["head"].value = 1
    assert view.renders == 2


def test_init_weights_is_berts_normal_002():
    torch.manual_seed(0)
    model = nn.ModuleDict({"emb": nn.Embedding(500, 64, padding_idx=0), "attn": bert_models.EncoderLayer(64, 4, 128),
                           "norm": nn.LayerNorm(64)})
    with torch.no_grad():
        model["norm"].weight.fill_(3.0)
    assert bert.init_weights(model, std=0.02) is model
    emb = model["emb"].weight
    assert emb[0].abs().max() == 0 and 0.018 < emb[1:].std() < 0.022
    attn = model["attn"].self_attn
    assert 0.018 < attn.in_proj_weight.std() < 0.022 and attn.in_proj_bias.abs().max() == 0  # not xavier's 0.125
    assert 0.018 < model["attn"].ff.linear1.weight.std() < 0.022 and model["attn"].ff.linear1.bias.abs().max() == 0
    assert torch.equal(model["norm"].weight, torch.ones(64))


class _TinyPretrainer(nn.Module):
    """A stand-in with BertPretraining's call: (loss, MLM logits at the chosen positions, NSP logits)."""

    def __init__(self, vocab: int = 30, dim: int = 8) -> None:
        super().__init__()
        self.emb, self.out, self.nsp = nn.Embedding(vocab, dim), nn.Linear(dim, vocab), nn.Linear(dim, 2)
        self.widths: list[int] = []

    def forward(self, ids, types, mask, labels, nsp_labels):
        self.widths.append(ids.shape[1])
        h = self.emb(ids)
        logits = self.out(h[labels != -100])
        nsp = self.nsp(h[:, 0])
        return (torch.nn.functional.cross_entropy(logits, labels[labels != -100])
                + torch.nn.functional.cross_entropy(nsp, nsp_labels), logits, nsp)


def test_pretrain_runs_a_fixed_number_of_steps_deterministically_on_trimmed_batches():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 30, (40, 12), generator=g)
    ids[:, 0], ids[:, 9:] = bert.CLS, bert.PAD  # every row has 3 columns of padding
    attention = (ids != bert.PAD).long()
    data = bert.PairData(ids, torch.zeros_like(ids), attention, torch.randint(2, (40,), generator=g))
    assert bert.trim(data).input_ids.shape == (40, 9)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = _TinyPretrainer()
        runs.append((bert.pretrain(model, data, mask_tokens, 30, steps=7, batch_size=8, lr=1e-2, warmup=2), model))
    (first, model), (second, _) = runs
    assert first.steps == 7 and len(first.loss) == 7 and first.loss == second.loss
    assert set(model.widths) == {9} and not model.training
    before = [p.detach().clone() for p in model.parameters()]
    mlm, nsp = bert.evaluate_pretraining(model, data, mask_tokens, 30)
    assert 0 <= mlm <= 1 and 0 <= nsp <= 1
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_shipped_tiny_bert_loads_into_hugging_face_and_fills_masks():
    """The checkpoint ``make checkpoints`` trains has BertForPreTraining's layout (it is what the fill-mask
    explorer and the benchmark run) and its recorded metric passed the chapter's target."""
    from transformers import BertForPreTraining

    from dlcourse import data

    shipped = data.load_json("03_tiny_bert_vocab")
    model = bert_models.InCourseLayout(BertForPreTraining(bert_models.hf_config(**shipped["config"])),
                                       lambda out: out.prediction_logits[0])
    metrics = data.load_checkpoint("03_tiny_bert", model)
    assert metrics["mlm_accuracy_heldout"] > 0.13 and metrics["steps"] == 1200
    tokenizer = bert.fast_tokenizer(shipped["vocab"])
    ids = tokenizer("my lord , i [MASK] you")["input_ids"]
    with torch.no_grad():
        logits = model.eval()(torch.tensor([ids]))
    assert logits.shape == (len(ids), len(shipped["vocab"]))
    top = shipped["vocab"][int(logits[ids.index(bert.MASK)].argmax())]
    assert top not in bert.SPECIALS  # a word, not a special token


def test_pretraining_plays_leave_out_validation_and_transfer_test_plays():
    from dlcourse.datasets import shakespeare

    plays = bert.pretraining_plays()
    test_plays = {slug for slugs in bert.HELD_OUT.values() for slug in slugs}
    assert plays == sorted(plays) and len(plays) == len(shakespeare.play_files()) - 7
    assert not set(plays) & (test_plays | set(shakespeare.VALIDATION_PLAYS))
    assert {"macbeth", "henry-iv-part-1", "as-you-like-it"} <= set(plays)


def test_sense_similarity_groups_by_sense():
    vectors = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.2, 1.0]])
    result = bert.sense_similarity(vectors, [0, 0, 1, 1])
    assert result["matrix"].shape == (4, 4)
    torch.testing.assert_close(result["matrix"].diagonal(), torch.ones(4))
    assert result["within"] > 0.95 and result["across"] < 0.3 and result["nearest"] == 1.0
    assert result["within_min"] > result["across_max"]
    mixed = bert.sense_similarity(vectors, [0, 1, 0, 1])  # labels that cut across the groups
    assert mixed["nearest"] == 0.0 and mixed["within"] < mixed["across"]
    with pytest.raises(ValueError):
        bert.sense_similarity(vectors, [0, 0, 0, 0])


def test_tiny_elmo_layers_directions_mix_and_training():
    torch.manual_seed(0)
    model = bert.TinyELMo(vocab_size=30, dim=8, layers=2).eval()
    ids = torch.randint(30, (2, 7))
    states = model.layer_states(ids)
    assert len(states) == 3 and all(s.shape == (2, 7, 16) for s in states)
    x = model.embed(ids)
    torch.testing.assert_close(states[0], torch.cat([x, x], -1))
    forward_top, _ = model.forward_lm[1](model.forward_lm[0](x)[0])
    torch.testing.assert_close(states[2][..., :8], forward_top)
    changed = ids.clone()
    changed[:, 4] = (changed[:, 4] + 1) % 30  # change token 4: forward states before it cannot see it
    after = model.layer_states(changed)
    assert torch.equal(after[2][:, :4, :8], states[2][:, :4, :8])
    assert not torch.allclose(after[2][:, :4, 8:], states[2][:, :4, 8:])  # the backward LM reads it
    assert torch.equal(after[1][:, 5:, 8:], states[1][:, 5:, 8:])  # backward states after it cannot
    torch.testing.assert_close(model.mix(states), sum(states) / 3)  # zero mixing logits, gamma 1: the mean
    forward, backward = model.lm_loss(ids)
    assert forward.ndim == 0 and backward.ndim == 0
    stream = torch.arange(200) % 5  # a repeating pattern both directions can learn
    losses = bert.train_elmo(model, stream, steps=60, window=10, batch_size=8, lr=3e-2)
    assert len(losses) == 60 and losses[-1] < 0.5 * losses[0]
    assert torch.equal(model.mix_logits, torch.zeros(3)) and not model.training  # the LMs train, not the mix


def test_merge_scores_rank_pairs_by_frequency_and_by_wordpiece_ratio():
    scores = bert.merge_scores({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5})
    assert scores[("##u", "##g")] == (20, pytest.approx(20 / (36 * 20)))
    assert max(scores, key=lambda p: scores[p][0]) == ("##u", "##g")  # BPE: the most frequent pair
    assert max(scores, key=lambda p: scores[p][1]) == ("##g", "##s")  # WordPiece: parts seldom seen apart
    assert bert.merge_scores({"a": 3}) == {}


def test_library_wordpiece_trainer_keeps_the_pieces_of_its_bpe_trainer():
    texts = bert.play_lines("macbeth")  # real text: few ties between equally frequent pairs (broken at random)
    wordpiece = bert.train_wordpiece(texts, vocab_size=600)
    bpe = bert.train_bpe_vocabulary(texts, vocab_size=600)
    assert len(set(wordpiece) & set(bpe)) >= 590 and bpe[:5] == list(bert.SPECIALS)


def test_documents_encode_to_the_same_ids_through_the_backend_as_through_the_wrapper():
    tokenizer = bert.fast_tokenizer(data.load_json("03_tiny_bert_vocab")["vocab"])
    documents = [["To be, or not to be: that is the question.", "", "Whether 'tis nobler in the mind"],
                 ["\u200b", "Methinks the lady doth protest too much."]]
    wrapper = [[ids for ids in tokenizer(doc, add_special_tokens=False)["input_ids"] if ids] for doc in documents]
    assert bert.encode_documents(documents, tokenizer) == wrapper
    assert [len(doc) for doc in wrapper] == [2, 1]  # lines that encode to nothing are dropped

    class Wrapped:  # a tokenizer without a Rust backend takes the wrapper's path
        def __call__(self, *args, **kwargs):
            return tokenizer(*args, **kwargs)

    assert bert.encode_documents(documents, Wrapped()) == wrapper
    tokenizer(["a b c d e f g"], truncation=True, max_length=3)  # leaves the backend truncating
    assert bert.encode_documents(documents, tokenizer) == wrapper
