"""Typical mistakes students make in chapter 00 (softmax, cross-entropy, one SGD step): each must fail the
exercise's hidden tests, and its visible test unless PASSES_VISIBLE says why not.

MISTAKES maps an exercise (answer cell ``<exercise>_answer``) to (the mistake, the answer cell as the student
wrote it). They differ from the planted wrong answers of tests/mutants/00_welcome.py.
"""

MISTAKES = {
    "softmax": [
        ("normalises over every element, not along dim", """
def softmax(x, dim=-1):
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum()
"""),
        ("subtracts the minimum instead of the maximum", """
def softmax(x, dim=-1):
    e = (x - x.amin(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""),
        ("subtracts the mean instead of the maximum", """
def softmax(x, dim=-1):
    e = (x - x.mean(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""),
        ("divides by the maximum instead of subtracting it", """
def softmax(x, dim=-1):
    e = (x / x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""),
        ("replaces -inf by a large negative number, so a fully masked row is uniform", """
def softmax(x, dim=-1):
    x = x.clamp(min=-1e9)
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""),
        ("computes in float64 and returns float64", """
def softmax(x, dim=-1):
    x = x.double()
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""),
        ("adds an epsilon to the denominator", """
def softmax(x, dim=-1):
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / (e.sum(dim=dim, keepdim=True) + 1e-3)
"""),
        ("computes in float32 whatever the input's dtype", """
def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    \"\"\"Numerically stable softmax of ``x`` along ``dim``.

    Args:
        x: floating-point tensor of any shape; entries may be huge (±1e4) or ``-inf`` (masked).
        dim: the dimension that sums to one.

    Returns:
        A new tensor of the same shape and dtype as ``x``, non-negative, summing to 1 along ``dim``.
        A slice that is entirely ``-inf`` gives NaN, as ``torch.softmax`` does. ``x`` is not modified.

    Do not call ``torch.softmax``, ``F.softmax``, ``Tensor.softmax`` or ``log_softmax``.
    \"\"\"
    x = x.float()
    m = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)
"""),
    ],
    "ce": [
        ("the count of kept targets clamped to 1: 0, not NaN, when every target is ignored", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    z = z - z.amax(dim=-1, keepdim=True)
    log_probs = z - z.exp().sum(dim=-1, keepdim=True).log()
    picked = log_probs.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -torch.where(keep, picked, 0.0).sum() / keep.sum().clamp(min=1)
"""),
        ("computed in float32 whatever the logits' dtype", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.float().reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    z = z - z.amax(dim=-1, keepdim=True)
    log_probs = z - z.exp().sum(dim=-1, keepdim=True).log()
    picked = log_probs.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -torch.where(keep, picked, 0.0).sum() / keep.sum()
"""),
        ("the target's logit alone, no log-sum-exp", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    picked = z.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -(picked * keep).sum() / keep.sum()
"""),
        ("log-sum-exp without taking the maximum out", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    log_probs = z - z.exp().sum(dim=-1, keepdim=True).log()
    picked = log_probs.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -(picked * keep).sum() / keep.sum()
"""),
        ("log of the softmax plus an epsilon", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    z = z - z.amax(dim=-1, keepdim=True)
    p = z.exp() / z.exp().sum(dim=-1, keepdim=True)
    picked = (p.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1) + 1e-9).log()
    return -(picked * keep).sum() / keep.sum()
"""),
        ("a mean per sequence, then a mean over sequences", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits - logits.amax(dim=-1, keepdim=True)
    log_probs = z - z.exp().sum(dim=-1, keepdim=True).log()
    keep = targets != ignore_index
    picked = log_probs.gather(-1, torch.where(keep, targets, 0).unsqueeze(-1)).squeeze(-1)
    if picked.dim() == 1:
        return -(picked * keep).sum() / keep.sum()
    return (-(picked * keep).sum(-1) / keep.sum(-1)).mean()
"""),
        ("skips every out-of-range target instead of ignore_index", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = (y >= 0) & (y < z.shape[-1])
    z = z - z.amax(dim=-1, keepdim=True)
    log_probs = z - z.exp().sum(dim=-1, keepdim=True).log()
    picked = log_probs.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -(picked * keep).sum() / keep.sum()
"""),
        ("returns a Python float", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    z = z - z.amax(dim=-1, keepdim=True)
    log_probs = z - z.exp().sum(dim=-1, keepdim=True).log()
    picked = log_probs.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return (-(picked * keep).sum() / keep.sum()).item()
"""),
        ("detaches the maximum and the sum, so the gradient is wrong", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    z = z - z.amax(dim=-1, keepdim=True)
    log_probs = z - z.exp().sum(dim=-1, keepdim=True).log().detach()
    picked = log_probs.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -(picked * keep).sum() / keep.sum()
"""),
        ("stabilises with one maximum for the whole batch", """
def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    \"\"\"Mean cross-entropy of ``targets`` under ``logits``, skipping ``ignore_index`` targets.

    Args:
        logits: float tensor of shape (..., C): any leading shape, classes last.
        targets: int64 tensor of the leading shape (...), each in [0, C) or equal to ``ignore_index``.
        ignore_index: target value that marks positions to skip (padding).

    Returns:
        A 0-dim tensor: the mean of -log softmax(logits)[target] over positions whose target is not
        ``ignore_index`` (NaN when every target is ignored, as in PyTorch). Differentiable w.r.t. logits.

    Do not call ``F.cross_entropy``, ``F.nll_loss``, ``log_softmax``, ``softmax`` or ``logsumexp``
    (nor anything that computes them for you).
    \"\"\"
    m = logits.max()  # one shift for everything
    lse = torch.log(torch.exp(logits - m).sum(dim=-1)) + m
    valid = targets != ignore_index
    safe = targets.masked_fill(~valid, 0)
    z_y = logits.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    loss = (lse - z_y)[valid]
    return loss.sum() / valid.sum()
"""),
    ],
    "sgd": [
        ("decays without the learning rate", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    n = X.shape[0]
    return w - lr * 2 / n * (X.T @ r) - weight_decay * w, b - lr * 2 / n * r.sum()
"""),
        ("forgets the bias in the residual", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w - y
    n = X.shape[0]
    return w - lr * (2 / n * (X.T @ r) + weight_decay * w), b - lr * 2 / n * r.sum()
"""),
        ("bias gradient without the factor 2", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    n = X.shape[0]
    return w - lr * (2 / n * (X.T @ r) + weight_decay * w), b - lr * r.mean()
"""),
        ("divides by the number of features, not of examples", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    d = X.shape[1]
    return w - lr * (2 / d * (X.T @ r) + weight_decay * w), b - lr * 2 / d * r.sum()
"""),
        ("residual the other way round, stepping up the slope", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = y - X @ w - b
    n = X.shape[0]
    return w - lr * (2 / n * (X.T @ r) + weight_decay * w), b - lr * 2 / n * r.sum()
"""),
        ("decays with the squared weights", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    n = X.shape[0]
    return w - lr * (2 / n * (X.T @ r) + weight_decay * w**2), b - lr * 2 / n * r.sum()
"""),
        ("a weight gradient of shape (D, 1)", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = (X @ w + b - y)[:, None]
    n = X.shape[0]
    return w[:, None] - lr * (2 / n * (X.T @ r) + weight_decay * w[:, None]), b - lr * 2 / n * r.sum()
"""),
    ],
}

PASSES_VISIBLE: dict[tuple[str, str], str] = {}
