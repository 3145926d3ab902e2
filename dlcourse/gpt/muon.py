"""Muon for a model's hidden weight matrices and AdamW for the rest, as one optimizer (chapter 04's recipe).

Muon (Jordan et al., 2024) updates a weight matrix by its Nesterov momentum *orthogonalised*: the momentum
``M = U S Vᵀ`` is replaced by (roughly) ``U Vᵀ``, so every direction the gradients agree on moves by about
the same amount, instead of the few largest directions taking the whole step. A quintic Newton–Schulz
iteration computes it with five pairs of matrix products and no SVD.

``torch.optim.Muon`` implements the same update, but runs the iteration in bfloat16, which a CPU without
bfloat16 matrix units computes slowly (about 2 s a step for chapter 04's GPT on a 2-core CPU, against 0.3 s
here). :class:`MuonAdamW` runs it in float32 and otherwise follows ``torch.optim.Muon(nesterov=True,
adjust_lr_fn="match_rms_adamw")`` step for step (tests/test_muon.py checks it against PyTorch's): the step is
scaled by ``0.2·√max(rows, columns)`` so that its size matches an AdamW step's and one learning rate and
schedule serve both kinds of tensor; weight decay is decoupled, ``lr × weight_decay``. The groups not marked
``muon`` are handed to ``torch.optim.AdamW``, which shares their dicts: a scheduler that sets ``lr`` on this
optimizer's groups sets it for both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

# torch.optim.Muon's quintic coefficients: the steepest slope at 0 that keeps the iteration in [0.5, 1.5]
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def orthogonalise(matrix: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    """About ``U Vᵀ`` for ``matrix = U S Vᵀ`` (2-D), by ``steps`` Newton–Schulz iterations in float32.

    The singular values land near 1 (between about 0.5 and 1.5, which works as well as exactly 1); the
    singular vectors are kept. Returns a new float32 tensor of ``matrix``'s shape."""
    if matrix.dim() != 2:
        raise ValueError(f"Muon orthogonalises matrices; got a tensor of shape {tuple(matrix.shape)}")
    a, b, c = NS_COEFFICIENTS
    x = matrix.float()
    tall = x.size(0) > x.size(1)
    if tall:
        x = x.T  # (short, long): the Gram matrix below is the small one
    x = x / x.norm().clamp(min=eps)  # spectral norm ≤ Frobenius norm ≤ 1
    for _ in range(steps):
        gram = x @ x.T
        x = torch.addmm(x, torch.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)  # a·X + (b·G + c·G²)·X
    return x.T if tall else x


class MuonAdamW(torch.optim.Optimizer):
    """One optimizer: Muon on the parameter groups marked ``muon=True``, AdamW on the others.

    Args:
        params: parameter groups (dicts); a group with ``"muon": True`` must hold 2-D tensors only. Any group
            may set its own ``lr`` and ``weight_decay``.
        lr: the learning rate of both kinds (Muon's is rescaled per matrix, see the module's docstring).
        betas, eps: AdamW's.
        weight_decay: the default decoupled weight decay of every group.
        momentum: Muon's momentum (Nesterov).
        ns_steps: Newton–Schulz iterations per Muon update.
    """

    def __init__(self, params: Iterable[dict[str, Any]], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01, momentum: float = 0.95, ns_steps: int = 5) -> None:
        if not lr >= 0:
            raise ValueError(f"invalid learning rate {lr}")
        if not 0 <= momentum < 1:
            raise ValueError(f"Muon's momentum must be in [0, 1), got {momentum}")
        groups = list(params)
        if not groups or not all(isinstance(g, dict) and "params" in g for g in groups):
            raise TypeError("MuonAdamW takes a list of parameter groups: dicts with 'params' (and 'muon': True "
                            "for the matrices Muon updates)")
        groups = [dict(g) for g in groups]
        super().__init__(groups, dict(lr=lr, weight_decay=weight_decay, muon=False, momentum=momentum,
                                      ns_steps=ns_steps))
        for group in self.param_groups:
            if group["muon"] and any(p.dim() != 2 for p in group["params"]):
                raise ValueError("a Muon group holds weight matrices (2-D tensors) only; give the embeddings, "
                                 "biases and norms to AdamW (a group without 'muon': True)")
        others = [g for g in self.param_groups if not g["muon"]]
        # the same dicts: the AdamW below reads the lr a scheduler writes into this optimizer's groups
        self.adamw = torch.optim.AdamW(others, lr=lr, betas=betas, eps=eps) if others else None

    @torch.no_grad()
    def step(self, closure=None):  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if not group["muon"]:
                continue
            lr, decay, momentum = group["lr"], group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                buf = state["momentum_buffer"]
                buf.lerp_(p.grad, 1 - momentum)
                update = orthogonalise(p.grad.lerp(buf, momentum), group["ns_steps"])  # Nesterov
                p.mul_(1 - lr * decay)
                p.add_(update.to(p.dtype), alpha=-lr * 0.2 * math.sqrt(max(p.shape)))
        if self.adamw is not None:
            self.adamw.step()
        return loss

    def state_dict(self) -> dict[str, Any]:
        return {"muon": super().state_dict(), "adamw": None if self.adamw is None else self.adamw.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict["muon"])  # new group dicts, AdamW's groups' settings among them
        if self.adamw is not None:
            self.adamw.load_state_dict(state_dict["adamw"])
            self.adamw.param_groups = [g for g in self.param_groups if not g["muon"]]  # shared again
