"""Typical mistakes students make in chapter 09 (sparse attention): each must fail the exercise's hidden tests, and
its visible test unless PASSES_VISIBLE says why not."""

_LONGFORMER = '''
class LongformerAttention(nn.Module):
    def __init__(self, d_model, n_heads, w):
        super().__init__()
        self.n_heads, self.w = n_heads, w
        self.query, self.key, self.value = (nn.Linear(d_model, d_model) for _ in range(3))
        self.query_global, self.key_global, self.value_global = (nn.Linear(d_model, d_model) for _ in range(3))

    def forward(self, x, global_idx):
        B, n, D = x.shape
        d_head = D // self.n_heads

        def heads(t):
            return t.view(B, n, self.n_heads, d_head).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        is_global = torch.zeros(n, dtype=torch.bool, device=x.device)
        is_global[global_idx] = True
        window = band_scores(q, k, self.w)
        key = torch.arange(n, device=x.device)[:, None] + torch.arange(-self.w, self.w + 1, device=x.device)
        window = window.masked_fill(is_global[key.clamp(0, n - 1)], float("-inf"))
        to_global = q @ k[:, :, global_idx].transpose(-2, -1) / math.sqrt(d_head)
        weights = torch.softmax(torch.cat([to_global, window], dim=-1), dim=-1)
        G = len(global_idx)
        out = weights[..., :G] @ v[:, :, global_idx] + band_weighted_sum(weights[..., G:], v)
        if G:
            q_g = heads(self.query_global(x))[:, :, global_idx]
            k_g, v_g = heads(self.key_global(x)), heads(self.value_global(x))
            rows = torch.softmax(q_g @ k_g.transpose(-2, -1) / math.sqrt(d_head), dim=-1) @ v_g
            out = out.index_copy(2, global_idx, rows)
        return out.transpose(1, 2).reshape(B, n, D)
'''


def _longformer(*edits):
    source = _LONGFORMER
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    return source


_BIGBIRD = '''
def bigbird_attention(q, k, v, rand_blocks, block):
    B, H, n, d = q.shape
    nb = n // block
    scale = 1 / math.sqrt(d)
    middle = torch.stack([bigbird_block_mask(nb, r) for r in rand_blocks])[:, 1:-1]
    slots = int(middle.sum(-1).max())
    idx = torch.argsort((~middle).int(), dim=-1, stable=True)[..., :slots]
    used = middle.gather(-1, idx)
    head = torch.arange(H, device=q.device)[:, None, None]
    k_blocks = k.view(B, H, nb, block, d)[:, head, idx].reshape(B, H, nb - 2, slots * block, d)
    v_blocks = v.view(B, H, nb, block, d)[:, head, idx].reshape(B, H, nb - 2, slots * block, d)
    q_mid = q.view(B, H, nb, block, d)[:, :, 1:-1]
    scores = q_mid @ k_blocks.transpose(-2, -1) * scale
    scores = scores.masked_fill(~used.repeat_interleave(block, -1)[:, :, None, :], float("-inf"))
    p_mid = torch.softmax(scores, dim=-1)
    out_mid = (p_mid @ v_blocks).reshape(B, H, (nb - 2) * block, d)
    q_glob = torch.cat([q[:, :, :block], q[:, :, -block:]], dim=2)
    p_glob = torch.softmax(q_glob @ k.transpose(-2, -1) * scale, dim=-1)
    out_glob = p_glob @ v
    out = torch.cat([out_glob[:, :, :block], out_mid, out_glob[:, :, block:]], dim=2)
    where = idx[None, :, :, None, :, None].expand(B, H, nb - 2, block, slots, block)
    dense_mid = q.new_zeros(B, H, nb - 2, block, nb, block).scatter_add(
        4, where, p_mid.view(B, H, nb - 2, block, slots, block))
    probs = torch.cat([p_glob[:, :, :block], dense_mid.reshape(B, H, -1, n), p_glob[:, :, block:]], dim=2)
    return out, probs
'''


def _bigbird(*edits):
    source = _BIGBIRD
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    return source


MISTAKES = {
    "masks": [
        ("window of the keys before the query only (causal)", '''
def window_mask(n, w, device=None):
    i = torch.arange(n, device=device)
    offset = i[:, None] - i[None, :]
    return (offset >= 0) & (offset <= w)
'''),
        ("w read as the total width of the window", '''
def window_mask(n, w, device=None):
    i = torch.arange(n, device=device)
    return (i[:, None] - i[None, :]).abs() <= w // 2
'''),
        ("dilated window without its width limit", '''
def dilated_window_mask(n, w, dilation, device=None):
    i = torch.arange(n, device=device)
    return (i[:, None] - i[None, :]) % dilation == 0
'''),
        ("dilated window keeps the keys at multiples of δ, not at offsets that are", '''
def dilated_window_mask(n, w, dilation, device=None):
    i = torch.arange(n, device=device)
    near = (i[:, None] - i[None, :]).abs() <= w * dilation
    return near & (i[None, :] % dilation == 0)
'''),
        ("global rows and columns combined with & instead of |", '''
def global_mask(n, global_idx):
    is_global = torch.zeros(n, dtype=torch.bool, device=global_idx.device)
    is_global[global_idx] = True
    return is_global[:, None] & is_global[None, :]
'''),
        ("global mask with the diagonal too", '''
def global_mask(n, global_idx):
    is_global = torch.zeros(n, dtype=torch.bool, device=global_idx.device)
    is_global[global_idx] = True
    return is_global[:, None] | is_global[None, :] | torch.eye(n, dtype=torch.bool, device=global_idx.device)
'''),
        ("global blocks as rows only: nobody attends them", '''
def bigbird_block_mask(n_blocks, rand_blocks):
    b = torch.arange(n_blocks, device=rand_blocks.device)
    allowed = (b[:, None] - b[None, :]).abs() <= 1
    allowed[[0, -1], :] = True
    rows = torch.arange(1, n_blocks - 1, device=rand_blocks.device)[:, None].expand_as(rand_blocks)
    allowed[rows, rand_blocks] = True
    return allowed
'''),
        ("random blocks made symmetric", '''
def bigbird_block_mask(n_blocks, rand_blocks):
    b = torch.arange(n_blocks, device=rand_blocks.device)
    allowed = (b[:, None] - b[None, :]).abs() <= 1
    allowed[[0, -1], :] = True
    allowed[:, [0, -1]] = True
    rows = torch.arange(1, n_blocks - 1, device=rand_blocks.device)[:, None].expand_as(rand_blocks)
    allowed[rows, rand_blocks] = True
    allowed[rand_blocks, rows] = True
    return allowed
'''),
        ("block window without the block itself", '''
def bigbird_block_mask(n_blocks, rand_blocks):
    b = torch.arange(n_blocks, device=rand_blocks.device)
    allowed = (b[:, None] - b[None, :]).abs() == 1
    allowed[[0, -1], :] = True
    allowed[:, [0, -1]] = True
    rows = torch.arange(1, n_blocks - 1, device=rand_blocks.device)[:, None].expand_as(rand_blocks)
    allowed[rows, rand_blocks] = True
    return allowed
'''),
        ("token mask tiled with repeat instead of repeat_interleave", '''
def bigbird_mask(n, block, rand_blocks):
    return bigbird_block_mask(n // block, rand_blocks).repeat(block, block)
'''),
    ],
    "banded": [
        ("keys padded on one side only: the window shifted", '''
def band_scores(q, k, w):
    n, d = q.shape[-2], q.shape[-1]
    windows = F.pad(k, (0, 0, 0, 2 * w)).unfold(-2, 2 * w + 1, 1)
    scores = (q.unsqueeze(-2) @ windows).squeeze(-2) / math.sqrt(d)
    key = torch.arange(n, device=q.device)[:, None] + torch.arange(-w, w + 1, device=q.device)
    return scores.masked_fill((key < 0) | (key >= n), float("-inf"))
'''),
        ("scores divided by d instead of √d", '''
def band_scores(q, k, w):
    n, d = q.shape[-2], q.shape[-1]
    windows = F.pad(k, (0, 0, w, w)).unfold(-2, 2 * w + 1, 1)
    scores = (q.unsqueeze(-2) @ windows).squeeze(-2) / d
    key = torch.arange(n, device=q.device)[:, None] + torch.arange(-w, w + 1, device=q.device)
    return scores.masked_fill((key < 0) | (key >= n), float("-inf"))
'''),
        ("missing keys filled with −10⁴ instead of −inf", '''
def band_scores(q, k, w):
    n, d = q.shape[-2], q.shape[-1]
    windows = F.pad(k, (0, 0, w, w)).unfold(-2, 2 * w + 1, 1)
    scores = (q.unsqueeze(-2) @ windows).squeeze(-2) / math.sqrt(d)
    key = torch.arange(n, device=q.device)[:, None] + torch.arange(-w, w + 1, device=q.device)
    return scores.masked_fill((key < 0) | (key >= n), -1e4)
'''),
        ("F.pad(k, (w, w)) pads the feature dimension", '''
def band_scores(q, k, w):
    n, d = q.shape[-2], q.shape[-1]
    windows = F.pad(k, (w, w)).unfold(-2, 2 * w + 1, 1)
    scores = (q.unsqueeze(-2) @ windows).squeeze(-2) / math.sqrt(d)
    key = torch.arange(n, device=q.device)[:, None] + torch.arange(-w, w + 1, device=q.device)
    return scores.masked_fill((key < 0) | (key >= n), float("-inf"))
'''),
        ("off by one at the end: key n not masked", '''
def band_scores(q, k, w):
    n, d = q.shape[-2], q.shape[-1]
    windows = F.pad(k, (0, 0, w, w)).unfold(-2, 2 * w + 1, 1)
    scores = (q.unsqueeze(-2) @ windows).squeeze(-2) / math.sqrt(d)
    key = torch.arange(n, device=q.device)[:, None] + torch.arange(-w, w + 1, device=q.device)
    return scores.masked_fill((key < 0) | (key > n), float("-inf"))
'''),
        ("values padded on one side only in the weighted sum", '''
def band_weighted_sum(weights, v):
    w = (weights.shape[-1] - 1) // 2
    windows = F.pad(v, (0, 0, 0, 2 * w)).unfold(-2, 2 * w + 1, 1)
    return (windows @ weights.unsqueeze(-1)).squeeze(-1)
'''),
        ("softmax over the queries (dim -2)", '''
def sliding_window_attention(q, k, v, w):
    weights = torch.softmax(band_scores(q, k, w), dim=-2)
    return band_weighted_sum(weights, v), weights
'''),
        ("the scores returned as the weights", '''
def sliding_window_attention(q, k, v, w):
    scores = band_scores(q, k, w)
    return band_weighted_sum(torch.softmax(scores, dim=-1), v), scores
'''),
        ("clamps the window to the sequence, so the weights lose their 2w + 1 slots", """
def band_scores(q: torch.Tensor, k: torch.Tensor, w: int) -> torch.Tensor:
    \"\"\"Scores of each query against the keys |i - j| <= w, in the band layout.

    Args:
        q, k: (..., n, d) queries and keys.   w: one-sided window width (w >= 0).

    Returns:
        (..., n, 2w + 1): slot o of row i holds q_i · k_j / sqrt(d) for j = i + o - w, and -inf where j is
        outside 0 … n - 1. Never builds an (n, n) tensor.
    \"\"\"
    n, d = q.shape[-2], q.shape[-1]
    padded = F.pad(k, (0, 0, w, w))  # (..., n + 2w, d): w zero rows at both ends
    windows = padded.unfold(-2, 2 * w + 1, 1)  # (..., n, d, 2w + 1), a view
    scores = (q.unsqueeze(-2) @ windows).squeeze(-2) / math.sqrt(d)  # (..., n, 2w + 1)
    i = torch.arange(n, device=q.device)
    j = i[:, None] + torch.arange(2 * w + 1, device=q.device)[None, :] - w  # key of slot o of row i
    outside = (j < 0) | (j >= n)
    return scores.masked_fill(outside, float("-inf"))


def band_weighted_sum(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    \"\"\"Band-layout weights (..., n, 2w + 1) and values (..., n, d_v) → (..., n, d_v): y_i = Σ_o A_io v_{i+o-w}.\"\"\"
    w = (weights.shape[-1] - 1) // 2
    padded = F.pad(v, (0, 0, w, w))  # (..., n + 2w, d_v)
    windows = padded.unfold(-2, 2 * w + 1, 1)  # (..., n, d_v, 2w + 1)
    return (windows @ weights.unsqueeze(-1)).squeeze(-1)


def sliding_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             w: int) -> tuple[torch.Tensor, torch.Tensor]:
    \"\"\"Attention of each query over the keys |i - j| <= w.

    Args:
        q, k: (..., n, d).   v: (..., n, d_v).   w: one-sided window width (w >= 0; w >= n means full attention).

    Returns:
        ``(output, weights)``: output (..., n, d_v), equal to ``F.scaled_dot_product_attention`` with the mask
        ``window_mask(n, w)``; weights (..., n, 2w + 1) in the band layout, 0 where the key does not exist.

    Memory O(n · w · d): no (n, n) tensor. Do not call ``F.scaled_dot_product_attention`` or ``flex_attention``.
    \"\"\"
    w = min(w, q.shape[-2] - 1)  # a window wider than the sequence is full attention
    scores = band_scores(q, k, w)
    weights = torch.softmax(scores, dim=-1)
    return band_weighted_sum(weights, v), weights
"""),
        ("builds the dense (n, n) scores, then gathers the band", """
def band_scores(q: torch.Tensor, k: torch.Tensor, w: int) -> torch.Tensor:
    \"\"\"Scores of each query against the keys |i - j| <= w, in the band layout.

    Args:
        q, k: (..., n, d) queries and keys.   w: one-sided window width (w >= 0).

    Returns:
        (..., n, 2w + 1): slot o of row i holds q_i · k_j / sqrt(d) for j = i + o - w, and -inf where j is
        outside 0 … n - 1. Never builds an (n, n) tensor.
    \"\"\"
    n, d = q.shape[-2], q.shape[-1]
    full = q @ k.transpose(-2, -1) / math.sqrt(d)  # (..., n, n)
    i = torch.arange(n, device=q.device)
    j = i[:, None] + torch.arange(2 * w + 1, device=q.device)[None, :] - w  # (n, 2w + 1)
    outside = (j < 0) | (j >= n)
    index = j.clamp(0, n - 1).expand(*full.shape[:-1], 2 * w + 1)
    return torch.gather(full, -1, index).masked_fill(outside, float("-inf"))


def band_weighted_sum(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    \"\"\"Band-layout weights (..., n, 2w + 1) and values (..., n, d_v) → (..., n, d_v): y_i = Σ_o A_io v_{i+o-w}.\"\"\"
    w = (weights.shape[-1] - 1) // 2
    padded = F.pad(v, (0, 0, w, w))  # (..., n + 2w, d_v)
    windows = padded.unfold(-2, 2 * w + 1, 1)  # (..., n, d_v, 2w + 1)
    return (windows @ weights.unsqueeze(-1)).squeeze(-1)


def sliding_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             w: int) -> tuple[torch.Tensor, torch.Tensor]:
    \"\"\"Attention of each query over the keys |i - j| <= w.

    Args:
        q, k: (..., n, d).   v: (..., n, d_v).   w: one-sided window width (w >= 0; w >= n means full attention).

    Returns:
        ``(output, weights)``: output (..., n, d_v), equal to ``F.scaled_dot_product_attention`` with the mask
        ``window_mask(n, w)``; weights (..., n, 2w + 1) in the band layout, 0 where the key does not exist.

    Memory O(n · w · d): no (n, n) tensor. Do not call ``F.scaled_dot_product_attention`` or ``flex_attention``.
    \"\"\"
    scores = band_scores(q, k, w)
    weights = torch.softmax(scores, dim=-1)  # -inf slots get weight 0
    return band_weighted_sum(weights, v), weights
"""),
    ],
    "longformer": [
        ("scores scaled by √d_model instead of √d_head", _longformer(("math.sqrt(d_head)", "math.sqrt(D)"))),
        ("separate softmaxes over the global keys and over the window", _longformer(
            ("weights = torch.softmax(torch.cat([to_global, window], dim=-1), dim=-1)",
             "weights = torch.cat([torch.softmax(to_global, dim=-1), torch.softmax(window, dim=-1)], dim=-1)"))),
        ("global queries attend only the global keys", _longformer(
            ("k_g, v_g = heads(self.key_global(x)), heads(self.value_global(x))",
             "k_g, v_g = (heads(self.key_global(x))[:, :, global_idx],\n"
             "                        heads(self.value_global(x))[:, :, global_idx])"))),
        ("local rows do not attend the global keys outside their window", _longformer(
            ("window = window.masked_fill(is_global[key.clamp(0, n - 1)], float(\"-inf\"))", "pass"),
            ("to_global = q @ k[:, :, global_idx].transpose(-2, -1) / math.sqrt(d_head)",
             "to_global = q.new_zeros(B, self.n_heads, n, 0)"),
            ("weights[..., :G] @ v[:, :, global_idx] + ", ""),
            ("band_weighted_sum(weights[..., G:], v)", "band_weighted_sum(weights, v)"))),
        ("heads split without the transpose", _longformer(
            ("return t.view(B, n, self.n_heads, d_head).transpose(1, 2)",
             "return t.reshape(B, self.n_heads, n, d_head)"))),
        ("heads merged without the transpose", _longformer(
            ("return out.transpose(1, 2).reshape(B, n, D)", "return out.reshape(B, n, D)"))),
    ],
    "receptive": [
        ("the residual added once, after the L products", '''
def receptive_field(mask, layers):
    n = mask.shape[-1]
    eye = torch.eye(n, dtype=torch.bool, device=mask.device)
    reach = eye.float()
    for _ in range(layers):
        reach = ((reach @ mask.float()) > 0).float()
    return reach.bool() | eye
'''),
        ("element-wise power instead of the matrix power", '''
def receptive_field(mask, layers):
    n = mask.shape[-1]
    step = (mask | torch.eye(n, dtype=torch.bool, device=mask.device)).float()
    return (step ** layers) > 0
'''),
        ("one layer too many (starts from M ∨ I, then L products)", '''
def receptive_field(mask, layers):
    n = mask.shape[-1]
    step = (mask | torch.eye(n, dtype=torch.bool, device=mask.device)).float()
    reach = step.clone()
    for _ in range(layers):
        reach = ((reach @ step) > 0).float()
    return reach.bool()
'''),
        ("L = 0 gives the pattern, not the identity", '''
def receptive_field(mask, layers):
    n = mask.shape[-1]
    step = (mask | torch.eye(n, dtype=torch.bool, device=mask.device)).float()
    reach = step.clone()
    for _ in range(layers - 1):
        reach = ((reach @ step) > 0).float()
    return reach.bool()
'''),
        ("the pattern treated as undirected", '''
def receptive_field(mask, layers):
    n = mask.shape[-1]
    step = (mask | mask.T | torch.eye(n, dtype=torch.bool, device=mask.device)).float()
    reach = torch.eye(n, device=mask.device)
    for _ in range(layers):
        reach = ((reach @ step) > 0).float()
    return reach.bool()
'''),
        ("returns the float 0/1 matrix, not a bool one", '''
def receptive_field(mask, layers):
    n = mask.shape[-1]
    step = (mask | torch.eye(n, dtype=torch.bool, device=mask.device)).float()
    reach = torch.eye(n, device=mask.device)
    for _ in range(layers):
        reach = ((reach @ step) > 0).float()
    return reach
'''),
    ],
    "bigbird": [
        ("unused key slots not masked", _bigbird(
            ("    scores = scores.masked_fill(~used.repeat_interleave(block, -1)[:, :, None, :], float(\"-inf\"))\n",
             ""))),
        ("middle softmax over the queries (dim -2)", _bigbird(
            ("p_mid = torch.softmax(scores, dim=-1)", "p_mid = torch.softmax(scores, dim=-2)"))),
        ("the global rows' scores not scaled", _bigbird(
            ("p_glob = torch.softmax(q_glob @ k.transpose(-2, -1) * scale, dim=-1)",
             "p_glob = torch.softmax(q_glob @ k.transpose(-2, -1), dim=-1)"))),
        ("middle query blocks taken as rows 0 … n_b - 3 of the block mask", _bigbird(
            ("for r in rand_blocks])[:, 1:-1]", "for r in rand_blocks])[:, :-2]"))),
        ("the last global block's rows placed right after the first", _bigbird(
            ("out = torch.cat([out_glob[:, :, :block], out_mid, out_glob[:, :, block:]], dim=2)",
             "out = torch.cat([out_glob, out_mid], dim=2)"),
            ("probs = torch.cat([p_glob[:, :, :block], dense_mid.reshape(B, H, -1, n), p_glob[:, :, block:]], dim=2)",
             "probs = torch.cat([p_glob, dense_mid.reshape(B, H, -1, n)], dim=2)"))),
        ("key blocks gathered with every head's table for every head", _bigbird(
            ("view(B, H, nb, block, d)[:, head, idx]", "view(B, H, nb, block, d)[:, :, idx]"))),
        ("the probabilities allocated in float32, on the CPU", """
def bigbird_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rand_blocks: torch.Tensor,
                      block: int) -> tuple[torch.Tensor, torch.Tensor]:
    \"\"\"BigBird's block-sparse attention (global first/last blocks, window of 3 blocks, random blocks).

    Args:
        q, k, v: float (B, H, n, d), n a multiple of ``block`` with at least 5 blocks.
        rand_blocks: int64 (H, n // block - 2, r): row I - 1 of head h lists the random key blocks of query
            block I for that head.
        block: tokens per block.

    Returns:
        ``(output, probs)``: output (B, H, n, d) = probs @ v; probs (B, H, n, n), row i the softmax of
        q_i · k_j / sqrt(d) over the keys token i may attend (``bigbird_mask`` of its head), 0 elsewhere.

    Compute the scores block by block: no (B, H, n, n) score tensor (the probs are assembled at the end).
    \"\"\"
    B, H, n, d = q.shape
    n_blocks = n // block
    scale = 1.0 / math.sqrt(d)
    offsets = torch.arange(block, device=q.device)
    all_tokens = torch.arange(n, device=q.device)
    probs = torch.zeros(B, H, n, n)  # filled block row by block row
    out_heads, prob_heads = [], []
    for h in range(H):
        allowed = bigbird_block_mask(n_blocks, rand_blocks[h]).to(q.device)  # (n_blocks, n_blocks)
        outs, rows = [], []
        for I in range(n_blocks):
            q_blk = q[:, h, I * block:(I + 1) * block]  # (B, block, d)
            if I == 0 or I == n_blocks - 1:  # global query blocks: every key
                tokens = all_tokens
            else:
                key_blocks = torch.nonzero(allowed[I]).flatten()  # each allowed key block once
                tokens = (key_blocks[:, None] * block + offsets).flatten()  # (m,) key tokens
            k_sel, v_sel = k[:, h][:, tokens], v[:, h][:, tokens]  # (B, m, d)
            p = torch.softmax(q_blk @ k_sel.transpose(-1, -2) * scale, dim=-1)  # (B, block, m)
            outs.append(p @ v_sel)
            rows.append(q.new_zeros(B, block, n).index_copy(2, tokens, p))  # back into the dense row
        out_heads.append(torch.cat(outs, dim=1))  # (B, n, d)
        probs[:, h] = torch.cat(rows, dim=1)
    return torch.stack(out_heads, dim=1), probs
"""),
    ],
}

PASSES_VISIBLE = {}
