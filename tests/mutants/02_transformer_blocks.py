"""Plausible wrong answers for chapter 02. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Class exercises redefine the whole class.
"""

_SDPA = '''
def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False):
    L, S = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / {scale}
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill({bool_mask}, {fill})
        else:
            scores = scores + attn_mask
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(diagonal={diag}), float("-inf"))
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(blocked, 0.0), dim={dim}).masked_fill(blocked, 0.0)
    return weights @ v, weights
'''


def sdpa(scale="math.sqrt(q.shape[-1])", bool_mask="~attn_mask", fill='float("-inf")', diag=1, dim=-1):
    return _SDPA.format(scale=scale, bool_mask=bool_mask, fill=fill, diag=diag, dim=dim)


_MHA_HEAD = '''
class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("not divisible")
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
        b_q, b_k, b_v = self.in_proj_bias.chunk(3)
'''


def mha(split="F.linear(x, w, b).view(B, n, H, Dh).transpose(1, 2)", attn_bool="attn_mask",
        use_padding=True, reduce="weights.mean(dim=1)", merge="heads.transpose(1, 2).reshape(B, L, E)"):
    padding = ("        if key_padding_mask is not None:\n"
               "            bias = bias.masked_fill(key_padding_mask[:, None, None, :], float('-inf'))\n"
               if use_padding else "")
    return _MHA_HEAD + f'''
        def split(x, w, b, n):
            return {split}

        q, k, v = split(query, w_q, b_q, L), split(key, w_k, b_k, S), split(value, w_v, b_v, S)
        bias = q.new_zeros(B, 1, L, S)
        if attn_mask is not None:
            bias = bias.masked_fill({attn_bool}, float("-inf")) if attn_mask.dtype == torch.bool else bias + attn_mask
{padding}        heads, weights = scaled_dot_product_attention(q, k, v, attn_mask=bias)
        out = self.out_proj({merge})
        if not need_weights:
            return out, None
        return out, ({reduce} if average_attn_weights else weights)
'''


_LN = '''
class LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
{body}
'''

_FF = '''
class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, dim_feedforward, activation="relu", dropout=0.0):
        super().__init__()
        if activation not in ("relu", "gelu"):
            raise ValueError(activation)
        self.activation = activation
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
{body}
'''

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
            return self.self_attn(x, x, x, key_padding_mask={kpm}, attn_mask={mask}, need_weights=False)[0]

        x = src
        if {pre}:
{pre_body}
        else:
            x = self.norm1(x + attend(x))
            x = self.norm2(x + self.ff(x))
        return x
'''
_ENC_PRE = "            x = x + attend(self.norm1(x))\n            x = x + self.ff(self.norm2(x))"


_NORMED_STREAM = ("            x = self.norm1(x)\n            x = x + attend(x)\n"
                  "            x = self.norm2(x)\n            x = x + self.ff(x)")
_NO_FF_RESIDUAL = "            x = x + attend(self.norm1(x))\n            x = self.ff(self.norm2(x))"


def enc(kpm="src_key_padding_mask", mask="src_mask", pre="self.norm_first", pre_body=_ENC_PRE):
    return _ENC.format(kpm=kpm, mask=mask, pre=pre, pre_body=pre_body)


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

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        def sa(x):
            return self.self_attn(x, x, x, key_padding_mask=tgt_key_padding_mask, attn_mask={tgt_mask},
                                  need_weights=False)[0]

        def ca(x):
            return self.multihead_attn(x, {kv}, {kv}, key_padding_mask={mem_kpm}, attn_mask=memory_mask,
                                       need_weights=False)[0]

        x = tgt
        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            x = x + self.ff(self.norm3(x))
        else:
            x = self.norm1(x + sa(x))
            x = self.norm2(x + ca(x))
            x = self.norm3(x + self.ff(x))
        return x
'''


def dec(tgt_mask="tgt_mask", kv="memory", mem_kpm="memory_key_padding_mask"):
    return _DEC.format(tgt_mask=tgt_mask, kv=kv, mem_kpm=mem_kpm)


MUTANTS = {
    "sdpa": [
        ("no scaling by sqrt(d)", sdpa(scale="1.0")),
        ("scales by d instead of sqrt(d)", sdpa(scale="q.shape[-1]")),
        ("blocked scores set to 0 instead of -inf", sdpa(fill="0.0")),
        ("boolean mask read as True = blocked", sdpa(bool_mask="attn_mask")),
        ("causal mask also blocks the diagonal", sdpa(diag=0)),
        ("softmax over the queries", sdpa(dim=-2)),
        ("blocked rows detected for bool masks only", '''
def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False):
    L, S = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    blocked = None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
            blocked = ~attn_mask.any(-1, keepdim=True)
        else:
            scores = scores + attn_mask
    if is_causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    if blocked is not None:
        scores = scores.masked_fill(blocked, 0.0)
    weights = torch.softmax(scores, dim=-1)
    if blocked is not None:
        weights = weights.masked_fill(blocked, 0.0)
    return weights @ v, weights
'''),
        ("calls the built-in", '''
def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    return out, torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
'''),
    ],
    "masks": [
        ("causal mask blocks the past instead of the future", '''
def causal_mask(n, device=None):
    return torch.full((n, n), float("-inf"), device=device).tril(diagonal=-1)

def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    return torch.arange(T)[None, :] >= lengths[:, None]
'''),
        ("causal mask also blocks the diagonal", '''
def causal_mask(n, device=None):
    return torch.full((n, n), float("-inf"), device=device).triu(diagonal=0)

def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    return torch.arange(T)[None, :] >= lengths[:, None]
'''),
        ("padding mask True at the real tokens", '''
def causal_mask(n, device=None):
    return torch.full((n, n), float("-inf"), device=device).triu(diagonal=1)

def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    return torch.arange(T)[None, :] < lengths[:, None]
'''),
        ("padding mask off by one", '''
def causal_mask(n, device=None):
    return torch.full((n, n), float("-inf"), device=device).triu(diagonal=1)

def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    return torch.arange(T)[None, :] > lengths[:, None]
'''),
        ("padding mask ignores max_len", '''
def causal_mask(n, device=None):
    return torch.full((n, n), float("-inf"), device=device).triu(diagonal=1)

def padding_mask(lengths, max_len=None):
    return torch.arange(int(lengths.max()))[None, :] >= lengths[:, None]
'''),
    ],
    "mha": [
        ("splits heads with view only, mixing positions", mha(split="F.linear(x, w, b).view(B, H, n, Dh)",
                                                             merge="heads.reshape(B, L, E)")),
        ("ignores the key padding mask", mha(use_padding=False)),
        ("reads attn_mask's True as allowed", mha(attn_bool="~attn_mask")),
        ("sums the head weights instead of averaging", mha(reduce="weights.sum(dim=1)")),
        ("merges heads without transposing back", mha(merge="heads.reshape(B, L, E)")),
        ("crashes without biases (bias=False)", mha().replace(
            "b_q, b_k, b_v = self.in_proj_bias.chunk(3)",
            "b_q, b_k, b_v = self.in_proj_bias.chunk(3)  # None when bias=False")),
        ("calls the built-in", _MHA_HEAD + '''
        return F.multi_head_attention_forward(
            query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), E, H, self.in_proj_weight,
            self.in_proj_bias, None, None, False, 0.0, self.out_proj.weight, self.out_proj.bias,
            key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=need_weights,
            average_attn_weights=average_attn_weights)[0].transpose(0, 1), None
'''),
    ],
    "pe": [
        ("sin and cos swapped", '''
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2:
        raise ValueError("odd")
    angles = torch.arange(max_len)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2], pe[:, 1::2] = angles.cos(), angles.sin()
    return pe
'''),
        ("exponent i/d instead of 2i/d", '''
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2:
        raise ValueError("odd")
    angles = torch.arange(max_len)[:, None] / 10000 ** (torch.arange(d_model // 2) / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2], pe[:, 1::2] = angles.sin(), angles.cos()
    return pe
'''),
        ("sines in the first half, cosines in the second", '''
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2:
        raise ValueError("odd")
    angles = torch.arange(max_len)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / d_model)
    return torch.cat([angles.sin(), angles.cos()], dim=1)
'''),
        ("positions counted from 1", '''
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2:
        raise ValueError("odd")
    angles = torch.arange(1, max_len + 1)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2], pe[:, 1::2] = angles.sin(), angles.cos()
    return pe
'''),
    ],
    "ln": [
        ("unbiased variance (torch.var's default)", _LN.format(body='''        mean = x.mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True) + self.eps) * self.weight + self.bias''')),
        ("eps outside the square root", _LN.format(body='''        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / (torch.sqrt(var) + self.eps) * self.weight + self.bias''')),
        ("normalises over all but the batch dimension", _LN.format(body='''        dims = tuple(range(1, x.dim()))
        mean = x.mean(dim=dims, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias''')),
        ("forgets gamma and beta", _LN.format(body='''        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps)''')),
        ("calls the built-in", _LN.format(body='''        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)''')),
        ("centres, then calls rms_norm", _LN.format(body='''        x = x - x.mean(dim=-1, keepdim=True)
        return F.rms_norm(x, x.shape[-1:], self.weight, self.eps) + self.bias''')),
    ],
    "ffn": [
        ("tanh approximation of GELU", _FF.format(body='''        h = self.linear1(x)
        h = F.relu(h) if self.activation == "relu" else F.gelu(h, approximate="tanh")
        return self.linear2(self.dropout(h))''')),
        ("dropout stays on in eval mode", _FF.format(body='''        h = F.relu(self.linear1(x)) if self.activation == "relu" else F.gelu(self.linear1(x))
        return self.linear2(F.dropout(h, self.dropout.p, training=True))''')),
        ("always ReLU", _FF.format(body='''        return self.linear2(self.dropout(F.relu(self.linear1(x))))''')),
        ("activation after the second layer too", _FF.format(body='''        h = F.relu(self.linear1(x)) if self.activation == "relu" else F.gelu(self.linear1(x))
        return F.relu(self.linear2(self.dropout(h)))''')),
    ],
    "enc": [
        ("ignores norm_first (always post-norm)", enc(pre="False")),
        ("pre-norm that normalises the residual stream", enc(pre_body=_NORMED_STREAM)),
        ("drops the padding mask", enc(kpm="None")),
        ("drops src_mask", enc(mask="None")),
        ("no residual around the feed-forward (pre-norm)", enc(pre_body=_NO_FF_RESIDUAL)),
    ],
    "dec": [
        ("cross-attention attends to the target", dec(kv="x")),
        ("drops the causal mask", dec(tgt_mask="None")),
        ("drops the memory padding mask", dec(mem_kpm="None")),
        ("drops memory_mask", dec().replace("attn_mask=memory_mask", "attn_mask=None")),
        ("always causal, whatever tgt_mask says", dec(tgt_mask="causal_mask(x.shape[1])")),
    ],
}


# Wrong answers that the visible tests, which once checked only shapes and sums, now fail too: a student
# who runs them sees the mistake before submitting.
VISIBLE = {
    "sdpa": [
        "no scaling by sqrt(d)",
        "scales by d instead of sqrt(d)",
        "blocked scores set to 0 instead of -inf",
        "boolean mask read as True = blocked",
        "causal mask also blocks the diagonal",
        "softmax over the queries",
        "blocked rows detected for bool masks only",
        "calls the built-in",
    ],
    "masks": [
        "causal mask blocks the past instead of the future",
        "causal mask also blocks the diagonal",
        "padding mask True at the real tokens",
        "padding mask off by one",
        "padding mask ignores max_len",
    ],
    "mha": [
        "splits heads with view only, mixing positions",
        "ignores the key padding mask",
        "reads attn_mask's True as allowed",
        "sums the head weights instead of averaging",
        "merges heads without transposing back",
        "calls the built-in",
    ],
    "pe": [
        "sin and cos swapped",
        "exponent i/d instead of 2i/d",
        "sines in the first half, cosines in the second",
        "positions counted from 1",
    ],
    "ln": [
        "unbiased variance (torch.var's default)",
        "eps outside the square root",
        "normalises over all but the batch dimension",
        "forgets gamma and beta",
    ],
    "ffn": [
        "tanh approximation of GELU",
        "dropout stays on in eval mode",
        "always ReLU",
        "activation after the second layer too",
    ],
    "enc": [
        "ignores norm_first (always post-norm)",
        "pre-norm that normalises the residual stream",
        "drops the padding mask",
        "drops src_mask",
        "no residual around the feed-forward (pre-norm)",
    ],
    "dec": [
        "cross-attention attends to the target",
        "drops the causal mask",
        "drops the memory padding mask",
    ],
}
