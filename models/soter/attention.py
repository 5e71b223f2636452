"""Channel-independent causal attention with CT-RoPE, and channel-dependent attention."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class Attention(nn.Module):
    """Multi-head attention; q, k, v projections with bias, output without (official code)."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden, bias=False)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """[R, N, H] -> [R, N, heads, head_dim] (a view)."""
        r, n, _ = x.shape
        return x.view(r, n, self.heads, self.head_dim)

    def forward(self, x: torch.Tensor, rotary: tuple[torch.Tensor, torch.Tensor] | None, causal: bool) -> torch.Tensor:
        """x [R, N, H] -> [R, N, H]; ``rotary`` rotates q and k (CT-RoPE: ``rope.prepare_rotary``'s pair), None
        for the CD layer."""
        from models.soter.rope import apply_prepared

        r, n, _ = x.shape
        q, k = self._heads(self.q(x)), self._heads(self.k(x))
        if rotary is not None:  # rotated before the heads are transposed: contiguous products (rope.prepare_rotary)
            q, k = apply_prepared(q, *rotary), apply_prepared(k, *rotary)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), self._heads(self.v(x)).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.o(out.transpose(1, 2).reshape(r, n, -1))


def channel_dependent(attn: Attention, x: torch.Tensor, channels: int) -> torch.Tensor:
    """Full attention over the C channel tokens of each timestamp (no RoPE, no mask).

    x [B*C, T, H] (channel-major within each sample) -> same shape.
    """
    bc, t, h = x.shape
    b = bc // channels
    per_time = x.view(b, channels, t, h).transpose(1, 2).reshape(b * t, channels, h)
    out = attn(per_time, rotary=None, causal=False)
    return out.view(b, t, channels, h).transpose(1, 2).reshape(bc, t, h)
