"""Plausible wrong answers for chapter 05. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Each wrong answer is the model answer with one plausible change
(:func:`_wrong` checks that the change applies). VISIBLE names the wrong answers that the exercise's *visible*
test must catch as well.
"""

_NOISE = r'''
def random_spans_noise_mask(length: int, noise_density: float = 0.15, mean_noise_span_length: float = 3.0,
                            generator: torch.Generator | None = None) -> torch.Tensor:
    """T5's random span noise mask.

    Args:
        length: number of tokens L ≥ 2.
        noise_density: fraction ρ of the tokens to corrupt.
        mean_noise_span_length: mean length μ of a noise span.
        generator: the source of every random number.

    Returns:
        bool (L,), True at the round(L·ρ) noise tokens (clipped to [1, L − 1]), which form
        max(round(n_noise / μ), 1) spans; kept and noise spans alternate, starting with a kept span, and each
        split of the noise and of the kept tokens into spans is uniformly random. (The tests use lengths with at
        least as many kept tokens as spans.)
    """
    num_noise = min(max(round(length * noise_density), 1), length - 1)
    num_spans = max(round(num_noise / mean_noise_span_length), 1)

    def segment_lengths(n_items: int, n_segments: int) -> list[int]:
        """A uniformly random composition of n_items into n_segments positive parts."""
        cuts = (torch.randperm(n_items - 1, generator=generator)[: n_segments - 1] + 1).sort().values.tolist()
        bounds = [0, *cuts, n_items]
        return [b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    noise_lengths = segment_lengths(num_noise, num_spans)
    kept_lengths = segment_lengths(length - num_noise, num_spans)
    mask = torch.zeros(length, dtype=torch.bool)
    position = 0
    for kept, noise in zip(kept_lengths, noise_lengths, strict=True):
        position += kept
        mask[position: position + noise] = True
        position += noise
    return mask
'''

_CORRUPT = r'''
def span_corruption(tokens: torch.Tensor, noise_mask: torch.Tensor, sentinel_ids, eos_id: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """T5's span corruption of one sequence.

    Args:
        tokens: (L,) int64 token ids.
        noise_mask: (L,) bool, True = noise.
        sentinel_ids: a list or 1-D tensor of ids; the k-th run (of noise for the input, of kept tokens for the
            target) becomes sentinel_ids[k]. It holds at least as many ids as there are runs.
        eos_id: appended to both.

    Returns:
        (inputs, targets), two 1-D int64 tensors.
    """
    def replace_runs(hidden: torch.Tensor) -> torch.Tensor:
        out, k, previous = [], 0, False
        for token, is_hidden in zip(tokens.tolist(), hidden.tolist(), strict=True):
            if is_hidden and not previous:  # the first token of a run: one sentinel for the whole run
                out.append(int(sentinel_ids[k]))
                k += 1
            elif not is_hidden:
                out.append(token)
            previous = is_hidden
        return torch.tensor(out + [eos_id], dtype=torch.long)

    return replace_runs(noise_mask), replace_runs(~noise_mask)
'''

_SHIFT = r'''
def shift_right(labels: torch.Tensor, start_id: int = 0, pad_id: int = 0) -> torch.Tensor:
    """The decoder input for teacher forcing.

    Args:
        labels: (..., T) int64 target ids, −100 where a position is not counted.
        start_id: the decoder's start token (T5: <pad> = 0).
        pad_id: what −100 becomes.

    Returns:
        (..., T) int64: start_id, then labels[..., :-1], with every −100 replaced by pad_id.
    """
    shifted = torch.cat([torch.full_like(labels[..., :1], start_id), labels[..., :-1]], dim=-1)
    return shifted.masked_fill(shifted == -100, pad_id)
'''

_BUCKET = r'''
def relative_position_bucket(relative_position: torch.Tensor, bidirectional: bool = True, num_buckets: int = 32,
                             max_distance: int = 128) -> torch.Tensor:
    """T5's bucket of each relative position r = key position − query position.

    Args:
        relative_position: int64 tensor of any shape.
        bidirectional: True for the encoder (both directions), False for causal self-attention.
        num_buckets: the number of buckets (even when bidirectional).
        max_distance: distances from this on share the last bucket (of their direction).

    Returns:
        int64, the shape of ``relative_position``, values in [0, num_buckets).
    """
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    log_ratio = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
'''

_MASKS = r'''
def attention_mask(kind: str, prefix_lengths: torch.Tensor, padding_mask: torch.Tensor) -> torch.Tensor:
    """The attention mask of one stack over packed sequences.

    Args:
        kind: "full", "causal" or "prefix".
        prefix_lengths: (B,) int64, the length of each row's fully visible prefix (used by "prefix").
        padding_mask: (B, L) bool, True at real tokens, False at padding.

    Returns:
        (B, L, L) bool, True where query i may attend key j.
    """
    B, L = padding_mask.shape
    query = torch.arange(L, device=padding_mask.device)[None, :, None]  # (1, L, 1)
    key = torch.arange(L, device=padding_mask.device)[None, None, :]  # (1, 1, L)
    if kind == "full":
        allowed = torch.ones(1, L, L, dtype=torch.bool, device=padding_mask.device)
    elif kind == "causal":
        allowed = key <= query
    elif kind == "prefix":
        allowed = (key <= query) | (key < prefix_lengths.to(padding_mask.device)[:, None, None])
    else:
        raise ValueError(f"unknown kind {kind!r}: use 'full', 'causal' or 'prefix'")
    return allowed & padding_mask.bool()[:, None, :]  # (B, L, L)
'''

_BLOCK = r'''
class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight, over the last dimension; no mean subtracted, no bias."""

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps))


class T5Attention(nn.Module):
    """Multi-head attention without biases and without 1/√d_kv, with an optional relative position bias."""

    def __init__(self, d_model: int, num_heads: int, d_kv: int, has_relative_bias: bool = False,
                 bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128) -> None:
        super().__init__()
        self.num_heads, self.d_kv = num_heads, d_kv
        self.bidirectional, self.num_buckets, self.max_distance = bidirectional, num_buckets, max_distance
        self.q = nn.Linear(d_model, num_heads * d_kv, bias=False)
        self.k = nn.Linear(d_model, num_heads * d_kv, bias=False)
        self.v = nn.Linear(d_model, num_heads * d_kv, bias=False)
        self.o = nn.Linear(num_heads * d_kv, d_model, bias=False)
        if has_relative_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, num_heads)

    def forward(self, x: torch.Tensor, kv: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                position_bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from x (B, Lq, D) over kv (B, Lk, D) — over x itself when kv is None.

        mask: None or bool (B, Lq, Lk), True = may attend. position_bias: None or (1 or B, H, Lq, Lk).
        Returns (output (B, Lq, D), the position bias used (1 or B, H, Lq, Lk)).
        """
        source = x if kv is None else kv
        B, Lq, _ = x.shape
        Lk = source.shape[1]
        H, Dh = self.num_heads, self.d_kv
        q = self.q(x).view(B, Lq, H, Dh).transpose(1, 2)  # (B, H, Lq, Dh)
        k = self.k(source).view(B, Lk, H, Dh).transpose(1, 2)  # (B, H, Lk, Dh)
        v = self.v(source).view(B, Lk, H, Dh).transpose(1, 2)
        if position_bias is None:
            if hasattr(self, "relative_attention_bias"):
                relative = (torch.arange(Lk, device=x.device)[None, :] - torch.arange(Lq, device=x.device)[:, None])
                buckets = relative_position_bucket(relative, self.bidirectional, self.num_buckets, self.max_distance)
                position_bias = self.relative_attention_bias(buckets).permute(2, 0, 1)[None]  # (1, H, Lq, Lk)
            else:
                position_bias = x.new_zeros(1, H, Lq, Lk)
        scores = q @ k.transpose(-2, -1) + position_bias  # no 1/√d_kv
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], torch.finfo(scores.dtype).min)
        heads = scores.softmax(dim=-1) @ v  # (B, H, Lq, Dh)
        return self.o(heads.transpose(1, 2).reshape(B, Lq, H * Dh)), position_bias


class FeedForward(nn.Module):
    """wo(ReLU(wi x)), or with gated=True wo(GELU_tanh(wi_0 x) ⊙ wi_1 x); no biases."""

    def __init__(self, d_model: int, d_ff: int, gated: bool = False) -> None:
        super().__init__()
        self.gated = gated
        if gated:
            self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
            self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        else:
            self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:
            return self.wo(F.gelu(self.wi_0(x), approximate="tanh") * self.wi_1(x))
        return self.wo(F.relu(self.wi(x)))


class T5Block(nn.Module):
    """A pre-norm T5 encoder block (self-attention, feed-forward) or decoder block (with cross-attention)."""

    def __init__(self, d_model: int, num_heads: int, d_kv: int, d_ff: int, is_decoder: bool = False,
                 has_relative_bias: bool = False, gated: bool = False, num_buckets: int = 32,
                 max_distance: int = 128, eps: float = 1e-6) -> None:
        super().__init__()
        self.is_decoder = is_decoder
        self.self_attn_norm = RMSNorm(d_model, eps)
        self.self_attn = T5Attention(d_model, num_heads, d_kv, has_relative_bias, bidirectional=not is_decoder,
                                     num_buckets=num_buckets, max_distance=max_distance)
        if is_decoder:
            self.cross_attn_norm = RMSNorm(d_model, eps)
            self.cross_attn = T5Attention(d_model, num_heads, d_kv)
        self.ff_norm = RMSNorm(d_model, eps)
        self.ff = FeedForward(d_model, d_ff, gated)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, position_bias: torch.Tensor | None = None,
                encoder_states: torch.Tensor | None = None, encoder_mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, L, D); mask bool (B, L, L) for self-attention; encoder_states (B, S, D) and encoder_mask bool
        (B, L, S) for cross-attention (decoder only). Returns (x (B, L, D), the self-attention's position bias)."""
        attended, position_bias = self.self_attn(self.self_attn_norm(x), mask=mask, position_bias=position_bias)
        x = x + attended
        if self.is_decoder and encoder_states is not None:
            x = x + self.cross_attn(self.cross_attn_norm(x), kv=encoder_states, mask=encoder_mask)[0]
        return x + self.ff(self.ff_norm(x)), position_bias
'''

_MODEL = r'''
class TinyT5(nn.Module):
    """An encoder–decoder T5: shared embedding, encoder and decoder stacks, tied and rescaled output layer."""

    def __init__(self, vocab_size: int, d_model: int, num_heads: int, d_kv: int, d_ff: int, num_layers: int,
                 num_decoder_layers: int | None = None, gated: bool = False, num_buckets: int = 32,
                 max_distance: int = 128, eps: float = 1e-6) -> None:
        super().__init__()
        num_decoder_layers = num_layers if num_decoder_layers is None else num_decoder_layers
        self.d_model = d_model
        self.shared = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.shared.weight, std=1.0)  # T5's initialisation: the rescaled output layer expects it

        def block(i: int, is_decoder: bool) -> T5Block:
            return T5Block(d_model, num_heads, d_kv, d_ff, is_decoder, has_relative_bias=i == 0, gated=gated,
                           num_buckets=num_buckets, max_distance=max_distance, eps=eps)

        self.encoder_blocks = nn.ModuleList(block(i, False) for i in range(num_layers))
        self.encoder_norm = RMSNorm(d_model, eps)
        self.decoder_blocks = nn.ModuleList(block(i, True) for i in range(num_decoder_layers))
        self.decoder_norm = RMSNorm(d_model, eps)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids (B, S) int64, attention_mask (B, S) 1/True at real tokens (None: all) → states (B, S, D)."""
        B, S = input_ids.shape
        padding = (torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None
                   else attention_mask.bool())
        mask = attention_mask_fn("full", torch.zeros(B, dtype=torch.long), padding)  # (B, S, S)
        x, bias = self.shared(input_ids), None
        for blk in self.encoder_blocks:
            x, bias = blk(x, mask, bias)
        return self.encoder_norm(x)

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids (B, S), decoder_input_ids (B, T), attention_mask (B, S) or None → logits (B, T, V)."""
        B, S = input_ids.shape
        T = decoder_input_ids.shape[1]
        padding = (torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None
                   else attention_mask.bool())
        states = self.encode(input_ids, attention_mask)
        causal = attention_mask_fn("causal", torch.zeros(B, dtype=torch.long),
                                   torch.ones_like(decoder_input_ids, dtype=torch.bool))  # (B, T, T)
        cross = padding[:, None, :].expand(B, T, S)  # every real input token
        x, bias = self.shared(decoder_input_ids), None
        for blk in self.decoder_blocks:
            x, bias = blk(x, causal, bias, states, cross)
        return (self.decoder_norm(x) * self.d_model**-0.5) @ self.shared.weight.T


def seq2seq_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of logits (B, T, V) against labels (B, T), over the labels that are not −100."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)


attention_mask_fn = attention_mask  # the model calls your Exercise 5 under this name
'''


def _wrong(source: str, *changes: tuple[str, str]) -> str:
    """``source`` with each (old, new) applied; every ``old`` must occur in it exactly once."""
    for old, new in changes:
        if source.count(old) != 1:
            raise ValueError(f"a planted change does not apply once: {old!r}")
        source = source.replace(old, new)
    return source


MUTANTS = {
    "noise": [
        ("noise count rounded down (int instead of round)",
         _wrong(_NOISE, ("num_noise = min(max(round(length * noise_density), 1), length - 1)",
                         "num_noise = min(max(int(length * noise_density), 1), length - 1)"))),
        ("span count rounded down",
         _wrong(_NOISE, ("num_spans = max(round(num_noise / mean_noise_span_length), 1)",
                         "num_spans = max(int(num_noise / mean_noise_span_length), 1)"))),
        ("i.i.d. noise: each token corrupted with probability ρ", _wrong(_NOISE, (
            "    mask = torch.zeros(length, dtype=torch.bool)\n",
            "    return torch.rand(length, generator=generator) < noise_density\n"
            "    mask = torch.zeros(length, dtype=torch.bool)\n"))),
        ("a noise span first instead of a kept span", _wrong(_NOISE, (
            "        position += kept\n        mask[position: position + noise] = True\n        position += noise\n",
            "        mask[position: position + noise] = True\n        position += noise + kept\n"))),
        ("spans of equal length instead of a random split", _wrong(_NOISE, (
            "        cuts = (torch.randperm(n_items - 1, generator=generator)[: n_segments - 1] + 1).sort().values.tolist()",
            "        cuts = [round(i * n_items / n_segments) for i in range(1, n_segments)]"))),
        ("the global random generator instead of the one given", _wrong(_NOISE, (
            "torch.randperm(n_items - 1, generator=generator)", "torch.randperm(n_items - 1)"))),
        ("cut points drawn with replacement (empty spans possible)", _wrong(_NOISE, (
            "        cuts = (torch.randperm(n_items - 1, generator=generator)[: n_segments - 1] + 1).sort().values.tolist()",
            "        cuts = (torch.randint(1, max(n_items, 2), (n_segments - 1,), generator=generator)).sort().values"
            ".tolist()"))),
    ],
    "corrupt": [
        ("one sentinel reused for every span", _wrong(_CORRUPT, ("                k += 1\n", ""))),
        ("every noise token replaced by a sentinel, not every span", _wrong(_CORRUPT, (
            "            if is_hidden and not previous:", "            if is_hidden:"))),
        ("sentinels numbered from 1: the first sentinel skipped", _wrong(_CORRUPT, (
            "        out, k, previous = [], 0, False", "        out, k, previous = [], 1, False"))),
        ("no closing sentinel: a trailing kept span dropped from the target", _wrong(_CORRUPT, (
            "    return replace_runs(noise_mask), replace_runs(~noise_mask)",
            "    targets = replace_runs(~noise_mask)\n"
            "    if not bool(noise_mask[-1]):\n"
            "        targets = torch.cat([targets[:-2], targets[-1:]])\n"
            "    return replace_runs(noise_mask), targets"))),
        ("no </s> at the end", _wrong(_CORRUPT, ("torch.tensor(out + [eos_id], dtype=torch.long)",
                                                 "torch.tensor(out, dtype=torch.long)"))),
        ("targets hold the noise spans without sentinels (drop spans)", _wrong(_CORRUPT, (
            "    return replace_runs(noise_mask), replace_runs(~noise_mask)",
            "    return replace_runs(noise_mask), torch.cat([tokens[noise_mask], torch.tensor([eos_id])])"))),
    ],
    "shift": [
        ("rolled: the last label wraps round to the front instead of the start token", _wrong(_SHIFT, (
            "torch.cat([torch.full_like(labels[..., :1], start_id), labels[..., :-1]], dim=-1)",
            "torch.roll(labels, 1, dims=-1)"))),
        ("−100 left in the decoder input", _wrong(_SHIFT, (
            "    return shifted.masked_fill(shifted == -100, pad_id)", "    return shifted"))),
        ("−100 replaced by the start token instead of pad", _wrong(_SHIFT, (
            "shifted.masked_fill(shifted == -100, pad_id)", "shifted.masked_fill(shifted == -100, start_id)"))),
        ("shifted left instead of right", _wrong(_SHIFT, (
            "torch.cat([torch.full_like(labels[..., :1], start_id), labels[..., :-1]], dim=-1)",
            "torch.cat([labels[..., 1:], torch.full_like(labels[..., :1], start_id)], dim=-1)"))),
    ],
    "bucket": [
        ("off by one: capped at num_buckets instead of num_buckets − 1", _wrong(_BUCKET, (
            ".clamp(max=num_buckets - 1)", ".clamp(max=num_buckets)"))),
        ("direction reversed: keys before the query get the upper half", _wrong(_BUCKET, (
            "(relative_position > 0).long()", "(relative_position < 0).long()"))),
        ("the last bucket not capped", _wrong(_BUCKET, (
            ".clamp(max=num_buckets - 1)", ""))),
        ("causal buckets from |r|: the future folded onto the past", _wrong(_BUCKET, (
            "distance = (-relative_position).clamp(min=0)", "distance = relative_position.abs()"))),
        ("bidirectional without halving the buckets", _wrong(_BUCKET, (
            "        num_buckets //= 2\n        buckets = buckets + (relative_position > 0).long() * num_buckets\n",
            "        buckets = buckets + (relative_position > 0).long() * (num_buckets // 2)\n"))),
        ("logarithmic range spread over all buckets, not those after max_exact", _wrong(_BUCKET, (
            "(log_ratio * (num_buckets - max_exact))", "(log_ratio * num_buckets)"))),
        ("rounded instead of truncated", _wrong(_BUCKET, (
            "(log_ratio * (num_buckets - max_exact)).long()", "(log_ratio * (num_buckets - max_exact)).round().long()"))),
    ],
    "masks": [
        ("prefix LM with the causal mask applied to the prefix", _wrong(_MASKS, (
            "allowed = (key <= query) | (key < prefix_lengths.to(padding_mask.device)[:, None, None])",
            "allowed = (key <= query).expand(B, L, L)"))),
        ("prefix one token too long", _wrong(_MASKS, (
            "(key < prefix_lengths.to(padding_mask.device)[:, None, None])",
            "(key <= prefix_lengths.to(padding_mask.device)[:, None, None])"))),
        ("padding ignored", _wrong(_MASKS, (
            "    return allowed & padding_mask.bool()[:, None, :]  # (B, L, L)",
            "    return allowed.expand(B, L, L)"))),
        ("padding masked on the queries (rows) instead of the keys", _wrong(_MASKS, (
            "padding_mask.bool()[:, None, :]", "padding_mask.bool()[:, :, None]"))),
        ("causal transposed: keys after the query", _wrong(_MASKS, (
            "        allowed = key <= query\n", "        allowed = key >= query\n"))),
        ("an unknown kind treated as full", _wrong(_MASKS, (
            "    if kind == \"full\":", "    if kind not in (\"causal\", \"prefix\"):"))),
    ],
    "block": [
        ("LayerNorm's centring in RMSNorm", _wrong(_BLOCK, (
            "        return self.weight * (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps))",
            "        x = x - x.mean(dim=-1, keepdim=True)\n"
            "        return self.weight * (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps))"))),
        ("ε outside the square root", _wrong(_BLOCK, (
            "torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
            "1 / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps)"))),
        ("the 1/√d scaling left in", _wrong(_BLOCK, (
            "scores = q @ k.transpose(-2, -1) + position_bias", "scores = q @ k.transpose(-2, -1) / Dh**0.5 + position_bias"))),
        ("post-norm instead of pre-norm", _wrong(_BLOCK, (
            "        attended, position_bias = self.self_attn(self.self_attn_norm(x), mask=mask, position_bias=position_bias)\n"
            "        x = x + attended\n",
            "        attended, position_bias = self.self_attn(x, mask=mask, position_bias=position_bias)\n"
            "        x = self.self_attn_norm(x + attended)\n"))),
        ("cross-attention with keys and values from the decoder", _wrong(_BLOCK, (
            "self.cross_attn(self.cross_attn_norm(x), kv=encoder_states, mask=encoder_mask)",
            "self.cross_attn(self.cross_attn_norm(x), kv=self.cross_attn_norm(x), mask=mask)"))),
        ("exact GELU instead of the tanh approximation in the gated feed-forward", _wrong(_BLOCK, (
            'F.gelu(self.wi_0(x), approximate="tanh")', "F.gelu(self.wi_0(x))"))),
        ("bucket direction from the query's point of view (query − key)", _wrong(_BLOCK, (
            "relative = (torch.arange(Lk, device=x.device)[None, :] - torch.arange(Lq, device=x.device)[:, None])",
            "relative = (torch.arange(Lq, device=x.device)[:, None] - torch.arange(Lk, device=x.device)[None, :])"))),
        ("masked logits set to 0 instead of the minimum", _wrong(_BLOCK, (
            "scores.masked_fill(~mask[:, None], torch.finfo(scores.dtype).min)", "scores.masked_fill(~mask[:, None], 0.0)"))),
        ("the decoder's self-attention with bidirectional buckets", _wrong(_BLOCK, (
            "has_relative_bias, bidirectional=not is_decoder,", "has_relative_bias, bidirectional=True,"))),
    ],
    "model": [
        ("the output not rescaled by d^-1/2", _wrong(_MODEL, (
            "(self.decoder_norm(x) * self.d_model**-0.5) @ self.shared.weight.T", "self.decoder_norm(x) @ self.shared.weight.T"))),
        ("the decoder's self-attention not causal", _wrong(_MODEL, (
            'causal = attention_mask_fn("causal",', 'causal = attention_mask_fn("full",'))),
        ("the position bias not passed on: later blocks get none", _wrong(_MODEL, (
            "            x, bias = blk(x, causal, bias, states, cross)", "            x, _ = blk(x, causal, None, states, cross)"))),
        ("the encoder's padding not masked in cross-attention", _wrong(_MODEL, (
            "cross = padding[:, None, :].expand(B, T, S)", "cross = torch.ones(B, T, S, dtype=torch.bool)"))),
        ("no final norm on the encoder", _wrong(_MODEL, (
            "        return self.encoder_norm(x)", "        return x"))),
        ("the loss counts −100 positions as token 0", _wrong(_MODEL, (
            "F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)",
            "F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.clamp(min=0).reshape(-1))"))),
        ("the loss summed over the batch instead of averaged", _wrong(_MODEL, (
            "labels.reshape(-1), ignore_index=-100)", "labels.reshape(-1), ignore_index=-100, reduction='sum')"))),
    ],
}

VISIBLE = {
    "noise": ["noise count rounded down (int instead of round)", "i.i.d. noise: each token corrupted with probability ρ",
              "a noise span first instead of a kept span"],
    "corrupt": ["one sentinel reused for every span", "every noise token replaced by a sentinel, not every span",
                "sentinels numbered from 1: the first sentinel skipped",
                "no closing sentinel: a trailing kept span dropped from the target", "no </s> at the end",
                "targets hold the noise spans without sentinels (drop spans)"],
    "shift": ["rolled: the last label wraps round to the front instead of the start token", "−100 left in the decoder input",
              "−100 replaced by the start token instead of pad", "shifted left instead of right"],
    "bucket": ["off by one: capped at num_buckets instead of num_buckets − 1", "direction reversed: keys before the query get the upper half",
               "the last bucket not capped", "causal buckets from |r|: the future folded onto the past",
               "bidirectional without halving the buckets",
               "logarithmic range spread over all buckets, not those after max_exact"],
    "masks": ["prefix LM with the causal mask applied to the prefix", "prefix one token too long", "padding ignored",
              "padding masked on the queries (rows) instead of the keys", "causal transposed: keys after the query",
              "an unknown kind treated as full"],
    "block": ["LayerNorm's centring in RMSNorm", "the 1/√d scaling left in", "post-norm instead of pre-norm",
              "cross-attention with keys and values from the decoder",
              "bucket direction from the query's point of view (query − key)"],
    "model": ["the output not rescaled by d^-1/2", "the decoder's self-attention not causal",
              "the position bias not passed on: later blocks get none", "no final norm on the encoder",
              "the loss counts −100 positions as token 0", "the loss summed over the batch instead of averaged"],
}
