"""Plausible wrong answers for chapter 07. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Cells with several functions redefine all of them.
VISIBLE names the wrong answers that the exercise's visible test catches too.
"""

_DLOSS = '''
def discriminator_loss(real_logits, fake_logits):
    return {body}
'''

_GLOSS = '''
def generator_loss(fake_logits, kind="non_saturating"):
    if kind == "non_saturating":
        return {ns}
    if kind == "minimax":
        return {mm}
    raise ValueError(kind)
'''


def gloss(ns="F.softplus(-fake_logits).mean()", mm="-F.softplus(fake_logits).mean()"):
    return _GLOSS.format(ns=ns, mm=mm)


_STEPS = '''
def discriminator_step(G, D, opt_D, real, z):
    {d_zero}
    fake = {fake}
    loss = discriminator_loss(D(real), D(fake))
    loss.backward()
    opt_D.step()
    return loss.item()


def generator_step(G, D, opt_G, z, kind="non_saturating"):
    {g_zero}
    loss = generator_loss(D(G(z)), kind)
    loss.backward()
    opt_G.step()
    return loss.item()


def train_step(G, D, opt_G, opt_D, real, z, kind="non_saturating"):
    {train}
'''

_TRAIN = '''d_loss = discriminator_step(G, D, opt_D, real, z)
    g_loss = generator_step(G, D, opt_G, z, kind)
    return d_loss, g_loss'''


def steps(d_zero="opt_D.zero_grad()", fake="G(z).detach()", g_zero="opt_G.zero_grad()", train=_TRAIN):
    return _STEPS.format(d_zero=d_zero, fake=fake, g_zero=g_zero, train=train)


_ONE_BACKWARD = '''
def discriminator_step(G, D, opt_D, real, z):
    opt_D.zero_grad()
    loss = discriminator_loss(D(real), D(G(z).detach()))
    loss.backward()
    opt_D.step()
    return loss.item()


def generator_step(G, D, opt_G, z, kind="non_saturating"):
    opt_G.zero_grad()
    loss = generator_loss(D(G(z)), kind)
    loss.backward()
    opt_G.step()
    return loss.item()


def train_step(G, D, opt_G, opt_D, real, z, kind="non_saturating"):
    opt_D.zero_grad()
    opt_G.zero_grad()
    fake = G(z)
    d_loss = discriminator_loss(D(real), D(fake.detach()))
    g_loss = generator_loss(D(fake), kind)
    (d_loss + g_loss).backward()  # one backward: the generator's loss also reaches D's gradients
    opt_D.step()
    opt_G.step()
    return d_loss.item(), g_loss.item()
'''

_COVERAGE = '''
def mode_coverage(samples, centres, threshold, min_count=1):
    distance = torch.cdist(samples.double(), centres.double(), compute_mode="donot_use_mm_for_euclid_dist")
    nearest_distance, nearest = distance.min(dim=1)
    good = {good}
    counts = {counts}
    return counts, {quality}, int({covered})
'''


def coverage(good="nearest_distance <= threshold",
             counts="torch.bincount(nearest[good], minlength=len(centres))",
             quality="good.double().mean().item()", covered="(counts >= min_count).sum()"):
    return _COVERAGE.format(good=good, counts=counts, quality=quality, covered=covered)


_CYCLE = '''
def cycle_consistency_loss(x, y, G, F):
    return {body}
'''

MUTANTS = {
    "dloss": [
        ("log of sigmoid (not finite for confident logits)",
         _DLOSS.format(body="-torch.log(torch.sigmoid(real_logits)).mean() - torch.log(1 - torch.sigmoid(fake_logits)).mean()")),
        ("labels swapped", _DLOSS.format(body="F.softplus(real_logits).mean() + F.softplus(-fake_logits).mean()")),
        ("one mean over both batches",
         _DLOSS.format(body="torch.cat([F.softplus(-real_logits), F.softplus(fake_logits)]).mean()")),
        ("sums instead of means", _DLOSS.format(body="F.softplus(-real_logits).sum() + F.softplus(fake_logits).sum()")),
        ("calls the built-in",
         _DLOSS.format(body="F.binary_cross_entropy_with_logits(real_logits, torch.ones_like(real_logits)) + "
                            "F.binary_cross_entropy_with_logits(fake_logits, torch.zeros_like(fake_logits))")),
    ],
    "gloss": [
        ("minimax with the wrong sign", gloss(mm="F.softplus(fake_logits).mean()")),
        ("the two losses swapped", gloss(ns="-F.softplus(fake_logits).mean()", mm="F.softplus(-fake_logits).mean()")),
        ("non-saturating as log(1 - D)", gloss(ns="F.softplus(fake_logits).mean()")),
        ("log of sigmoid (not finite for confident logits)",
         gloss(ns="-torch.log(torch.sigmoid(fake_logits)).mean()", mm="torch.log(1 - torch.sigmoid(fake_logits)).mean()")),
        ("a sum, not a mean", gloss(ns="F.softplus(-fake_logits).sum()", mm="-F.softplus(fake_logits).sum()")),
    ],
    "step": [
        ("no detach in the discriminator step", steps(fake="G(z)")),
        ("the discriminator's gradients not cleared", steps(d_zero="pass")),
        ("the generator's gradients not cleared", steps(g_zero="pass")),
        ("generator step first", steps(train="g_loss = generator_step(G, D, opt_G, z, kind)\n"
                                             "    d_loss = discriminator_step(G, D, opt_D, real, z)\n"
                                             "    return d_loss, g_loss")),
        ("the generator step steps the discriminator's optimizer",
         steps(train="d_loss = discriminator_step(G, D, opt_D, real, z)\n"
                     "    g_loss = generator_step(G, D, opt_D, z, kind)\n    return d_loss, g_loss")),
        ("one backward pass for both losses", _ONE_BACKWARD),
    ],
    "coverage": [
        ("a strict threshold", coverage(good="nearest_distance < threshold")),
        ("every mode within the threshold counts the sample, not only the nearest",
         coverage(counts="(distance <= threshold).sum(dim=0)")),
        ("quality as the share of modes reached", coverage(quality="(counts > 0).double().mean().item()")),
        ("min_count ignored", coverage(covered="(counts > 0).sum()")),
        ("a tie goes to the last centre",
         coverage(counts="torch.bincount((len(centres) - 1 - distance.flip(1).argmin(dim=1))[good], "
                         "minlength=len(centres))")),
    ],
    "cycle": [
        ("squared error", _CYCLE.format(body="((F(G(x)) - x) ** 2).mean() + ((G(F(y)) - y) ** 2).mean()")),
        ("one direction only", _CYCLE.format(body="(F(G(x)) - x).abs().mean()")),
        ("sums instead of means", _CYCLE.format(body="(F(G(x)) - x).abs().sum() + (G(F(y)) - y).abs().sum()")),
        ("the round trips composed the wrong way",
         _CYCLE.format(body="(G(F(x)) - x).abs().mean() + (F(G(y)) - y).abs().mean()")),
    ],
}

VISIBLE = {
    "dloss": [
        "log of sigmoid (not finite for confident logits)",
        "labels swapped",
        "one mean over both batches",
        "sums instead of means",
    ],
    "gloss": [
        "minimax with the wrong sign",
        "the two losses swapped",
        "non-saturating as log(1 - D)",
        "log of sigmoid (not finite for confident logits)",
        "a sum, not a mean",
    ],
    "step": [
        "no detach in the discriminator step",
        "the discriminator's gradients not cleared",
        "the generator's gradients not cleared",
        "generator step first",
        "the generator step steps the discriminator's optimizer",
        "one backward pass for both losses",
    ],
    "coverage": [
        "a strict threshold",
        "every mode within the threshold counts the sample, not only the nearest",
        "quality as the share of modes reached",
        "min_count ignored",
        "a tie goes to the last centre",
    ],
    "cycle": [
        "squared error",
        "one direction only",
        "sums instead of means",
        "the round trips composed the wrong way",
    ],
}
