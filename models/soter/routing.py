"""PSD-guided routing: a strictly causal prefix DFT over the token index (Eq. 3-4).

p_t(k) = mean_d | sum_{tau <= t} h_tau^(d) exp(-j 2 pi k tau / N) |, k = 0..N/2.  Bins are split
into E contiguous bands (torch.tensor_split order); the logit of expert e is the band's sum;
weights are the softmax over all E at the top-k experts, not renormalised; no gradient.

Two implementations that must agree: ``prefix_dft_loop`` (reference, one time step at a time)
and ``prefix_dft_fast`` (prefix sums over time, chunked over frequency bins so that no
[R, T, N/2+1, H] tensor is ever materialised: peak extra memory is bounded by ``budget``
elements).
"""

from __future__ import annotations

import math

import torch


def _phases(t: int, bins: torch.Tensor, n: int, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
    tau = torch.arange(t, dtype=torch.float64, device=device)
    angle = 2 * math.pi * torch.outer(tau, bins.to(torch.float64)) / n  # [T, K]
    return angle.cos().to(dtype), angle.sin().to(dtype)


def prefix_dft_loop(h: torch.Tensor, n: int) -> torch.Tensor:
    """Reference: [R, T, H] -> p [R, T, N/2+1]."""
    r, t, _ = h.shape
    bins = torch.arange(n // 2 + 1, device=h.device)
    cos, sin = _phases(t, bins, n, h.dtype, h.device)
    out = torch.empty(r, t, bins.numel(), dtype=h.dtype, device=h.device)
    for i in range(t):
        re = torch.einsum("tk,rth->rkh", cos[: i + 1], h[:, : i + 1])
        im = torch.einsum("tk,rth->rkh", sin[: i + 1], h[:, : i + 1])
        out[:, i] = torch.sqrt(re * re + im * im).mean(-1)
    return out


def prefix_dft_fast(h: torch.Tensor, n: int, budget: int = 1 << 24) -> torch.Tensor:
    """Prefix sums over time of h * cos / h * sin, a chunk of bins at a time: [R, T, H] -> [R, T, N/2+1]."""
    r, t, hid = h.shape
    bins = torch.arange(n // 2 + 1, device=h.device)
    cos, sin = _phases(t, bins, n, h.dtype, h.device)
    chunk = max(1, budget // max(1, r * t * hid))
    parts = []
    for a in range(0, bins.numel(), chunk):
        c, s = cos[:, a:a + chunk], sin[:, a:a + chunk]  # [T, Kc]
        re = torch.cumsum(h[:, :, None, :] * c[None, :, :, None], dim=1)  # [R, T, Kc, H]
        im = torch.cumsum(h[:, :, None, :] * s[None, :, :, None], dim=1)
        parts.append(torch.sqrt(re * re + im * im).mean(-1))
    return torch.cat(parts, dim=-1)


def prefix_dft(h: torch.Tensor, n: int, impl: str = "fast", last_only: bool = False) -> torch.Tensor:
    """``fast``: the fused numba kernel for CPU tensors, chunked prefix sums elsewhere (GPU);
    ``torch``: always the chunked prefix sums; ``loop``: the reference. ``last_only``: p at the last
    token only, [R, 1, N/2+1] (what routing the last token needs; the CPU kernel then skips the
    magnitudes of every earlier step, the other implementations compute them all)."""
    if impl == "loop":
        p = prefix_dft_loop(h, n)
        return p[:, -1:] if last_only else p
    if impl == "fast" and h.device.type == "cpu":
        from models.soter import routing_cpu

        if routing_cpu.available():
            return torch.from_numpy(routing_cpu.prefix_dft_numba(h.numpy(), n, last_only))
    p = prefix_dft_fast(h, n)
    return p[:, -1:] if last_only else p


def band_logits(p: torch.Tensor, num_experts: int) -> torch.Tensor:
    """[R, T, K] -> [R, T, E]: sum of each contiguous, near-equal band of bins."""
    return torch.stack([band.sum(-1) for band in torch.tensor_split(p, num_experts, dim=-1)], dim=-1)


def psd_route(h: torch.Tensor, num_experts: int, top_k: int, n: int, impl: str = "fast", last_only: bool = False
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits [R, T, E], expert indices [R, T, k], weights [R, T, k]); no gradient. ``last_only``: the last
    token's routing only (T = 1 in every output), still from the prefix DFT over every token."""
    with torch.no_grad():
        x = h.detach().float() if h.dtype in (torch.float16, torch.bfloat16) else h.detach()
        p = prefix_dft(x, n, impl, last_only)
        logits = band_logits(p, num_experts)
        # over a leading dimension: torch's CPU softmax over a last dimension of E = 4 took 10x as long (the same
        # function, rounded at most one ulp differently, BENCHMARKS.md)
        probs = torch.softmax(logits.movedim(-1, 0).contiguous(), dim=0).movedim(0, -1)
        idx = torch.topk(logits, top_k, dim=-1).indices
        weights = torch.gather(probs, -1, idx)
    return logits, idx, weights.to(h.dtype)
