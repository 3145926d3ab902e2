"""Plausible wrong answers for chapter 03. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Cells with several functions redefine all of them.
VISIBLE names the wrong answers that the exercise's *visible* test must catch as well.
"""

_WORDPIECE = '''
def wordpiece(word, vocab, unk_token="[UNK]", max_input_chars_per_word=100):
    if len(word) {too_long} max_input_chars_per_word:
        return [unk_token]
    pieces, start = [], 0
    while start < len(word):
        end = {first_end}
        while end > start:
            piece = word[start:end] if start == 0 else {prefix} + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            {on_fail}
        pieces.append(piece)
        start = end
    return pieces
'''


def wordpiece(too_long=">", first_end="len(word)", prefix='"##"', on_fail="return [unk_token]"):
    return _WORDPIECE.format(too_long=too_long, first_end=first_end, prefix=prefix, on_fail=on_fail)


_MASK = '''
def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, seed, mlm_probability=0.15):
    g = torch.Generator().manual_seed(seed)
    labels = input_ids.clone()
    probability = torch.full(input_ids.shape, mlm_probability)
    {specials}
    chosen = torch.bernoulli(probability, generator=g).bool()
    labels[{unlabelled}] = -100
    inputs = input_ids.clone()
    to_mask = torch.bernoulli(torch.full(input_ids.shape, {p_mask}), generator=g).bool() & chosen
    inputs[to_mask] = mask_token_id
    to_random = torch.bernoulli(torch.full(input_ids.shape, {p_random}), generator=g).bool() & chosen & ~to_mask
    random_ids = torch.randint(vocab_size, input_ids.shape, dtype=torch.long, generator=g)
    inputs[to_random] = random_ids[to_random]
    return inputs, labels
'''


def mask(specials="probability.masked_fill_(special_tokens_mask.bool(), 0.0)", unlabelled="~chosen", p_mask="0.8",
         p_random="0.5"):
    return _MASK.format(specials=specials, unlabelled=unlabelled, p_mask=p_mask, p_random=p_random)


_MASK_RAND = '''
def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, seed, mlm_probability=0.15):
    g = torch.Generator().manual_seed(seed)
    chosen = (torch.rand(input_ids.shape, generator=g) < mlm_probability) & ~special_tokens_mask.bool()
    labels = torch.where(chosen, input_ids, -100)
    u = torch.rand(input_ids.shape, generator=g)
    inputs = input_ids.clone()
    inputs[chosen & (u < 0.8)] = mask_token_id
    rnd = chosen & (u >= 0.8) & (u < 0.9)
    inputs[rnd] = torch.randint(vocab_size, input_ids.shape, generator=g)[rnd]
    return inputs, labels
'''

_PAIRS = '''
def encode_pair(ids_a, ids_b, cls_id, sep_id, max_length=None):
    a, b = list(ids_a), (list(ids_b) if ids_b is not None else None)
    if max_length is not None:
        if b is None:
            a = a[: max(max_length - 2, 0)]
        else:
            {truncate}
    ids = [cls_id] + a + [sep_id]
    types = [0] * len(ids)
    if b is not None:
        ids += b + [sep_id]
        types += [{segment_b}] * (len(b) + 1)
    {fix_types}
    return ids, types


def nsp_pairs(documents, seed):
    g = torch.Generator().manual_seed(seed)
    pairs = []
    for d, doc in enumerate(documents):
        for i in range(len(doc) - 1):
            if torch.rand(1, generator=g).item() < 0.5:
                pairs.append((doc[i], doc[i + 1], {is_next}))
            else:
                k = int(torch.randint({k_range}, (1,), generator=g).item())
                other = documents[{other}]
                j = int(torch.randint(len(other), (1,), generator=g).item())
                pairs.append((doc[i], other[j], {not_next}))
    return pairs
'''

_LONGEST_FIRST = '''budget = max(max_length - 3, 0)
            if len(a) + len(b) > budget:
                short_is_a = len(a) <= len(b)
                short, long_ = (len(a), len(b)) if short_is_a else (len(b), len(a))
                if short <= budget - short:
                    keep_short, keep_long = short, budget - short
                else:
                    keep_short, keep_long = budget // 2, budget - budget // 2
                keep_a, keep_b = (keep_short, keep_long) if short_is_a else (keep_long, keep_short)
                a, b = a[:keep_a], b[:keep_b]'''

_ONE_AT_A_TIME = '''while len(a) + len(b) > max_length - 3:
                if len(a) > len(b):
                    a = a[:-1]
                else:
                    b = b[:-1]'''


def pairs(truncate=_LONGEST_FIRST, segment_b="1", fix_types="", is_next="0", not_next="1",
          k_range="len(documents) - 1", other="k if k < d else k + 1"):
    return _PAIRS.format(truncate=truncate, segment_b=segment_b, fix_types=fix_types, is_next=is_next,
                         not_next=not_next, k_range=k_range, other=other)


_EMB = '''
class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size, dim, max_positions=512, type_vocab_size=2, eps=1e-12):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_positions, dim)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, dim)
        self.norm = nn.LayerNorm(dim, eps=eps)

    def forward(self, input_ids, token_type_ids=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        positions = {positions}
        x = {sum}
        return {out}
'''


def emb(positions="torch.arange(input_ids.shape[1], device=input_ids.device)",
        sum="self.word_embeddings(input_ids) + self.position_embeddings(positions) + "  # noqa: A002
            "self.token_type_embeddings(token_type_ids)",
        out="self.norm(x)"):
    return _EMB.format(positions=positions, sum=sum, out=out)


_ENC = '''
class BertEncoder(nn.Module):
    def __init__(self, vocab_size, dim, depth, heads, mlp_dim, max_positions=512, type_vocab_size=2, eps=1e-12):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab_size, dim, max_positions, type_vocab_size, eps)
        self.layers = nn.ModuleList(bert_models.EncoderLayer(dim, heads, mlp_dim, activation="{act}",
                                                             layer_norm_eps=eps{extra}) for _ in range(depth))

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        padding = None if attention_mask is None else {padding}
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers{which}:
            x = layer(x, src_key_padding_mask=padding)
        return x
'''


def enc(act="gelu", extra="", padding="attention_mask == 0", which=""):
    return _ENC.format(act=act, extra=extra, padding=padding, which=which)


_PRE = '''
class BertPretraining(nn.Module):
    def __init__(self, vocab_size, dim, depth, heads, mlp_dim, max_positions=512, type_vocab_size=2, eps=1e-12):
        super().__init__()
        self.bert = BertEncoder(vocab_size, dim, depth, heads, mlp_dim, max_positions, type_vocab_size, eps)
        self.mlm_transform = nn.Linear(dim, dim)
        self.mlm_norm = nn.LayerNorm(dim, eps=eps)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab_size))
        self.pooler = nn.Linear(dim, dim)
        self.nsp = nn.Linear(dim, 2)

    def forward(self, input_ids, token_type_ids, attention_mask, mlm_labels, nsp_labels):
        hidden = self.bert(input_ids, token_type_ids, attention_mask)
        chosen = mlm_labels != -100
        h = {transform}
        mlm_logits = {decoder}
        nsp_logits = {nsp}
        loss = {loss}
        return loss, mlm_logits, nsp_logits
'''


def pre(transform="self.mlm_norm(F.gelu(self.mlm_transform(hidden[chosen])))",
        decoder="h @ self.bert.embeddings.word_embeddings.weight.T + self.mlm_bias",
        nsp="self.nsp(torch.tanh(self.pooler(hidden[:, 0])))",
        loss="F.cross_entropy(mlm_logits, mlm_labels[chosen]) + F.cross_entropy(nsp_logits, nsp_labels)"):
    return _PRE.format(transform=transform, decoder=decoder, nsp=nsp, loss=loss)


MUTANTS = {
    "wordpiece": [
        ("shortest match first", wordpiece(first_end="start + 1").replace(
            "            end -= 1\n        if end == start:", "            end += 1\n            if end > len(word):\n"
            "                end = start\n                break\n        if end == start:")),
        ("continuations without ##", wordpiece(prefix='""')),
        ("unmatched rest becomes [UNK] instead of the whole word",
         wordpiece(on_fail="pieces.append(unk_token)\n            break")),
        ("a word of exactly the limit is already [UNK]", wordpiece(too_long=">=")),
    ],
    "masking": [
        ("0.1 instead of 0.5 for the random draw", mask(p_random="0.1")),
        ("special tokens can be chosen", mask(specials="pass")),
        ("labels kept everywhere", mask(unlabelled="torch.zeros_like(chosen)")),
        ("90 % [MASK]", mask(p_mask="0.9")),
        ("one uniform draw split 80/10/10 instead of the collator's draws", _MASK_RAND),
    ],
    "pairs": [
        ("truncation one token at a time from the longer", pairs(truncate=_ONE_AT_A_TIME)),
        ("segment 0 for the final [SEP]", pairs(fix_types="types[-1] = 0 if ids_b is not None else types[-1]")),
        ("IsNext and NotNext labels swapped", pairs(is_next="1", not_next="0")),
        ("NotNext may draw the same document", pairs(k_range="len(documents)", other="k")),
    ],
    "embeddings": [
        ("no position embeddings", emb(sum="self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)")),
        ("no LayerNorm", emb(out="x")),
        ("positions counted from 1", emb(positions="torch.arange(1, input_ids.shape[1] + 1)")),
        ("segment embeddings ignored", emb(sum="self.word_embeddings(input_ids) + self.position_embeddings(positions)")),
    ],
    "encoder": [
        ("pre-norm layers", enc(extra=", norm_first=True")),
        ("ReLU instead of GELU", enc(act="relu")),
        ("padding mask inverted", enc(padding="attention_mask == 1")),
        ("padding ignored", enc(padding="None")),
        ("last layer skipped", enc(which="[:-1]")),
    ],
    "pretraining": [
        ("no GELU in the MLM transform", pre(transform="self.mlm_norm(self.mlm_transform(hidden[chosen]))")),
        ("no output bias", pre(decoder="h @ self.bert.embeddings.word_embeddings.weight.T")),
        ("NSP head without the tanh pooler", pre(nsp="self.nsp(self.pooler(hidden[:, 0]))")),
        ("NSP loss left out", pre(loss="F.cross_entropy(mlm_logits, mlm_labels[chosen])")),
        ("MLM loss summed over the chosen positions",
         pre(loss="F.cross_entropy(mlm_logits, mlm_labels[chosen], reduction='sum') + "
                  "F.cross_entropy(nsp_logits, nsp_labels)")),
        ("NSP read from the last token", pre(nsp="self.nsp(torch.tanh(self.pooler(hidden[:, -1])))")),
    ],
}

VISIBLE = {
    "wordpiece": ["continuations without ##", "unmatched rest becomes [UNK] instead of the whole word"],
    "masking": ["0.1 instead of 0.5 for the random draw", "special tokens can be chosen", "labels kept everywhere"],
    "pairs": ["segment 0 for the final [SEP]", "IsNext and NotNext labels swapped"],
    "embeddings": ["no position embeddings", "no LayerNorm", "segment embeddings ignored"],
    "encoder": ["pre-norm layers", "ReLU instead of GELU", "padding ignored"],
    "pretraining": ["no GELU in the MLM transform", "NSP loss left out", "no output bias"],
}
