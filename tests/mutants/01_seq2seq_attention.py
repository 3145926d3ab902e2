"""Plausible wrong answers for chapter 01. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source).
"""

_GRU = '''
class GRUCell(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        k = 1 / math.sqrt(hidden_size)
        self.weight_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size).uniform_(-k, k))
        self.weight_hh = nn.Parameter(torch.empty(3 * hidden_size, hidden_size).uniform_(-k, k))
        self.bias_ih = nn.Parameter(torch.empty(3 * hidden_size).uniform_(-k, k))
        self.bias_hh = nn.Parameter(torch.empty(3 * hidden_size).uniform_(-k, k))

    def forward(self, x, h):
        i_r, i_z, i_n = F.linear(x, self.weight_ih, self.bias_ih).chunk(3, dim=-1)
        h_r, h_z, h_n = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, dim=-1)
{body}
'''

_ENCODE = '''
def encode(cell, x, lengths, h0=None):
    B, T, _ = x.shape
    h = x.new_zeros(B, cell.hidden_size) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t < lengths).to(x.dtype)[:, None]
{body}
    return torch.stack(outputs, dim=1), h
'''

_ADD = '''
class AdditiveAttention(nn.Module):
    def __init__(self, query_dim, key_dim, attn_dim):
        super().__init__()
        self.W_q = nn.Linear(query_dim, attn_dim, bias=False)
        self.W_k = nn.Linear(key_dim, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def forward(self, query, keys, values, key_padding_mask=None):
{body}
'''

_MUL = '''
class MultiplicativeAttention(nn.Module):
    def __init__(self, query_dim, key_dim):
        super().__init__()
        self.W = nn.Linear(key_dim, query_dim, bias=False)

    def forward(self, query, keys, values, key_padding_mask=None):
{body}
'''

_STEP = '''
class DecoderStep(nn.Module):
    def __init__(self, vocab_size, emb_dim, hidden, enc_dim, attn_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.attention = AdditiveAttention(hidden, enc_dim, attn_dim)
        self.cell = GRUCell(emb_dim + enc_dim, hidden)
        self.out = nn.Linear(hidden + enc_dim, vocab_size)

    def forward(self, prev_tokens, state, memory, key_padding_mask=None):
        emb = self.embedding(prev_tokens)
{body}
'''

_TF = '''
def teacher_forcing_loss(step, memory, key_padding_mask, state, targets, sos_id=1, pad_id=0):
    B, T = targets.shape
    prev = torch.full((B,), sos_id, dtype=torch.long)
    all_logits = []
    for t in range(T):
        logits, state, _ = step(prev, state, memory, key_padding_mask)
        all_logits.append(logits)
{feed}
    logits = torch.stack(all_logits, dim=1)
{loss}
    return loss, logits
'''
_TF_LOSS = "    loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1), ignore_index=pad_id)"

_GREEDY = '''
@torch.no_grad()
def greedy_decode(step, memory, key_padding_mask, state, max_len, sos_id=1, eos_id=2, pad_id=0):
    B = memory.shape[0]
    prev = torch.full((B,), sos_id, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    tokens, weights = [], []
    for _ in range({steps}):
        logits, state, w = step(prev, state, memory, key_padding_mask)
        nxt = {nxt}
        tokens.append(nxt)
        weights.append(w.masked_fill(done[:, None], 0.0))
        done = done | (nxt == eos_id)
        prev = nxt
        if {stop}:
            break
    return torch.stack(tokens, dim=1), torch.stack(weights, dim=1)
'''


def greedy(steps="max_len", nxt="logits.argmax(dim=-1).masked_fill(done, pad_id)", stop="done.all()"):
    return _GREEDY.format(steps=steps, nxt=nxt, stop=stop)


MUTANTS = {
    "gru": [
        ("reset gate inside the product (Cho's original, not PyTorch's)", _GRU.format(body='''        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + F.linear(r * h, self.weight_hh.chunk(3)[2], self.bias_hh.chunk(3)[2]))
        return (1 - z) * n + z * h''')),
        ("update gate on the wrong side", _GRU.format(body='''        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return z * n + (1 - z) * h''')),
        ("gates read in the order z, r, n", _GRU.format(body='''        z = torch.sigmoid(i_r + h_r)
        r = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h''')),
        ("calls the built-in", _GRU.format(body='''        return torch.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)''')),
    ],
    "encode": [
        ("runs the cell over padding", _ENCODE.format(body='''        h = cell(x[:, t], h)
        outputs.append(real * h)''')),
        ("outputs at padding not zeroed", _ENCODE.format(body='''        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(h)''')),
        ("ignores h0", _ENCODE.format(body='''        if t == 0:
            h = x.new_zeros(B, cell.hidden_size)
        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(real * h)''')),
        ("mask off by one (drops each sequence's last token)", _ENCODE.format(body='''        real = (t < lengths - 1).to(x.dtype)[:, None]
        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(real * h)''')),
    ],
    "additive": [
        ("ignores the padding mask", _ADD.format(body='''        scores = self.v(torch.tanh(self.W_q(query)[:, None, :] + self.W_k(keys))).squeeze(-1)
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("zeroes padding after the softmax without renormalising", _ADD.format(body='''        scores = self.v(torch.tanh(self.W_q(query)[:, None, :] + self.W_k(keys))).squeeze(-1)
        weights = torch.softmax(scores, dim=-1)
        if key_padding_mask is not None:
            weights = weights.masked_fill(key_padding_mask, 0.0)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("no tanh", _ADD.format(body='''        scores = self.v(self.W_q(query)[:, None, :] + self.W_k(keys)).squeeze(-1)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("context from the keys instead of the values", _ADD.format(body='''        scores = self.v(torch.tanh(self.W_q(query)[:, None, :] + self.W_k(keys))).squeeze(-1)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * keys).sum(dim=1), weights''')),
    ],
    "mult": [
        ("scales like the Transformer (divides by sqrt(d))", _MUL.format(body='''        scores = (self.W(keys) @ query[:, :, None]).squeeze(-1) / math.sqrt(query.shape[-1])
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("ignores the padding mask", _MUL.format(body='''        weights = torch.softmax((self.W(keys) @ query[:, :, None]).squeeze(-1), dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("calls the built-in", _MUL.format(body='''        allowed = None if key_padding_mask is None else ~key_padding_mask[:, None, :]
        k = self.W(keys)
        ctx = F.scaled_dot_product_attention(query[:, None], k, values, attn_mask=allowed, scale=1.0)[:, 0]
        scores = (k @ query[:, :, None]).squeeze(-1)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, float("-inf"))
        return ctx, torch.softmax(scores, dim=-1)''')),
    ],
    "step": [
        ("attends with the new state (query after the update)", _STEP.format(body='''        new_state = self.cell(torch.cat([emb, torch.zeros_like(memory[:, 0])], dim=-1), state)
        context, weights = self.attention(new_state, memory, memory, key_padding_mask)
        return self.out(torch.cat([new_state, context], dim=-1)), new_state, weights''')),
        ("concatenates [context; embedding]", _STEP.format(body='''        context, weights = self.attention(state, memory, memory, key_padding_mask)
        new_state = self.cell(torch.cat([context, emb], dim=-1), state)
        return self.out(torch.cat([new_state, context], dim=-1)), new_state, weights''')),
        ("reads out from the old state", _STEP.format(body='''        context, weights = self.attention(state, memory, memory, key_padding_mask)
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return self.out(torch.cat([state, context], dim=-1)), new_state, weights''')),
        ("drops the padding mask", _STEP.format(body='''        context, weights = self.attention(state, memory, memory)
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return self.out(torch.cat([new_state, context], dim=-1)), new_state, weights''')),
        ("detaches the context (no gradient reaches the attention or the encoder)", _STEP.format(body='''        context, weights = self.attention(state, memory, memory, key_padding_mask)
        context = context.detach()
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return self.out(torch.cat([new_state, context], dim=-1)), new_state, weights''')),
    ],
    "tf": [
        ("feeds the target being predicted (no shift)", _TF.format(
            feed="        prev = targets[:, min(t + 1, T - 1)]", loss=_TF_LOSS)),
        ("feeds its own predictions (free running)", _TF.format(
            feed="        prev = logits.argmax(-1)", loss=_TF_LOSS)),
        ("counts padding in the loss", _TF.format(
            feed="        prev = targets[:, t]",
            loss="    loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))")),
        ("ignores sos_id", _TF.format(feed="        prev = targets[:, t]", loss=_TF_LOSS).replace(
            "torch.full((B,), sos_id", "torch.full((B,), 1")),
    ],
    "greedy": [
        ("keeps writing after <eos>", greedy(nxt="logits.argmax(dim=-1)")),
        ("stops when the first row finishes", greedy(stop="done.any()")),
        ("never stops early", greedy(stop="False")),
        ("one step short of max_len", greedy(steps="max_len - 1 if max_len > 1 else 1")),
    ],
}


# Wrong answers that the visible tests, which once checked only shapes and sums, now fail too: a student
# who runs them sees the mistake before submitting.
VISIBLE = {
    "additive": [
        "no tanh",
        "context from the keys instead of the values",
    ],
    "mult": [
        "scales like the Transformer (divides by sqrt(d))",
    ],
    "step": [
        "attends with the new state (query after the update)",
        "concatenates [context; embedding]",
        "reads out from the old state",
        "drops the padding mask",
    ],
    "tf": [
        "feeds the target being predicted (no shift)",
        "feeds its own predictions (free running)",
        "counts padding in the loss",
    ],
    "greedy": [
        "keeps writing after <eos>",
        "stops when the first row finishes",
        "never stops early",
    ],
}
