"""Plausible wrong answers for chapter 00. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (its answer cell is ``<exercise>_answer``, its hidden tests ``<exercise>_hidden``)
to (what is wrong, the wrong answer cell's source).
"""

MUTANTS = {
    "softmax": [
        ("exp without subtracting the maximum overflows", """
def softmax(x, dim=-1):
    e = x.exp()
    return e / e.sum(dim=dim, keepdim=True)
"""),
        ("one global maximum instead of one per slice", """
def softmax(x, dim=-1):
    e = (x - x.max()).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""),
        ("ignores dim and always normalises the last axis", """
def softmax(x, dim=-1):
    e = (x - x.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)
"""),
        ("calls the built-in", """
def softmax(x, dim=-1):
    return torch.nn.functional.softmax(x, dim=dim)
"""),
        ("writes into its input", """
def softmax(x, dim=-1):
    x -= x.amax(dim=dim, keepdim=True)
    e = x.exp()
    return e / e.sum(dim=dim, keepdim=True)
"""),
        ("detaches the result, so no gradient flows", """
def softmax(x, dim=-1):
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return (e / e.sum(dim=dim, keepdim=True)).detach()
"""),
    ],
    "ce": [
        ("counts ignored positions in the mean", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    z = z - z.amax(dim=-1, keepdim=True)
    lp = z - z.exp().sum(dim=-1, keepdim=True).log()
    picked = lp.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -torch.where(keep, picked, 0.0).sum() / y.numel()
"""),
        ("log of a naive softmax (no log-sum-exp)", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    p = z.exp() / z.exp().sum(dim=-1, keepdim=True)
    picked = p.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1).log()
    return -torch.where(keep, picked, 0.0).sum() / keep.sum()
"""),
        ("hard-codes -100 instead of using ignore_index", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != -100
    z = z - z.amax(dim=-1, keepdim=True)
    lp = z - z.exp().sum(dim=-1, keepdim=True).log()
    picked = lp.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -torch.where(keep, picked, 0.0).sum() / keep.sum()
"""),
        ("sums instead of averaging", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    z = z - z.amax(dim=-1, keepdim=True)
    lp = z - z.exp().sum(dim=-1, keepdim=True).log()
    picked = lp.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -torch.where(keep, picked, 0.0).sum()
"""),
        ("calls the built-in", """
def cross_entropy(logits, targets, ignore_index=-100):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                             ignore_index=ignore_index)
"""),
        ("uses torch.logsumexp instead of writing it", """
def cross_entropy(logits, targets, ignore_index=-100):
    z = logits.reshape(-1, logits.shape[-1]); y = targets.reshape(-1)
    keep = y != ignore_index
    lp = z - torch.logsumexp(z, dim=-1, keepdim=True)
    picked = lp.gather(1, torch.where(keep, y, 0)[:, None]).squeeze(1)
    return -torch.where(keep, picked, 0.0).sum() / keep.sum()
"""),
    ],
    "sgd": [
        ("drops the factor 2 of the squared loss", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    n = X.shape[0]
    return w - lr * ((X.T @ r) / n + weight_decay * w), b - lr * r.sum() / n
"""),
        ("sums over examples instead of averaging", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    return w - lr * (2 * (X.T @ r) + weight_decay * w), b - lr * 2 * r.sum()
"""),
        ("steps up the gradient", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    n = X.shape[0]
    return w + lr * (2 / n * (X.T @ r) + weight_decay * w), b + lr * 2 / n * r.sum()
"""),
        ("decays the bias too", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    n = X.shape[0]
    return w - lr * (2 / n * (X.T @ r) + weight_decay * w), b - lr * (2 / n * r.sum() + weight_decay * b)
"""),
        ("lets autograd compute the gradient", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    w = w.clone().requires_grad_(True); b = b.clone().requires_grad_(True)
    ((X @ w + b - y) ** 2).mean().backward()
    with torch.no_grad():
        return w - lr * (w.grad + weight_decay * w), b - lr * b.grad
"""),
        ("updates the arguments in place", """
def sgd_step(w, b, X, y, lr, weight_decay=0.0):
    r = X @ w + b - y
    n = X.shape[0]
    w -= lr * (2 / n * (X.T @ r) + weight_decay * w)
    b -= lr * 2 / n * r.sum()
    return w, b
"""),
    ],
}
