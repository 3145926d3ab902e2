"""Typical mistakes students make in chapter 10 (SGD, Adam/AdamW, schedules, clipping, early stopping,
hyper-parameter search): each must fail the exercise's hidden tests, and its visible test unless
PASSES_VISIBLE says why not.

MISTAKES maps an exercise (answer cell ``<exercise>_answer``) to (the mistake, the answer cell as the student
wrote it). They differ from the planted wrong answers of tests/mutants/10_optimizers_schedulers.py. An answer
cell with several functions may be replaced by the one function the student got wrong.
"""

MISTAKES = {
    "sgd": [
        ("the first momentum buffer is the gradient tensor itself", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param if weight_decay != 0 else grad
    new_state = dict(state)
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = d if buf is None else momentum * buf + (1 - dampening) * d
        new_state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    return param - lr * d, new_state
'''),
        ("the caller's state dict updated and returned", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param if weight_decay != 0 else grad
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = d.clone() if buf is None else momentum * buf + (1 - dampening) * d
        state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    return param - lr * d, state
'''),
        ("momentum buffer started at zero instead of the first gradient", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param
    new_state = dict(state)
    if momentum != 0:
        buf = momentum * state.get("momentum_buffer", torch.zeros_like(param)) + (1 - dampening) * d
        new_state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    return param - lr * d, new_state
'''),
        ("dampening read as the weight of the new gradient", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param
    new_state = dict(state)
    if momentum != 0:
        if "momentum_buffer" in state:
            buf = momentum * state["momentum_buffer"] + dampening * d
        else:
            buf = d.clone()
        new_state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    return param - lr * d, new_state
'''),
        ("momentum as a moving average, (1 - momentum) on the gradient", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param
    new_state = dict(state)
    if momentum != 0:
        if "momentum_buffer" in state:
            buf = momentum * state["momentum_buffer"] + (1 - momentum) * d
        else:
            buf = d.clone()
        new_state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    return param - lr * d, new_state
'''),
        ("the buffer keeps the velocity lr * gradient (Sutskever's form)", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param
    new_state = dict(state)
    if momentum == 0:
        return param - lr * d, new_state
    if "momentum_buffer" in state:
        v = momentum * state["momentum_buffer"] + (1 - dampening) * lr * d
    else:
        v = lr * d
    new_state["momentum_buffer"] = v
    step = lr * d + momentum * v if nesterov else v
    return param - step, new_state
'''),
        ("Nesterov look-ahead with the gradient before weight decay", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param
    new_state = dict(state)
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = d.clone() if buf is None else momentum * buf + (1 - dampening) * d
        new_state["momentum_buffer"] = buf
        d = grad + momentum * buf if nesterov else buf
    return param - lr * d, new_state
'''),
        ("weight decay subtracted from the gradient", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad - weight_decay * param
    new_state = dict(state)
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = d.clone() if buf is None else momentum * buf + (1 - dampening) * d
        new_state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    return param - lr * d, new_state
'''),
        ("weight decay applied only when there is momentum", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad
    new_state = dict(state)
    if momentum != 0:
        d = d + weight_decay * param
        buf = state.get("momentum_buffer")
        buf = d.clone() if buf is None else momentum * buf + (1 - dampening) * d
        new_state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    return param - lr * d, new_state
'''),
        ("updates the parameter in place (sub_), as torch.optim does", '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param
    new_state = dict(state)
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = d.clone() if buf is None else momentum * buf + (1 - dampening) * d
        new_state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    param.sub_(lr * d)
    return param, new_state
'''),
    ],
    "adam": [
        ("the caller's state dict updated and returned", '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    state["step"] = state.get("step", 0) + 1
    if weight_decay != 0:
        if decoupled:
            param = param * (1 - lr * weight_decay)
        else:
            grad = grad + weight_decay * param
    state["exp_avg"] = beta1 * state.get("exp_avg", torch.zeros_like(param)) + (1 - beta1) * grad
    state["exp_avg_sq"] = beta2 * state.get("exp_avg_sq", torch.zeros_like(param)) + (1 - beta2) * grad * grad
    m_hat = state["exp_avg"] / (1 - beta1 ** state["step"])
    v_hat = state["exp_avg_sq"] / (1 - beta2 ** state["step"])
    return param - lr * m_hat / (v_hat.sqrt() + eps), state
'''),
        ("AdamW shrinks the weights after the Adam step, not before", '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    t = state.get("step", 0) + 1
    if weight_decay != 0 and not decoupled:
        grad = grad + weight_decay * param
    m = beta1 * state.get("exp_avg", torch.zeros_like(param)) + (1 - beta1) * grad
    v = beta2 * state.get("exp_avg_sq", torch.zeros_like(param)) + (1 - beta2) * grad**2
    new = param - lr * (m / (1 - beta1**t)) / ((v / (1 - beta2**t)).sqrt() + eps)
    if decoupled:
        new = new * (1 - lr * weight_decay)
    return new, {"step": t, "exp_avg": m, "exp_avg_sq": v}
'''),
        ("bias correction of the first moment only", '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    t = state.get("step", 0) + 1
    if weight_decay != 0:
        if decoupled:
            param = param * (1 - lr * weight_decay)
        else:
            grad = grad + weight_decay * param
    m = beta1 * state.get("exp_avg", torch.zeros_like(param)) + (1 - beta1) * grad
    v = beta2 * state.get("exp_avg_sq", torch.zeros_like(param)) + (1 - beta2) * grad**2
    return param - lr * (m / (1 - beta1**t)) / (v.sqrt() + eps), {"step": t, "exp_avg": m, "exp_avg_sq": v}
'''),
        ("Adam's weight decay applied like AdamW's, whatever decoupled says", '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    t = state.get("step", 0) + 1
    param = param * (1 - lr * weight_decay)
    m = beta1 * state.get("exp_avg", torch.zeros_like(param)) + (1 - beta1) * grad
    v = beta2 * state.get("exp_avg_sq", torch.zeros_like(param)) + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (v_hat.sqrt() + eps), {"step": t, "exp_avg": m, "exp_avg_sq": v}
'''),
        ("first moment summed like SGD momentum, without (1 - beta1)", '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    t = state.get("step", 0) + 1
    if weight_decay != 0:
        if decoupled:
            param = param * (1 - lr * weight_decay)
        else:
            grad = grad + weight_decay * param
    m = beta1 * state.get("exp_avg", torch.zeros_like(param)) + grad
    v = beta2 * state.get("exp_avg_sq", torch.zeros_like(param)) + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (v_hat.sqrt() + eps), {"step": t, "exp_avg": m, "exp_avg_sq": v}
'''),
        ("betas unpacked the wrong way round", '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta2, beta1 = betas
    t = state.get("step", 0) + 1
    if weight_decay != 0:
        if decoupled:
            param = param * (1 - lr * weight_decay)
        else:
            grad = grad + weight_decay * param
    m = beta1 * state.get("exp_avg", torch.zeros_like(param)) + (1 - beta1) * grad
    v = beta2 * state.get("exp_avg_sq", torch.zeros_like(param)) + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (v_hat.sqrt() + eps), {"step": t, "exp_avg": m, "exp_avg_sq": v}
'''),
        ("step counter kept as a tensor, as torch.optim keeps it", '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    t = state.get("step", torch.tensor(0.0)) + 1
    if weight_decay != 0:
        if decoupled:
            param = param * (1 - lr * weight_decay)
        else:
            grad = grad + weight_decay * param
    m = beta1 * state.get("exp_avg", torch.zeros_like(param)) + (1 - beta1) * grad
    v = beta2 * state.get("exp_avg_sq", torch.zeros_like(param)) + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (v_hat.sqrt() + eps), {"step": t, "exp_avg": m, "exp_avg_sq": v}
'''),
        ("AdamW decays twice: through the gradient and the weights", '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    t = state.get("step", 0) + 1
    grad = grad + weight_decay * param
    if decoupled:
        param = param * (1 - lr * weight_decay)
    m = beta1 * state.get("exp_avg", torch.zeros_like(param)) + (1 - beta1) * grad
    v = beta2 * state.get("exp_avg_sq", torch.zeros_like(param)) + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (v_hat.sqrt() + eps), {"step": t, "exp_avg": m, "exp_avg_sq": v}
'''),
    ],
    "sched": [
        ("no max(1, ...) guard: divides by zero when the warm-up is the whole run", '''
def linear_warmup_decay(warmup_steps, total_steps):
    def factor(step):
        if step < warmup_steps:
            return step / warmup_steps
        return max(0.0, (total_steps - step) / (total_steps - warmup_steps))
    return factor
'''),
        ("linear decay not clamped at 0 after total_steps", '''
def linear_warmup_decay(warmup_steps, total_steps):
    def factor(step):
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        return (total_steps - step) / max(1, total_steps - warmup_steps)
    return factor
'''),
        ("warm-up reaches 1 one step early", '''
def linear_warmup_decay(warmup_steps, total_steps):
    def factor(step):
        if step < warmup_steps:
            return min(1.0, step / max(1, warmup_steps - 1))
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))
    return factor
'''),
        ("cosine ignores num_cycles (always one half-wave)", '''
def cosine_warmup_decay(warmup_steps, total_steps, num_cycles=0.5):
    def factor(step):
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
    return factor
'''),
        ("cosine without its warm-up: full rate from step 0", '''
def cosine_warmup_decay(warmup_steps, total_steps, num_cycles=0.5):
    def factor(step):
        progress = max(0, step - warmup_steps) / max(1, total_steps - warmup_steps)
        return max(0.0, 0.5 * (1.0 + math.cos(2.0 * math.pi * num_cycles * progress)))
    return factor
'''),
        ("triangle from 0 to max_factor instead of from 1", '''
def triangular(step_size_up, max_factor, step_size_down=None):
    down = step_size_up if step_size_down is None else step_size_down
    length = step_size_up + down

    def factor(step):
        x = (step % length) / length
        r = step_size_up / length
        return max_factor * (x / r if x <= r else (x - 1) / (r - 1))
    return factor
'''),
        ("the way down takes the slope of the way up", '''
def triangular(step_size_up, max_factor, step_size_down=None):
    down = step_size_up if step_size_down is None else step_size_down

    def factor(step):
        pos = step % (step_size_up + down)
        height = pos / step_size_up if pos <= step_size_up else 2 - pos / step_size_up
        return 1.0 + (max_factor - 1.0) * height
    return factor
'''),
        ("no modulo: a single triangle, then 1 for ever", '''
def triangular(step_size_up, max_factor, step_size_down=None):
    down = step_size_up if step_size_down is None else step_size_down
    length = step_size_up + down
    ratio = step_size_up / length

    def factor(step):
        x = min(step / length, 1.0)
        height = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
        return 1.0 + (max_factor - 1.0) * height
    return factor
'''),
        ("clamps the cosine's progress at 1", """
def linear_warmup_decay(warmup_steps: int, total_steps: int):
    \"\"\"λ(t): linear from 0 to 1 over ``warmup_steps``, then linear down to 0 at ``total_steps`` (0 after).

    The multiplier of ``transformers.get_linear_schedule_with_warmup``; returns a function int -> float.
    \"\"\"
    def lr_lambda(step: int) -> float:
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return lr_lambda


def cosine_warmup_decay(warmup_steps: int, total_steps: int, num_cycles: float = 0.5):
    \"\"\"λ(t): linear warm-up as above, then ``max(0, (1 + cos(2π · num_cycles · progress)) / 2)``.

    ``progress = (t - warmup_steps) / max(1, total_steps - warmup_steps)``. The multiplier of
    ``transformers.get_cosine_schedule_with_warmup``; returns a function int -> float.
    \"\"\"
    def lr_lambda(step: int) -> float:
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(2.0 * math.pi * num_cycles * progress)))

    return lr_lambda


def triangular(step_size_up: int, max_factor: float, step_size_down: int | None = None):
    \"\"\"λ(t) of a triangular cyclical schedule: 1 at the start of each cycle, ``max_factor`` after
    ``step_size_up`` steps, back to 1 after ``step_size_down`` more (default: ``step_size_up``).

    With ``LambdaLR`` and a base rate ``b`` it gives the learning rates of
    ``CyclicLR(base_lr=b, max_lr=b * max_factor, step_size_up, step_size_down, mode="triangular")``.
    \"\"\"
    down = step_size_up if step_size_down is None else step_size_down
    cycle = step_size_up + down
    ratio = step_size_up / cycle

    def lr_lambda(step: int) -> float:
        x = (step % cycle) / cycle  # position in the cycle, in [0, 1)
        h = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
        return 1.0 + (max_factor - 1.0) * h

    return lr_lambda
"""),
    ],
    "clip": [
        ("no 1e-6 in the scale", '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    if norm_type == math.inf:
        total = torch.stack([g.abs().max() for g in grads]).max()
    else:
        total = torch.stack([g.abs().pow(norm_type).sum() for g in grads]).sum().pow(1.0 / norm_type)
    scale = torch.clamp(max_norm / total, max=1.0)
    return [g * scale for g in grads], total
'''),
        ("returns the norm after clipping", '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    if norm_type == math.inf:
        total = torch.stack([g.abs().max() for g in grads]).max()
    else:
        total = torch.stack([g.abs().pow(norm_type).sum() for g in grads]).sum().pow(1.0 / norm_type)
    clipped = [g * torch.clamp(max_norm / (total + 1e-6), max=1.0) for g in grads]
    return clipped, torch.cat([c.flatten() for c in clipped]).norm(norm_type)
'''),
        ("norm_type ignored: always the 2-norm", '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [g * scale for g in grads], total
'''),
        ("p-norm without the absolute value", '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    if norm_type == math.inf:
        total = torch.stack([g.abs().max() for g in grads]).max()
    else:
        total = sum((g**norm_type).sum() for g in grads) ** (1.0 / norm_type)
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [g * scale for g in grads], total
'''),
        ("total norm returned as a Python float", '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    if norm_type == math.inf:
        total = max(g.abs().max().item() for g in grads)
    else:
        total = sum((g.abs() ** norm_type).sum().item() for g in grads) ** (1.0 / norm_type)
    scale = min(1.0, max_norm / (total + 1e-6))
    return [g * scale for g in grads], total
'''),
        ("min and max swapped in the clamp: never scales down", '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    if norm_type == math.inf:
        total = torch.stack([g.abs().max() for g in grads]).max()
    else:
        total = torch.stack([g.abs().pow(norm_type).sum() for g in grads]).sum().pow(1.0 / norm_type)
    scale = torch.clamp(max_norm / (total + 1e-6), min=1.0)
    return [g * scale for g in grads], total
'''),
        ("clips each value to [-max_norm, max_norm]", '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    if norm_type == math.inf:
        total = torch.stack([g.abs().max() for g in grads]).max()
    else:
        total = torch.stack([g.abs().pow(norm_type).sum() for g in grads]).sum().pow(1.0 / norm_type)
    return [g.clamp(-max_norm, max_norm) for g in grads], total
'''),
        ("infinity norm without the absolute value", '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    if norm_type == math.inf:
        total = torch.stack([g.max() for g in grads]).max()
    else:
        total = torch.stack([g.abs().pow(norm_type).sum() for g in grads]).sum().pow(1.0 / norm_type)
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [g * scale for g in grads], total
'''),
        ("scales the caller's gradients in place", """
def clip_grad_norm(grads: list[torch.Tensor], max_norm: float,
                   norm_type: float = 2.0) -> tuple[list[torch.Tensor], torch.Tensor]:
    \"\"\"Gradients rescaled to a global ``norm_type``-norm of at most ``max_norm``, as ``clip_grad_norm_`` does.

    Args:
        grads: a non-empty list of gradient tensors (any shapes, one dtype).
        max_norm: the threshold c.   norm_type: p (``2.0``, ``1.0``, ``math.inf``, ...).

    Returns:
        ``(clipped, total_norm)``: new tensors ``g * min(1, max_norm / (total_norm + 1e-6))``, and the norm of
        all gradients together *before* clipping, a 0-dim tensor of the gradients' dtype.

    Do not call ``torch.nn.utils.clip_grad_norm_`` (nor any ``torch._foreach_*`` function), and do not scale
    in place.
    \"\"\"
    if math.isinf(norm_type):
        total = torch.stack([g.abs().max() for g in grads]).max()
    else:
        per_tensor = torch.stack([torch.linalg.vector_norm(g, norm_type) for g in grads])
        total = torch.linalg.vector_norm(per_tensor, norm_type)
    factor = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(factor)
    return grads, total
"""),
    ],
    "early": [
        ("threshold taken as relative to the best value", '''
class EarlyStopping:
    def __init__(self, patience, threshold=0.0, greater_is_better=False):
        self.patience, self.threshold, self.greater_is_better = patience, threshold, greater_is_better
        self.best, self.best_step, self.counter, self.evaluations = None, None, 0, 0

    def step(self, value):
        sign = 1 if self.greater_is_better else -1
        if self.best is None or sign * (value - self.best) > self.threshold * abs(self.best):
            self.counter = 0
        else:
            self.counter += 1
        if self.best is None or sign * (value - self.best) > 0:
            self.best, self.best_step = value, self.evaluations
        self.evaluations += 1
        return self.counter >= self.patience
'''),
        ("a gain of exactly the threshold counts as an improvement", '''
class EarlyStopping:
    def __init__(self, patience, threshold=0.0, greater_is_better=False):
        self.patience, self.threshold, self.greater_is_better = patience, threshold, greater_is_better
        self.best, self.best_step, self.counter, self.evaluations = None, None, 0, 0

    def step(self, value):
        sign = 1 if self.greater_is_better else -1
        if self.best is None or (sign * (value - self.best) > 0 and abs(value - self.best) >= self.threshold):
            self.counter = 0
        else:
            self.counter += 1
        if self.best is None or sign * (value - self.best) > 0:
            self.best, self.best_step = value, self.evaluations
        self.evaluations += 1
        return self.counter >= self.patience
'''),
        ("best_step counted from 1", '''
class EarlyStopping:
    def __init__(self, patience, threshold=0.0, greater_is_better=False):
        self.patience, self.threshold, self.greater_is_better = patience, threshold, greater_is_better
        self.best, self.best_step, self.counter, self.evaluations = None, None, 0, 0

    def step(self, value):
        self.evaluations += 1
        sign = 1 if self.greater_is_better else -1
        if self.best is None or sign * (value - self.best) > self.threshold:
            self.counter = 0
        else:
            self.counter += 1
        if self.best is None or sign * (value - self.best) > 0:
            self.best, self.best_step = value, self.evaluations
        return self.counter >= self.patience
'''),
        ("best updated before the counter is decided", '''
class EarlyStopping:
    def __init__(self, patience, threshold=0.0, greater_is_better=False):
        self.patience, self.threshold, self.greater_is_better = patience, threshold, greater_is_better
        self.best, self.best_step, self.counter, self.evaluations = None, None, 0, 0

    def step(self, value):
        sign = 1 if self.greater_is_better else -1
        first = self.best is None
        if first or sign * (value - self.best) > 0:
            self.best, self.best_step = value, self.evaluations
        if first or sign * (value - self.best) > self.threshold:
            self.counter = 0
        else:
            self.counter += 1
        self.evaluations += 1
        return self.counter >= self.patience
'''),
        ("says stop only when the counter equals the patience", '''
class EarlyStopping:
    def __init__(self, patience, threshold=0.0, greater_is_better=False):
        self.patience, self.threshold, self.greater_is_better = patience, threshold, greater_is_better
        self.best, self.best_step, self.counter, self.evaluations = None, None, 0, 0

    def step(self, value):
        sign = 1 if self.greater_is_better else -1
        if self.best is None or sign * (value - self.best) > self.threshold:
            self.counter = 0
        else:
            self.counter += 1
        if self.best is None or sign * (value - self.best) > 0:
            self.best, self.best_step = value, self.evaluations
        self.evaluations += 1
        return self.counter == self.patience
'''),
        ("greater_is_better by negating the metric, so best is negated too", '''
class EarlyStopping:
    def __init__(self, patience, threshold=0.0, greater_is_better=False):
        self.patience, self.threshold, self.greater_is_better = patience, threshold, greater_is_better
        self.best, self.best_step, self.counter, self.evaluations = None, None, 0, 0

    def step(self, value):
        if self.greater_is_better:
            value = -value
        if self.best is None or self.best - value > self.threshold:
            self.counter = 0
        else:
            self.counter += 1
        if self.best is None or value < self.best:
            self.best, self.best_step = value, self.evaluations
        self.evaluations += 1
        return self.counter >= self.patience
'''),
        ("threshold added on the wrong side for a loss", '''
class EarlyStopping:
    def __init__(self, patience, threshold=0.0, greater_is_better=False):
        self.patience, self.threshold, self.greater_is_better = patience, threshold, greater_is_better
        self.best, self.best_step, self.counter, self.evaluations = None, None, 0, 0

    def better(self, a, b):
        return a > b if self.greater_is_better else a < b

    def step(self, value):
        if self.best is None or self.better(value - self.threshold, self.best):
            self.counter = 0
        else:
            self.counter += 1
        if self.best is None or self.better(value, self.best):
            self.best, self.best_step = value, self.evaluations
        self.evaluations += 1
        return self.counter >= self.patience
'''),
    ],
    "search": [
        ("grid with one point divides by zero", '''
def grid_trials(space, points):
    axes = []
    for low, high, scale in space.values():
        if scale == "log":
            axes.append([low * (high / low) ** (i / (points - 1)) for i in range(points)])
        else:
            axes.append([low + (high - low) * i / (points - 1) for i in range(points)])
    return [dict(zip(space, values)) for values in itertools.product(*axes)]
'''),
        ("log grid from torch.logspace(low, high): the bounds taken as exponents", '''
def grid_trials(space, points):
    axes = []
    for low, high, scale in space.values():
        spacing = torch.logspace if scale == "log" else torch.linspace
        axes.append(spacing(low, high, points, dtype=torch.float64).tolist())
    return [dict(zip(space, values)) for values in itertools.product(*axes)]
'''),
        ("grid values from a float32 linspace", '''
def grid_trials(space, points):
    axes = []
    for low, high, scale in space.values():
        if scale == "log":
            axes.append(torch.linspace(math.log(low), math.log(high), points).exp().tolist())
        else:
            axes.append(torch.linspace(low, high, points).tolist())
    return [dict(zip(space, values)) for values in itertools.product(*axes)]
'''),
        ("a new generator for every trial: all trials the same", '''
def random_trials(space, n_trials, seed):
    trials = []
    for _ in range(n_trials):
        u = torch.rand(len(space), dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).tolist()
        trial = {}
        for (name, (low, high, scale)), r in zip(space.items(), u):
            trial[name] = low * (high / low) ** r if scale == "log" else low + r * (high - low)
        trials.append(trial)
    return trials
'''),
        ("draws in float32 (no dtype)", '''
def random_trials(space, n_trials, seed):
    u = torch.rand(n_trials, len(space), generator=torch.Generator().manual_seed(seed)).tolist()
    trials = []
    for row in u:
        trial = {}
        for (name, (low, high, scale)), r in zip(space.items(), row):
            trial[name] = low * (high / low) ** r if scale == "log" else low + r * (high - low)
        trials.append(trial)
    return trials
'''),
        ("one uniform number per trial, shared by every name", '''
def random_trials(space, n_trials, seed):
    u = torch.rand(n_trials, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).tolist()
    trials = []
    for r in u:
        trial = {}
        for name, (low, high, scale) in space.items():
            trial[name] = low * (high / low) ** r if scale == "log" else low + r * (high - low)
        trials.append(trial)
    return trials
'''),
        ("log draws through log10 but back through exp", '''
def random_trials(space, n_trials, seed):
    u = torch.rand(n_trials, len(space), dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    trials = []
    for row in u.tolist():
        trial = {}
        for (name, (low, high, scale)), r in zip(space.items(), row):
            if scale == "log":
                trial[name] = math.exp(math.log10(low) + r * (math.log10(high) - math.log10(low)))
            else:
                trial[name] = low + r * (high - low)
        trials.append(trial)
    return trials
'''),
        ("values left as 0-dim tensors, not floats", '''
def random_trials(space, n_trials, seed):
    u = torch.rand(n_trials, len(space), dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    trials = []
    for i in range(n_trials):
        trial = {}
        for j, (name, (low, high, scale)) in enumerate(space.items()):
            if scale == "log":
                trial[name] = torch.exp(math.log(low) + u[i, j] * (math.log(high) - math.log(low)))
            else:
                trial[name] = low + u[i, j] * (high - low)
        trials.append(trial)
    return trials
'''),
    ],
}

PASSES_VISIBLE = {}
