"""Typical mistakes students make in chapter 05 (T5: span corruption, shift_right, relative buckets, masks, the
T5 block and model): each must fail the exercise's hidden tests, and its visible test unless PASSES_VISIBLE says why
not."""

_SIGNATURE_NOISE = '''
def random_spans_noise_mask(length: int, noise_density: float = 0.15, mean_noise_span_length: float = 3.0,
                            generator: torch.Generator | None = None) -> torch.Tensor:
'''

_NOISE_TAIL = '''
    def segment_lengths(n_items, n_segments):
        cuts = (torch.randperm(n_items - 1, generator=generator)[: n_segments - 1] + 1).sort().values.tolist()
        bounds = [0, *cuts, n_items]
        return [b - a for a, b in zip(bounds[:-1], bounds[1:])]

    noise_lengths = segment_lengths(num_noise, num_spans)
    kept_lengths = segment_lengths(length - num_noise, num_spans)
    mask = torch.zeros(length, dtype=torch.bool)
    position = 0
    for kept, noise in zip(kept_lengths, noise_lengths):
        position += kept
        mask[position: position + noise] = True
        position += noise
    return mask
'''


def _noise(counts: str, tail: str = _NOISE_TAIL) -> str:
    return _SIGNATURE_NOISE + counts + tail


_CORRECT_COUNTS = '''
    num_noise = min(max(round(length * noise_density), 1), length - 1)
    num_spans = max(round(num_noise / mean_noise_span_length), 1)
'''

MISTAKES = {
    "noise": [
        ("no upper clip: at a high density every token is noise", _noise('''
    num_noise = max(round(length * noise_density), 1)
    num_spans = max(round(num_noise / mean_noise_span_length), 1)
''')),
        ("no lower clip: a short sequence gets no noise token", _noise('''
    num_noise = min(round(length * noise_density), length - 1)
    num_spans = max(round(num_noise / mean_noise_span_length), 1)
''')),
        ("noise count rounded half up (floor(x + 0.5)) instead of Python's round", _noise('''
    num_noise = min(max(math.floor(length * noise_density + 0.5), 1), length - 1)
    num_spans = max(round(num_noise / mean_noise_span_length), 1)
''')),
        ("span count from L·ρ/μ instead of from the rounded noise count", _noise('''
    num_noise = min(max(round(length * noise_density), 1), length - 1)
    num_spans = max(round(length * noise_density / mean_noise_span_length), 1)
''')),
        ("cut points not sorted: negative span lengths", _noise(_CORRECT_COUNTS, _NOISE_TAIL.replace(
            "[: n_segments - 1] + 1).sort().values.tolist()", "[: n_segments - 1] + 1).tolist()"))),
        ("a trailing kept span: kept tokens cut into n_spans + 1 spans", _noise(_CORRECT_COUNTS, '''
    def segment_lengths(n_items, n_segments):
        cuts = (torch.randperm(n_items - 1, generator=generator)[: n_segments - 1] + 1).sort().values.tolist()
        bounds = [0, *cuts, n_items]
        return [b - a for a, b in zip(bounds[:-1], bounds[1:])]

    noise_lengths = segment_lengths(num_noise, num_spans) + [0]
    kept_lengths = segment_lengths(length - num_noise, num_spans + 1)
    mask = torch.zeros(length, dtype=torch.bool)
    position = 0
    for kept, noise in zip(kept_lengths, noise_lengths):
        position += kept
        mask[position: position + noise] = True
        position += noise
    return mask
''')),
        ("cut points from randperm(n − 1) without + 1: a cut at 0 empties the first span", _noise(_CORRECT_COUNTS, '''
    def segment_lengths(n_items, n_segments):
        cuts = torch.randperm(n_items - 1, generator=generator)[: n_segments - 1].sort().values.tolist()
        bounds = [0, *cuts, n_items]
        return [b - a for a, b in zip(bounds[:-1], bounds[1:])]

    noise_lengths = segment_lengths(num_noise, num_spans)
    kept_lengths = segment_lengths(length - num_noise, num_spans)
    mask = torch.zeros(length, dtype=torch.bool)
    position = 0
    for kept, noise in zip(kept_lengths, noise_lengths):
        position += kept
        mask[position: position + noise] = True
        position += noise
    return mask
''')),
        ("spans of length μ at random starts (they overlap: wrong counts)", _noise(_CORRECT_COUNTS, '''
    mask = torch.zeros(length, dtype=torch.bool)
    starts = torch.randint(1, length, (num_spans,), generator=generator)
    for start in starts.tolist():
        mask[start: start + round(mean_noise_span_length)] = True
    return mask
''')),
        ("a 0/1 integer mask instead of a bool one", _noise(_CORRECT_COUNTS, _NOISE_TAIL.replace(
            "torch.zeros(length, dtype=torch.bool)", "torch.zeros(length, dtype=torch.long)").replace(
            "] = True", "] = 1"))),
    ],
    "corrupt": [
        ("always a closing sentinel, also when the mask ends with noise", '''
def span_corruption(tokens, noise_mask, sentinel_ids, eos_id):
    inputs, targets, k = [], [], 0
    for i, token in enumerate(tokens.tolist()):
        if noise_mask[i]:
            if i == 0 or not noise_mask[i - 1]:
                inputs.append(int(sentinel_ids[k]))
                targets.append(int(sentinel_ids[k]))
                k += 1
            targets.append(token)
        else:
            inputs.append(token)
    targets.append(int(sentinel_ids[k]))
    return torch.tensor(inputs + [eos_id]), torch.tensor(targets + [eos_id])
'''),
        ("sentinel ids counted down from the first (sentinel_ids[0] − k)", '''
def span_corruption(tokens, noise_mask, sentinel_ids, eos_id):
    def replace_runs(hidden):
        out, k, previous = [], 0, False
        for token, is_hidden in zip(tokens.tolist(), hidden.tolist()):
            if is_hidden and not previous:
                out.append(int(sentinel_ids[0]) - k)
                k += 1
            elif not is_hidden:
                out.append(token)
            previous = is_hidden
        return torch.tensor(out + [eos_id], dtype=torch.long)

    return replace_runs(noise_mask), replace_runs(~noise_mask)
'''),
        ("int32 ids", '''
def span_corruption(tokens, noise_mask, sentinel_ids, eos_id):
    def replace_runs(hidden):
        out, k, previous = [], 0, False
        for token, is_hidden in zip(tokens.tolist(), hidden.tolist()):
            if is_hidden and not previous:
                out.append(int(sentinel_ids[k]))
                k += 1
            elif not is_hidden:
                out.append(token)
            previous = is_hidden
        return torch.tensor(out + [eos_id], dtype=torch.int32)

    return replace_runs(noise_mask), replace_runs(~noise_mask)
'''),
        ("one sentinel counter for both: the target's sentinels continue after the input's", '''
def span_corruption(tokens, noise_mask, sentinel_ids, eos_id):
    k = 0

    def replace_runs(hidden):
        nonlocal k
        out, previous = [], False
        for token, is_hidden in zip(tokens.tolist(), hidden.tolist()):
            if is_hidden and not previous:
                out.append(int(sentinel_ids[k]))
                k += 1
            elif not is_hidden:
                out.append(token)
            previous = is_hidden
        return torch.tensor(out + [eos_id], dtype=torch.long)

    inputs = replace_runs(noise_mask)
    return inputs, replace_runs(~noise_mask)
'''),
        ("the start of a run read from hidden[i − 1], which at i = 0 is the last token", '''
def span_corruption(tokens, noise_mask, sentinel_ids, eos_id):
    def replace_runs(hidden):
        out, k = [], 0
        for i, token in enumerate(tokens.tolist()):
            if not hidden[i]:
                out.append(token)
            elif not hidden[i - 1]:
                out.append(int(sentinel_ids[k]))
                k += 1
        return torch.tensor(out + [eos_id], dtype=torch.long)

    return replace_runs(noise_mask), replace_runs(~noise_mask)
'''),
        ("Python lists instead of tensors", '''
def span_corruption(tokens, noise_mask, sentinel_ids, eos_id):
    def replace_runs(hidden):
        out, k, previous = [], 0, False
        for token, is_hidden in zip(tokens.tolist(), hidden.tolist()):
            if is_hidden and not previous:
                out.append(int(sentinel_ids[k]))
                k += 1
            elif not is_hidden:
                out.append(token)
            previous = is_hidden
        return out + [eos_id]

    return replace_runs(noise_mask), replace_runs(~noise_mask)
'''),
        ("target written as 'sentinel, span' per noise span: wrong when the mask starts with noise", '''
def span_corruption(tokens, noise_mask, sentinel_ids, eos_id):
    inputs, targets, k = [], [], 0
    mask = noise_mask.tolist()
    for i, token in enumerate(tokens.tolist()):
        if mask[i]:
            if i == 0 or not mask[i - 1]:
                inputs.append(int(sentinel_ids[k]))
                targets.append(int(sentinel_ids[k]))
                k += 1
            targets.append(token)
        else:
            inputs.append(token)
    if not mask[-1]:
        targets.append(int(sentinel_ids[k]))
    return torch.tensor(inputs + [eos_id]), torch.tensor(targets + [eos_id])
'''),
        ("writes the sentinels into the caller's tokens", """
def span_corruption(tokens: torch.Tensor, noise_mask: torch.Tensor, sentinel_ids, eos_id: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    \"\"\"T5's span corruption of one sequence.

    Args:
        tokens: (L,) int64 token ids.
        noise_mask: (L,) bool, True = noise.
        sentinel_ids: a list or 1-D tensor of ids; the k-th run (of noise for the input, of kept tokens for the
            target) becomes sentinel_ids[k]. It holds at least as many ids as there are runs.
        eos_id: appended to both.

    Returns:
        (inputs, targets), two 1-D int64 tensors.
    \"\"\"
    sentinels = torch.as_tensor(sentinel_ids, dtype=torch.long)
    noise = noise_mask.bool()
    eos = torch.tensor([eos_id], dtype=torch.long)
    # run starts: a position whose predecessor is of the other kind (the first position always starts a run)
    before = torch.cat([~noise[:1], noise[:-1]])
    noise_starts = noise & ~before
    kept_starts = ~noise & before
    # the target: the original tokens with every kept run replaced by a sentinel
    target_tokens = tokens.clone()
    target_tokens[kept_starts] = sentinels[: int(kept_starts.sum())]
    targets = torch.cat([target_tokens[noise | kept_starts], eos])
    # the input: write a sentinel over the first token of each noise run, drop the rest of the run
    tokens[noise_starts] = sentinels[: int(noise_starts.sum())]
    inputs = torch.cat([tokens[~noise | noise_starts], eos])
    return inputs, targets
"""),
    ],
    "shift": [
        ("−100 replaced in place: the caller's labels change", '''
def shift_right(labels, start_id=0, pad_id=0):
    labels[labels == -100] = pad_id
    return torch.cat([torch.full_like(labels[..., :1], start_id), labels[..., :-1]], dim=-1)
'''),
        ("written for (B, T) only", '''
def shift_right(labels, start_id=0, pad_id=0):
    shifted = torch.cat([torch.full((labels.shape[0], 1), start_id), labels[:, :-1]], dim=1)
    return shifted.masked_fill(shifted == -100, pad_id)
'''),
        ("start_id ignored: the decoder always starts from 0", '''
def shift_right(labels, start_id=0, pad_id=0):
    shifted = torch.cat([torch.zeros_like(labels[..., :1]), labels[..., :-1]], dim=-1)
    return shifted.masked_fill(shifted == -100, pad_id)
'''),
        ("the last label kept: one position too many", '''
def shift_right(labels, start_id=0, pad_id=0):
    shifted = torch.cat([torch.full_like(labels[..., :1], start_id), labels], dim=-1)
    return shifted.masked_fill(shifted == -100, pad_id)
'''),
        ("a float start column makes the result float", '''
def shift_right(labels, start_id=0, pad_id=0):
    start = torch.ones(*labels.shape[:-1], 1) * start_id
    shifted = torch.cat([start, labels[..., :-1]], dim=-1)
    return shifted.masked_fill(shifted == -100, pad_id)
'''),
        ("the −100 positions taken from the labels before the shift", '''
def shift_right(labels, start_id=0, pad_id=0):
    shifted = torch.cat([torch.full_like(labels[..., :1], start_id), labels[..., :-1]], dim=-1)
    return shifted.masked_fill(labels == -100, pad_id)
'''),
        ("shifted across the flattened batch: a row starts with the previous row's last label", '''
def shift_right(labels, start_id=0, pad_id=0):
    flat = labels.reshape(-1)
    shifted = torch.cat([flat.new_tensor([start_id]), flat[:-1]]).reshape(labels.shape)
    return shifted.masked_fill(shifted == -100, pad_id)
'''),
    ],
    "bucket": [
        ("max_exact taken from num_buckets before halving", '''
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    max_exact = num_buckets // 2
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    is_small = distance < max_exact
    log_ratio = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
'''),
        ("logarithm divided by log(max_distance), not log(max_distance / max_exact)", '''
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    log_ratio = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
'''),
        ("max_distance 128 written into the formula", '''
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    log_ratio = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(128 / max_exact)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
'''),
        ("causal distance with the wrong sign: past keys in bucket 0", '''
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = relative_position.clamp(min=0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    log_ratio = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
'''),
        ("the upper half from r ≥ 0: r = 0 gets the offset", '''
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position >= 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    log_ratio = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
'''),
        ("float buckets: torch.floor keeps the large branch a float", '''
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
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
    large = (max_exact + torch.floor(log_ratio * (num_buckets - max_exact))).clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
'''),
        ("buckets halved in the causal case too", '''
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    buckets = torch.zeros_like(relative_position)
    num_buckets //= 2
    if bidirectional:
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    log_ratio = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
'''),
    ],
    "masks": [
        ("one prefix length for the whole batch (the longest)", '''
def attention_mask(kind, prefix_lengths, padding_mask):
    B, L = padding_mask.shape
    query = torch.arange(L)[None, :, None]
    key = torch.arange(L)[None, None, :]
    if kind == "full":
        allowed = torch.ones(1, L, L, dtype=torch.bool)
    elif kind == "causal":
        allowed = key <= query
    elif kind == "prefix":
        allowed = (key <= query) | (key < int(prefix_lengths.max()))
    else:
        raise ValueError(kind)
    return allowed & padding_mask.bool()[:, None, :]
'''),
        ("a float 0/1 mask", '''
def attention_mask(kind, prefix_lengths, padding_mask):
    B, L = padding_mask.shape
    if kind == "full":
        allowed = torch.ones(B, L, L)
    elif kind == "causal":
        allowed = torch.tril(torch.ones(B, L, L))
    elif kind == "prefix":
        allowed = torch.tril(torch.ones(B, L, L))
        for b in range(B):
            allowed[b, :, : int(prefix_lengths[b])] = 1.0
    else:
        raise ValueError(kind)
    return allowed * padding_mask.float()[:, None, :]
'''),
        ("prefix rows see everything instead of every row seeing the prefix", '''
def attention_mask(kind, prefix_lengths, padding_mask):
    B, L = padding_mask.shape
    query = torch.arange(L)[None, :, None]
    key = torch.arange(L)[None, None, :]
    if kind == "full":
        allowed = torch.ones(1, L, L, dtype=torch.bool)
    elif kind == "causal":
        allowed = key <= query
    elif kind == "prefix":
        allowed = (key <= query) | (query < prefix_lengths[:, None, None])
    else:
        raise ValueError(kind)
    return allowed & padding_mask.bool()[:, None, :]
'''),
        ("padding_mask read as True = padding", '''
def attention_mask(kind, prefix_lengths, padding_mask):
    B, L = padding_mask.shape
    query = torch.arange(L)[None, :, None]
    key = torch.arange(L)[None, None, :]
    if kind == "full":
        allowed = torch.ones(1, L, L, dtype=torch.bool)
    elif kind == "causal":
        allowed = key <= query
    elif kind == "prefix":
        allowed = (key <= query) | (key < prefix_lengths[:, None, None])
    else:
        raise ValueError(kind)
    return allowed & ~padding_mask.bool()[:, None, :]
'''),
        ("padding masked on both queries and keys", '''
def attention_mask(kind, prefix_lengths, padding_mask):
    B, L = padding_mask.shape
    query = torch.arange(L)[None, :, None]
    key = torch.arange(L)[None, None, :]
    if kind == "full":
        allowed = torch.ones(1, L, L, dtype=torch.bool)
    elif kind == "causal":
        allowed = key <= query
    elif kind == "prefix":
        allowed = (key <= query) | (key < prefix_lengths[:, None, None])
    else:
        raise ValueError(kind)
    real = padding_mask.bool()
    return allowed & real[:, None, :] & real[:, :, None]
'''),
        ("causal without the diagonal: a token may not see itself", '''
def attention_mask(kind, prefix_lengths, padding_mask):
    B, L = padding_mask.shape
    query = torch.arange(L)[None, :, None]
    key = torch.arange(L)[None, None, :]
    if kind == "full":
        allowed = torch.ones(1, L, L, dtype=torch.bool)
    elif kind == "causal":
        allowed = key < query
    elif kind == "prefix":
        allowed = (key < query) | (key < prefix_lengths[:, None, None])
    else:
        raise ValueError(kind)
    return allowed & padding_mask.bool()[:, None, :]
'''),
        ("kinds looked up in a dict: an unknown kind raises KeyError", '''
def attention_mask(kind, prefix_lengths, padding_mask):
    B, L = padding_mask.shape
    query = torch.arange(L)[None, :, None]
    key = torch.arange(L)[None, None, :]
    allowed = {"full": torch.ones(1, L, L, dtype=torch.bool), "causal": key <= query,
               "prefix": (key <= query) | (key < prefix_lengths[:, None, None])}[kind]
    return allowed & padding_mask.bool()[:, None, :]
'''),
    ],
}


def _changed(source: str, *changes: tuple[str, str]) -> str:
    """``source`` with each (old, new) applied; every ``old`` must occur in it exactly once."""
    for old, new in changes:
        if source.count(old) != 1:
            raise ValueError(f"a change does not apply once: {old!r}")
        source = source.replace(old, new)
    return source


_RMSNORM = '''
class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x):
        return self.weight * x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
'''

_ATTENTION = '''
class T5Attention(nn.Module):
    def __init__(self, d_model, num_heads, d_kv, has_relative_bias=False, bidirectional=True, num_buckets=32,
                 max_distance=128):
        super().__init__()
        self.num_heads, self.d_kv = num_heads, d_kv
        self.bidirectional, self.num_buckets, self.max_distance = bidirectional, num_buckets, max_distance
        self.q = nn.Linear(d_model, num_heads * d_kv, bias=False)
        self.k = nn.Linear(d_model, num_heads * d_kv, bias=False)
        self.v = nn.Linear(d_model, num_heads * d_kv, bias=False)
        self.o = nn.Linear(num_heads * d_kv, d_model, bias=False)
        if has_relative_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, num_heads)

    def forward(self, x, kv=None, mask=None, position_bias=None):
        source = x if kv is None else kv
        B, Lq, _ = x.shape
        Lk = source.shape[1]
        H, Dh = self.num_heads, self.d_kv
        q = self.q(x).view(B, Lq, H, Dh).transpose(1, 2)
        k = self.k(source).view(B, Lk, H, Dh).transpose(1, 2)
        v = self.v(source).view(B, Lk, H, Dh).transpose(1, 2)
        if position_bias is None:
            if hasattr(self, "relative_attention_bias"):
                relative = torch.arange(Lk)[None, :] - torch.arange(Lq)[:, None]
                buckets = relative_position_bucket(relative, self.bidirectional, self.num_buckets, self.max_distance)
                position_bias = self.relative_attention_bias(buckets).permute(2, 0, 1)[None]
            else:
                position_bias = torch.zeros(1, H, Lq, Lk)
        scores = q @ k.transpose(-2, -1) + position_bias
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None], torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, Lq, H * Dh)
        return self.o(out), position_bias
'''

_FEEDFORWARD = '''
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, gated=False):
        super().__init__()
        self.gated = gated
        if gated:
            self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
            self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        else:
            self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        if self.gated:
            return self.wo(F.gelu(self.wi_0(x), approximate="tanh") * self.wi_1(x))
        return self.wo(F.relu(self.wi(x)))
'''

_BLOCK = '''
class T5Block(nn.Module):
    def __init__(self, d_model, num_heads, d_kv, d_ff, is_decoder=False, has_relative_bias=False, gated=False,
                 num_buckets=32, max_distance=128, eps=1e-6):
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

    def forward(self, x, mask=None, position_bias=None, encoder_states=None, encoder_mask=None):
        h, position_bias = self.self_attn(self.self_attn_norm(x), mask=mask, position_bias=position_bias)
        x = x + h
        if self.is_decoder and encoder_states is not None:
            h, _ = self.cross_attn(self.cross_attn_norm(x), kv=encoder_states, mask=encoder_mask)
            x = x + h
        return x + self.ff(self.ff_norm(x)), position_bias
'''

_MODEL = '''
class TinyT5(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, d_kv, d_ff, num_layers, num_decoder_layers=None, gated=False,
                 num_buckets=32, max_distance=128, eps=1e-6):
        super().__init__()
        num_decoder_layers = num_layers if num_decoder_layers is None else num_decoder_layers
        self.d_model = d_model
        self.shared = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.shared.weight, std=1.0)

        def block(i, is_decoder):
            return T5Block(d_model, num_heads, d_kv, d_ff, is_decoder, has_relative_bias=i == 0, gated=gated,
                           num_buckets=num_buckets, max_distance=max_distance, eps=eps)

        self.encoder_blocks = nn.ModuleList(block(i, False) for i in range(num_layers))
        self.encoder_norm = RMSNorm(d_model, eps)
        self.decoder_blocks = nn.ModuleList(block(i, True) for i in range(num_decoder_layers))
        self.decoder_norm = RMSNorm(d_model, eps)

    def encode(self, input_ids, attention_mask=None):
        B, S = input_ids.shape
        real = torch.ones(B, S, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
        mask = attention_mask_fn("full", torch.zeros(B, dtype=torch.long), real)
        x, bias = self.shared(input_ids), None
        for blk in self.encoder_blocks:
            x, bias = blk(x, mask, bias)
        return self.encoder_norm(x)

    def forward(self, input_ids, decoder_input_ids, attention_mask=None):
        B, S = input_ids.shape
        T = decoder_input_ids.shape[1]
        real = torch.ones(B, S, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
        states = self.encode(input_ids, attention_mask)
        causal = attention_mask_fn("causal", torch.zeros(B, dtype=torch.long), torch.ones(B, T, dtype=torch.bool))
        cross = real[:, None, :].expand(B, T, S)
        x, bias = self.shared(decoder_input_ids), None
        for blk in self.decoder_blocks:
            x, bias = blk(x, causal, bias, states, cross)
        return (self.decoder_norm(x) * self.d_model**-0.5) @ self.shared.weight.T
'''

MISTAKES["block"] = [
    ("RMSNorm without ε", _changed(_RMSNORM, (
        "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
        "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True))"))),
    ("RMSNorm's ε fixed at 1e-6 whatever eps is given", _changed(_RMSNORM, (
        "keepdim=True) + self.eps)", "keepdim=True) + 1e-6)"))),
    ("RMSNorm without its weight", _changed(_RMSNORM, (
        "return self.weight * x / torch.sqrt", "return x / torch.sqrt"))),
    ("masked logits set to −inf: a query with no key to attend gets NaN", _changed(_ATTENTION, (
        "torch.finfo(scores.dtype).min", 'float("-inf")'))),
    ("the mask applied to the weights after the softmax", _changed(_ATTENTION, (
        "        if mask is not None:\n"
        "            scores = scores.masked_fill(~mask[:, None], torch.finfo(scores.dtype).min)\n"
        "        weights = torch.softmax(scores, dim=-1)\n",
        "        weights = torch.softmax(scores, dim=-1)\n"
        "        if mask is not None:\n"
        "            weights = weights * mask[:, None]\n"))),
    ("gated feed-forward with GELU on the other branch (wi_1)", _changed(_FEEDFORWARD, (
        'F.gelu(self.wi_0(x), approximate="tanh") * self.wi_1(x)',
        'self.wi_0(x) * F.gelu(self.wi_1(x), approximate="tanh")'))),
    ("cross-attention without the encoder's padding mask", _changed(_BLOCK, (
        "kv=encoder_states, mask=encoder_mask)", "kv=encoder_states)"))),
    ("cross-attention handed the self-attention's position bias", _changed(_BLOCK, (
        "kv=encoder_states, mask=encoder_mask)",
        "kv=encoder_states, mask=encoder_mask, position_bias=position_bias)"))),
]

MISTAKES["model"] = [
    ("the attention_mask ignored: padded inputs attended in the encoder", _changed(_MODEL, (
        "        real = torch.ones(B, S, dtype=torch.bool) if attention_mask is None else attention_mask.bool()\n"
        "        mask = attention_mask_fn(\"full\"",
        "        real = torch.ones(B, S, dtype=torch.bool)\n"
        "        mask = attention_mask_fn(\"full\""))),
    ("a causal encoder", _changed(_MODEL, ('attention_mask_fn("full"', 'attention_mask_fn("causal"'))),
    ("the output multiplied by √d instead of d^-1/2", _changed(_MODEL, (
        "self.d_model**-0.5", "self.d_model**0.5"))),
    ("the 1/0 attention_mask used as a bool mask without .bool()", _changed(_MODEL, (
        "        cross = real[:, None, :].expand(B, T, S)\n",
        "        cross = (real if attention_mask is None else attention_mask)[:, None, :].expand(B, T, S)\n"))),
    ("one position bias for both stacks: the decoder starts from the encoder's", _changed(_MODEL, (
        "        return self.encoder_norm(x)\n", "        self.bias = bias\n        return self.encoder_norm(x)\n"), (
        "        x, bias = self.shared(decoder_input_ids), None\n",
        "        x, bias = self.shared(decoder_input_ids), self.bias\n"))),
    ("loss averaged over every position, −100 ones counted as 0", '''
def seq2seq_loss(logits, labels):
    losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100,
                             reduction="none")
    return losses.mean()
'''),
    ("the labels shifted again in the loss, as for a GPT", '''
def seq2seq_loss(logits, labels):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100)
'''),
]

PASSES_VISIBLE = {}
