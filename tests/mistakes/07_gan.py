"""Typical mistakes students make in chapter 07 (discriminator and generator losses, alternating steps, mode
coverage, cycle consistency): each must fail the exercise's hidden tests, and its visible test unless
PASSES_VISIBLE says why not.

MISTAKES maps an exercise (answer cell ``<exercise>_answer``) to (the mistake, the answer cell as the student
wrote it). They differ from the planted wrong answers of tests/mutants/07_gan.py. A mistake in one of the three
functions of the ``step`` cell redefines that function only; the others keep their reference definitions.
"""

_D_STEP = '''
def discriminator_step(G, D, opt_D, real, z):
    opt_D.zero_grad()
    fake = G(z).detach()
    loss = discriminator_loss(D(real), D(fake))
    loss.backward()
    opt_D.step()
    return loss.item()
'''

_G_STEP = '''
def generator_step(G, D, opt_G, z, kind="non_saturating"):
    opt_G.zero_grad()
    loss = generator_loss(D(G(z)), kind)
    loss.backward()
    opt_G.step()
    return loss.item()
'''

_COVERAGE = '''
def mode_coverage(samples, centres, threshold, min_count=1):
    distance = {distance}
    nearest_distance, nearest = distance.min(dim=1)
    good = {good}
    counts = {counts}
    return counts, {quality}, {covered}
'''


def _coverage(distance='torch.cdist(samples.double(), centres.double(), compute_mode="donot_use_mm_for_euclid_dist")',
              good="nearest_distance <= threshold", counts="torch.bincount(nearest[good], minlength=len(centres))",
              quality="good.double().mean().item()", covered="int((counts >= min_count).sum())"):
    return _COVERAGE.format(distance=distance, good=good, counts=counts, quality=quality, covered=covered)


MISTAKES = {
    "dloss": [
        ("the fake batch scored as if it were real", '''
def discriminator_loss(real_logits, fake_logits):
    return -F.logsigmoid(real_logits).mean() - F.logsigmoid(fake_logits).mean()
'''),
        ("the fake term as -log1p(-sigmoid), infinite for confident logits", '''
def discriminator_loss(real_logits, fake_logits):
    return F.softplus(-real_logits).mean() - torch.log1p(-torch.sigmoid(fake_logits)).mean()
'''),
        ("logits clamped to ±20 for safety", '''
def discriminator_loss(real_logits, fake_logits):
    real_logits, fake_logits = real_logits.clamp(-20, 20), fake_logits.clamp(-20, 20)
    return F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()
'''),
        ("the two terms averaged", '''
def discriminator_loss(real_logits, fake_logits):
    return (F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()) / 2
'''),
        ("returns a Python float", '''
def discriminator_loss(real_logits, fake_logits):
    return (F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()).item()
'''),
        ("returns a tensor of shape (1,)", '''
def discriminator_loss(real_logits, fake_logits):
    return (F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()).reshape(1)
'''),
        ("the fake logits detached", '''
def discriminator_loss(real_logits, fake_logits):
    return F.softplus(-real_logits).mean() + F.softplus(fake_logits.detach()).mean()
'''),
    ],
    "gloss": [
        ("minimax as the negated non-saturating loss", '''
def generator_loss(fake_logits, kind="non_saturating"):
    if kind == "non_saturating":
        return F.softplus(-fake_logits).mean()
    if kind == "minimax":
        return -F.softplus(-fake_logits).mean()
    raise ValueError(kind)
'''),
        ("an unknown kind falls back to the non-saturating loss", '''
def generator_loss(fake_logits, kind="non_saturating"):
    if kind == "minimax":
        return -F.softplus(fake_logits).mean()
    return F.softplus(-fake_logits).mean()
'''),
        ("the kinds in a dict: an unknown kind raises KeyError", '''
def generator_loss(fake_logits, kind="non_saturating"):
    losses = {"non_saturating": F.softplus(-fake_logits).mean(), "minimax": -F.softplus(fake_logits).mean()}
    return losses[kind]
'''),
        ("minimax as log1p(-sigmoid), infinite for confident logits", '''
def generator_loss(fake_logits, kind="non_saturating"):
    if kind == "non_saturating":
        return F.softplus(-fake_logits).mean()
    if kind == "minimax":
        return torch.log1p(-torch.sigmoid(fake_logits)).mean()
    raise ValueError(kind)
'''),
        ("softplus of the mean logit", '''
def generator_loss(fake_logits, kind="non_saturating"):
    if kind == "non_saturating":
        return F.softplus(-fake_logits.mean())
    if kind == "minimax":
        return -F.softplus(fake_logits.mean())
    raise ValueError(kind)
'''),
        ("returns a Python float", '''
def generator_loss(fake_logits, kind="non_saturating"):
    if kind == "non_saturating":
        return F.softplus(-fake_logits).mean().item()
    if kind == "minimax":
        return -F.softplus(fake_logits).mean().item()
    raise ValueError(kind)
'''),
        ("minimax as the default kind", '''
def generator_loss(fake_logits, kind="minimax"):
    if kind == "non_saturating":
        return F.softplus(-fake_logits).mean()
    if kind == "minimax":
        return -F.softplus(fake_logits).mean()
    raise ValueError(kind)
'''),
        ("the logits detached", '''
def generator_loss(fake_logits, kind="non_saturating"):
    fake_logits = fake_logits.detach()
    if kind == "non_saturating":
        return F.softplus(-fake_logits).mean()
    if kind == "minimax":
        return -F.softplus(fake_logits).mean()
    raise ValueError(kind)
'''),
    ],
    "step": [
        ("the steps return the loss tensors, not floats", '''
def discriminator_step(G, D, opt_D, real, z):
    opt_D.zero_grad()
    loss = discriminator_loss(D(real), D(G(z).detach()))
    loss.backward()
    opt_D.step()
    return loss


def generator_step(G, D, opt_G, z, kind="non_saturating"):
    opt_G.zero_grad()
    loss = generator_loss(D(G(z)), kind)
    loss.backward()
    opt_G.step()
    return loss
'''),
        ("gradients cleared after the step instead of before", '''
def discriminator_step(G, D, opt_D, real, z):
    loss = discriminator_loss(D(real), D(G(z).detach()))
    loss.backward()
    opt_D.step()
    opt_D.zero_grad()
    return loss.item()


def generator_step(G, D, opt_G, z, kind="non_saturating"):
    loss = generator_loss(D(G(z)), kind)
    loss.backward()
    opt_G.step()
    opt_G.zero_grad()
    return loss.item()
'''),
        ("train_step does not pass kind on", '''
def train_step(G, D, opt_G, opt_D, real, z, kind="non_saturating"):
    d_loss = discriminator_step(G, D, opt_D, real, z)
    g_loss = generator_step(G, D, opt_G, z)
    return d_loss, g_loss
'''),
        ("the generator step detaches the generated samples too", _D_STEP + '''

def generator_step(G, D, opt_G, z, kind="non_saturating"):
    opt_G.zero_grad()
    loss = generator_loss(D(G(z).detach()), kind)
    loss.backward()
    opt_G.step()
    return loss.item()
'''),
        ("the generator step draws fresh codes", '''
def train_step(G, D, opt_G, opt_D, real, z, kind="non_saturating"):
    d_loss = discriminator_step(G, D, opt_D, real, z)
    g_loss = generator_step(G, D, opt_G, torch.randn_like(z), kind)
    return d_loss, g_loss
'''),
        ("the losses returned as (J_G, J_D)", '''
def train_step(G, D, opt_G, opt_D, real, z, kind="non_saturating"):
    d_loss = discriminator_step(G, D, opt_D, real, z)
    g_loss = generator_step(G, D, opt_G, z, kind)
    return g_loss, d_loss
'''),
        ("the discriminator's fakes from fresh noise", '''
def discriminator_step(G, D, opt_D, real, z):
    opt_D.zero_grad()
    fake = G(torch.randn_like(z)).detach()
    loss = discriminator_loss(D(real), D(fake))
    loss.backward()
    opt_D.step()
    return loss.item()
''' + _G_STEP),
    ],
    "coverage": [
        ("quality returned as a tensor", _coverage(quality="good.double().mean()")),
        ("covered returned as a tensor", _coverage(covered="(counts >= min_count).sum()")),
        ("counts as a float tensor", _coverage(
            counts="F.one_hot(nearest[good], len(centres)).double().sum(dim=0)")),
        ("squared distances compared with the threshold", _coverage(
            distance="((samples.double()[:, None] - centres.double()[None]) ** 2).sum(-1)")),
        ("the L1 distance instead of the Euclidean one", _coverage(
            distance="torch.cdist(samples.double(), centres.double(), p=1)")),
        ("bincount without minlength", _coverage(counts="torch.bincount(nearest[good])")),
        ("every sample counted at its nearest mode, high-quality or not", _coverage(
            counts="torch.bincount(nearest, minlength=len(centres))")),
        ("a mode covered only with more than min_count samples", _coverage(
            covered="int((counts > min_count).sum())")),
    ],
    "cycle": [
        ("one mean over both round trips' errors", '''
def cycle_consistency_loss(x, y, G, F):
    return torch.cat([(F(G(x)) - x).abs().flatten(), (G(F(y)) - y).abs().flatten()]).mean()
'''),
        ("the Euclidean norm of each difference", '''
def cycle_consistency_loss(x, y, G, F):
    return (F(G(x)) - x).norm() + (G(F(y)) - y).norm()
'''),
        ("the mean of the two terms", '''
def cycle_consistency_loss(x, y, G, F):
    return ((F(G(x)) - x).abs().mean() + (G(F(y)) - y).abs().mean()) / 2
'''),
        ("an L1 norm per sample, then a mean over the batch", '''
def cycle_consistency_loss(x, y, G, F):
    return (F(G(x)) - x).abs().sum(dim=1).mean() + (G(F(y)) - y).abs().sum(dim=1).mean()
'''),
        ("the paper's weight λ = 10 included", '''
def cycle_consistency_loss(x, y, G, F):
    return 10 * ((F(G(x)) - x).abs().mean() + (G(F(y)) - y).abs().mean())
'''),
        ("the absolute value of the mean difference", '''
def cycle_consistency_loss(x, y, G, F):
    return (F(G(x)) - x).mean().abs() + (G(F(y)) - y).mean().abs()
'''),
        ("the round trips detached", '''
def cycle_consistency_loss(x, y, G, F):
    return (F(G(x)).detach() - x).abs().mean() + (G(F(y)).detach() - y).abs().mean()
'''),
    ],
}

PASSES_VISIBLE: dict[tuple[str, str], str] = {}
