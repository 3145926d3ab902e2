"""Typical mistakes students make in chapter 08 (variational autoencoders): each must fail the exercise's hidden
tests, and its visible test unless PASSES_VISIBLE says why not."""

MISTAKES = {
    "kl": [
        ("the log-variance term added instead of subtracted", '''
def kl_standard_normal(mu, logvar):
    return 0.5 * (mu.pow(2) + logvar.exp() - 1.0 + logvar).sum(dim=-1)
'''),
        ("σ where σ² belongs (exp(logvar / 2) for the variance)", '''
def kl_standard_normal(mu, logvar):
    return 0.5 * (mu.pow(2) + torch.exp(0.5 * logvar) - 1.0 - logvar).sum(dim=-1)
'''),
        ("the PyTorch example's KL: summed over the batch too, one number", '''
def kl_standard_normal(mu, logvar):
    return -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
'''),
        ("summed over the batch dimension (dim 0) instead of the latent one", '''
def kl_standard_normal(mu, logvar):
    return 0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum(dim=0)
'''),
        ("the −½ form without its minus sign", '''
def kl_standard_normal(mu, logvar):
    return 0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=-1)
'''),
        ("general KL: log(σq/σp) instead of log(σp/σq)", '''
def kl_diagonal_gaussians(mu_q, logvar_q, mu_p, logvar_p):
    ratio = torch.exp(logvar_q - logvar_p)
    return 0.5 * (logvar_q - logvar_p + ratio + (mu_q - mu_p).pow(2) * torch.exp(-logvar_p) - 1.0).sum(dim=-1)
'''),
        ("general KL: variance ratio upside down, σp²/σq²", '''
def kl_diagonal_gaussians(mu_q, logvar_q, mu_p, logvar_p):
    ratio = torch.exp(logvar_p - logvar_q)
    return 0.5 * (logvar_p - logvar_q + ratio + (mu_q - mu_p).pow(2) * torch.exp(-logvar_p) - 1.0).sum(dim=-1)
'''),
        ("general KL: squared mean difference divided by σq² instead of σp²", '''
def kl_diagonal_gaussians(mu_q, logvar_q, mu_p, logvar_p):
    ratio = torch.exp(logvar_q - logvar_p)
    return 0.5 * (logvar_p - logvar_q + ratio + (mu_q - mu_p).pow(2) / logvar_q.exp() - 1.0).sum(dim=-1)
'''),
        ("computes in float32 whatever the inputs' dtype", """
def kl_standard_normal(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    \"\"\"KL( N(mu, diag exp(logvar)) ‖ N(0, I) ), summed over the last dimension.

    Args:
        mu: (..., L) means, float32 or float64.
        logvar: (..., L) log-variances log σ², same shape and dtype.

    Returns:
        (...) the KL divergence of each row, in nats, same dtype.
    \"\"\"
    mu, logvar = mu.float(), logvar.float()
    return 0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum(dim=-1)


def kl_diagonal_gaussians(mu_q: torch.Tensor, logvar_q: torch.Tensor, mu_p: torch.Tensor,
                          logvar_p: torch.Tensor) -> torch.Tensor:
    \"\"\"KL( N(mu_q, diag exp(logvar_q)) ‖ N(mu_p, diag exp(logvar_p)) ), summed over the last dimension.

    Args:
        mu_q, logvar_q: (..., L) mean and log-variance of q.
        mu_p, logvar_p: mean and log-variance of p, each broadcastable to (..., L) (e.g. (L,) for one p).

    Returns:
        (...) in nats, the dtype of the inputs.
    \"\"\"
    mu_q, logvar_q = mu_q.float(), logvar_q.float()
    mu_p, logvar_p = mu_p.float(), logvar_p.float()
    var_ratio = (logvar_q - logvar_p).exp()
    mean_term = (mu_q - mu_p).pow(2) / logvar_p.exp()
    return 0.5 * (logvar_p - logvar_q + var_ratio + mean_term - 1.0).sum(dim=-1)
"""),
        ("the log of exp(logvar), -inf once σ² underflows", """
def kl_standard_normal(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    \"\"\"KL( N(mu, diag exp(logvar)) ‖ N(0, I) ), summed over the last dimension.

    Args:
        mu: (..., L) means, float32 or float64.
        logvar: (..., L) log-variances log σ², same shape and dtype.

    Returns:
        (...) the KL divergence of each row, in nats, same dtype.
    \"\"\"
    var = torch.exp(logvar)
    return 0.5 * (mu.pow(2) + var - 1.0 - torch.log(var)).sum(-1)


def kl_diagonal_gaussians(mu_q: torch.Tensor, logvar_q: torch.Tensor, mu_p: torch.Tensor,
                          logvar_p: torch.Tensor) -> torch.Tensor:
    \"\"\"KL( N(mu_q, diag exp(logvar_q)) ‖ N(mu_p, diag exp(logvar_p)) ), summed over the last dimension.

    Args:
        mu_q, logvar_q: (..., L) mean and log-variance of q.
        mu_p, logvar_p: mean and log-variance of p, each broadcastable to (..., L) (e.g. (L,) for one p).

    Returns:
        (...) in nats, the dtype of the inputs.
    \"\"\"
    var_q = torch.exp(logvar_q)
    var_p = torch.exp(logvar_p)
    return (0.5 * torch.log(var_p / var_q) + (var_q + (mu_q - mu_p).pow(2)) / (2.0 * var_p) - 0.5).sum(-1)
"""),
    ],
    "reparam": [
        ("log-variance read as the variance: σ = √logvar", '''
def reparameterize(mu, logvar, eps):
    return mu + torch.sqrt(logvar) * eps
'''),
        ("the mean left out: z = σ·ε", '''
def reparameterize(mu, logvar, eps):
    return torch.exp(0.5 * logvar) * eps
'''),
        ("μ scaled instead of ε: z = μ·σ + ε", '''
def reparameterize(mu, logvar, eps):
    return mu * torch.exp(0.5 * logvar) + eps
'''),
        ("standardised instead of sampled: z = (ε − μ)/σ", '''
def reparameterize(mu, logvar, eps):
    return (eps - mu) / torch.exp(0.5 * logvar)
'''),
        ("σ = softplus(logvar), as in encoders that output a raw scale", '''
def reparameterize(mu, logvar, eps):
    return mu + F.softplus(logvar) * eps
'''),
        ("ε scaled and shifted in place", '''
def reparameterize(mu, logvar, eps):
    return eps.mul_(torch.exp(0.5 * logvar)).add_(mu)
'''),
        ("a sample dimension always added in front", '''
def reparameterize(mu, logvar, eps):
    std = torch.exp(0.5 * logvar)
    return mu.unsqueeze(0) + std.unsqueeze(0) * eps.reshape(-1, *mu.shape)
'''),
    ],
    "elbo": [
        ("the x·ℓ term's sign flipped: softplus(ℓ) + x·ℓ", '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    per_pixel = F.softplus(logits) + x * logits
    reconstruction = per_pixel.reshape(len(x), -1).sum(dim=1).mean()
    kl = kl_standard_normal(mu, logvar).mean()
    return reconstruction + beta * kl, reconstruction, kl
'''),
        ("the log-likelihood itself, not its negative", '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    per_pixel = x * F.logsigmoid(logits) + (1 - x) * F.logsigmoid(-logits)
    reconstruction = per_pixel.reshape(len(x), -1).sum(dim=1).mean()
    kl = kl_standard_normal(mu, logvar).mean()
    return reconstruction + beta * kl, reconstruction, kl
'''),
        ("β weights the reconstruction instead of the KL", '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    per_pixel = F.softplus(logits) - x * logits
    reconstruction = per_pixel.reshape(len(x), -1).sum(dim=1).mean()
    kl = kl_standard_normal(mu, logvar).mean()
    return beta * reconstruction + kl, reconstruction, kl
'''),
        ("returns β·KL as the KL term", '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    per_pixel = F.softplus(logits) - x * logits
    reconstruction = per_pixel.reshape(len(x), -1).sum(dim=1).mean()
    kl = beta * kl_standard_normal(mu, logvar).mean()
    return reconstruction + kl, reconstruction, kl
'''),
        ("KL summed over the batch, reconstruction averaged", '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    per_pixel = F.softplus(logits) - x * logits
    reconstruction = per_pixel.reshape(len(x), -1).sum(dim=1).mean()
    kl = kl_standard_normal(mu, logvar).sum()
    return reconstruction + beta * kl, reconstruction, kl
'''),
        ("summed over dim 1 only: right for (B, D), not for (B, C, H, W)", '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    per_pixel = F.softplus(logits) - x * logits
    reconstruction = per_pixel.sum(dim=1).mean()
    kl = kl_standard_normal(mu, logvar).mean()
    return reconstruction + beta * kl, reconstruction, kl
'''),
        ("softplus by hand, log(1 + e^ℓ): overflows for large logits", '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    per_pixel = torch.log1p(torch.exp(logits)) - x * logits
    reconstruction = per_pixel.reshape(len(x), -1).sum(dim=1).mean()
    kl = kl_standard_normal(mu, logvar).mean()
    return reconstruction + beta * kl, reconstruction, kl
'''),
        ("the targets binarised inside the loss", '''
def negative_elbo(x, logits, mu, logvar, beta=1.0):
    x = (x > 0.5).to(logits.dtype)
    per_pixel = F.softplus(logits) - x * logits
    reconstruction = per_pixel.reshape(len(x), -1).sum(dim=1).mean()
    kl = kl_standard_normal(mu, logvar).mean()
    return reconstruction + beta * kl, reconstruction, kl
'''),
    ],
    "interp": [
        ("lerp with t[:, None]: right for one code, not for a batch of codes", '''
def lerp(z0, z1, t):
    tt = t[:, None]
    return (1 - tt) * z0 + tt * z1
'''),
        ("lerp's points stacked after the batch dimension", '''
def lerp(z0, z1, t):
    return torch.stack([(1 - s) * z0 + s * z1 for s in t], dim=z0.dim() - 1)
'''),
        ("arccos of an unclamped cosine: NaN for parallel codes that round above 1", '''
def slerp(z0, z1, t):
    cos = (z0 * z1).sum(-1, keepdim=True) / (z0.norm(dim=-1, keepdim=True) * z1.norm(dim=-1, keepdim=True))
    omega = torch.arccos(cos)
    sin = torch.sin(omega)
    tt = t.reshape(-1, *([1] * z0.dim()))
    safe = torch.where(sin < 1e-6, torch.ones_like(sin), sin)
    arc = (torch.sin((1 - tt) * omega) * z0 + torch.sin(tt * omega) * z1) / safe
    return torch.where(sin < 1e-6, lerp(z0, z1, t), arc)
'''),
        ("slerp with one angle for the whole batch", '''
def slerp(z0, z1, t):
    cos = (z0 * z1).sum() / (z0.norm() * z1.norm())
    omega = torch.arccos(cos.clamp(-1.0, 1.0))
    sin = torch.sin(omega)
    tt = t.reshape(-1, *([1] * z0.dim()))
    if sin < 1e-6:
        return lerp(z0, z1, t)
    return (torch.sin((1 - tt) * omega) * z0 + torch.sin(tt * omega) * z1) / sin
'''),
        ("slerp's angle taken over the batch dimension (dim 0)", '''
def slerp(z0, z1, t):
    cos = (z0 * z1).sum(0, keepdim=True) / (z0.norm(dim=0, keepdim=True) * z1.norm(dim=0, keepdim=True))
    omega = torch.arccos(cos.clamp(-1.0, 1.0))
    sin = torch.sin(omega)
    tt = t.reshape(-1, *([1] * z0.dim()))
    safe = torch.where(sin < 1e-6, torch.ones_like(sin), sin)
    arc = (torch.sin((1 - tt) * omega) * z0 + torch.sin(tt * omega) * z1) / safe
    return torch.where(sin < 1e-6, lerp(z0, z1, t), arc)
'''),
        ("slerp not divided by sin ω", '''
def slerp(z0, z1, t):
    cos = (z0 * z1).sum(-1, keepdim=True) / (z0.norm(dim=-1, keepdim=True) * z1.norm(dim=-1, keepdim=True))
    omega = torch.arccos(cos.clamp(-1.0, 1.0))
    tt = t.reshape(-1, *([1] * z0.dim()))
    arc = torch.sin((1 - tt) * omega) * z0 + torch.sin(tt * omega) * z1
    return torch.where(torch.sin(omega) < 1e-6, lerp(z0, z1, t), arc)
'''),
        ("slerp with t[:, None]: right for one code, not for a batch", '''
def slerp(z0, z1, t):
    cos = (z0 * z1).sum(-1, keepdim=True) / (z0.norm(dim=-1, keepdim=True) * z1.norm(dim=-1, keepdim=True))
    omega = torch.arccos(cos.clamp(-1.0, 1.0))
    sin = torch.sin(omega)
    tt = t[:, None]
    safe = torch.where(sin < 1e-6, torch.ones_like(sin), sin)
    arc = (torch.sin((1 - tt) * omega) * z0 + torch.sin(tt * omega) * z1) / safe
    return torch.where(sin < 1e-6, lerp(z0, z1, t), arc)
'''),
        ("slerp's two weights swapped", '''
def slerp(z0, z1, t):
    cos = (z0 * z1).sum(-1, keepdim=True) / (z0.norm(dim=-1, keepdim=True) * z1.norm(dim=-1, keepdim=True))
    omega = torch.arccos(cos.clamp(-1.0, 1.0))
    sin = torch.sin(omega)
    tt = t.reshape(-1, *([1] * z0.dim()))
    safe = torch.where(sin < 1e-6, torch.ones_like(sin), sin)
    arc = (torch.sin(tt * omega) * z0 + torch.sin((1 - tt) * omega) * z1) / safe
    return torch.where(sin < 1e-6, lerp(z0, z1, t), arc)
'''),
        ("falls back to lerp for the whole batch when one pair is parallel", """
def lerp(z0: torch.Tensor, z1: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    \"\"\"Points on the straight line from z0 to z1.

    Args:
        z0, z1: (..., L) start and end codes, same shape.
        t: (T,) fractions of the way (0 gives z0, 1 gives z1), the dtype of z0.

    Returns:
        (T, ..., L): entry k is (1 − t[k]) z0 + t[k] z1.
    \"\"\"
    t = t.reshape(-1, *([1] * z0.dim()))  # (T, 1, ..., 1)
    return (1 - t) * z0 + t * z1


def slerp(z0: torch.Tensor, z1: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    \"\"\"Points on the great-circle arc from z0 to z1 (spherical linear interpolation), one arc per pair of rows.

    Args:
        z0, z1: (..., L) nonzero start and end codes, same shape; the angle ω between z0 and z1 is taken over
            the last dimension, one angle per pair of vectors.
        t: (T,) fractions of the way, the dtype of z0.

    Returns:
        (T, ..., L): sin((1 − t)ω)/sin ω · z0 + sin(tω)/sin ω · z1; where sin ω < 1e-6 (parallel vectors), the
        linear interpolation instead.
    \"\"\"
    t = t.reshape(-1, *([1] * z0.dim()))
    n0 = z0.norm(dim=-1, keepdim=True)
    n1 = z1.norm(dim=-1, keepdim=True)
    cos = ((z0 * z1).sum(dim=-1, keepdim=True) / (n0 * n1)).clamp(-1.0, 1.0)
    omega = torch.acos(cos)
    sin_omega = torch.sin(omega)
    if bool((sin_omega < 1e-6).any()):  # parallel vectors: 0/0, use the linear path
        return (1 - t) * z0 + t * z1
    return torch.sin((1 - t) * omega) / sin_omega * z0 + torch.sin(t * omega) / sin_omega * z1
"""),
        ("the linear path for parallel codes only, not for opposite ones", """
def lerp(z0: torch.Tensor, z1: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    \"\"\"Points on the straight line from z0 to z1.

    Args:
        z0, z1: (..., L) start and end codes, same shape.
        t: (T,) fractions of the way (0 gives z0, 1 gives z1), the dtype of z0.

    Returns:
        (T, ..., L): entry k is (1 − t[k]) z0 + t[k] z1.
    \"\"\"
    tt = t.reshape(-1, *([1] * z0.dim()))  # (T, 1, ..., 1)
    return (1 - tt) * z0 + tt * z1


def slerp(z0: torch.Tensor, z1: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    \"\"\"Points on the great-circle arc from z0 to z1 (spherical linear interpolation), one arc per pair of rows.

    Args:
        z0, z1: (..., L) nonzero start and end codes, same shape; the angle ω between z0 and z1 is taken over
            the last dimension, one angle per pair of vectors.
        t: (T,) fractions of the way, the dtype of z0.

    Returns:
        (T, ..., L): sin((1 − t)ω)/sin ω · z0 + sin(tω)/sin ω · z1; where sin ω < 1e-6 (parallel vectors), the
        linear interpolation instead.
    \"\"\"
    tt = t.reshape(-1, *([1] * z0.dim()))  # (T, 1, ..., 1)
    cos_omega = (z0 * z1).sum(-1, keepdim=True) / (z0.norm(dim=-1, keepdim=True) * z1.norm(dim=-1, keepdim=True))
    omega = torch.acos(cos_omega.clamp(-1.0, 1.0))
    sin_omega = torch.sin(omega)
    arc = torch.sin((1 - tt) * omega) / sin_omega * z0 + torch.sin(tt * omega) / sin_omega * z1
    return torch.where(omega < 1e-6, lerp(z0, z1, t), arc)
"""),
    ],
    "iwae": [
        ("log q(z|x) without its log σ² term", '''
def iwae_bound(x, mu, logvar, eps, decode):
    z = reparameterize(mu, logvar, eps)
    k, b, latent = z.shape
    logits = decode(z.reshape(k * b, latent)).reshape(k, b, -1)
    log_px_z = -(F.softplus(logits) - x * logits).sum(-1)
    log_2pi = math.log(2 * math.pi)
    log_pz = -0.5 * (z.pow(2) + log_2pi).sum(-1)
    log_qz = -0.5 * (eps.pow(2) + log_2pi).sum(-1)
    return torch.logsumexp(log_px_z + log_pz - log_qz, dim=0) - math.log(k)
'''),
        ("log q(z|x) with (z − μ) divided by σ² before squaring", '''
def iwae_bound(x, mu, logvar, eps, decode):
    z = reparameterize(mu, logvar, eps)
    k, b, latent = z.shape
    logits = decode(z.reshape(k * b, latent)).reshape(k, b, -1)
    log_px_z = -(F.softplus(logits) - x * logits).sum(-1)
    log_2pi = math.log(2 * math.pi)
    log_pz = -0.5 * (z.pow(2) + log_2pi).sum(-1)
    log_qz = -0.5 * (((z - mu) / logvar.exp()).pow(2) + logvar + log_2pi).sum(-1)
    return torch.logsumexp(log_px_z + log_pz - log_qz, dim=0) - math.log(k)
'''),
        ("log p(x|z) averaged over the pixels", '''
def iwae_bound(x, mu, logvar, eps, decode):
    z = reparameterize(mu, logvar, eps)
    k, b, latent = z.shape
    logits = decode(z.reshape(k * b, latent)).reshape(k, b, -1)
    log_px_z = -(F.softplus(logits) - x * logits).mean(-1)
    log_2pi = math.log(2 * math.pi)
    log_pz = -0.5 * (z.pow(2) + log_2pi).sum(-1)
    log_qz = -0.5 * (eps.pow(2) + logvar + log_2pi).sum(-1)
    return torch.logsumexp(log_px_z + log_pz - log_qz, dim=0) - math.log(k)
'''),
        ("log 2π left out of log p(z) but kept in log q", '''
def iwae_bound(x, mu, logvar, eps, decode):
    z = reparameterize(mu, logvar, eps)
    k, b, latent = z.shape
    logits = decode(z.reshape(k * b, latent)).reshape(k, b, -1)
    log_px_z = -(F.softplus(logits) - x * logits).sum(-1)
    log_pz = -0.5 * z.pow(2).sum(-1)
    log_qz = -0.5 * (eps.pow(2) + logvar + math.log(2 * math.pi)).sum(-1)
    return torch.logsumexp(log_px_z + log_pz - log_qz, dim=0) - math.log(k)
'''),
        ("samples and images mixed up by the reshape", '''
def iwae_bound(x, mu, logvar, eps, decode):
    z = reparameterize(mu, logvar, eps)
    k, b, latent = z.shape
    logits = decode(z.transpose(0, 1).reshape(k * b, latent)).reshape(k, b, -1)
    log_px_z = -(F.softplus(logits) - x * logits).sum(-1)
    log_2pi = math.log(2 * math.pi)
    log_pz = -0.5 * (z.pow(2) + log_2pi).sum(-1)
    log_qz = -0.5 * (eps.pow(2) + logvar + log_2pi).sum(-1)
    return torch.logsumexp(log_px_z + log_pz - log_qz, dim=0) - math.log(k)
'''),
        ("logsumexp divided by K instead of minus log K", '''
def iwae_bound(x, mu, logvar, eps, decode):
    z = reparameterize(mu, logvar, eps)
    k, b, latent = z.shape
    logits = decode(z.reshape(k * b, latent)).reshape(k, b, -1)
    log_px_z = -(F.softplus(logits) - x * logits).sum(-1)
    log_2pi = math.log(2 * math.pi)
    log_pz = -0.5 * (z.pow(2) + log_2pi).sum(-1)
    log_qz = -0.5 * (eps.pow(2) + logvar + log_2pi).sum(-1)
    return torch.logsumexp(log_px_z + log_pz - log_qz, dim=0) / k
'''),
        ("the samples drawn with σ = e^logvar", '''
def iwae_bound(x, mu, logvar, eps, decode):
    z = mu + logvar.exp() * eps
    k, b, latent = z.shape
    logits = decode(z.reshape(k * b, latent)).reshape(k, b, -1)
    log_px_z = -(F.softplus(logits) - x * logits).sum(-1)
    log_2pi = math.log(2 * math.pi)
    log_pz = -0.5 * (z.pow(2) + log_2pi).sum(-1)
    log_qz = -0.5 * (eps.pow(2) + logvar + log_2pi).sum(-1)
    return torch.logsumexp(log_px_z + log_pz - log_qz, dim=0) - math.log(k)
'''),
    ],
}

PASSES_VISIBLE = {}
