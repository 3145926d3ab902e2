"""Typical mistakes students make in chapter 02 (scaled dot-product attention, masks, multi-head attention,
positional encoding, LayerNorm, feed-forward network, encoder and decoder layers): each must fail the
exercise's hidden tests, and its visible test unless PASSES_VISIBLE says why not.

MISTAKES maps an exercise (answer cell ``<exercise>_answer``) to (the mistake, the answer cell as the student
wrote it). They differ from the planted wrong answers of tests/mutants/02_transformer_blocks.py. Class
exercises redefine the whole class, its given ``__init__`` unchanged unless the mistake is there.
"""

_SDPA_HEAD = '''
def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False):
    L, S = q.shape[-2], k.shape[-2]
'''

_SDPA_TAIL = '''
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(blocked, 0.0), dim=-1).masked_fill(blocked, 0.0)
    return weights @ v, weights
'''


def _sdpa(body: str, tail: str = _SDPA_TAIL) -> str:
    return _SDPA_HEAD + body.strip("\n") + "\n" + tail.strip("\n") + "\n"


_SCORES = '''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
'''
_MASKS = '''
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
'''
_CAUSAL = '''
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(diagonal=1), float("-inf"))
'''

_MASKS_PAD = '''

def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    return torch.arange(T)[None, :] >= lengths[:, None]
'''
_MASKS_CAUSAL = '''
def causal_mask(n, device=None):
    return torch.full((n, n), float("-inf"), device=device).triu(diagonal=1)

'''

_MHA_INIT = '''
class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim)) if bias else None
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None, need_weights=True,
                average_attn_weights=True):
        B, L, E = query.shape
        S = key.shape[1]
        H, Dh = self.num_heads, self.head_dim
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q, b_k, b_v = self.in_proj_bias.chunk(3) if self.in_proj_bias is not None else (None, None, None)
'''


def _mha(split: str = "F.linear(x, w, b).view(B, n, H, Dh).transpose(1, 2)", qkv: str =
         "split(query, w_q, b_q, L), split(key, w_k, b_k, S), split(value, w_v, b_v, S)",
         attn: str = ('bias.masked_fill(attn_mask, float("-inf")) if attn_mask.dtype == torch.bool '
                      'else bias + attn_mask'),
         padding: str = "key_padding_mask[:, None, None, :]", merge: str = "heads.transpose(1, 2).reshape(B, L, E)",
         ret: str = "if not need_weights:\n            return out, None\n        ") -> str:
    return _MHA_INIT + f'''
        def split(x, w, b, n):
            return {split}

        q, k, v = {qkv}
        bias = q.new_zeros(B, 1, L, S)
        if attn_mask is not None:
            bias = {attn}
        if key_padding_mask is not None:
            bias = bias.masked_fill({padding}, float("-inf"))
        heads, weights = scaled_dot_product_attention(q, k, v, attn_mask=bias)
        out = self.out_proj({merge})
        {ret}return out, (weights.mean(dim=1) if average_attn_weights else weights)
'''


_PE = '''
def sinusoidal_positional_encoding(max_len, d_model):
{check}    positions = torch.arange(max_len, dtype={dtype})[:, None]
    i = torch.arange({i_range}, dtype={dtype})
    angles = positions {op} 10000.0 ** ({exponent})
    pe = torch.zeros(max_len, d_model, dtype={dtype})
    pe[:, 0::2], pe[:, 1::2] = angles.sin(), angles.cos()
    return pe
'''
_PE_CHECK = '    if d_model % 2:\n        raise ValueError(f"d_model must be even, got {d_model}")\n'


def _pe(check: str = _PE_CHECK, dtype: str = "torch.float32", i_range: str = "d_model // 2", op: str = "/",
        exponent: str = "2 * i / d_model") -> str:
    return _PE.format(check=check, dtype=dtype, i_range=i_range, op=op, exponent=exponent)


_LN = '''
class LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
{init}

    def forward(self, x):
{body}
'''
_LN_INIT = '''        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))'''


def _ln(body: str, init: str = _LN_INIT) -> str:
    return _LN.format(init=init, body=body.strip("\n"))


_FF = '''
class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, dim_feedforward, activation="relu", dropout=0.0):
        super().__init__()
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
{body}
'''


def _ff(body: str) -> str:
    return _FF.replace("{body}", body.strip("\n"))


_ENC = '''
class EncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.0, activation="relu", layer_norm_eps=1e-5,
                 norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead)
        self.ff = PositionwiseFeedForward(d_model, dim_feedforward, activation, dropout)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        def attend(x):
            out, _ = self.self_attn(x, x, x, key_padding_mask=src_key_padding_mask, attn_mask=src_mask,
                                    need_weights=False)
            return self.dropout1(out)

        x = src
        if {cond}:
{pre}
        else:
{post}
        return x
'''
_ENC_PRE = '''
            x = x + attend(self.norm1(x))
            x = x + self.dropout2(self.ff(self.norm2(x)))
'''
_ENC_POST = '''
            x = self.norm1(x + attend(x))
            x = self.norm2(x + self.dropout2(self.ff(x)))
'''


def _enc(pre: str = _ENC_PRE, post: str = _ENC_POST, cond: str = "self.norm_first") -> str:
    return _ENC.format(cond=cond, pre=pre.strip("\n"), post=post.strip("\n"))


_DEC = '''
class DecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.0, activation="relu", layer_norm_eps=1e-5,
                 norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead)
        self.multihead_attn = MultiHeadAttention(d_model, nhead)
        self.ff = PositionwiseFeedForward(d_model, dim_feedforward, activation, dropout)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1, self.dropout2, self.dropout3 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        def self_block(x):
            out, _ = self.{self_module}(x, x, x, key_padding_mask={tgt_kpm}, attn_mask=tgt_mask,
                                    need_weights=False)
            return self.dropout1(out)

        def cross_block(x):
            out, _ = self.{cross_module}({cross_args}, key_padding_mask=memory_key_padding_mask,
                                         attn_mask=memory_mask, need_weights=False)
            return self.dropout2(out)

        x = tgt
        if self.norm_first:
{pre}
        else:
{post}
        return x
'''
_DEC_PRE = '''
            x = x + self_block(self.norm1(x))
            x = x + cross_block(self.norm2(x))
            x = x + self.dropout3(self.ff(self.norm3(x)))
'''
_DEC_POST = '''
            x = self.norm1(x + self_block(x))
            x = self.norm2(x + cross_block(x))
            x = self.norm3(x + self.dropout3(self.ff(x)))
'''


def _dec(pre: str = _DEC_PRE, post: str = _DEC_POST, self_module: str = "self_attn",
         cross_module: str = "multihead_attn", cross_args: str = "x, memory, memory",
         tgt_kpm: str = "tgt_key_padding_mask") -> str:
    return _DEC.format(pre=pre.strip("\n"), post=post.strip("\n"), self_module=self_module,
                       cross_module=cross_module, cross_args=cross_args, tgt_kpm=tgt_kpm)


MISTAKES = {
    "sdpa": [
        ("causal mask aligned at the bottom-right corner when L != S", _sdpa(_SCORES + _MASKS + '''
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(diagonal=S - L + 1), float("-inf"))
''')),
        ("causal mask blocks the past keys instead of the future ones", _sdpa(_SCORES + _MASKS + '''
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).tril(diagonal=-1), float("-inf"))
''')),
        ("float masks ignored: only a bool mask is applied", _sdpa(_SCORES + '''
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attn_mask, float("-inf"))
''' + _CAUSAL)),
        ("float mask added before dividing by sqrt(d)", _sdpa('''
    scores = q @ k.transpose(-2, -1)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    scores = scores / math.sqrt(q.shape[-1])
''' + _CAUSAL)),
        ("is_causal ignored when a mask is given too", _sdpa(_SCORES + '''
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    elif is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(diagonal=1), float("-inf"))
''')),
        ("plain softmax: a fully blocked row gives NaN", _sdpa(_SCORES + _MASKS + _CAUSAL, '''
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
''')),
        ("blocks with -1e9 instead of -inf, so a fully blocked row is uniform", _sdpa(_SCORES + '''
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, -1e9)
        else:
            scores = scores + attn_mask.clamp(min=-1e9)
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(diagonal=1), -1e9)
''', '''
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
''')),
        ("zeroes the blocked weights after the softmax, without renormalising", _sdpa(_SCORES, '''
    weights = torch.softmax(scores, dim=-1)
    if attn_mask is not None:
        weights = weights * attn_mask if attn_mask.dtype == torch.bool else weights * attn_mask.exp()
    if is_causal:
        weights = weights.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(diagonal=1), 0.0)
    return weights @ v, weights
''')),
    ],
    "masks": [
        ("causal mask as a bool tensor (True above the diagonal)", '''
def causal_mask(n, device=None):
    return torch.ones(n, n, dtype=torch.bool, device=device).triu(diagonal=1)
''' + _MASKS_PAD),
        ("causal mask of ones above the diagonal instead of -inf", '''
def causal_mask(n, device=None):
    return torch.ones(n, n, device=device).triu(diagonal=1)
''' + _MASKS_PAD),
        ("multiplies a 0/1 mask by -inf, so 0 * -inf = NaN below the diagonal", '''
def causal_mask(n, device=None):
    return torch.ones(n, n, device=device).triu(diagonal=1) * float("-inf")
''' + _MASKS_PAD),
        ("causal mask with -1e9 instead of -inf", '''
def causal_mask(n, device=None):
    return torch.full((n, n), -1e9, device=device).triu(diagonal=1)
''' + _MASKS_PAD),
        ("causal mask ignores device", '''
def causal_mask(n, device=None):
    return torch.full((n, n), float("-inf")).triu(diagonal=1)
''' + _MASKS_PAD),
        ("padding mask as 0/1 integers instead of bool", _MASKS_CAUSAL + '''
def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(T)[None, :] >= lengths[:, None]).long()
'''),
        ("padding mask assumes the first sequence is the longest", _MASKS_CAUSAL + '''
def padding_mask(lengths, max_len=None):
    T = int(lengths[0]) if max_len is None else max_len
    return torch.arange(T)[None, :] >= lengths[:, None]
'''),
        ("padding mask transposed: (max_len, B)", _MASKS_CAUSAL + '''
def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    return torch.arange(T)[:, None] >= lengths[None, :]
'''),
    ],
    "mha": [
        ("divides q by sqrt(head_dim) although the attention scales already", _mha(
            qkv="split(query, w_q, b_q, L) / math.sqrt(Dh), split(key, w_k, b_k, S), split(value, w_v, b_v, S)")),
        ("splits the keys and values with the query's length", _mha(
            qkv="split(query, w_q, b_q, L), split(key, w_k, b_k, L), split(value, w_v, b_v, L)")),
        ("projects with x @ W instead of x @ W^T", _mha(
            split="(x @ w + (0 if b is None else b)).view(B, n, H, Dh).transpose(1, 2)")),
        ("ignores attn_mask", _mha(attn="bias")),
        ("the input projections' bias left out", _mha(split="F.linear(x, w).view(B, n, H, Dh).transpose(1, 2)")),
        ("projects the values from the key input", _mha(
            qkv="split(query, w_q, b_q, L), split(key, w_k, b_k, S), split(key, w_v, b_v, S)")),
        ("reads every attn_mask as bool, so a float bias blocks", _mha(
            attn='bias.masked_fill(attn_mask.bool(), float("-inf"))')),
        ("padding mask applied to the queries instead of the keys", _mha(padding="key_padding_mask[:, None, :, None]")),
        ("merges the heads with view after the transpose", _mha(merge="heads.transpose(1, 2).view(B, L, E)")),
        ("always returns the weights, whatever need_weights says", _mha(ret="")),
    ],
    "pe": [
        ("doubles the even index: exponent 2·(2i)/d", _pe(i_range="0, d_model, 2")),
        ("multiplies by 10000^(2i/d) instead of dividing", _pe(op="*")),
        ("integer division in the exponent, so every frequency is 1", _pe(dtype="torch.long",
                                                                           exponent="2 * i // d_model")
         .replace("pe = torch.zeros(max_len, d_model, dtype=torch.long)", "pe = torch.zeros(max_len, d_model)")
         .replace("angles = positions", "angles = positions.float()")),
        ("computes in float64 and returns float64", _pe(dtype="torch.float64")),
        ("no ValueError for an odd d_model", _pe(check="", i_range="(d_model + 1) // 2")),
        ("missing parentheses around the exponent: p / 10000 ** 2 * i / d", _pe(exponent="2) * i / (d_model")),
        ("counts the frequency index i from 1", _pe(i_range="1, d_model // 2 + 1")),
    ],
    "ln": [
        ("normalises over the first dimension (the batch)", _ln('''
        mean = x.mean(dim=0, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=0, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias
''')),
        ("no epsilon at all", _ln('''
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var) * self.weight + self.bias
''')),
        ("hard-codes eps = 1e-5, ignoring the argument", _ln('''
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * self.weight + self.bias
''')),
        ("divides by the variance, not the standard deviation", _ln('''
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / (var + self.eps) * self.weight + self.bias
''')),
        ("adds beta before scaling by gamma", _ln('''
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return ((x - mean) / torch.sqrt(var + self.eps) + self.bias) * self.weight
''')),
        ("gamma and beta as plain tensors, not parameters", _ln('''
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias
''', init='''        self.eps = eps
        self.weight = torch.ones(d)
        self.bias = torch.zeros(d)''')),
        ("variance of x, not of x - mean", _ln('''
        mean = x.mean(dim=-1, keepdim=True)
        var = (x ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias
''')),
        ("mean and variance without keepdim (right for one row only)", _ln('''
        mean = x.mean(dim=-1)
        var = ((x - mean) ** 2).mean(dim=-1)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias
''')),
        ("the variance as E[x²] − μ², lost to float32 far from zero", """
class LayerNorm(nn.Module):
    \"\"\"Layer normalisation over the last dimension, like ``nn.LayerNorm(d)``.\"\"\"

    def __init__(self, d: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))  # gamma
        self.bias = nn.Parameter(torch.zeros(d))  # beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        \"\"\"x: (..., d) -> (..., d), each position standardised, then scaled by gamma and shifted by beta.

        Do not call ``F.layer_norm``, ``nn.LayerNorm`` or another normalisation built-in (RMS, group, batch,
        instance norm).
        \"\"\"
        mu = x.mean(dim=-1, keepdim=True)
        var = (x * x).mean(dim=-1, keepdim=True) - mu * mu
        return self.weight * (x - mu) / torch.sqrt(var + self.eps) + self.bias
"""),
    ],
    "ffn": [
        ("dropout on the output, after linear2", _ff('''
        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        return self.dropout(self.linear2(h))
''')),
        ("dropout on the input, before linear1", _ff('''
        h = self.linear1(self.dropout(x))
        h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        return self.linear2(h)
''')),
        ("drops units by hand without rescaling by 1 / (1 - p)", _ff('''
        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        if self.training:
            h = h * (torch.rand_like(h) >= self.dropout.p)
        return self.linear2(h)
''')),
        ("sigmoid approximation of GELU, x·σ(1.702x)", _ff('''
        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else h * torch.sigmoid(1.702 * h)
        return self.linear2(self.dropout(h))
''')),
        ("SiLU (swish) taken for GELU", _ff('''
        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else F.silu(h)
        return self.linear2(self.dropout(h))
''')),
        ("tests the activation string's truthiness: always GELU", _ff('''
        h = self.linear1(x)
        h = F.gelu(h) if self.activation else F.relu(h)
        return self.linear2(self.dropout(h))
''')),
        ("adds a residual connection inside the feed-forward network", _ff('''
        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        return x + self.linear2(self.dropout(h))
''')),
        ("dropout before the activation (the same as after it for ReLU, not for GELU)", """
class PositionwiseFeedForward(nn.Module):
    \"\"\"linear1 -> activation -> dropout -> linear2, applied to every position independently.\"\"\"

    def __init__(self, d_model: int, dim_feedforward: int, activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        \"\"\"x: (..., d_model) -> (..., d_model).\"\"\"
        h = self.dropout(self.linear1(x))
        h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        return self.linear2(h)
"""),
    ],
    "enc": [
        ("post-norm that normalises the branch, not the sum", _enc(post='''
            x = x + self.norm1(attend(x))
            x = x + self.norm2(self.dropout2(self.ff(x)))
''')),
        ("post-norm without the residual around attention", _enc(post='''
            x = self.norm1(attend(x))
            x = self.norm2(x + self.dropout2(self.ff(x)))
''')),
        ("post-norm reuses norm1 after the feed-forward", _enc(post='''
            x = self.norm1(x + attend(x))
            x = self.norm1(x + self.dropout2(self.ff(x)))
''')),
        ("norm1 and norm2 swapped", _enc(pre='''
            x = x + attend(self.norm2(x))
            x = x + self.dropout2(self.ff(self.norm1(x)))
''', post='''
            x = self.norm2(x + attend(x))
            x = self.norm1(x + self.dropout2(self.ff(x)))
''')),
        ("pre-norm feed-forward reads the layer's input, not the updated stream", _enc(pre='''
            h = x + attend(self.norm1(x))
            x = h + self.dropout2(self.ff(self.norm2(x)))
''')),
        ("pre-norm ends with a LayerNorm of its own", _enc(pre='''
            x = x + attend(self.norm1(x))
            x = self.norm2(x + self.dropout2(self.ff(self.norm2(x))))
''')),
        ("reads norm_first backwards", _enc(cond="not self.norm_first")),
    ],
    "dec": [
        ("a causal mask of its own when none is given", _dec().replace(
            "memory_key_padding_mask=None):\n",
            "memory_key_padding_mask=None):\n        if tgt_mask is None:  # a decoder is always causal, surely\n"
            "            tgt_mask = torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool).triu(1)\n")),
        ("cross-attention with queries from the memory", _dec(cross_args="memory, x, x")),
        ("cross-attention takes its values from the target", _dec(cross_args="x, memory, x")),
        ("self- and cross-attention modules swapped", _dec(self_module="multihead_attn", cross_module="self_attn")),
        ("drops the target padding mask", _dec(tgt_kpm="None")),
        ("post-norm with norm2 and norm3 swapped", _dec(post='''
            x = self.norm1(x + self_block(x))
            x = self.norm3(x + cross_block(x))
            x = self.norm2(x + self.dropout3(self.ff(x)))
''')),
        ("feed-forward before cross-attention", _dec(pre='''
            x = x + self_block(self.norm1(x))
            x = x + self.dropout3(self.ff(self.norm3(x)))
            x = x + cross_block(self.norm2(x))
''', post='''
            x = self.norm1(x + self_block(x))
            x = self.norm3(x + self.dropout3(self.ff(x)))
            x = self.norm2(x + cross_block(x))
''')),
        ("normalises the memory with norm2 as well as the target",
         _dec(cross_args="x, self.norm2(memory), self.norm2(memory)")),
        ("pre-norm feed-forward without norm3", _dec(pre='''
            x = x + self_block(self.norm1(x))
            x = x + cross_block(self.norm2(x))
            x = x + self.dropout3(self.ff(x))
''')),
    ],
}

PASSES_VISIBLE: dict[tuple[str, str], str] = {}
