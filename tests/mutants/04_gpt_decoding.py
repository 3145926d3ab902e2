"""Plausible wrong answers for chapter 04. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Most are the reference answer with one deliberate edit,
so each isolates one mistake; an edit that no longer finds its target raises at once.
"""

from pathlib import Path

import nbformat

_NOTEBOOK = Path(__file__).resolve().parents[2] / "solutions" / "04_gpt_decoding" / "04_gpt_decoding.ipynb"
_ANSWERS = {c.metadata["nbgrader"]["grade_id"].removesuffix("_answer"): c.source
            for c in nbformat.read(_NOTEBOOK, as_version=4).cells
            if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_answer")}


def edit(exercise: str, *replacements: tuple[str, str]) -> str:
    source = _ANSWERS[exercise]
    for old, new in replacements:
        if old not in source:
            raise ValueError(f"{exercise}: the planted edit no longer finds {old!r}")
        source = source.replace(old, new)
    return source


_RECOMPUTE = '''
@torch.no_grad()
def greedy_decode_cached(model, input_ids, max_new_tokens, eos_token_id=None):
    return greedy_decode(model, input_ids, max_new_tokens, eos_token_id)
'''

_SAMPLE_GLOBAL = '''
def sample_next(logits, generator=None):
    probs = logits.float().softmax(dim=-1)
    cdf = probs.cumsum(dim=-1)
    u = torch.rand(logits.shape[0], 1) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp(max=logits.shape[-1] - 1)
'''

_TOP_K_EXACTLY_K = '''
def top_k_filter(logits, k):
    if k < 1:
        raise ValueError("k must be at least 1")
    k = min(k, logits.shape[-1])
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))
'''

MUTANTS = {
    "attention": [
        ("no 1/sqrt(d) scaling", edit("attention", (" / math.sqrt(C // H)", ""))),
        ("scaled by sqrt(C), not the head size", edit("attention", ("math.sqrt(C // H)", "math.sqrt(C)"))),
        ("the causal mask ignores the cached positions",
         edit("attention", (".tril(diagonal=P)", ".tril(diagonal=0)"))),
        ("no causal mask", edit("attention", ("scores.masked_fill(~visible, float(\"-inf\"))", "scores"))),
        ("heads split from the wrong axis",
         edit("attention", ("t.view(B, T, H, C // H).transpose(1, 2)", "t.view(B, H, T, C // H)"))),
        ("PyTorch's fused attention kernel, called through torch.ops",
         edit("attention", ("weights = scores.masked_fill(~visible, float(\"-inf\")).softmax(dim=-1)\n"
                            "        y = (weights @ v).transpose(1, 2).reshape(B, T, C)",
                            "y = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=True)[0]"
                            "\n        y = y.transpose(1, 2).reshape(B, T, C)"))),
    ],
    "gpt": [
        ("post-norm blocks", edit("gpt", ("attended, present = self.attn(self.ln_1(x), past)\n        x = x + attended\n"
                                          "        x = x + self.mlp(self.ln_2(x))",
                                          "attended, present = self.attn(x, past)\n        x = self.ln_1(x + attended)\n"
                                          "        x = self.ln_2(x + self.mlp(x))"))),
        ("exact GELU instead of GPT-2's tanh approximation", edit("gpt", ('approximate="tanh"', 'approximate="none"'))),
        ("positions restart at 0 after the cache", edit("gpt", ("torch.arange(P, P + T,", "torch.arange(0, T,"))),
        ("no final LayerNorm", edit("gpt", ("self.lm_head(self.ln_f(x))", "self.lm_head(x)"))),
        ("no residual around the MLP", edit("gpt", ("x = x + self.mlp(self.ln_2(x))", "x = self.mlp(self.ln_2(x))"))),
        ("the length check forgets the cached positions",
         edit("gpt", ("if P + T > self.n_positions:", "if T > self.n_positions:"))),
        ("the embedding lookup cut from the graph: the tied matrix learns from the output layer only",
         edit("gpt", ("x = self.wte(input_ids) + self.wpe(positions)",
                      "x = self.wte(input_ids).detach() + self.wpe(positions)"))),
        ("the output layer reads a detached copy of the tied matrix",
         edit("gpt", ("return lm.LMOutput(self.lm_head(self.ln_f(x)), present)",
                      "return lm.LMOutput(F.linear(self.ln_f(x), self.lm_head.weight.detach()), present)"))),
    ],
    "loss": [
        ("no shift: each position scored on its own token",
         edit("loss", ("logits[:, :-1].log_softmax", "logits[:, 1:].log_softmax"))),
        ("log of softmax, which overflows", edit("loss", ("logits[:, :-1].log_softmax(dim=-1)",
                                                          "logits[:, :-1].softmax(dim=-1).log()"))),
        ("padding counted", edit("loss", ("counted = torch.ones_like(nll) if attention_mask is None else "
                                          "attention_mask[:, 1:].to(nll.dtype)", "counted = torch.ones_like(nll)"))),
        ("the mask of the input position, not of the target",
         edit("loss", ("attention_mask[:, 1:].to(nll.dtype)", "attention_mask[:, :-1].to(nll.dtype)"))),
        ("mean over the batch of per-row means",
         edit("loss", ("return (nll * counted).sum() / counted.sum()",
                       "return ((nll * counted).sum(1) / counted.sum(1).clamp(min=1)).mean()"))),
        ("perplexity as exp of the summed loss",
         edit("loss", ("return lm_loss(logits, input_ids, attention_mask).exp()",
                       "return (lm_loss(logits, input_ids, attention_mask) * (input_ids.shape[1] - 1)).exp()"))),
    ],
    "labels": [
        ("the prompt is in the loss", edit("labels", ("labels[i, n: n + m] = torch.tensor(completion, dtype=torch.long)",
                                                      "labels[i, : n + m] = torch.tensor(prompt + completion, "
                                                      "dtype=torch.long)"))),
        ("padding found by value", edit("labels", ("return input_ids, attention_mask, labels",
                                                   "labels[input_ids == pad_id] = -100\n"
                                                   "    attention_mask = (input_ids != pad_id).long()\n"
                                                   "    return input_ids, attention_mask, labels"))),
        ("labels shifted by one", edit("labels", ("labels[i, n: n + m] = torch.tensor(completion, dtype=torch.long)",
                                                  "labels[i, max(n - 1, 0): max(n - 1, 0) + m] = "
                                                  "torch.tensor(completion, dtype=torch.long)"))),
    ],
    "greedy": [
        ("no EOS handling", edit("greedy", ("if eos_token_id is not None:", "if False:"))),
        ("an EOS id of 0 taken for none", edit("greedy", ("if eos_token_id is not None:", "if eos_token_id:"))),
        ("stops when any row finishes", edit("greedy", ("if finished.all():", "if finished.any():"))),
        ("the first position's logits", edit("greedy", ("model(ids).logits[:, -1]", "model(ids).logits[:, 0]"))),
        ("finished rows keep generating", edit("greedy", ("next_token = next_token.masked_fill(finished, eos_token_id)\n",
                                                          ""))),
    ],
    "filters": [
        ("temperature multiplies", edit("filters", ("return logits / temperature", "return logits * temperature"))),
        ("top-k keeps exactly k, breaking ties", _ANSWERS["filters"] + _TOP_K_EXACTLY_K),
        ("top-p drops the token that crosses p",
         edit("filters", ("remove_sorted = before >= p", "remove_sorted = probs.cumsum(dim=-1) > p"))),
        ("top-p on the unsorted row", edit("filters", ("sorted_logits, order = logits.sort(dim=-1, descending=True)",
                                                       "sorted_logits, order = logits, torch.arange(logits.shape[-1])"
                                                       ".expand_as(logits)"))),
        ("top-p as a probability floor of 1 - p", edit("filters", ("remove_sorted = before >= p",
                                                                   "remove_sorted = probs < 1 - p"))),
    ],
    "sample": [
        ("the argmax, not a draw", edit("sample", ("return torch.searchsorted(cdf, u, right=True).squeeze(-1)",
                                                   "return probs.argmax(dim=-1)\n    torch.searchsorted(cdf, u, right=True)"
                                                   ".squeeze(-1)"))),
        ("the global random state, not the generator", _SAMPLE_GLOBAL),
        ("probabilities squared", edit("sample", ("probs = logits.float().softmax(dim=-1)",
                                                  "probs = (2 * logits.float()).softmax(dim=-1)"))),
        ("uniform over the allowed tokens", edit("sample", ("probs = logits.float().softmax(dim=-1)",
                                                            "probs = torch.isfinite(logits).float()"))),
    ],
    "ngram": [
        ("the last complete n-gram is missed", edit("ngram", ("for s in range(T - n + 1)", "for s in range(T - n)"))),
        ("the prefix is only the last token", edit("ngram", ("prefix = row[T - n + 1:] if n > 1 else []",
                                                             "prefix = row[T - 1:]"))),
        ("n = 1 bans nothing", edit("ngram", ("if T < n:", "if T < n or n == 1:"))),
    ],
    "beam": [
        ("only k candidates per step", edit("beam", ("candidates.topk(min(2 * k, candidates.numel()))",
                                                     "candidates.topk(min(k, candidates.numel()))"))),
        ("no length penalty", edit("beam", ("top_scores[rank].item() / t ** length_penalty", "top_scores[rank].item()"))),
        ("an EOS id of 0 never matches", edit("beam", ("if token[rank] == eos_token_id or t == max_new_tokens:",
                                                         "if (eos_token_id and token[rank] == eos_token_id) "
                                                         "or t == max_new_tokens:"))),
        ("the prompt counted in the length",
         edit("beam", ("top_scores[rank].item() / t ** length_penalty",
                       "top_scores[rank].item() / (t + input_ids.shape[1]) ** length_penalty"))),
        ("any of the 2k candidates may finish", edit("beam", ("for rank in range(min(k, len(token))):",
                                                              "for rank in range(len(token)):"))),
        ("stops only at max_new_tokens", edit("beam", ("        if len(pool) == k:\n            break\n", ""))),
    ],
    "cache": [
        ("recomputes the whole sequence every step", _RECOMPUTE),
        ("an EOS id of 0 taken for none", edit("cache", ("if eos_token_id is not None:", "if eos_token_id:"))),
        ("the cache is never updated", edit("cache", ("out = model(next_token[:, None], past=out.past)",
                                                      "out = model(next_token[:, None], past=first.past)"),
                                            ("out = model(ids)  # prefill", "out = first = model(ids)  # prefill"))),
        ("the prompt fed one token at a time", edit("cache", ("out = model(ids)  # prefill",
                                                              "out = None\n    for t in range(ids.shape[1]):\n"
                                                              "        out = model(ids[:, t: t + 1], "
                                                              "past=None if out is None else out.past)"))),
    ],
}

# The planted answers each exercise's visible test fails as well: the student sees them before the grade.
VISIBLE = {
    "attention": [
        "no 1/sqrt(d) scaling",
        "scaled by sqrt(C), not the head size",
        "the causal mask ignores the cached positions",
        "no causal mask",
        "heads split from the wrong axis",
        "PyTorch's fused attention kernel, called through torch.ops",
    ],
    "gpt": [
        "post-norm blocks",
        "positions restart at 0 after the cache",
        "no final LayerNorm",
        "no residual around the MLP",
    ],
    "loss": [
        "no shift: each position scored on its own token",
        "padding counted",
        "the mask of the input position, not of the target",
        "mean over the batch of per-row means",
        "perplexity as exp of the summed loss",
    ],
    "labels": [
        "the prompt is in the loss",
        "padding found by value",
        "labels shifted by one",
    ],
    "greedy": [
        "no EOS handling",
        "stops when any row finishes",
        "the first position's logits",
        "finished rows keep generating",
    ],
    "filters": [
        "temperature multiplies",
        "top-p drops the token that crosses p",
        "top-p on the unsorted row",
        "top-p as a probability floor of 1 - p",
    ],
    "sample": [
        "the argmax, not a draw",
        "the global random state, not the generator",
        "probabilities squared",
        "uniform over the allowed tokens",
    ],
    "ngram": [
        "the last complete n-gram is missed",
        "the prefix is only the last token",
        "n = 1 bans nothing",
    ],
    "beam": [
        "only k candidates per step",
        "no length penalty",
        "the prompt counted in the length",
        "any of the 2k candidates may finish",
    ],
    "cache": [
        "recomputes the whole sequence every step",
        "the cache is never updated",
        "the prompt fed one token at a time",
    ],
}
