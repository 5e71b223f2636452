"""Small building blocks: RMSNorm, the gated scalar embedding, SwiGLU."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x.float(), (x.shape[-1],), self.weight, self.eps).to(x.dtype)


class GatedEmbedding(nn.Module):
    """h = SiLU(W_g x) * (W_e x): each scalar observation lifted to H dimensions (Eq. 1)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(1, hidden, bias=False)
        self.value = nn.Linear(1, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., 1] -> [..., H]
        return F.silu(self.gate(x)) * self.value(x)


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, width: int) -> None:
        super().__init__()
        self.gate = nn.Linear(hidden, width, bias=False)
        self.up = nn.Linear(hidden, width, bias=False)
        self.down = nn.Linear(width, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))
