"""Plausible wrong answers for chapter 10. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Cells with several functions redefine all of them.
"""

_SGD = '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad + weight_decay * param if weight_decay != 0 else grad
    new_state = dict(state)
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = {first} if buf is None else {update}
        new_state["momentum_buffer"] = buf
        d = {nesterov} if nesterov else buf
    return {step}, new_state
'''


def sgd(first="d.clone()", update="momentum * buf + (1 - dampening) * d", nesterov="d + momentum * buf",
        step="param - lr * d"):
    return _SGD.format(first=first, update=update, nesterov=nesterov, step=step)


_SGD_DECAY_AFTER = '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    d = grad
    new_state = dict(state)
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = d.clone() if buf is None else momentum * buf + (1 - dampening) * d
        new_state["momentum_buffer"] = buf
        d = d + momentum * buf if nesterov else buf
    return param - lr * (d + weight_decay * param), new_state
'''

_SGD_TORCH = '''
def sgd_update(param, grad, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    p = torch.nn.Parameter(param.clone())
    opt = torch.optim.SGD([p], lr=lr, momentum=momentum, dampening=dampening, nesterov=nesterov,
                          weight_decay=weight_decay)
    if "momentum_buffer" in state:
        opt.state[p]["momentum_buffer"] = state["momentum_buffer"].clone()
    p.grad = grad.clone()
    opt.step()
    return p.detach(), dict(opt.state[p])
'''

_ADAM = '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    step = state.get("step", 0) + 1
    m = state.get("exp_avg", torch.zeros_like(param))
    v = state.get("exp_avg_sq", torch.zeros_like(param))
    if weight_decay != 0:
        if decoupled:
            param = {decay}
        else:
            grad = grad + weight_decay * param
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat = {m_hat}
    v_hat = {v_hat}
    return param - lr * m_hat / ({denom}), {{"step": {step_out}, "exp_avg": m, "exp_avg_sq": v}}
'''


def adam(decay="param * (1 - lr * weight_decay)", m_hat="m / (1 - beta1**step)", v_hat="v / (1 - beta2**step)",
         denom="v_hat.sqrt() + eps", step_out="step"):
    return _ADAM.format(decay=decay, m_hat=m_hat, v_hat=v_hat, denom=denom, step_out=step_out)


_ADAM_L2_ALWAYS = '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    beta1, beta2 = betas
    step = state.get("step", 0) + 1
    m = state.get("exp_avg", torch.zeros_like(param))
    v = state.get("exp_avg_sq", torch.zeros_like(param))
    grad = grad + weight_decay * param
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat = m / (1 - beta1**step)
    v_hat = v / (1 - beta2**step)
    return param - lr * m_hat / (v_hat.sqrt() + eps), {"step": step, "exp_avg": m, "exp_avg_sq": v}
'''

_ADAM_TORCH = '''
def adam_update(param, grad, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    p = torch.nn.Parameter(param.clone())
    opt = (torch.optim.AdamW if decoupled else torch.optim.Adam)([p], lr=lr, betas=betas, eps=eps,
                                                                  weight_decay=weight_decay)
    if state:
        opt.state[p].update({"step": torch.tensor(float(state["step"])), "exp_avg": state["exp_avg"].clone(),
                             "exp_avg_sq": state["exp_avg_sq"].clone()})
    p.grad = grad.clone()
    opt.step()
    s = opt.state[p]
    return p.detach(), {"step": int(s["step"]), "exp_avg": s["exp_avg"], "exp_avg_sq": s["exp_avg_sq"]}
'''

_SCHED = '''
def linear_warmup_decay(warmup_steps, total_steps):
    def factor(step):
        if {warm_cond}:
            return {warm}
        return {linear}
    return factor


def cosine_warmup_decay(warmup_steps, total_steps, num_cycles=0.5):
    def factor(step):
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        progress = {progress}
        return {cosine}
    return factor


def triangular(step_size_up, max_factor, step_size_down=None):
    down = {down}
    length = step_size_up + down
    ratio = step_size_up / length

    def factor(step):
        x = (step % length) / length
        height = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
        return {tri}
    return factor
'''


def sched(warm_cond="step < warmup_steps", warm="step / max(1, warmup_steps)",
          linear="max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))",
          progress="(step - warmup_steps) / max(1, total_steps - warmup_steps)",
          cosine="max(0.0, 0.5 * (1.0 + math.cos(2.0 * math.pi * num_cycles * progress)))",
          down="step_size_up if step_size_down is None else step_size_down",
          tri="1.0 + (max_factor - 1.0) * height"):
    return _SCHED.format(warm_cond=warm_cond, warm=warm, linear=linear, progress=progress, cosine=cosine, down=down,
                         tri=tri)


_CLIP = '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    if norm_type == math.inf:
        total = {inf_norm}
    else:
        total = {norm}
    scale = {scale}
    return [g * scale for g in grads], total
'''


def clip(inf_norm="torch.stack([g.abs().max() for g in grads]).max()",
         norm="torch.stack([(g.abs() ** norm_type).sum() for g in grads]).sum() ** (1.0 / norm_type)",
         scale="torch.clamp(max_norm / (total + 1e-6), max=1.0)"):
    return _CLIP.format(inf_norm=inf_norm, norm=norm, scale=scale)


_CLIP_EACH = '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    total = torch.stack([(g.abs() ** norm_type).sum() for g in grads]).sum() ** (1.0 / norm_type)
    out = []
    for g in grads:
        n = (g.abs() ** norm_type).sum() ** (1.0 / norm_type)
        out.append(g * torch.clamp(max_norm / (n + 1e-6), max=1.0))
    return out, total
'''

_CLIP_TORCH = '''
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type, foreach=False)
    return [p.grad for p in params], total
'''

_EARLY = '''
class EarlyStopping:
    def __init__(self, patience, threshold=0.0, greater_is_better=False):
        self.patience, self.threshold, self.greater_is_better = patience, threshold, greater_is_better
        self.best = None
        self.best_step = None
        self.counter = 0
        self.evaluations = 0

    def step(self, value):
        def better(a, b):
            return {better}

        if self.best is None or ({improved}):
            self.counter = 0
        else:
            self.counter += 1
        if self.best is None or {new_best}:
            self.best, self.best_step = value, self.evaluations
        self.evaluations += 1
        return {stop}
'''


def early(better="a > b if self.greater_is_better else a < b",
          improved="better(value, self.best) and abs(value - self.best) > self.threshold",
          new_best="better(value, self.best)", stop="self.counter >= self.patience"):
    return _EARLY.format(better=better, improved=improved, new_best=new_best, stop=stop)


_SEARCH = '''
def grid_trials(space, points):
    axes = []
    for low, high, scale in space.values():
        fractions = [{fraction} for i in range(points)]
        if scale == "log":
            axes.append([{log_value} for f in fractions])
        else:
            axes.append([low + f * (high - low) for f in fractions])
    return [dict(zip(space, values)) for values in {product}]


def random_trials(space, n_trials, seed):
    u = {draw}
    trials = []
    for row in u.tolist():
        trial = {{}}
        for (name, (low, high, scale)), r in zip(space.items(), row):
            if scale == "log":
                trial[name] = {log_draw}
            else:
                trial[name] = low + r * (high - low)
        trials.append(trial)
    return trials
'''


def search(fraction="i / (points - 1) if points > 1 else 0.0",
           log_value="math.exp(math.log(low) + f * (math.log(high) - math.log(low)))",
           product="itertools.product(*axes)",
           draw="torch.rand(n_trials, len(space), dtype=torch.float64, generator=torch.Generator().manual_seed(seed))",
           log_draw="math.exp(math.log(low) + r * (math.log(high) - math.log(low)))"):
    return _SEARCH.format(fraction=fraction, log_value=log_value, product=product, draw=draw, log_draw=log_draw)


MUTANTS = {
    "sgd": [
        ("dampening applied on the first step too", sgd(first="(1 - dampening) * d")),
        ("Nesterov steps along the buffer only", sgd(nesterov="buf")),
        ("dampening ignored", sgd(update="momentum * buf + d")),
        ("weight decay added after the momentum, not into the gradient", _SGD_DECAY_AFTER),
        ("calls torch.optim.SGD", _SGD_TORCH),
    ],
    "adam": [
        ("no bias correction", adam(m_hat="m", v_hat="v")),
        ("eps inside the square root", adam(denom="(v_hat + eps).sqrt()")),
        ("decoupled decay without the learning rate", adam(decay="param * (1 - weight_decay)")),
        ("AdamW decays through the gradient like Adam", _ADAM_L2_ALWAYS),
        ("bias correction with the step before incrementing", adam(m_hat="m / (1 - beta1**max(step - 1, 1))",
                                                                   v_hat="v / (1 - beta2**max(step - 1, 1))")),
        ("step counter not stored", adam(step_out="step - 1")),
        ("calls torch.optim.Adam", _ADAM_TORCH),
    ],
    "sched": [
        ("warm-up starts at 1 / warmup_steps instead of 0", sched(warm="(step + 1) / max(1, warmup_steps)")),
        ("linear decay from the first step, ignoring warm-up", sched(
            linear="max(0.0, (total_steps - step) / max(1, total_steps))")),
        ("cosine over a full period per cycle", sched(
            cosine="max(0.0, 0.5 * (1.0 + math.cos(math.pi * num_cycles * progress)))")),
        ("cosine progress counted from step 0", sched(progress="step / max(1, total_steps)")),
        ("triangular ignores step_size_down", sched(down="step_size_up")),
        ("triangular peaks at max_factor - 1", sched(tri="1.0 + (max_factor - 2.0) * height")),
    ],
    "clip": [
        ("each tensor clipped on its own", _CLIP_EACH),
        ("always rescaled to max_norm, also upwards", clip(scale="max_norm / (total + 1e-6)")),
        ("sum of the tensors' norms instead of the global norm", clip(
            norm="torch.stack([(g.abs() ** norm_type).sum() ** (1.0 / norm_type) for g in grads]).sum()")),
        ("infinity norm as the 2-norm", clip(
            inf_norm="torch.stack([(g ** 2).sum() for g in grads]).sum().sqrt()")),
        ("calls clip_grad_norm_", _CLIP_TORCH),
    ],
    "early": [
        ("a tie counts as an improvement", early(
            improved="(value <= self.best if not self.greater_is_better else value >= self.best) "
                     "and abs(value - self.best) >= self.threshold")),
        ("threshold ignored", early(improved="better(value, self.best)")),
        ("stops one evaluation late", early(stop="self.counter > self.patience")),
        ("best updated only on improvements above the threshold", early(
            new_best="(better(value, self.best) and abs(value - self.best) > self.threshold)")),
        ("greater_is_better ignored", early(better="a < b")),
    ],
    "search": [
        ("log-scaled grid spaced linearly", search(log_value="low + f * (high - low)")),
        ("grid leaves out the upper end", search(fraction="i / points")),
        ("last name varies slowest", search(
            product="(tuple(reversed(v)) for v in itertools.product(*reversed(axes)))")),
        ("log-scaled draws uniform", search(log_draw="low + r * (high - low)")),
        ("draws column by column", search(
            draw="torch.rand(len(space), n_trials, dtype=torch.float64, "
                 "generator=torch.Generator().manual_seed(seed)).T")),
    ],
}

# The planted answers each exercise's visible test fails as well: the student sees them before the grade.
VISIBLE = {
    "sgd": [
        "dampening applied on the first step too",
        "Nesterov steps along the buffer only",
        "dampening ignored",
        "weight decay added after the momentum, not into the gradient",
    ],
    "adam": [
        "no bias correction",
        "eps inside the square root",
        "decoupled decay without the learning rate",
        "AdamW decays through the gradient like Adam",
        "bias correction with the step before incrementing",
        "step counter not stored",
    ],
    "sched": [
        "warm-up starts at 1 / warmup_steps instead of 0",
        "linear decay from the first step, ignoring warm-up",
        "cosine over a full period per cycle",
        "cosine progress counted from step 0",
        "triangular ignores step_size_down",
        "triangular peaks at max_factor - 1",
    ],
    "clip": [
        "each tensor clipped on its own",
        "always rescaled to max_norm, also upwards",
        "sum of the tensors' norms instead of the global norm",
        "infinity norm as the 2-norm",
    ],
    "early": [
        "a tie counts as an improvement",
        "threshold ignored",
        "stops one evaluation late",
        "best updated only on improvements above the threshold",
        "greater_is_better ignored",
    ],
    "search": [
        "log-scaled grid spaced linearly",
        "grid leaves out the upper end",
        "last name varies slowest",
        "log-scaled draws uniform",
        "draws column by column",
    ],
}
