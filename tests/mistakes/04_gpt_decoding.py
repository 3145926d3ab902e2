"""Typical mistakes students make in chapter 04 (causal attention with a cache, the GPT, the language-modelling
loss, prompt-masked labels, greedy decoding, temperature / top-k / top-p, drawing a token, n-gram blocking,
beam search, cached generation): each must fail the exercise's hidden tests, and its visible test unless
PASSES_VISIBLE says why not.

MISTAKES maps an exercise (answer cell ``<exercise>_answer``) to (the mistake, the answer cell as the student
wrote it). They differ from the planted wrong answers of tests/mutants/04_gpt_decoding.py. Where an answer
cell defines several functions or classes, a mistake defines only the one it gets wrong.
"""

_ATTENTION = '''
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd {n_embd} is not divisible by n_head {n_head}")
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x, past=None):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.c_attn(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        new_k, new_v = k, v
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        P = k.shape[2] - T
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)
        visible = torch.ones(T, P + T, dtype=torch.bool).tril(diagonal=P)
        weights = scores.masked_fill(~visible, float("-inf")).softmax(dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y), (k, v)
'''


def _attention(*replacements: tuple[str, str]) -> str:
    source = _ATTENTION
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    return source


_BLOCK = '''
class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=1e-5)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd, eps=1e-5)
        self.mlp = MLP(n_embd)

    def forward(self, x, past=None):
'''

_GPT = '''
class GPT(nn.Module):
    def __init__(self, vocab_size, n_positions, n_embd, n_layer, n_head):
        super().__init__()
        self.n_positions = n_positions
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.h = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, eps=1e-5)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids, past=None):
        P = 0 if past is None else past[0][0].shape[2]
        T = input_ids.shape[1]
        if P + T > self.n_positions:
            raise ValueError(f"{P + T} positions exceed the model's {self.n_positions}")
'''

_LOSS = '''
def lm_loss(logits, input_ids, attention_mask=None):
    log_probs = logits[:, :-1].log_softmax(dim=-1)
    targets = input_ids[:, 1:]
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    counted = torch.ones_like(nll) if attention_mask is None else attention_mask[:, 1:].to(nll.dtype)
'''

_BEAM_HEAD = '''
@torch.no_grad()
def beam_search(model, input_ids, num_beams, max_new_tokens, eos_token_id, length_penalty=1.0):
    k = num_beams
    beams = input_ids
    beam_scores = torch.zeros(1)
    pool = []
    for t in range(1, max_new_tokens + 1):
'''

_BEAM_TAIL = '''
    L = max(len(g) for _, g in pool)
    sequences = torch.full((len(pool), input_ids.shape[1] + L), eos_token_id, dtype=torch.long)
    sequences[:, : input_ids.shape[1]] = input_ids
    for i, (_, generated) in enumerate(pool):
        sequences[i, input_ids.shape[1]: input_ids.shape[1] + len(generated)] = generated
    return sequences, torch.tensor([s for s, _ in pool], dtype=torch.float32)
'''

MISTAKES = {
    "attention": [
        ("keys and values taken in the wrong order from c_attn",
         _attention(("q, k, v = self.c_attn(x).split(C, dim=-1)", "q, v, k = self.c_attn(x).split(C, dim=-1)"))),
        ("softmax over the queries instead of the keys",
         _attention(('float("-inf")).softmax(dim=-1)', 'float("-inf")).softmax(dim=-2)'))),
        ("heads merged without moving the head axis back",
         _attention(("y = (weights @ v).transpose(1, 2).reshape(B, T, C)", "y = (weights @ v).reshape(B, T, C)"))),
        ("masked scores set to 0 instead of −inf",
         _attention(('scores.masked_fill(~visible, float("-inf"))', "scores.masked_fill(~visible, 0.0)"))),
        ("the mask applied to the weights after the softmax",
         _attention(('weights = scores.masked_fill(~visible, float("-inf")).softmax(dim=-1)',
                     "weights = scores.softmax(dim=-1).masked_fill(~visible, 0.0)"))),
        ("returns the keys and values of the new positions only",
         _attention(("return self.c_proj(y), (k, v)", "return self.c_proj(y), (new_k, new_v)"))),
        ("the cached keys put after the new ones",
         _attention(("k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)",
                     "k, v = torch.cat([k, past[0]], dim=2), torch.cat([v, past[1]], dim=2)"))),
    ],
    "gpt": [
        ("a model filled to exactly n_positions refused", _GPT.replace("if P + T > self.n_positions:",
                                                                      "if P + T >= self.n_positions:") + '''
        positions = torch.arange(P, P + T, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(positions)
        present = []
        for i, block in enumerate(self.h):
            x, layer_cache = block(x, None if past is None else past[i])
            present.append(layer_cache)
        return lm.LMOutput(self.lm_head(self.ln_f(x)), present)
'''),
        ("the length check ignores the cache", _GPT.replace("if P + T > self.n_positions:", "if T > self.n_positions:")
         + '''
        positions = torch.arange(P, P + T, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(positions)
        present = []
        for i, block in enumerate(self.h):
            x, layer_cache = block(x, None if past is None else past[i])
            present.append(layer_cache)
        return lm.LMOutput(self.lm_head(self.ln_f(x)), present)
'''),
        ("ln_1 before both sub-layers", _BLOCK + '''
        attended, present = self.attn(self.ln_1(x), past)
        x = x + attended
        x = x + self.mlp(self.ln_1(x))
        return x, present
'''),
        ("attention and MLP side by side on the same input", _BLOCK + '''
        attended, present = self.attn(self.ln_1(x), past)
        x = x + attended + self.mlp(self.ln_2(x))
        return x, present
'''),
        ("the MLP's residual adds the normalised stream", _BLOCK + '''
        attended, present = self.attn(self.ln_1(x), past)
        x = x + attended
        h = self.ln_2(x)
        x = h + self.mlp(h)
        return x, present
'''),
        ("positions counted from 1", _GPT + '''
        positions = torch.arange(P + 1, P + T + 1)
        x = self.wte(input_ids) + self.wpe(positions)
        present = []
        for i, block in enumerate(self.h):
            x, layer_cache = block(x, None if past is None else past[i])
            present.append(layer_cache)
        return lm.LMOutput(self.lm_head(self.ln_f(x)), present)
'''),
        ("every block given the first block's cache", _GPT + '''
        positions = torch.arange(P, P + T)
        x = self.wte(input_ids) + self.wpe(positions)
        present = []
        for block in self.h:
            x, layer_cache = block(x, None if past is None else past[0])
            present.append(layer_cache)
        return lm.LMOutput(self.lm_head(self.ln_f(x)), present)
'''),
        ("the returned cache holds the last block's keys and values only", _GPT + '''
        positions = torch.arange(P, P + T)
        x = self.wte(input_ids) + self.wpe(positions)
        present = []
        for i, block in enumerate(self.h):
            x, layer_cache = block(x, None if past is None else past[i])
            present = [layer_cache]
        return lm.LMOutput(self.lm_head(self.ln_f(x)), present)
'''),
        ("no position embeddings", _GPT + '''
        x = self.wte(input_ids)
        present = []
        for i, block in enumerate(self.h):
            x, layer_cache = block(x, None if past is None else past[i])
            present.append(layer_cache)
        return lm.LMOutput(self.lm_head(self.ln_f(x)), present)
'''),
    ],
    "loss": [
        ("shifted the wrong way: each position scored on the token before it", '''
def lm_loss(logits, input_ids, attention_mask=None):
    log_probs = logits[:, 1:].log_softmax(dim=-1)
    targets = input_ids[:, :-1]
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    counted = torch.ones_like(nll) if attention_mask is None else attention_mask[:, 1:].to(nll.dtype)
    return (nll * counted).sum() / counted.sum()
'''),
        ("log_softmax over the positions, not the vocabulary",
         _LOSS.replace("log_softmax(dim=-1)", "log_softmax(dim=1)") + '''
    return (nll * counted).sum() / counted.sum()
'''),
        ("padding left out of the sum but not of the count", _LOSS + '''    return (nll * counted).sum() / nll.numel()
'''),
        ("the count taken from the whole mask, first position included", _LOSS + '''
    return (nll * counted).sum() / (counted.sum() if attention_mask is None else attention_mask.sum())
'''),
        ("the sum of the losses, not their mean", _LOSS + '''    return (nll * counted).sum()
'''),
        ("bits instead of nats", _LOSS + '''    return (nll * counted).sum() / counted.sum() / math.log(2)
'''),
        ("perplexity forgets the mask", '''
def perplexity(logits, input_ids, attention_mask=None):
    return lm_loss(logits, input_ids).exp()
'''),
        ("perplexity as the mean of 1 / p per token", '''
def perplexity(logits, input_ids, attention_mask=None):
    nll = -logits[:, :-1].log_softmax(-1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    counted = torch.ones_like(nll) if attention_mask is None else attention_mask[:, 1:].to(nll.dtype)
    return (nll.exp() * counted).sum() / counted.sum()
'''),
        ("log of the softmax, -inf for a very unlikely target", """
def lm_loss(logits: torch.Tensor, input_ids: torch.Tensor,
            attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    \"\"\"Mean next-token cross-entropy in nats.

    Args:
        logits: (B, T, V) float, the model's output on ``input_ids``; position t predicts input_ids[:, t + 1].
        input_ids: (B, T) int64.
        attention_mask: (B, T) int or bool, 1 (True) for real tokens and 0 (False) for padding; None means no
            padding. Targets whose mask is 0 are not counted.

    Returns:
        A scalar: the sum of −log p(target) over the counted targets divided by their number.
    \"\"\"
    logp = torch.log(torch.softmax(logits[:, :-1], dim=-1))  # (B, T-1, V)
    targets = input_ids[:, 1:]
    nll = -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    if attention_mask is None:
        return nll.mean()
    counted = attention_mask[:, 1:].to(nll.dtype)
    return (nll * counted).sum() / counted.sum()


def perplexity(logits: torch.Tensor, input_ids: torch.Tensor,
               attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    \"\"\"exp of :func:`lm_loss`: the perplexity of the counted targets (a scalar).\"\"\"
    return torch.exp(lm_loss(logits, input_ids, attention_mask))
"""),
    ],
    "labels": [
        ("left padding", '''
def prompt_masked_batch(examples, pad_id):
    L = max(len(p) + len(c) for p, c in examples)
    input_ids = torch.full((len(examples), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(len(examples), L, dtype=torch.long)
    labels = torch.full((len(examples), L), -100, dtype=torch.long)
    for i, (prompt, completion) in enumerate(examples):
        n, m = len(prompt), len(completion)
        input_ids[i, L - n - m:] = torch.tensor(prompt + completion, dtype=torch.long)
        attention_mask[i, L - n - m:] = 1
        labels[i, L - m:] = torch.tensor(completion, dtype=torch.long)
    return input_ids, attention_mask, labels
'''),
        ("the attention mask covers the completion only", '''
def prompt_masked_batch(examples, pad_id):
    L = max(len(p) + len(c) for p, c in examples)
    input_ids = torch.full((len(examples), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(len(examples), L, dtype=torch.long)
    labels = torch.full((len(examples), L), -100, dtype=torch.long)
    for i, (prompt, completion) in enumerate(examples):
        n, m = len(prompt), len(completion)
        input_ids[i, : n + m] = torch.tensor(prompt + completion, dtype=torch.long)
        attention_mask[i, n: n + m] = 1
        labels[i, n: n + m] = torch.tensor(completion, dtype=torch.long)
    return input_ids, attention_mask, labels
'''),
        ("labels hold the pad id on padding", '''
def prompt_masked_batch(examples, pad_id):
    L = max(len(p) + len(c) for p, c in examples)
    input_ids = torch.full((len(examples), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(len(examples), L, dtype=torch.long)
    labels = torch.full((len(examples), L), pad_id, dtype=torch.long)
    for i, (prompt, completion) in enumerate(examples):
        n, m = len(prompt), len(completion)
        input_ids[i, : n + m] = torch.tensor(prompt + completion, dtype=torch.long)
        attention_mask[i, : n + m] = 1
        labels[i, : n] = -100
        labels[i, n: n + m] = torch.tensor(completion, dtype=torch.long)
    return input_ids, attention_mask, labels
'''),
        ("the width is the longest prompt plus the longest completion", '''
def prompt_masked_batch(examples, pad_id):
    L = max(len(p) for p, _ in examples) + max(len(c) for _, c in examples)
    input_ids = torch.full((len(examples), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(len(examples), L, dtype=torch.long)
    labels = torch.full((len(examples), L), -100, dtype=torch.long)
    for i, (prompt, completion) in enumerate(examples):
        n, m = len(prompt), len(completion)
        input_ids[i, : n + m] = torch.tensor(prompt + completion, dtype=torch.long)
        attention_mask[i, : n + m] = 1
        labels[i, n: n + m] = torch.tensor(completion, dtype=torch.long)
    return input_ids, attention_mask, labels
'''),
        ("the prompt found by value: completion tokens that occur in the prompt are masked", '''
def prompt_masked_batch(examples, pad_id):
    L = max(len(p) + len(c) for p, c in examples)
    input_ids = torch.full((len(examples), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(len(examples), L, dtype=torch.long)
    labels = torch.full((len(examples), L), -100, dtype=torch.long)
    for i, (prompt, completion) in enumerate(examples):
        n, m = len(prompt), len(completion)
        input_ids[i, : n + m] = torch.tensor(prompt + completion, dtype=torch.long)
        attention_mask[i, : n + m] = 1
        labels[i, n: n + m] = torch.tensor([-100 if c in prompt else c for c in completion], dtype=torch.long)
    return input_ids, attention_mask, labels
'''),
        ("a boolean attention mask", '''
def prompt_masked_batch(examples, pad_id):
    L = max(len(p) + len(c) for p, c in examples)
    input_ids = torch.full((len(examples), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(len(examples), L, dtype=torch.bool)
    labels = torch.full((len(examples), L), -100, dtype=torch.long)
    for i, (prompt, completion) in enumerate(examples):
        n, m = len(prompt), len(completion)
        input_ids[i, : n + m] = torch.tensor(prompt + completion, dtype=torch.long)
        attention_mask[i, : n + m] = True
        labels[i, n: n + m] = torch.tensor(completion, dtype=torch.long)
    return input_ids, attention_mask, labels
'''),
        ("the last completion token left out of the labels", '''
def prompt_masked_batch(examples, pad_id):
    L = max(len(p) + len(c) for p, c in examples)
    input_ids = torch.full((len(examples), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(len(examples), L, dtype=torch.long)
    labels = torch.full((len(examples), L), -100, dtype=torch.long)
    for i, (prompt, completion) in enumerate(examples):
        n, m = len(prompt), len(completion)
        input_ids[i, : n + m] = torch.tensor(prompt + completion, dtype=torch.long)
        attention_mask[i, : n + m] = 1
        labels[i, n: n + m - 1] = torch.tensor(completion[:-1], dtype=torch.long)
    return input_ids, attention_mask, labels
'''),
    ],
    "greedy": [
        ("an EOS id of 0 taken for no EOS", '''
@torch.no_grad()
def greedy_decode(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        next_token = model(ids).logits[:, -1].argmax(dim=-1)
        if eos_token_id:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all():
            break
    return ids
'''),
        ("keeps going after every row has finished", '''
@torch.no_grad()
def greedy_decode(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        next_token = model(ids).logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
    return ids
'''),
        ("finished rows padded with 0, not the EOS", '''
@torch.no_grad()
def greedy_decode(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        next_token = model(ids).logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, 0)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all():
            break
    return ids
'''),
        ("one token too few", '''
@torch.no_grad()
def greedy_decode(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens - 1):
        next_token = model(ids).logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all():
            break
    return ids
'''),
        ("stops before appending the last row's EOS", '''
@torch.no_grad()
def greedy_decode(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        next_token = model(ids).logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        if finished.all():
            break
        ids = torch.cat([ids, next_token[:, None]], dim=1)
    return ids
'''),
        ("the model sees only the last token", '''
@torch.no_grad()
def greedy_decode(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        next_token = model(ids[:, -1:]).logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all():
            break
    return ids
'''),
        ("returns the new tokens without the prompt", '''
@torch.no_grad()
def greedy_decode(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        next_token = model(ids).logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all():
            break
    return ids[:, input_ids.shape[1]:]
'''),
    ],
    "filters": [
        ("ties with the k-th logit dropped: exactly k kept", '''
def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k must be at least 1")
    k = min(k, logits.shape[-1])
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))
'''),
        ("a temperature of 0 is not refused", '''
def apply_temperature(logits, temperature):
    if temperature < 0:
        raise ValueError("the temperature must be positive")
    return logits / temperature
'''),
        ("k larger than the vocabulary fails", '''
def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k must be at least 1")
    kth = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))
'''),
        ("the k-th value read from an ascending sort", '''
def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k must be at least 1")
    k = min(k, logits.shape[-1])
    kth = logits.sort(dim=-1).values[..., k - 1: k]
    return logits.masked_fill(logits < kth, float("-inf"))
'''),
        ("the k-th largest removed too", '''
def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k must be at least 1")
    k = min(k, logits.shape[-1])
    kth = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits <= kth, float("-inf"))
'''),
        ("top-k writes −inf into its input", '''
def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k must be at least 1")
    k = min(k, logits.shape[-1])
    kth = logits.topk(k, dim=-1).values[..., -1:]
    logits[logits < kth] = float("-inf")
    return logits
'''),
        ("top-p mapped back to the vocabulary with gather, not scatter", '''
def top_p_filter(logits, p):
    if not 0 < p <= 1:
        raise ValueError("p must be in (0, 1]")
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    remove_sorted = before >= p
    remove_sorted[..., 0] = False
    return logits.masked_fill(remove_sorted.gather(-1, order), float("-inf"))
'''),
        ("p = 1 refused", '''
def top_p_filter(logits, p):
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    remove_sorted = before >= p
    remove_sorted[..., 0] = False
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return logits.masked_fill(remove, float("-inf"))
'''),
        ("divides the caller's logits in place", """
def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    \"\"\"logits (B, V) / temperature; a temperature ≤ 0 raises ValueError.\"\"\"
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return logits.div_(temperature)


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    \"\"\"Set every logit below the row's k-th largest to −inf (ties with it are kept). k ≥ V keeps all;
    k < 1 raises ValueError.\"\"\"
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if k >= logits.shape[-1]:
        return logits.clone()
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (B, 1)
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    \"\"\"Keep, per row, the most probable tokens until their probability reaches p; the rest → −inf.

    A token is kept when the total probability of the tokens more probable than it is below p; the most
    probable token is always kept. p outside (0, 1] raises ValueError.
    \"\"\"
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p}")
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # probability of the tokens more probable than each
    remove_sorted = before >= p
    remove_sorted[..., 0] = False
    remove = torch.zeros_like(remove_sorted).scatter(-1, order, remove_sorted)
    return logits.masked_fill(remove, float("-inf"))
"""),
    ],
    "sample": [
        ("one uniform number for the whole batch", '''
def sample_next(logits, generator=None):
    probs = logits.float().softmax(dim=-1)
    cdf = probs.cumsum(dim=-1)
    u = torch.rand(1, 1, generator=generator) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp(max=logits.shape[-1] - 1)
'''),
        ("Gumbel-max with the noise's sign flipped", '''
def sample_next(logits, generator=None):
    u = torch.rand(logits.shape, generator=generator).clamp(min=1e-12)
    return (logits + torch.log(-torch.log(u))).argmax(dim=-1)
'''),
        ("Gumbel-max with −log u as the noise", '''
def sample_next(logits, generator=None):
    u = torch.rand(logits.shape, generator=generator).clamp(min=1e-12)
    return (logits - torch.log(u)).argmax(dim=-1)
'''),
        ("the index counted as a float", '''
def sample_next(logits, generator=None):
    cdf = logits.float().softmax(dim=-1).cumsum(dim=-1)
    u = torch.rand(logits.shape[0], 1, generator=generator) * cdf[:, -1:]
    return (cdf <= u).float().sum(dim=-1)
'''),
        ("a fresh generator with a fixed seed", '''
def sample_next(logits, generator=None):
    generator = torch.Generator().manual_seed(0)
    probs = logits.float().softmax(dim=-1)
    cdf = probs.cumsum(dim=-1)
    u = torch.rand(logits.shape[0], 1, generator=generator) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp(max=logits.shape[-1] - 1)
'''),
        ("exp of the logits taken as probabilities, not normalised", '''
def sample_next(logits, generator=None):
    cdf = logits.float().exp().cumsum(dim=-1)
    u = torch.rand(logits.shape[0], 1, generator=generator)
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp(max=logits.shape[-1] - 1)
'''),
        ("softmax by hand without subtracting the largest logit (huge logits overflow)", '''
def sample_next(logits, generator=None):
    weights = torch.exp(logits.float())
    cdf = (weights / weights.sum(dim=-1, keepdim=True)).cumsum(dim=-1)
    u = torch.rand(logits.shape[0], 1, generator=generator)
    return torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze(-1).clamp(max=logits.shape[-1] - 1)
'''),
    ],
    "ngram": [
        ("one banned set for the whole batch", '''
def block_repeated_ngrams(input_ids, logits, n):
    if n < 1:
        raise ValueError("n must be at least 1")
    out = logits.clone()
    T = input_ids.shape[1]
    if T < n:
        return out
    banned = set()
    for row in input_ids.tolist():
        prefix = row[T - n + 1:] if n > 1 else []
        banned |= {row[s + n - 1] for s in range(T - n + 1) if row[s: s + n - 1] == prefix}
    out[:, sorted(banned)] = float("-inf")
    return out
'''),
        ("bans the first token of the n-gram, not the one that completes it", '''
def block_repeated_ngrams(input_ids, logits, n):
    if n < 1:
        raise ValueError("n must be at least 1")
    out = logits.clone()
    T = input_ids.shape[1]
    if T < n:
        return out
    for b, row in enumerate(input_ids.tolist()):
        prefix = row[T - n + 1:] if n > 1 else []
        banned = {row[s] for s in range(T - n + 1) if row[s + 1: s + n] == prefix}
        out[b, sorted(banned)] = float("-inf")
    return out
'''),
        ("the prefix taken from the start of the row", '''
def block_repeated_ngrams(input_ids, logits, n):
    if n < 1:
        raise ValueError("n must be at least 1")
    out = logits.clone()
    T = input_ids.shape[1]
    if T < n:
        return out
    for b, row in enumerate(input_ids.tolist()):
        prefix = row[: n - 1]
        banned = {row[s + n - 1] for s in range(T - n + 1) if row[s: s + n - 1] == prefix}
        out[b, sorted(banned)] = float("-inf")
    return out
'''),
        ("a text of exactly n tokens bans nothing", '''
def block_repeated_ngrams(input_ids, logits, n):
    if n < 1:
        raise ValueError("n must be at least 1")
    out = logits.clone()
    T = input_ids.shape[1]
    if T <= n:
        return out
    for b, row in enumerate(input_ids.tolist()):
        prefix = row[T - n + 1:] if n > 1 else []
        banned = {row[s + n - 1] for s in range(T - n + 1) if row[s: s + n - 1] == prefix}
        out[b, sorted(banned)] = float("-inf")
    return out
'''),
        ("writes −inf into the logits it was given", '''
def block_repeated_ngrams(input_ids, logits, n):
    if n < 1:
        raise ValueError("n must be at least 1")
    T = input_ids.shape[1]
    if T < n:
        return logits
    for b, row in enumerate(input_ids.tolist()):
        prefix = row[T - n + 1:] if n > 1 else []
        banned = {row[s + n - 1] for s in range(T - n + 1) if row[s: s + n - 1] == prefix}
        logits[b, sorted(banned)] = float("-inf")
    return logits
'''),
        ("banned tokens set to −1e9, not −inf", '''
def block_repeated_ngrams(input_ids, logits, n):
    if n < 1:
        raise ValueError("n must be at least 1")
    out = logits.clone()
    T = input_ids.shape[1]
    if T < n:
        return out
    for b, row in enumerate(input_ids.tolist()):
        prefix = row[T - n + 1:] if n > 1 else []
        banned = {row[s + n - 1] for s in range(T - n + 1) if row[s: s + n - 1] == prefix}
        out[b, sorted(banned)] = -1e9
    return out
'''),
        ("n = 0 not refused", '''
def block_repeated_ngrams(input_ids, logits, n):
    out = logits.clone()
    T = input_ids.shape[1]
    if T < n or n < 1:
        return out
    for b, row in enumerate(input_ids.tolist()):
        prefix = row[T - n + 1:] if n > 1 else []
        banned = {row[s + n - 1] for s in range(T - n + 1) if row[s: s + n - 1] == prefix}
        out[b, sorted(banned)] = float("-inf")
    return out
'''),
    ],
    "beam": [
        ("probabilities added, not log-probabilities", _BEAM_HEAD + '''
        log_probs = model(beams).logits[:, -1].float().softmax(dim=-1)
        V = log_probs.shape[-1]
        candidates = (beam_scores[:, None] + log_probs).flatten()
        top_scores, top_index = candidates.topk(min(2 * k, candidates.numel()))
        origin, token = top_index // V, top_index % V
        for rank in range(min(k, len(token))):
            if token[rank] == eos_token_id or t == max_new_tokens:
                generated = torch.cat([beams[origin[rank], input_ids.shape[1]:], token[rank: rank + 1]])
                pool.append((top_scores[rank].item() / t ** length_penalty, generated))
        pool = sorted(pool, key=lambda item: -item[0])[:k]
        alive = (token != eos_token_id).nonzero().flatten()[:k]
        beams = torch.cat([beams[origin[alive]], token[alive, None]], dim=1)
        beam_scores = top_scores[alive]
        if len(pool) == k:
            break
''' + _BEAM_TAIL),
        ("candidates ranked by the last token's log-probability alone", _BEAM_HEAD + '''
        log_probs = model(beams).logits[:, -1].float().log_softmax(dim=-1)
        V = log_probs.shape[-1]
        top_last, top_index = log_probs.flatten().topk(min(2 * k, log_probs.numel()))
        origin, token = top_index // V, top_index % V
        top_scores = beam_scores[origin] + top_last
        for rank in range(min(k, len(token))):
            if token[rank] == eos_token_id or t == max_new_tokens:
                generated = torch.cat([beams[origin[rank], input_ids.shape[1]:], token[rank: rank + 1]])
                pool.append((top_scores[rank].item() / t ** length_penalty, generated))
        pool = sorted(pool, key=lambda item: -item[0])[:k]
        alive = (token != eos_token_id).nonzero().flatten()[:k]
        beams = torch.cat([beams[origin[alive]], token[alive, None]], dim=1)
        beam_scores = top_scores[alive]
        if len(pool) == k:
            break
''' + _BEAM_TAIL),
        ("the length penalty multiplies instead of raising to a power", _BEAM_HEAD + '''
        log_probs = model(beams).logits[:, -1].float().log_softmax(dim=-1)
        V = log_probs.shape[-1]
        candidates = (beam_scores[:, None] + log_probs).flatten()
        top_scores, top_index = candidates.topk(min(2 * k, candidates.numel()))
        origin, token = top_index // V, top_index % V
        for rank in range(min(k, len(token))):
            if token[rank] == eos_token_id or t == max_new_tokens:
                generated = torch.cat([beams[origin[rank], input_ids.shape[1]:], token[rank: rank + 1]])
                pool.append((top_scores[rank].item() / (t * length_penalty), generated))
        pool = sorted(pool, key=lambda item: -item[0])[:k]
        alive = (token != eos_token_id).nonzero().flatten()[:k]
        beams = torch.cat([beams[origin[alive]], token[alive, None]], dim=1)
        beam_scores = top_scores[alive]
        if len(pool) == k:
            break
''' + _BEAM_TAIL),
        ("beams that ended in EOS stay alive", _BEAM_HEAD + '''
        log_probs = model(beams).logits[:, -1].float().log_softmax(dim=-1)
        V = log_probs.shape[-1]
        candidates = (beam_scores[:, None] + log_probs).flatten()
        top_scores, top_index = candidates.topk(min(2 * k, candidates.numel()))
        origin, token = top_index // V, top_index % V
        for rank in range(min(k, len(token))):
            if token[rank] == eos_token_id or t == max_new_tokens:
                generated = torch.cat([beams[origin[rank], input_ids.shape[1]:], token[rank: rank + 1]])
                pool.append((top_scores[rank].item() / t ** length_penalty, generated))
        pool = sorted(pool, key=lambda item: -item[0])[:k]
        beams = torch.cat([beams[origin[:k]], token[:k, None]], dim=1)
        beam_scores = top_scores[:k]
        if len(pool) == k:
            break
''' + _BEAM_TAIL),
        ("the hypotheses returned in the order they finished", _BEAM_HEAD + '''
        log_probs = model(beams).logits[:, -1].float().log_softmax(dim=-1)
        V = log_probs.shape[-1]
        candidates = (beam_scores[:, None] + log_probs).flatten()
        top_scores, top_index = candidates.topk(min(2 * k, candidates.numel()))
        origin, token = top_index // V, top_index % V
        for rank in range(min(k, len(token))):
            if (token[rank] == eos_token_id or t == max_new_tokens) and len(pool) < k:
                generated = torch.cat([beams[origin[rank], input_ids.shape[1]:], token[rank: rank + 1]])
                pool.append((top_scores[rank].item() / t ** length_penalty, generated))
        alive = (token != eos_token_id).nonzero().flatten()[:k]
        beams = torch.cat([beams[origin[alive]], token[alive, None]], dim=1)
        beam_scores = top_scores[alive]
        if len(pool) == k:
            break
''' + _BEAM_TAIL),
        ("shorter hypotheses padded with 0, not the EOS", _BEAM_HEAD + '''
        log_probs = model(beams).logits[:, -1].float().log_softmax(dim=-1)
        V = log_probs.shape[-1]
        candidates = (beam_scores[:, None] + log_probs).flatten()
        top_scores, top_index = candidates.topk(min(2 * k, candidates.numel()))
        origin, token = top_index // V, top_index % V
        for rank in range(min(k, len(token))):
            if token[rank] == eos_token_id or t == max_new_tokens:
                generated = torch.cat([beams[origin[rank], input_ids.shape[1]:], token[rank: rank + 1]])
                pool.append((top_scores[rank].item() / t ** length_penalty, generated))
        pool = sorted(pool, key=lambda item: -item[0])[:k]
        alive = (token != eos_token_id).nonzero().flatten()[:k]
        beams = torch.cat([beams[origin[alive]], token[alive, None]], dim=1)
        beam_scores = top_scores[alive]
        if len(pool) == k:
            break
''' + _BEAM_TAIL.replace("input_ids.shape[1] + L), eos_token_id,", "input_ids.shape[1] + L), 0,")),
        ("the generated tokens returned without the prompt", _BEAM_HEAD + '''
        log_probs = model(beams).logits[:, -1].float().log_softmax(dim=-1)
        V = log_probs.shape[-1]
        candidates = (beam_scores[:, None] + log_probs).flatten()
        top_scores, top_index = candidates.topk(min(2 * k, candidates.numel()))
        origin, token = top_index // V, top_index % V
        for rank in range(min(k, len(token))):
            if token[rank] == eos_token_id or t == max_new_tokens:
                generated = torch.cat([beams[origin[rank], input_ids.shape[1]:], token[rank: rank + 1]])
                pool.append((top_scores[rank].item() / t ** length_penalty, generated))
        pool = sorted(pool, key=lambda item: -item[0])[:k]
        alive = (token != eos_token_id).nonzero().flatten()[:k]
        beams = torch.cat([beams[origin[alive]], token[alive, None]], dim=1)
        beam_scores = top_scores[alive]
        if len(pool) == k:
            break
    L = max(len(g) for _, g in pool)
    sequences = torch.full((len(pool), L), eos_token_id, dtype=torch.long)
    for i, (_, generated) in enumerate(pool):
        sequences[i, : len(generated)] = generated
    return sequences, torch.tensor([s for s, _ in pool], dtype=torch.float32)
'''),
        ("goes on searching after the pool of finished hypotheses is full", """
@torch.no_grad()
def beam_search(model, input_ids: torch.Tensor, num_beams: int, max_new_tokens: int, eos_token_id: int,
                length_penalty: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    \"\"\"Beam search for one prompt, as ``generate(num_beams=k, num_return_sequences=k, early_stopping=True)``.

    Args:
        model: ``model(ids).logits`` is (B, T, V).
        input_ids: (1, T) int64, one prompt.
        num_beams: k ≥ 1.
        eos_token_id: the id that finishes a hypothesis.
        length_penalty: α in score = sum of log-probabilities / (generated length) ** α.

    Returns:
        ``(sequences, scores)``: (k, T + L) int64 best first, right-padded with eos_token_id; (k,) float32.
    \"\"\"
    k = num_beams
    device = input_ids.device
    T = input_ids.shape[1]
    beams = input_ids  # (live, T + t - 1)
    beam_scores = torch.zeros(1, device=device)
    pool = []  # (score, sequence) of finished hypotheses, best first
    for t in range(1, max_new_tokens + 1):
        logits = model(beams).logits[:, -1].float()
        logp = logits.log_softmax(dim=-1)  # (live, V)
        V = logp.shape[-1]
        candidates = (beam_scores[:, None] + logp).reshape(-1)
        top_scores, top_idx = candidates.topk(min(2 * k, candidates.numel()))
        next_beams, next_scores = [], []
        for rank in range(top_idx.numel()):
            source, token = int(top_idx[rank]) // V, int(top_idx[rank]) % V
            seq = torch.cat([beams[source], torch.tensor([token], device=device)])
            is_eos = token == eos_token_id
            if rank < k and (is_eos or t == max_new_tokens):
                pool.append((float(top_scores[rank]) / t ** length_penalty, seq))
                pool.sort(key=lambda entry: -entry[0])
                del pool[k:]
            if not is_eos and len(next_beams) < k:
                next_beams.append(seq)
                next_scores.append(top_scores[rank])
        if False or not next_beams:
            break
        beams = torch.stack(next_beams)
        beam_scores = torch.stack(next_scores)
    pool.sort(key=lambda entry: -entry[0])
    width = max(len(seq) for _, seq in pool)
    sequences = torch.full((len(pool), width), eos_token_id, dtype=torch.long, device=device)
    for i, (_, seq) in enumerate(pool):
        sequences[i, :len(seq)] = seq
    scores = torch.tensor([score for score, _ in pool], dtype=torch.float32, device=device)
    return sequences, scores
"""),
    ],
    "cache": [
        ("an EOS id of 0 taken for no EOS", '''
@torch.no_grad()
def greedy_decode_cached(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    if max_new_tokens == 0:
        return ids
    out = model(ids)
    for step in range(max_new_tokens):
        next_token = out.logits[:, -1].argmax(dim=-1)
        if eos_token_id:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all() or step == max_new_tokens - 1:
            break
        out = model(next_token[:, None], past=out.past)
    return ids
'''),
        ("one call too many: the last token is fed too", '''
@torch.no_grad()
def greedy_decode_cached(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    if max_new_tokens == 0:
        return ids
    out = model(ids)
    for _ in range(max_new_tokens):
        next_token = out.logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        out = model(next_token[:, None], past=out.past)
        if finished.all():
            break
    return ids
'''),
        ("the whole sequence fed with the cache", '''
@torch.no_grad()
def greedy_decode_cached(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    if max_new_tokens == 0:
        return ids
    out = model(ids)
    for step in range(max_new_tokens):
        next_token = out.logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all() or step == max_new_tokens - 1:
            break
        out = model(ids, past=out.past)
    return ids
'''),
        ("the new token fed without the cache", '''
@torch.no_grad()
def greedy_decode_cached(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    if max_new_tokens == 0:
        return ids
    out = model(ids)
    for step in range(max_new_tokens):
        next_token = out.logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all() or step == max_new_tokens - 1:
            break
        out = model(next_token[:, None])
    return ids
'''),
        ("the logits of the first position", '''
@torch.no_grad()
def greedy_decode_cached(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    if max_new_tokens == 0:
        return ids
    out = model(ids)
    for step in range(max_new_tokens):
        next_token = out.logits[:, 0].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all() or step == max_new_tokens - 1:
            break
        out = model(next_token[:, None], past=out.past)
    return ids
'''),
        ("no EOS handling", '''
@torch.no_grad()
def greedy_decode_cached(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    if max_new_tokens == 0:
        return ids
    out = model(ids)
    for step in range(max_new_tokens):
        next_token = out.logits[:, -1].argmax(dim=-1)
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if step == max_new_tokens - 1:
            break
        out = model(next_token[:, None], past=out.past)
    return ids
'''),
        ("prefill without the prompt's last token, which is fed next", '''
@torch.no_grad()
def greedy_decode_cached(model, input_ids, max_new_tokens, eos_token_id=None):
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    if max_new_tokens == 0:
        return ids
    past = model(ids[:, :-1]).past
    next_token = ids[:, -1]
    for _ in range(max_new_tokens):
        out = model(next_token[:, None], past=past)
        past = out.past
        next_token = out.logits[:, -1].argmax(dim=-1)
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished, eos_token_id)
            finished |= next_token == eos_token_id
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if finished.all():
            break
    return ids
'''),
        ("stops when the first row finishes", """
@torch.no_grad()
def greedy_decode_cached(model, input_ids: torch.Tensor, max_new_tokens: int,
                         eos_token_id: int | None = None) -> torch.Tensor:
    \"\"\"``greedy_decode`` with a cache: one call on the prompt, then one call of shape (B, 1) per token chosen,
    except after the last one (and after every row has finished): n new tokens take n calls in all.

    Returns:
        (B, T + n) int64, equal to ``greedy_decode(model, input_ids, max_new_tokens, eos_token_id)``.
    \"\"\"
    ids = input_ids
    if max_new_tokens <= 0:
        return ids.clone()
    finished = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    out = model(ids)  # prefill
    past, logits = out.past, out.logits[:, -1]
    for step in range(max_new_tokens):
        next_token = logits.argmax(dim=-1)
        if eos_token_id is not None:
            next_token = torch.where(finished, torch.full_like(next_token, eos_token_id), next_token)
            finished = finished | (next_token == eos_token_id)
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        if step == max_new_tokens - 1 or (eos_token_id is not None and int(next_token[0]) == eos_token_id):
            break
        out = model(next_token[:, None], past=past)
        past, logits = out.past, out.logits[:, -1]
    return ids
"""),
        ("adds a token when none is asked for", """
@torch.no_grad()
def greedy_decode_cached(model, input_ids: torch.Tensor, max_new_tokens: int,
                         eos_token_id: int | None = None) -> torch.Tensor:
    \"\"\"``greedy_decode`` with a cache: one call on the prompt, then one call of shape (B, 1) per token chosen,
    except after the last one (and after every row has finished): n new tokens take n calls in all.

    Returns:
        (B, T + n) int64, equal to ``greedy_decode(model, input_ids, max_new_tokens, eos_token_id)``.
    \"\"\"
    ids = input_ids
    finished = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    out = model(ids)  # prefill
    past, logits = out.past, out.logits[:, -1]
    step = 0
    while True:
        next_token = logits.argmax(dim=-1)
        if eos_token_id is not None:
            next_token = torch.where(finished, torch.full_like(next_token, eos_token_id), next_token)
            finished = finished | (next_token == eos_token_id)
        ids = torch.cat([ids, next_token[:, None]], dim=1)
        step += 1
        if step >= max_new_tokens or (eos_token_id is not None and bool(finished.all())):
            break
        out = model(next_token[:, None], past=past)
        past, logits = out.past, out.logits[:, -1]
    return ids
"""),
    ],
}

PASSES_VISIBLE: dict[tuple[str, str], str] = {}
