"""Plausible wrong answers for chapter 09. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Cells with several functions redefine all of them.
VISIBLE names the wrong answers that the exercise's visible test catches too.
"""

_MASKS = '''
def window_mask(n, w, device=None):
    i = torch.arange(n, device=device)
    return (i[:, None] - i[None, :]).abs() {window_cmp} w


def dilated_window_mask(n, w, dilation, device=None):
    i = torch.arange(n, device=device)
    offset = i[:, None] - i[None, :]
    return {dilated}


def global_mask(n, global_idx):
    is_global = torch.zeros(n, dtype=torch.bool, device=global_idx.device)
    is_global[global_idx] = True
    return {global_expr}


def bigbird_block_mask(n_blocks, rand_blocks):
    b = torch.arange(n_blocks, device=rand_blocks.device)
    allowed = (b[:, None] - b[None, :]).abs() <= 1
    allowed[{global_rows}, :] = True
    allowed[:, {global_rows}] = True
    rows = torch.arange({first_row}, n_blocks - 1 + {first_row} - 1, device=rand_blocks.device)[:, None].expand_as(rand_blocks)
    allowed[{rand_index}] = True
    return allowed


def bigbird_mask(n, block, rand_blocks):
    allowed = bigbird_block_mask(n // block, rand_blocks)
    return allowed.repeat_interleave(block, 0).repeat_interleave(block, 1)
'''


def masks(window_cmp="<=", dilated="(offset.abs() <= w * dilation) & (offset % dilation == 0)",
          global_expr="is_global[:, None] | is_global[None, :]", global_rows="[0, -1]", first_row="1",
          rand_index="rows, rand_blocks"):
    return _MASKS.format(window_cmp=window_cmp, dilated=dilated, global_expr=global_expr, global_rows=global_rows,
                         first_row=first_row, rand_index=rand_index)


_BANDED = '''
def band_scores(q, k, w):
    n, d = q.shape[-2], q.shape[-1]
    windows = F.pad(k, (0, 0, w, w)).unfold(-2, 2 * w + 1, 1)
    scores = (q.unsqueeze(-2) @ windows).squeeze(-2) {scale}
    key = torch.arange(n, device=q.device)[:, None] + torch.arange(-w, w + 1, device=q.device)
    return {masked}


def band_weighted_sum(weights, v):
    w = (weights.shape[-1] - 1) // 2
    windows = F.pad(v, (0, 0, w, w)).unfold(-2, 2 * w + 1, 1)
    return (windows @ weights{flip}.unsqueeze(-1)).squeeze(-1)


def sliding_window_attention(q, k, v, w):
    weights = torch.softmax(band_scores(q, k, w), dim=-1)
    return band_weighted_sum(weights, v), weights{flip}
'''


def banded(scale="/ math.sqrt(d)", masked='scores.masked_fill((key < 0) | (key >= n), float("-inf"))', flip=""):
    return _BANDED.format(scale=scale, masked=masked, flip=flip)


_BANDED_DENSE = '''
def band_scores(q, k, w):
    n = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # the whole (n, n) matrix, then the band
    return sparse.dense_to_band(scores, w, fill=float("-inf"))


def band_weighted_sum(weights, v):
    return sparse.band_to_dense(weights) @ v


def sliding_window_attention(q, k, v, w):
    weights = torch.softmax(band_scores(q, k, w), dim=-1)
    return band_weighted_sum(weights, v), weights
'''

_BANDED_SDPA = _BANDED.format(scale="/ math.sqrt(d)", masked='scores.masked_fill((key < 0) | (key >= n), float("-inf"))',
                              flip="") + '''

def sliding_window_attention(q, k, v, w):
    weights = torch.softmax(band_scores(q, k, w), dim=-1)
    i = torch.arange(q.shape[-2])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=(i[:, None] - i[None, :]).abs() <= w)
    return out, weights
'''

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
        {dedupe}
        to_global = q @ k[:, :, global_idx].transpose(-2, -1) / math.sqrt(d_head)
        weights = torch.softmax(torch.cat([to_global, window], dim=-1), dim=-1)
        G = len(global_idx)
        out = weights[..., :G] @ v[:, :, global_idx] + band_weighted_sum(weights[..., G:], v)
        if G {global_rows}:
            q_g = heads(self.{qg}(x))[:, :, global_idx]
            k_g, v_g = heads(self.{kg}(x)), heads(self.{vg}(x))
            rows = torch.softmax(q_g @ k_g.transpose(-2, -1) / math.sqrt(d_head), dim=-1) @ v_g
            out = out.index_copy(2, global_idx, rows)
        return out.transpose(1, 2).reshape(B, n, D)
'''


def longformer(dedupe='window = window.masked_fill(is_global[key.clamp(0, n - 1)], float("-inf"))',
               global_rows="", qg="query_global", kg="key_global", vg="value_global"):
    return _LONGFORMER.format(dedupe=dedupe, global_rows=global_rows, qg=qg, kg=kg, vg=vg)


_RECEPTIVE = '''
def receptive_field(mask, layers):
    n = mask.shape[-1]
    step = ({step}).float()
    reach = torch.eye(n, device=mask.device)
    for _ in range({count}):
        reach = ({product} > 0).float()
    return reach.bool()
'''


def receptive(step="mask | torch.eye(n, dtype=torch.bool, device=mask.device)", count="layers",
              product="(reach @ step)"):
    return _RECEPTIVE.format(step=step, count=count, product=product)


_BIGBIRD = '''
def bigbird_attention(q, k, v, rand_blocks, block):
    B, H, n, d = q.shape
    nb = n // block
    scale = 1 / math.sqrt(d) {scale_extra}
    middle = torch.stack([{block_mask} for r in rand_blocks])[:, 1:-1]
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


def bigbird(scale_extra="", block_mask="bigbird_block_mask(nb, r)"):
    return _BIGBIRD.format(scale_extra=scale_extra, block_mask=block_mask)


_BIGBIRD_SHARED_RANDOM = bigbird(block_mask="bigbird_block_mask(nb, rand_blocks[0])")
_BIGBIRD_DUPLICATES = bigbird().replace(
    "    middle = torch.stack",
    "    extra = torch.stack([torch.arange(1, nb - 1) - 1, torch.arange(1, nb - 1) + 1], -1)  # window blocks again\n"
    "    middle = torch.stack").replace(
    "    idx = torch.argsort((~middle).int(), dim=-1, stable=True)[..., :slots]",
    "    idx = torch.argsort((~middle).int(), dim=-1, stable=True)[..., :slots]\n"
    "    idx = torch.cat([idx, extra[None].expand(H, -1, -1)], -1)  # a key block counted twice\n"
    "    slots = slots + 2")

MUTANTS = {
    "masks": [
        ("window excludes the edge, |i - j| < w", masks(window_cmp="<")),
        ("dilated window is w·δ wide but not strided", masks(dilated="offset.abs() <= w * dilation")),
        ("dilated window of w positions, not w steps of δ", masks(dilated="(offset.abs() <= w) & (offset % dilation == 0)")),
        ("global tokens attend everything but nobody attends them", masks(global_expr="is_global[:, None].expand(n, n)")),
        ("only the first block is global", masks(global_rows="[0]")),
        ("random blocks set in the transposed position", masks(rand_index="rand_blocks, rows")),
        ("random blocks of row I taken from rand_blocks[I]", masks(first_row="0")),
    ],
    "banded": [
        ("scores not scaled by sqrt(d)", banded(scale="")),
        ("keys outside the sequence count as zero scores", banded(masked="scores")),
        ("weights returned with the band slots reversed", banded(flip=".flip(-1)")),
        ("dense (n, n) scores cut down to the band", _BANDED_DENSE),
        ("calls F.scaled_dot_product_attention", _BANDED_SDPA),
    ],
    "longformer": [
        ("a global key inside the window counted twice", longformer(dedupe="pass")),
        ("global rows computed with the local projections", longformer(qg="query", kg="key", vg="value")),
        ("global tokens attend only their window", longformer(global_rows="and False")),
        ("global queries with the global projection, keys and values with the local ones",
         longformer(kg="key", vg="value")),
    ],
    "receptive": [
        ("no residual: paths of exactly L steps", receptive(step="mask")),
        ("one layer too few", receptive(count="layers - 1")),
        ("paths followed from query to key (transposed)", receptive(product="(reach @ step.T)")),
    ],
    "bigbird": [
        ("every head uses the first head's random blocks", _BIGBIRD_SHARED_RANDOM),
        ("scores not scaled by sqrt(d)", bigbird(scale_extra="* math.sqrt(d)")),
        ("the window's neighbour blocks gathered twice", _BIGBIRD_DUPLICATES),
    ],
}

VISIBLE = {
    "masks": ["window excludes the edge, |i - j| < w", "dilated window is w·δ wide but not strided",
              "dilated window of w positions, not w steps of δ",
              "global tokens attend everything but nobody attends them", "only the first block is global",
              "random blocks set in the transposed position", "random blocks of row I taken from rand_blocks[I]"],
    "banded": ["scores not scaled by sqrt(d)", "keys outside the sequence count as zero scores",
               "weights returned with the band slots reversed"],
    "longformer": ["a global key inside the window counted twice", "global rows computed with the local projections",
                   "global tokens attend only their window",
                   "global queries with the global projection, keys and values with the local ones"],
    "receptive": ["no residual: paths of exactly L steps", "one layer too few",
                  "paths followed from query to key (transposed)"],
    "bigbird": ["every head uses the first head's random blocks", "scores not scaled by sqrt(d)",
                "the window's neighbour blocks gathered twice"],
}
