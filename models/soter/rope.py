"""CT-RoPE: rotary position embedding driven by timestamps instead of token indices.

The official code normalises each row's timestamps to [0, T-1] (min-max), snaps them to a
0.1 grid and forces them strictly increasing; with regular sampling this reproduces the
token indices, so CT-RoPE equals standard RoPE there.  ``time_normalisation="none"`` uses
the raw timestamps (seconds) as positions.

Two renderings of the official rule: ``official`` (the default) computes in float64 and moves a
tie up by one grid step; ``authors`` repeats the authors' arithmetic operation for operation
(float32 positions and angles, ties and reversals moved up by 1e-4 one step at a time), for
bit-level parity with their code and their released checkpoint (docs/soter-parity.md).
"""

from __future__ import annotations

import torch


def normalise_timestamps(t: torch.Tensor, step: float = 0.1) -> torch.Tensor:
    """[R, T] -> positions in [0, T-1] on a ``step`` grid, strictly increasing (vectorised)."""
    t = t.double()
    n = t.shape[-1]
    if n == 1:
        return torch.zeros_like(t)
    lo = t[..., :1]
    span = (t[..., -1:] - lo).clamp_min(1e-12)
    pos = torch.round((t - lo) / span * (n - 1) / step) * step
    # strictly increasing by at least one grid step: p_i >= p_{i-1} + step
    ramp = step * torch.arange(n, dtype=t.dtype, device=t.device)
    pos = torch.cummax(pos - ramp, dim=-1).values + ramp
    return pos


def normalise_timestamps_authors(t: torch.Tensor, step: float = 0.1, tie: float = 1e-4) -> torch.Tensor:
    """The authors' float32 rule: per-row nan-min/max, scale to [0, T-1], snap, then each position
    that does not exceed its predecessor becomes the predecessor plus ``tie``."""
    t = t.float()
    n = t.shape[-1]
    lo, hi = t.amin(-1, keepdim=True), t.amax(-1, keepdim=True)
    scaled = (t - lo) / (hi - lo).clamp(min=1e-8) * float(n - 1)
    pos = torch.round(torch.nan_to_num(scaled, nan=0.0) / step) * step
    if n < 2 or bool(torch.all(pos[..., 1:] > pos[..., :-1])):
        return pos  # nothing to fix (the usual case)
    for i in range(1, n):  # sequential, as theirs: a later fix sees the earlier one
        prev = pos[..., i - 1]
        pos[..., i] = torch.where(pos[..., i] <= prev, prev + tie, pos[..., i])
    return pos


def rotary_angles_authors(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin as the authors compute them: inverse frequencies and angles in float32."""
    inv_freq = 1.0 / (float(theta) ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=positions.device)
                                      / head_dim))
    freqs = positions.float()[..., None] * inv_freq
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotary_angles(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape [R, T, head_dim] (rotate-half layout)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64, device=positions.device) / head_dim))
    freqs = positions.double()[..., None] * inv_freq  # [R, T, D/2]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [R, heads, T, D]; cos/sin [R, T, D]."""
    cos = cos[:, None].to(x.dtype)
    sin = sin[:, None].to(x.dtype)
    return x * cos + rotate_half(x) * sin


def prepare_rotary(cos: torch.Tensor, sin: torch.Tensor, dtype: torch.dtype, heads: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin [R, T, D] -> (cos, signed sin) [R, T, heads, D] in the attention's dtype, made once per pass instead of
    cast in every layer for q and k, and laid out as the projections' output ([R, T, heads, D], before the heads are
    transposed), repeated over the heads: every product is then between two contiguous tensors of one shape, a
    third of the time of a product broadcast over the heads. The signed sin carries rotate-half's minus (-s on the
    first half), so that ``apply_prepared`` needs one roll instead of a negation and a concatenation. Bit for bit
    ``apply_rotary``: b * (-s) and (-b) * s are the same float."""
    half = cos.shape[-1] // 2
    signed = torch.cat([-sin[..., :half], sin[..., half:]], dim=-1)
    r, t, d = cos.shape
    return (cos[:, :, None].to(dtype).expand(r, t, heads, d).contiguous(),
            signed[:, :, None].to(dtype).expand(r, t, heads, d).contiguous())


def apply_prepared(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """``apply_rotary`` with ``prepare_rotary``'s tensors: x [R, T, heads, D] (the projection's output, heads not yet
    transposed; under autocast q and k may come in another dtype than the one prepared: cast then, a no-op
    otherwise)."""
    cos, signed_sin = cos.to(x.dtype), signed_sin.to(x.dtype)
    return x * cos + torch.roll(x, x.shape[-1] // 2, dims=-1) * signed_sin
