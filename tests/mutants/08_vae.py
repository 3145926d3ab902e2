"""Plausible wrong answers for chapter 08. Each must fail that exercise's hidden tests.

MUTANTS maps an exercise (answer cell ``<exercise>_answer``, hidden tests ``<exercise>_hidden``) to
(what is wrong, the wrong answer cell's source). Cells with several functions redefine all of them.
VISIBLE names the wrong answers that the exercise's *visible* test must catch as well.
"""

_KL = '''
def kl_standard_normal(mu, logvar):
    return {standard}


def kl_diagonal_gaussians(mu_q, logvar_q, mu_p, logvar_p):
    return {general}
'''

_STANDARD = "0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum(dim=-1)"
_GENERAL = ("0.5 * (logvar_p - logvar_q + torch.exp(logvar_q - logvar_p) + (mu_q - mu_p).pow(2) * torch.exp(-logvar_p)"
            " - 1.0).sum(dim=-1)")


def kl(standard=_STANDARD, general=_GENERAL):
    return _KL.format(standard=standard, general=general)


_KL_DISTRIBUTIONS = '''
from torch.distributions import Independent, Normal, kl_divergence


def kl_standard_normal(mu, logvar):
    q = Independent(Normal(mu, torch.exp(0.5 * logvar)), 1)
    return kl_divergence(q, Independent(Normal(torch.zeros_like(mu), torch.ones_like(mu)), 1))


def kl_diagonal_gaussians(mu_q, logvar_q, mu_p, logvar_p):
    mu_p, logvar_p = mu_p.expand_as(mu_q), logvar_p.expand_as(mu_q)
    q = Independent(Normal(mu_q, torch.exp(0.5 * logvar_q)), 1)
    return kl_divergence(q, Independent(Normal(mu_p, torch.exp(0.5 * logvar_p)), 1))
'''

_REPARAM = '''
def reparameterize(mu, logvar, eps):
    {body}
'''


def reparam(body):
    return _REPARAM.format(body=body.replace("\n", "\n    "))


_ELBO = '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    per_pixel = {per_pixel}
    reconstruction = {reconstruction}
    kl = {kl}
    return {loss}, reconstruction, kl
'''


def elbo(per_pixel="F.softplus(logits) - x * logits",
         reconstruction="per_pixel.reshape(len(x), -1).sum(dim=1).mean()",
         kl="kl_standard_normal(mu, logvar).mean()", loss="reconstruction + beta * kl"):
    return _ELBO.format(per_pixel=per_pixel, reconstruction=reconstruction, kl=kl, loss=loss)


_INTERP = '''
def lerp(z0, z1, t):
    tt = t.reshape(-1, *([1] * z0.dim()))
    return {lerp}


def slerp(z0, z1, t):
    {prepare}
    cos = {cos}
    omega = {omega}
    sin = torch.sin(omega)
    tt = t.reshape(-1, *([1] * z0.dim()))
    safe = torch.where(sin < 1e-6, torch.ones_like(sin), sin)
    arc = (torch.sin((1 - tt) * omega) * z0 + torch.sin(tt * omega) * z1) / safe
    return {result}
'''


def interp(lerp="(1 - tt) * z0 + tt * z1", prepare="pass",
           cos="(z0 * z1).sum(-1, keepdim=True) / (z0.norm(dim=-1, keepdim=True) * z1.norm(dim=-1, keepdim=True))",
           omega="torch.arccos(cos.clamp(-1.0, 1.0))", result="torch.where(sin < 1e-6, lerp(z0, z1, t), arc)"):
    return _INTERP.format(lerp=lerp, prepare=prepare, cos=cos, omega=omega, result=result)


_IWAE = '''
def iwae_bound(x, mu, logvar, eps, decode):
    z = reparameterize(mu, logvar, eps)
    k, b, latent = z.shape
    logits = decode(z.reshape(k * b, latent)).reshape(k, b, -1)
    log_px_z = -(F.softplus(logits) - x * logits).sum(-1)
    log_2pi = math.log(2 * math.pi)
    log_pz = -0.5 * (z.pow(2) + log_2pi).sum(-1)
    log_qz = {log_qz}
    log_w = {log_w}
    return {result}
'''


def iwae(log_qz="-0.5 * (eps.pow(2) + logvar + log_2pi).sum(-1)", log_w="log_px_z + log_pz - log_qz",
         result="torch.logsumexp(log_w, dim=0) - math.log(k)"):
    return _IWAE.format(log_qz=log_qz, log_w=log_w, result=result)


MUTANTS = {
    "kl": [
        ("log-variance read as log σ (σ² = e^(2·logvar))",
         kl(standard="0.5 * (mu.pow(2) + torch.exp(2 * logvar) - 1.0 - 2 * logvar).sum(dim=-1)")),
        ("the ½ left out", kl(standard="(mu.pow(2) + logvar.exp() - 1.0 - logvar).sum(dim=-1)")),
        ("mean over the latent dimensions instead of the sum",
         kl(standard="0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).mean(dim=-1)")),
        ("the −1 left out", kl(standard="0.5 * (mu.pow(2) + logvar.exp() - logvar).sum(dim=-1)")),
        ("general KL the wrong way round, KL(p ‖ q)", kl(general=_GENERAL.replace("_q", "_tmp").replace(
            "_p", "_q").replace("_tmp", "_p"))),
        ("general KL: the squared mean difference not divided by σp²", kl(general=_GENERAL.replace(
            " * torch.exp(-logvar_p)", ""))),
        ("torch.distributions.kl_divergence", _KL_DISTRIBUTIONS),
    ],
    "reparam": [
        ("log-variance read as log σ: σ = e^logvar", reparam("return mu + torch.exp(logvar) * eps")),
        ("the noise path detached: no gradient reaches log σ²",
         reparam("return mu + (torch.exp(0.5 * logvar) * eps).detach()")),
        ("computed under torch.no_grad()", reparam("with torch.no_grad():\n    return mu + torch.exp(0.5 * logvar) * eps")),
        ("Normal(μ, σ).sample() instead of the reparameterized sample", reparam(
            "extra = eps.shape[:eps.dim() - mu.dim()]\n"
            "return torch.distributions.Normal(mu, torch.exp(0.5 * logvar)).sample(extra)")),
        ("fresh noise from torch.randn_like instead of the given ε",
         reparam("return mu + torch.exp(0.5 * logvar) * torch.randn_like(eps)")),
    ],
    "elbo": [
        ("reconstruction averaged over the pixels", elbo(reconstruction="per_pixel.reshape(len(x), -1).mean(dim=1).mean()")),
        ("the KL term's sign flipped (the slide's loss)", elbo(loss="reconstruction - beta * kl")),
        ("log-variance read as log σ in the KL term",
         elbo(kl="(0.5 * (mu.pow(2) + torch.exp(2 * logvar) - 1.0 - 2 * logvar).sum(-1)).mean()")),
        ("summed over the batch instead of averaged",
         elbo(reconstruction="per_pixel.sum()", kl="kl_standard_normal(mu, logvar).sum()")),
        ("β ignored", elbo(loss="reconstruction + kl")),
        ("log σ(ℓ) and log(1 − σ(ℓ)): overflows for large logits",
         elbo(per_pixel="-(x * torch.log(torch.sigmoid(logits)) + (1 - x) * torch.log(1 - torch.sigmoid(logits)))")),
        ("squared error of σ(ℓ) instead of the Bernoulli likelihood", elbo(per_pixel="(torch.sigmoid(logits) - x) ** 2")),
        ("F.binary_cross_entropy_with_logits", elbo(per_pixel="F.binary_cross_entropy_with_logits(logits, x, "
                                                             "reduction='none')")),
    ],
    "interp": [
        ("slerp is lerp", interp(result="lerp(z0, z1, t)")),
        ("t reversed in lerp", interp(lerp="tt * z0 + (1 - tt) * z1")),
        ("angle from the unnormalised dot product", interp(cos="(z0 * z1).sum(-1, keepdim=True)")),
        ("half the angle", interp(omega="torch.arccos(cos.clamp(-1.0, 1.0)) / 2")),
        ("no linear fallback: 0/0 for parallel vectors", interp(result="(torch.sin((1 - tt) * omega) * z0 + "
                                                                       "torch.sin(tt * omega) * z1) / sin")),
        ("slerp between the unit vectors: the norms are lost",
         interp(prepare="z0, z1 = z0 / z0.norm(dim=-1, keepdim=True), z1 / z1.norm(dim=-1, keepdim=True)")),
        ("torch.lerp", interp(lerp="torch.lerp(z0.expand(tt.shape[:1] + z0.shape), z1.expand(tt.shape[:1] + z1.shape), "
                                   "tt.expand(tt.shape[:1] + z0.shape))")),
    ],
    "iwae": [
        ("mean of the log-weights (the ELBO) instead of log-mean-exp", iwae(result="log_w.mean(dim=0)")),
        ("− log K left out", iwae(result="torch.logsumexp(log_w, dim=0)")),
        ("exp, mean, log: underflows to −inf", iwae(result="torch.log(torch.exp(log_w).mean(dim=0))")),
        ("log p(z) − log q(z|x) left out", iwae(log_w="log_px_z")),
        ("log-variance read as log σ in log q", iwae(log_qz="-0.5 * (eps.pow(2) + 2 * logvar + log_2pi).sum(-1)")),
        ("log q evaluated as a standard normal at z", iwae(log_qz="-0.5 * (z.pow(2) + logvar + log_2pi).sum(-1)")),
        ("logsumexp over the batch instead of the samples",
         iwae(result="torch.logsumexp(log_w, dim=1) - math.log(k)")),
    ],
}

VISIBLE = {
    "kl": ["log-variance read as log σ (σ² = e^(2·logvar))", "the ½ left out",
           "mean over the latent dimensions instead of the sum", "the −1 left out",
           "general KL the wrong way round, KL(p ‖ q)", "general KL: the squared mean difference not divided by σp²"],
    "reparam": ["log-variance read as log σ: σ = e^logvar", "the noise path detached: no gradient reaches log σ²",
                "computed under torch.no_grad()", "Normal(μ, σ).sample() instead of the reparameterized sample",
                "fresh noise from torch.randn_like instead of the given ε"],
    "elbo": ["reconstruction averaged over the pixels", "the KL term's sign flipped (the slide's loss)",
             "log-variance read as log σ in the KL term", "summed over the batch instead of averaged", "β ignored",
             "log σ(ℓ) and log(1 − σ(ℓ)): overflows for large logits",
             "squared error of σ(ℓ) instead of the Bernoulli likelihood"],
    "interp": ["slerp is lerp", "t reversed in lerp", "angle from the unnormalised dot product", "half the angle",
               "no linear fallback: 0/0 for parallel vectors", "slerp between the unit vectors: the norms are lost"],
    "iwae": ["mean of the log-weights (the ELBO) instead of log-mean-exp", "− log K left out",
             "exp, mean, log: underflows to −inf", "log p(z) − log q(z|x) left out",
             "log-variance read as log σ in log q", "log q evaluated as a standard normal at z",
             "logsumexp over the batch instead of the samples"],
}
