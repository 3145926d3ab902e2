"""Typical mistakes students make in chapter 01 (seq2seq with attention: GRU cell, padded encoder, additive and
multiplicative attention, decoder step, teacher forcing, greedy decoding): each must fail the exercise's hidden
tests, and its visible test unless PASSES_VISIBLE says why not."""

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
{body}
'''

_GATES = '''\
        i_r, i_z, i_n = F.linear(x, self.weight_ih, self.bias_ih).chunk(3, dim=-1)
        h_r, h_z, h_n = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, dim=-1)
'''

_ENCODE = '''
def encode(cell, x, lengths, h0=None):
    B, T, _ = x.shape
{body}
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
_ADD_SCORES = "        scores = self.v(torch.tanh(self.W_q(query)[:, None, :] + self.W_k(keys))).squeeze(-1)\n"

_MUL = '''
class MultiplicativeAttention(nn.Module):
    def __init__(self, query_dim, key_dim):
        super().__init__()
        self.W = nn.Linear(key_dim, query_dim{bias})

    def forward(self, query, keys, values, key_padding_mask=None):
{body}
'''
_MUL_SCORES = "        scores = (self.W(keys) @ query[:, :, None]).squeeze(-1)\n"
_MASK = '''\
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, float("-inf"))
'''


def mul(body, bias=", bias=False"):
    return _MUL.format(bias=bias, body=body)


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
{body}
'''
_TF_LOOP = '''\
    all_logits = []
    for t in range(T):
        logits, state, _ = step(prev, state, memory, key_padding_mask)
        all_logits.append(logits)
        prev = targets[:, t]
    logits = torch.stack(all_logits, dim=1)
'''

_GREEDY = '''
@torch.no_grad()
def greedy_decode(step, memory, key_padding_mask, state, max_len, sos_id=1, eos_id=2, pad_id=0):
    B = memory.shape[0]
    prev = torch.full((B,), sos_id, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    tokens, weights = [], []
    for _ in range(max_len):
        logits, state, w = step(prev, state, memory, key_padding_mask)
{body}
    return {ret}
'''
_GREEDY_RET = "torch.stack(tokens, dim=1), torch.stack(weights, dim=1)"


def greedy(body, ret=_GREEDY_RET):
    return _GREEDY.format(body=body, ret=ret)


MISTAKES = {
    "gru": [
        ("reset gate multiplies the raw state, not its projection", _GRU.format(body=_GATES + '''\
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h)
        return (1 - z) * n + z * h''')),
        ("forgets the recurrent biases bias_hh", _GRU.format(body='''\
        i_r, i_z, i_n = F.linear(x, self.weight_ih, self.bias_ih).chunk(3, dim=-1)
        h_r, h_z, h_n = F.linear(h, self.weight_hh).chunk(3, dim=-1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h''')),
        ("sigmoid instead of tanh for the candidate", _GRU.format(body=_GATES + '''\
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.sigmoid(i_n + r * h_n)
        return (1 - z) * n + z * h''')),
        ("returns the candidate (no interpolation with the old state)", _GRU.format(body=_GATES + '''\
        r = torch.sigmoid(i_r + h_r)
        n = torch.tanh(i_n + r * h_n)
        return n''')),
        ("gates read in the order r, n, z", _GRU.format(body='''\
        i_r, i_n, i_z = F.linear(x, self.weight_ih, self.bias_ih).chunk(3, dim=-1)
        h_r, h_n, h_z = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, dim=-1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h''')),
        ("reset gate scales the input part of the candidate too", _GRU.format(body=_GATES + '''\
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(r * (i_n + h_n))
        return (1 - z) * n + z * h''')),
        ("no tanh on the candidate", _GRU.format(body=_GATES + '''\
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = i_n + r * h_n
        return (1 - z) * n + z * h''')),
        ("keeps the projected state instead of the state", _GRU.format(body=_GATES + '''\
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h_n''')),
    ],
    "encode": [
        ("final state read from the last time step's output", _ENCODE.format(body='''\
    h = x.new_zeros(B, cell.hidden_size) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t < lengths).to(x.dtype)[:, None]
        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(real * h)
    outputs = torch.stack(outputs, dim=1)
    return outputs, outputs[:, -1]''')),
        ("mask keeps one padded step (t <= length)", _ENCODE.format(body='''\
    h = x.new_zeros(B, cell.hidden_size) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t <= lengths).to(x.dtype)[:, None]
        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(real * h)
    return torch.stack(outputs, dim=1), h''')),
        ("outputs stacked time-major (T, B, H)", _ENCODE.format(body='''\
    h = x.new_zeros(B, cell.hidden_size) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t < lengths).to(x.dtype)[:, None]
        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(real * h)
    return torch.stack(outputs), h''')),
        ("initial state sized by the input, not the hidden size", _ENCODE.format(body='''\
    h = x.new_zeros(B, x.shape[-1]) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t < lengths).to(x.dtype)[:, None]
        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(real * h)
    return torch.stack(outputs, dim=1), h''')),
        ("mask inverted (True read as padding)", _ENCODE.format(body='''\
    h = x.new_zeros(B, cell.hidden_size) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t >= lengths).to(x.dtype)[:, None]
        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(real * h)
    return torch.stack(outputs, dim=1), h''')),
        ("outputs record the state entering each step", _ENCODE.format(body='''\
    h = x.new_zeros(B, cell.hidden_size) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t < lengths).to(x.dtype)[:, None]
        outputs.append(real * h)
        h = real * cell(x[:, t], h) + (1 - real) * h
    return torch.stack(outputs, dim=1), h''')),
        ("detaches the state between steps (truncated backprop)", _ENCODE.format(body='''\
    h = x.new_zeros(B, cell.hidden_size) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t < lengths).to(x.dtype)[:, None]
        h = real * cell(x[:, t], h.detach()) + (1 - real) * h.detach()
        outputs.append(real * h)
    return torch.stack(outputs, dim=1), h''')),
        ("final state gathered at index length (one past the last real step)", _ENCODE.format(body='''\
    h = x.new_zeros(B, cell.hidden_size) if h0 is None else h0
    outputs = []
    for t in range(T):
        real = (t < lengths).to(x.dtype)[:, None]
        h = real * cell(x[:, t], h) + (1 - real) * h
        outputs.append(real * h)
    outputs = torch.stack(outputs, dim=1)
    return outputs, outputs[torch.arange(B), lengths]''')),
    ],
    "additive": [
        ("mask inverted (True taken as a real key)", _ADD.format(body=_ADD_SCORES + '''\
        if key_padding_mask is not None:
            scores = scores.masked_fill(~key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("padding scores set to 0 instead of -inf", _ADD.format(body=_ADD_SCORES + '''\
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, 0.0)
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("softmax over the batch instead of the source positions", _ADD.format(body=_ADD_SCORES + _MASK + '''\
        weights = torch.softmax(scores, dim=0)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("sums over the attention dimension instead of applying v", _ADD.format(body='''\
        scores = torch.tanh(self.W_q(query)[:, None, :] + self.W_k(keys)).sum(dim=-1)
''' + _MASK + '''\
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("context averaged over the positions instead of summed", _ADD.format(body=_ADD_SCORES + _MASK + '''\
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).mean(dim=1), weights''')),
        ("returns the scores as the weights", _ADD.format(body=_ADD_SCORES + _MASK + '''\
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), scores''')),
        ("sigmoid instead of softmax", _ADD.format(body=_ADD_SCORES + _MASK + '''\
        weights = torch.sigmoid(scores)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("masks unconditionally (fails without a mask)", _ADD.format(body=_ADD_SCORES + '''\
        scores = scores.masked_fill(key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("squeezes every axis of size one, the batch of one's too", """
class AdditiveAttention(nn.Module):
    \"\"\"Bahdanau attention: score_j = v^T tanh(W_q q + W_k k_j).\"\"\"

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int) -> None:
        super().__init__()
        self.W_q = nn.Linear(query_dim, attn_dim, bias=False)
        self.W_k = nn.Linear(key_dim, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                key_padding_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        \"\"\"query (B, Dq), keys (B, S, Dk), values (B, S, Dv), key_padding_mask (B, S) bool, True = padding.

        Returns ``(context, weights)``: context (B, Dv) and weights (B, S), summing to 1 over the real keys
        and exactly 0 at padding. Every row has at least one real key.
        \"\"\"
        scores = self.v(torch.tanh(self.W_q(query).unsqueeze(1) + self.W_k(keys))).squeeze()  # (B, S)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask.squeeze(), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        context = torch.matmul(weights.unsqueeze(-2), values).squeeze()
        return context, weights
"""),
    ],
    "mult": [
        ("forgets W (Luong's dot score)", mul('''\
        scores = (keys @ query[:, :, None]).squeeze(-1)
''' + _MASK + '''\
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("squeeze() without a dimension: a batch of one loses its batch axis", mul('''\
        scores = (self.W(keys) @ query[:, :, None]).squeeze()
''' + _MASK + '''\
        weights = torch.softmax(scores, dim=-1)
        return (weights[..., None] * values).sum(dim=-2), weights''')),
        ("mask inverted (True taken as a real key)", mul(_MUL_SCORES + '''\
        if key_padding_mask is not None:
            scores = scores.masked_fill(~key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("padding scores set to 0 instead of -inf", mul(_MUL_SCORES + '''\
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, 0.0)
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("softmax over the batch instead of the source positions", mul(_MUL_SCORES + _MASK + '''\
        weights = torch.softmax(scores, dim=0)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("weights @ values without the batch dimension", mul(_MUL_SCORES + _MASK + '''\
        weights = torch.softmax(scores, dim=-1)
        return weights @ values, weights''')),
        ("W with a bias (nn.Linear's default)", mul(_MUL_SCORES + _MASK + '''\
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''', bias="")),
        ("masks unconditionally (fails without a mask)", mul(_MUL_SCORES + '''\
        scores = scores.masked_fill(key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
        ("log-softmax weights", mul(_MUL_SCORES + _MASK + '''\
        weights = torch.log_softmax(scores, dim=-1)
        return (weights[:, :, None] * values).sum(dim=1), weights''')),
    ],
    "step": [
        ("returns the previous state", _STEP.format(body='''\
        context, weights = self.attention(state, memory, memory, key_padding_mask)
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return self.out(torch.cat([new_state, context], dim=-1)), state, weights''')),
        ("softmax on the logits (returns probabilities)", _STEP.format(body='''\
        context, weights = self.attention(state, memory, memory, key_padding_mask)
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return torch.softmax(self.out(torch.cat([new_state, context], dim=-1)), dim=-1), new_state, weights''')),
        ("tanh on the read-out (Luong's attentional state)", _STEP.format(body='''\
        context, weights = self.attention(state, memory, memory, key_padding_mask)
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return torch.tanh(self.out(torch.cat([new_state, context], dim=-1))), new_state, weights''')),
        ("read-out from [context; new state]", _STEP.format(body='''\
        context, weights = self.attention(state, memory, memory, key_padding_mask)
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return self.out(torch.cat([context, new_state], dim=-1)), new_state, weights''')),
        ("inverts the padding mask it passes on", _STEP.format(body='''\
        mask = None if key_padding_mask is None else ~key_padding_mask
        context, weights = self.attention(state, memory, memory, mask)
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return self.out(torch.cat([new_state, context], dim=-1)), new_state, weights''')),
        ("GRU cell called as cell(state, input)", _STEP.format(body='''\
        context, weights = self.attention(state, memory, memory, key_padding_mask)
        new_state = self.cell(state, torch.cat([emb, context], dim=-1))
        return self.out(torch.cat([new_state, context], dim=-1)), new_state, weights''')),
        ("read-out from [new state; embedding]", _STEP.format(body='''\
        context, weights = self.attention(state, memory, memory, key_padding_mask)
        new_state = self.cell(torch.cat([emb, context], dim=-1), state)
        return self.out(torch.cat([new_state, emb], dim=-1)), new_state, weights''')),
    ],
    "tf": [
        ("does not carry the state from step to step", _TF.format(body='''\
    all_logits = []
    for t in range(T):
        logits, _, _ = step(prev, state, memory, key_padding_mask)
        all_logits.append(logits)
        prev = targets[:, t]
    logits = torch.stack(all_logits, dim=1)
    loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1), ignore_index=pad_id)
    return loss, logits''')),
        ("mean of each sequence's mean loss", _TF.format(body=_TF_LOOP + '''\
    per_token = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    real = (targets != pad_id).float()
    loss = ((per_token * real).sum(dim=1) / real.sum(dim=1)).mean()
    return loss, logits''')),
        ("padding masked but the sum divided by every position", _TF.format(body=_TF_LOOP + '''\
    per_token = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    loss = (per_token * (targets != pad_id)).sum() / targets.numel()
    return loss, logits''')),
        ("nll_loss on raw logits (no log-softmax)", _TF.format(body=_TF_LOOP + '''\
    loss = F.nll_loss(logits.reshape(B * T, -1), targets.reshape(-1), ignore_index=pad_id)
    return loss, logits''')),
        ("padding id hard-coded to 0", _TF.format(body=_TF_LOOP + '''\
    loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1), ignore_index=0)
    return loss, logits''')),
        ("returns the loss as a Python float", _TF.format(body=_TF_LOOP + '''\
    loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1), ignore_index=pad_id)
    return loss.item(), logits''')),
        ("logits stacked time-major (T, B, V)", _TF.format(body='''\
    all_logits = []
    for t in range(T):
        logits, state, _ = step(prev, state, memory, key_padding_mask)
        all_logits.append(logits)
        prev = targets[:, t]
    logits = torch.stack(all_logits)
    loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1), ignore_index=pad_id)
    return loss, logits''')),
        ("one step short (loops over T - 1 inputs)", _TF.format(body='''\
    all_logits = []
    for t in range(T - 1):
        logits, state, _ = step(prev, state, memory, key_padding_mask)
        all_logits.append(logits)
        prev = targets[:, t]
    logits = torch.stack(all_logits, dim=1)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets[:, :-1].reshape(-1), ignore_index=pad_id)
    return loss, logits''')),
    ],
    "greedy": [
        ("attention weights not zeroed after <eos>", greedy('''\
        nxt = logits.argmax(dim=-1).masked_fill(done, pad_id)
        tokens.append(nxt)
        weights.append(w)
        done = done | (nxt == eos_id)
        prev = nxt
        if done.all():
            break''')),
        ("<eos> itself replaced by padding (done updated first)", greedy('''\
        nxt = logits.argmax(dim=-1)
        done = done | (nxt == eos_id)
        nxt = nxt.masked_fill(done, pad_id)
        tokens.append(nxt)
        weights.append(w.masked_fill(done[:, None], 0.0))
        prev = nxt
        if done.all():
            break''')),
        ("output starts with <sos>", greedy('''\
        nxt = logits.argmax(dim=-1).masked_fill(done, pad_id)
        tokens.append(nxt)
        weights.append(w.masked_fill(done[:, None], 0.0))
        done = done | (nxt == eos_id)
        prev = nxt
        if done.all():
            break''', ret="torch.stack([torch.full((B,), sos_id)] + tokens, dim=1), torch.stack(weights, dim=1)")),
        ("feeds <sos> at every step", greedy('''\
        nxt = logits.argmax(dim=-1).masked_fill(done, pad_id)
        tokens.append(nxt)
        weights.append(w.masked_fill(done[:, None], 0.0))
        done = done | (nxt == eos_id)
        if done.all():
            break''')),
        ("stops before keeping the step that finished the batch", greedy('''\
        nxt = logits.argmax(dim=-1).masked_fill(done, pad_id)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tokens.append(nxt)
        weights.append(w.masked_fill(done[:, None], 0.0))
        prev = nxt''')),
        ("<eos> and padding ids hard-coded (2 and 0)", greedy('''\
        nxt = logits.argmax(dim=-1).masked_fill(done, 0)
        tokens.append(nxt)
        weights.append(w.masked_fill(done[:, None], 0.0))
        done = done | (nxt == 2)
        prev = nxt
        if done.all():
            break''')),
        ("forgets which rows have finished (done not accumulated)", greedy('''\
        nxt = logits.argmax(dim=-1).masked_fill(done, pad_id)
        tokens.append(nxt)
        weights.append(w.masked_fill(done[:, None], 0.0))
        done = nxt == eos_id
        prev = nxt
        if done.all():
            break''')),
        ("results stacked time-major (L, B)", greedy('''\
        nxt = logits.argmax(dim=-1).masked_fill(done, pad_id)
        tokens.append(nxt)
        weights.append(w.masked_fill(done[:, None], 0.0))
        done = done | (nxt == eos_id)
        prev = nxt
        if done.all():
            break''', ret="torch.stack(tokens), torch.stack(weights)")),
    ],
}

PASSES_VISIBLE: dict[tuple[str, str], str] = {}
