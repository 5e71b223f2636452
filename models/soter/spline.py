"""Batched natural cubic spline in torch (the CDE control path), on the model's device.

Each row has its own observed knots (a mask selects them); the second derivatives come from
a batched Thomas solve with identity equations for padding, so rows with different numbers of
observations share one solve.  Evaluation beyond the last knot extends the last cubic piece,
as ``scipy.interpolate.CubicSpline(bc_type="natural", extrapolate=True)`` does (the authors' code;
``beyond="extrapolate"``, the default).  That extension grows like the cube of the distance past the last
knot, so over a long gap it leaves the data's range (docs/stress-tests.md, "Why SOTER diverges inside
gaps"); ``beyond="hold"`` keeps the value at the last knot there and ``beyond="zero"`` gives 0 (the
paper's "no control beyond the observation span", read per row).  Rows with one observation are
constant (``zero``: 0 after it); rows with none are zero.
"""

from __future__ import annotations

import torch


BEYOND = ("extrapolate", "hold", "zero")  # the value past a row's last knot (the module's doc)


class NaturalCubicSpline:
    def __init__(self, t: torch.Tensor, y: torch.Tensor, observed: torch.Tensor, beyond: str = "extrapolate") -> None:
        """t [R, M] increasing, y [R, M], observed [R, M] bool; ``beyond``: one of ``BEYOND``."""
        if beyond not in BEYOND:
            raise ValueError(f"beyond must be one of {BEYOND}, got {beyond!r}")
        self.beyond = beyond
        order = torch.argsort((~observed).to(torch.int8), dim=1, stable=True)  # observed first, in time order
        n = observed.sum(1)
        x = torch.gather(t, 1, order)
        v = torch.gather(y, 1, order)
        m_len = t.shape[1]
        pos = torch.arange(m_len, device=t.device)[None, :]
        valid = pos < n[:, None]
        big = torch.finfo(x.dtype).max
        self.x = torch.where(valid, x, torch.full_like(x, big))  # padded knots sort last
        self.y = torch.where(valid, v, torch.zeros_like(v))
        self.n = n
        self.m = self._second_derivatives(pos)

    def _second_derivatives(self, pos: torch.Tensor) -> torch.Tensor:
        x, y, n = self.x, self.y, self.n
        r, m_len = x.shape
        if m_len < 3:
            return torch.zeros_like(y)
        h = (x[:, 1:] - x[:, :-1])  # [R, M-1]; garbage beyond n-1, masked below
        interior = (pos >= 1) & (pos <= (n[:, None] - 2))  # equations for i = 1..n-2
        safe_h = torch.where(torch.isfinite(h) & (h > 0), h, torch.ones_like(h))
        slope = (y[:, 1:] - y[:, :-1]) / safe_h
        a = torch.zeros_like(y)
        b = torch.ones_like(y)
        c = torch.zeros_like(y)
        d = torch.zeros_like(y)
        a[:, 1:-1] = safe_h[:, :-1]
        b[:, 1:-1] = 2 * (safe_h[:, :-1] + safe_h[:, 1:])
        c[:, 1:-1] = safe_h[:, 1:]
        d[:, 1:-1] = 6 * (slope[:, 1:] - slope[:, :-1])
        a = torch.where(interior, a, torch.zeros_like(a))
        c = torch.where(interior, c, torch.zeros_like(c))
        b = torch.where(interior, b, torch.ones_like(b))
        d = torch.where(interior, d, torch.zeros_like(d))
        # Thomas algorithm, vectorised over rows
        cp = torch.zeros_like(y)
        dp = torch.zeros_like(y)
        cp[:, 0] = c[:, 0] / b[:, 0]
        dp[:, 0] = d[:, 0] / b[:, 0]
        for i in range(1, m_len):
            denom = b[:, i] - a[:, i] * cp[:, i - 1]
            cp[:, i] = c[:, i] / denom
            dp[:, i] = (d[:, i] - a[:, i] * dp[:, i - 1]) / denom
        out = torch.zeros_like(y)
        out[:, -1] = dp[:, -1]
        for i in range(m_len - 2, -1, -1):
            out[:, i] = dp[:, i] - cp[:, i] * out[:, i + 1]
        return out

    def evaluate(self, q: torch.Tensor) -> torch.Tensor:
        """q [R] or [R, Q] -> values of the same shape."""
        squeeze = q.dim() == 1
        q2 = q[:, None] if squeeze else q
        n = self.n[:, None]
        last = torch.gather(self.x, 1, (n - 1).clamp(min=0))  # [R, 1] the last knot (padding when n = 0)
        beyond = (n >= 1) & (q2 > last)
        if self.beyond == "hold":
            q2 = torch.where(beyond, last.to(q2.dtype), q2)
        j = torch.searchsorted(self.x, q2.contiguous(), right=True) - 1
        j = torch.minimum(torch.clamp(j, min=0), (n - 2).clamp(min=0))
        j1 = torch.minimum(j + 1, (n - 1).clamp(min=0))
        x0, x1 = torch.gather(self.x, 1, j), torch.gather(self.x, 1, j1)
        y0, y1 = torch.gather(self.y, 1, j), torch.gather(self.y, 1, j1)
        m0, m1 = torch.gather(self.m, 1, j), torch.gather(self.m, 1, j1)
        h = torch.where(j1 > j, x1 - x0, torch.ones_like(x0))
        left, right = x1 - q2, q2 - x0
        cubic = (m0 * left**3 + m1 * right**3) / (6 * h) + (y0 / h - m0 * h / 6) * left + (y1 / h - m1 * h / 6) * right
        out = torch.where(n >= 2, cubic, torch.where(n == 1, y0, torch.zeros_like(y0)))
        if self.beyond == "zero":
            out = torch.where(beyond, torch.zeros_like(out), out)
        return out[:, 0] if squeeze else out
