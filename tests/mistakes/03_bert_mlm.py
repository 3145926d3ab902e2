"""Typical mistakes students make in chapter 03 (WordPiece, MLM masking, sentence pairs and NSP, BERT's
embeddings, encoder and pre-training heads): each must fail the exercise's hidden tests, and its visible test
unless PASSES_VISIBLE says why not."""

_WORDPIECE = '''
def wordpiece(word, vocab, unk_token="[UNK]", max_input_chars_per_word=100):
    {empty}
    if len(word) > {limit}:
        return {unk}
    pieces, start = [], 0
    while start < len(word):
        end = {first_end}
        while end > start:
            piece = {piece}
            if piece in vocab:
                break
            end -= 1
        if end == start:
            {on_fail}
        pieces.append({append})
        start = end
    return pieces
'''


def wordpiece(empty="", limit="max_input_chars_per_word", unk="[unk_token]", first_end="len(word)",
              piece='word[start:end] if start == 0 else "##" + word[start:end]', on_fail="return [unk_token]",
              append="piece"):
    return _WORDPIECE.format(empty=empty, limit=limit, unk=unk, first_end=first_end, piece=piece,
                             on_fail=on_fail, append=append)


_MASK = '''
def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, seed, mlm_probability=0.15):
    g = torch.Generator().manual_seed(seed)
    labels = input_ids.clone()
    probability = torch.full(input_ids.shape, {rate})
    {specials}
    chosen = torch.bernoulli(probability, generator=g).bool()
    labels[~chosen] = {ignore}
    inputs = {inputs}
    to_mask = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator={g2}).bool() & chosen
    inputs[to_mask] = mask_token_id
    to_random = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator={g3}).bool() & chosen & ~to_mask
    random_ids = torch.randint({high}, input_ids.shape, dtype=torch.long, generator={g4})
    inputs[to_random] = random_ids[to_random]
    return inputs, labels
'''


def mask(rate="mlm_probability", specials="probability.masked_fill_(special_tokens_mask.bool(), 0.0)", ignore="-100",
         inputs="input_ids.clone()", g2="g", g3="g", g4="g", high="vocab_size"):
    return _MASK.format(rate=rate, specials=specials, ignore=ignore, inputs=inputs, g2=g2, g3=g3, g4=g4, high=high)


_RESEED = "torch.Generator().manual_seed(seed)"

_MASK_SWAPPED = '''
def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, seed, mlm_probability=0.15):
    g = torch.Generator().manual_seed(seed)
    special = special_tokens_mask.bool()
    chosen = torch.bernoulli(torch.full(input_ids.shape, mlm_probability).masked_fill(special, 0.0),
                             generator=g).bool()
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    half = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=g).bool()
    most = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=g).bool()
    to_mask = most & chosen
    to_random = half & chosen & ~to_mask
    inputs = input_ids.clone()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = torch.randint(vocab_size, input_ids.shape, generator=g)[to_random]
    return inputs, labels
'''

_MASK_FEW_IDS = '''
def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, seed, mlm_probability=0.15):
    g = torch.Generator().manual_seed(seed)
    p = torch.full(input_ids.shape, mlm_probability)
    p[special_tokens_mask.bool()] = 0.0
    chosen = torch.bernoulli(p, generator=g).bool()
    labels = input_ids.masked_fill(~chosen, -100)
    to_mask = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=g).bool() & chosen
    to_random = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=g).bool() & chosen & ~to_mask
    inputs = input_ids.clone()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = torch.randint(vocab_size, (int(to_random.sum()),), generator=g)
    return inputs, labels
'''

_ENCODE_PAIR = '''
def encode_pair(ids_a, ids_b, cls_id, sep_id, max_length=None):
    a, b = list(ids_a), (list(ids_b) if ids_b is not None else None)
    if max_length is not None:
        if b is None:
            {single}
        else:
            budget = max(max_length - {specials}, 0)
            if len(a) + len(b) > budget:
                short_is_a = len(a) {tie} len(b)
                short, long_ = (len(a), len(b)) if short_is_a else (len(b), len(a))
                if short <= budget - short:
                    keep_short, keep_long = short, budget - short
                else:
                    keep_short, keep_long = {halves}
                keep_a, keep_b = (keep_short, keep_long) if short_is_a else (keep_long, keep_short)
                a, b = {cut}
    ids = [cls_id] + a + [sep_id]
    types = [0] * len(ids)
    if b is not None:
        ids += b + [sep_id]
        types += [{segment}] * (len(b) + 1)
    return ids, types
'''


def encode(single="a = a[: max(max_length - 2, 0)]", specials="3", tie="<=",
           halves="budget // 2, budget - budget // 2", cut="a[:keep_a], b[:keep_b]", segment="1"):
    return _ENCODE_PAIR.format(single=single, specials=specials, tie=tie, halves=halves, cut=cut, segment=segment)


_NSP = '''
def nsp_pairs(documents, seed):
    g = torch.Generator().manual_seed(seed)
    pairs = []
    for d, doc in enumerate(documents):
        for i in range(len(doc) - 1):
            if torch.rand(1, generator=g).item() {is_next}:
                pairs.append((doc[i], doc[i + 1], 0))
            else:
                k = int(torch.randint(len(documents) - 1, (1,), generator=g).item())
                other = documents[{other}]
                j = int(torch.randint(len({sentences}), (1,), generator=g).item())
                pairs.append((doc[i], other[j], 1))
    return pairs
'''


def nsp(is_next="< 0.5", other="k if k < d else k + 1", sentences="other"):
    return _NSP.format(is_next=is_next, other=other, sentences=sentences)


_EMB = '''
class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size, dim, max_positions=512, type_vocab_size=2, eps=1e-12):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_positions, dim)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, dim)
        self.norm = nn.LayerNorm(dim, eps=eps)

    def forward(self, input_ids, token_type_ids=None):
        {segments}
        positions = {positions}
        words = self.word_embeddings(input_ids)
        where = self.position_embeddings(positions)
        segment = self.token_type_embeddings(token_type_ids)
        {body}
'''


def emb(segments="if token_type_ids is None:\n            token_type_ids = torch.zeros_like(input_ids)",
        positions="torch.arange(input_ids.shape[1])", body="return self.norm(words + where + segment)"):
    return _EMB.format(segments=segments, positions=positions, body=body)


_ENC = '''
class BertEncoder(nn.Module):
    def __init__(self, vocab_size, dim, depth, heads, mlp_dim, max_positions=512, type_vocab_size=2, eps=1e-12):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab_size, dim, max_positions, type_vocab_size, eps)
        self.layers = nn.ModuleList(bert_models.EncoderLayer(dim, heads, mlp_dim, activation="gelu",
                                                             layer_norm_eps=eps) for _ in range(depth))

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
{body}
'''


def enc(body):
    return _ENC.format(body=body)


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
        hidden = {encoder}
        chosen = mlm_labels != -100
        states = hidden[chosen]
        h = {transform}
        mlm_logits = h @ self.bert.embeddings.word_embeddings.weight.T + self.mlm_bias
        nsp_logits = {nsp}
        mlm_loss = {mlm_loss}
        nsp_loss = F.cross_entropy(nsp_logits, nsp_labels)
        return {total}, mlm_logits, nsp_logits
'''


def pre(encoder="self.bert(input_ids, token_type_ids, attention_mask)",
        transform="self.mlm_norm(F.gelu(self.mlm_transform(states)))",
        nsp="self.nsp(torch.tanh(self.pooler(hidden[:, 0])))",
        mlm_loss="F.cross_entropy(mlm_logits, mlm_labels[chosen])", total="mlm_loss + nsp_loss"):
    return _PRE.format(encoder=encoder, transform=transform, nsp=nsp, mlm_loss=mlm_loss, total=total)


_PRE_EVERYWHERE = '''
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
        h = self.mlm_norm(F.gelu(self.mlm_transform(hidden)))
        mlm_logits = h @ self.bert.embeddings.word_embeddings.weight.T + self.mlm_bias
        nsp_logits = self.nsp(torch.tanh(self.pooler(hidden[:, 0])))
        vocab = mlm_logits.shape[-1]
        loss = F.cross_entropy(mlm_logits.reshape(-1, vocab), mlm_labels.reshape(-1)) + F.cross_entropy(
            nsp_logits, nsp_labels)
        return loss, mlm_logits, nsp_logits
'''

MISTAKES = {
    "wordpiece": [
        ("## on the first piece too", wordpiece(piece='"##" + word[start:end]')),
        ("the 100-character limit hard-coded", wordpiece(limit="100")),
        ("an unknown word returned as a string, not a list", wordpiece(unk="unk_token", on_fail="return unk_token")),
        ("an unmatched character skipped", wordpiece(on_fail="start += 1\n            continue")),
        ("'[UNK]' written instead of unk_token", wordpiece(unk='["[UNK]"]', on_fail='return ["[UNK]"]')),
        ("the empty word becomes [UNK]", wordpiece(empty="if not word:\n        return [unk_token]")),
        ("ids returned instead of pieces", wordpiece(append="vocab[piece]")),
        ("a first piece accepted when only its ## form is in the vocabulary", wordpiece().replace(
            "            if piece in vocab:\n",
            "            if piece in vocab or (start == 0 and \"##\" + piece in vocab):\n")),
        ("the whole rest of the word never tried", wordpiece(first_end="len(word) - 1")),
        ("a later piece found without its ##", """
def wordpiece(word: str, vocab: dict[str, int], unk_token: str = "[UNK]",
              max_input_chars_per_word: int = 100) -> list[str]:
    \"\"\"Cut one (already lower-cased, pre-tokenised) word into WordPiece pieces, greedy longest-match-first.

    Args:
        word: the word, a ``str`` without spaces (it may be empty).
        vocab: piece → id; continuation pieces carry the prefix ``"##"``.
        unk_token: what a word that cannot be spelled becomes.
        max_input_chars_per_word: a word with more characters than this becomes ``[unk_token]``.

    Returns:
        The pieces, a list of ``str``: the first without ``##``, the rest with it. ``[]`` for an empty word;
        ``[unk_token]`` (one entry, for the whole word) when at some position no piece of the vocabulary
        matches, or the word is too long.
    \"\"\"
    if len(word) > max_input_chars_per_word:
        return [unk_token]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        piece = None
        while start < end:  # longest match first
            candidate = word[start:end]
            if start > 0 and "##" + candidate in vocab:
                candidate = "##" + candidate
            if candidate in vocab:
                piece = candidate
                break
            end -= 1
        if piece is None:
            return [unk_token]
        pieces.append(piece)
        start = end
    return pieces
"""),
    ],
    "masking": [
        ("0 as the ignored label instead of -100", mask(ignore="0")),
        ("input_ids corrupted in place", mask(inputs="input_ids")),
        ("a generator re-seeded for every draw", mask(g2=_RESEED, g3=_RESEED, g4=_RESEED)),
        ("the 0.5 draw made before the 0.8 draw", _MASK_SWAPPED),
        ("random ids drawn only for the replaced positions", _MASK_FEW_IDS),
        ("specials indexed with the 0/1 integer mask", mask(specials="probability[special_tokens_mask] = 0.0")),
        ("the rate hard-coded to 0.15", mask(rate="0.15")),
        ("random ids below vocab_size - 1 only", mask(high="vocab_size - 1")),
        ("labels only where the token was changed, not at every chosen position", """
def mask_tokens(input_ids: torch.Tensor, special_tokens_mask: torch.Tensor, vocab_size: int, mask_token_id: int,
                seed: int, mlm_probability: float = 0.15) -> tuple[torch.Tensor, torch.Tensor]:
    \"\"\"BERT's MLM corruption, with exactly the random draws of ``DataCollatorForLanguageModeling``.

    Args:
        input_ids: (B, T) int64 token ids (not modified).
        special_tokens_mask: (B, T) int or bool, nonzero/True at [CLS], [SEP], [PAD]: never chosen.
        vocab_size: random replacements are drawn from ``0 .. vocab_size - 1`` (any id, specials included).
        mask_token_id: the id of [MASK].
        seed: seeds one ``torch.Generator()``; every draw below uses it, in this order:
            1. ``chosen = torch.bernoulli(P, generator=g).bool()`` with ``P`` a float32 (B, T) tensor full of
               ``mlm_probability``, set to 0.0 at the special tokens;
            2. ``to_mask = torch.bernoulli(full (B, T) of 0.8, generator=g).bool() & chosen``;
            3. ``to_random = torch.bernoulli(full (B, T) of 0.5, generator=g).bool() & chosen & ~to_mask``;
            4. ``random_ids = torch.randint(vocab_size, (B, T), generator=g)`` (int64).
        mlm_probability: the share of (non-special) tokens chosen.

    Returns:
        ``(inputs, labels)``, both (B, T) int64: ``inputs`` is ``input_ids`` with [MASK] at ``to_mask`` and
        ``random_ids`` at ``to_random``; ``labels`` is ``input_ids`` at the chosen positions and -100 elsewhere.
    \"\"\"
    g = torch.Generator().manual_seed(seed)
    B, T = input_ids.shape
    probability = torch.full((B, T), mlm_probability, dtype=torch.float32)
    probability = probability.masked_fill(special_tokens_mask.bool(), 0.0)
    chosen = torch.bernoulli(probability, generator=g).bool()
    to_mask = torch.bernoulli(torch.full((B, T), 0.8), generator=g).bool() & chosen

    to_random = torch.bernoulli(torch.full((B, T), 0.5), generator=g).bool() & chosen & ~to_mask
    random_ids = torch.randint(vocab_size, (B, T), generator=g)

    inputs = input_ids.clone()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = random_ids[to_random]
    labels = input_ids.masked_fill(~(to_mask | to_random), -100)
    return inputs, labels
"""),
    ],
    "pairs": [
        ("a single sentence never truncated", encode(single="pass")),
        ("two places kept for the specials of a pair", encode(specials="2")),
        ("a tie makes the second text the shorter", encode(tie="<")),
        ("the shorter text keeps the larger half", encode(halves="budget - budget // 2, budget // 2")),
        ("tokens cut from the front", encode(cut="a[len(a) - keep_a:], b[len(b) - keep_b:]")),
        ("segment 0 for the whole pair", encode(segment="0")),
        ("IsNext when the draw is 0.5 or more", nsp(is_next=">= 0.5")),
        ("the other document counted on from this one", nsp(other="(d + 1 + k) % len(documents)")),
        ("the NotNext sentence drawn with this document's length", nsp(sentences="doc")),
    ],
    "embeddings": [
        ("positions counted along the batch", emb(positions="torch.arange(input_ids.shape[0])")),
        ("missing segment ids read as segment 1",
         emb(segments="if token_type_ids is None:\n            token_type_ids = torch.ones_like(input_ids)")),
        ("the given segment ids replaced by zeros", emb(segments="token_type_ids = torch.zeros_like(input_ids)")),
        ("each embedding normalised on its own",
         emb(body="return self.norm(words) + self.norm(where) + self.norm(segment)")),
        ("LayerNorm before the segment embedding is added", emb(body="return self.norm(words + where) + segment")),
        ("positions looked up by token id", emb(positions="input_ids")),
        ("LayerNorm without its learned scale and shift",
         emb(body="x = words + where + segment\n        return F.layer_norm(x, (x.shape[-1],), eps=1e-12)")),
        ("LayerNorm with PyTorch's default eps, not the module's", """
class BertEmbeddings(nn.Module):
    \"\"\"word + learned position + segment embeddings, then LayerNorm (as Hugging Face's ``BertEmbeddings``).\"\"\"

    def __init__(self, vocab_size: int, dim: int, max_positions: int = 512, type_vocab_size: int = 2,
                 eps: float = 1e-12) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, dim, padding_idx=0)  # [PAD] = 0 gets no gradient
        self.position_embeddings = nn.Embedding(max_positions, dim)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, dim)
        self.norm = nn.LayerNorm(dim, eps=eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        \"\"\"input_ids (B, T) int64, token_type_ids (B, T) int64 or None (= all segment 0) → (B, T, dim).

        Position t (0-based) uses row t of ``position_embeddings``.
        \"\"\"
        B, T = input_ids.shape
        positions = torch.arange(T, device=input_ids.device)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        e = (self.word_embeddings(input_ids) + self.position_embeddings(positions)[None]
             + self.token_type_embeddings(token_type_ids))
        return F.layer_norm(e, (e.shape[-1],), self.norm.weight, self.norm.bias)
"""),
        ("positions counted over the real tokens only", """
class BertEmbeddings(nn.Module):
    \"\"\"word + learned position + segment embeddings, then LayerNorm (as Hugging Face's ``BertEmbeddings``).\"\"\"

    def __init__(self, vocab_size: int, dim: int, max_positions: int = 512, type_vocab_size: int = 2,
                 eps: float = 1e-12) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, dim, padding_idx=0)  # [PAD] = 0 gets no gradient
        self.position_embeddings = nn.Embedding(max_positions, dim)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, dim)
        self.norm = nn.LayerNorm(dim, eps=eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        \"\"\"input_ids (B, T) int64, token_type_ids (B, T) int64 or None (= all segment 0) → (B, T, dim).

        Position t (0-based) uses row t of ``position_embeddings``.
        \"\"\"
        B, T = input_ids.shape
        positions = ((input_ids != 0).long().cumsum(dim=1) - 1).clamp(min=0)  # (B, T), padding not counted
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        e = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_type_ids))
        return self.norm(e)
"""),
    ],
    "encoder": [
        ("attention_mask passed on as the padding mask", enc('''
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=attention_mask)
        return x''')),
        ("segment ids not passed to the embeddings", enc('''
        padding = None if attention_mask is None else attention_mask == 0
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding)
        return x''')),
        ("every layer reads the embeddings", enc('''
        padding = None if attention_mask is None else attention_mask == 0
        x = self.embeddings(input_ids, token_type_ids)
        out = x
        for layer in self.layers:
            out = layer(x, src_key_padding_mask=padding)
        return out''')),
        ("padded positions zeroed instead of masked in attention", enc('''
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x)
        if attention_mask is not None:
            x = x * attention_mask.unsqueeze(-1)
        return x''')),
        ("padding masked in the first layer only", enc('''
        padding = None if attention_mask is None else attention_mask == 0
        x = self.embeddings(input_ids, token_type_ids)
        for i, layer in enumerate(self.layers):
            x = layer(x, src_key_padding_mask=padding if i == 0 else None)
        return x''')),
        ("a final LayerNorm added", enc('''
        padding = None if attention_mask is None else attention_mask == 0
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding)
        return F.layer_norm(x, (x.shape[-1],), eps=1e-12)''')),
        ("layers run from the top down", enc('''
        padding = None if attention_mask is None else attention_mask == 0
        x = self.embeddings(input_ids, token_type_ids)
        for layer in reversed(self.layers):
            x = layer(x, src_key_padding_mask=padding)
        return x''')),
    ],
    "pretraining": [
        ("MLM logits at every position", _PRE_EVERYWHERE),
        ("LayerNorm before GELU in the MLM transform",
         pre(transform="F.gelu(self.mlm_norm(self.mlm_transform(states)))")),
        ("NSP from the mean of the hidden states", pre(nsp="self.nsp(torch.tanh(self.pooler(hidden.mean(dim=1))))")),
        ("the pooler's dense layer skipped", pre(nsp="self.nsp(torch.tanh(hidden[:, 0]))")),
        ("the two losses averaged", pre(total="(mlm_loss + nsp_loss) / 2")),
        ("MLM targets read from input_ids", pre(mlm_loss="F.cross_entropy(mlm_logits, input_ids[chosen])")),
        ("softmax before the cross-entropy",
         pre(mlm_loss="F.cross_entropy(F.softmax(mlm_logits, dim=-1), mlm_labels[chosen])")),
        ("attention mask not passed to the encoder", pre(encoder="self.bert(input_ids, token_type_ids)")),
        ("the tied decoder weight detached: no MLM gradient for the embeddings", """
class BertPretraining(nn.Module):
    \"\"\"BERT with the MLM and NSP heads (Hugging Face's ``BertForPreTraining``); the MLM decoder is tied.\"\"\"

    def __init__(self, vocab_size: int, dim: int, depth: int, heads: int, mlp_dim: int, max_positions: int = 512,
                 type_vocab_size: int = 2, eps: float = 1e-12) -> None:
        super().__init__()
        self.bert = BertEncoder(vocab_size, dim, depth, heads, mlp_dim, max_positions, type_vocab_size, eps)
        self.mlm_transform = nn.Linear(dim, dim)  # dense → GELU → LayerNorm, then the tied decoder
        self.mlm_norm = nn.LayerNorm(dim, eps=eps)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab_size))
        self.pooler = nn.Linear(dim, dim)  # tanh(W h_CLS + b)
        self.nsp = nn.Linear(dim, 2)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor,
                mlm_labels: torch.Tensor, nsp_labels: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        \"\"\"Inputs (B, T) int64 as for ``BertEncoder``; ``mlm_labels`` (B, T) int64, -100 where no loss is taken;
        ``nsp_labels`` (B,) int64, 0 = IsNext, 1 = NotNext.

        Returns ``(loss, mlm_logits, nsp_logits)``: ``loss`` = mean cross-entropy over the chosen positions +
        mean NSP cross-entropy (a scalar); ``mlm_logits`` (N, vocab_size) at the N positions whose label is not
        -100, in row-major order, computed there only; ``nsp_logits`` (B, 2). The decoder's weight is
        ``self.bert.embeddings.word_embeddings.weight``.
        \"\"\"
        h = self.bert(input_ids, token_type_ids, attention_mask)  # (B, T, dim)
        chosen = mlm_labels != -100
        hidden = h[chosen]  # (N, dim), row-major
        t = self.mlm_norm(F.gelu(self.mlm_transform(hidden)))
        mlm_logits = t @ self.bert.embeddings.word_embeddings.weight.detach().T + self.mlm_bias  # (N, V)
        pooled = torch.tanh(self.pooler(h[:, 0]))  # [CLS]
        nsp_logits = self.nsp(pooled)
        mlm_loss = F.cross_entropy(mlm_logits, mlm_labels[chosen])
        nsp_loss = F.cross_entropy(nsp_logits, nsp_labels)
        return mlm_loss + nsp_loss, mlm_logits, nsp_logits
"""),
    ],
}

PASSES_VISIBLE = {}
