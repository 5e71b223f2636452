"""The decoder's Dormand-Prince 5(4) solve, written for its state.

Why not torchdiffeq's generic solver: on SOTER's small state ([rows, H], H = 64) three quarters of its
time is bookkeeping (a stage buffer re-summed through autograd-safe assignments, a dense-output fit after
every accepted step, per-step assertions). This solve keeps torchdiffeq's method and step control
exactly (Dormand-Prince-Shampine tableau, initial step selection of Hairer et al. II.4, RMS error norm
over the whole state, safety 0.9, growth at most x10, shrink at least x0.2 on a rejected step, stage times
rounded to the state's dtype as torchdiffeq does, the stages at t1 taken just before it), so it takes the
same steps; it fits the dense output only on a step that passes a query time, keeps the stages in one
[7, N] buffer, and stops with :class:`SolverDiverged` when the state leaves ``bound`` or the step count
passes ``max_steps`` (a diverging forecast is a status, not a number of 1e17).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from protocols.interface import ModelDivergedError

DIVERGENCE_BOUND = 1e6  # |state| beyond this (or non-finite) ends a solve: no trained decoder state gets near it
MAX_STEPS = 1000  # attempted steps per solve; a converging solve of the shipped checkpoints takes well under 100

_ALPHA = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_BETA = (
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_C_ERROR = (35 / 384 - 1951 / 21600, 0.0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
            -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1.0 / 60.0)
_C_MID = (6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2, -2691868925 / 45128329728 / 2,
          187940372067 / 1594534317056 / 2, -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2)
_ORDER = 5
_SAFETY, _IFACTOR, _DFACTOR = 0.9, 10.0, 0.2
_NUMPY = {torch.float32: np.float32, torch.float64: np.float64}

Field = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class SolverDiverged(ModelDivergedError):
    """The decoder's solve left its bound, produced a non-finite state or passed its step cap."""


def _rms(x: torch.Tensor) -> torch.Tensor:
    """torchdiffeq's RMS norm (``x.abs().pow(2).mean().sqrt()``) without its ``abs``: a square is the same float."""
    return x.pow(2).mean().sqrt()


@torch.no_grad()
def initial_step(func: Field, t0: float, y0: torch.Tensor, f0: torch.Tensor, rtol: float, atol: float) -> float:
    """torchdiffeq's ``_select_initial_step`` (order 4 for dopri5), in the same dtypes: the state's for the
    norms, float64 for the result. The step size is a constant of the discretisation: no gradient flows through it."""
    scale = atol + y0.abs() * rtol
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    if d0 < 1e-5 or d1 < 1e-5:
        h0 = torch.tensor(1e-6, dtype=y0.dtype, device=y0.device)
    else:
        h0 = 0.01 * d0 / d1
    h0 = h0.abs()
    f1 = func((torch.tensor(t0, dtype=torch.float64) + h0.cpu()).to(y0.dtype).to(y0.device), y0 + h0 * f0)
    d2 = torch.abs(_rms((f1 - f0) / scale) / h0)
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = torch.max(torch.tensor(1e-6, dtype=y0.dtype, device=y0.device), h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / float(_ORDER))
    return float(torch.min(100 * h0, h1.abs()).to(torch.float64))


def next_step(dt: float, ratio: float) -> float:
    """torchdiffeq's ``_optimal_step_size``: x10 at most, x0.2 at least after a rejection, never shrinking
    after an accepted step."""
    if ratio == 0:
        return dt * _IFACTOR
    dfactor = 1.0 if ratio < 1 else _DFACTOR
    factor = min(_IFACTOR, max(_SAFETY / ratio ** (1.0 / _ORDER), dfactor))
    return max(dt * factor, 0.0)


def dopri5(func: Field, y0: torch.Tensor, t: torch.Tensor, rtol: float, atol: float,
           bound: float = DIVERGENCE_BOUND, max_steps: int = MAX_STEPS) -> tuple[torch.Tensor, int]:
    """States [len(t), *y0.shape] at the increasing times ``t`` (t[0] the start), and the attempted steps.

    ``func(s, y)`` receives s as a 0-dim tensor in the state's dtype. Differentiable (the stages are stacked
    when autograd records); under no_grad they live in one preallocated buffer, into which a ``func`` with a true
    ``writes_into`` attribute writes each stage itself (``func(s, y, out=row)``: no copy of the stage).
    """
    if y0.dtype not in _NUMPY:
        raise ValueError(f"the native dopri5 solve needs a float32 or float64 state, got {y0.dtype}")
    real = _NUMPY[y0.dtype]
    dev, shape = y0.device, y0.shape
    queries = t.to(torch.float64).tolist()
    if any(b <= a for a, b in zip(queries, queries[1:])):
        raise ValueError("the solve's times must be strictly increasing")

    def at(time: float) -> torch.Tensor:
        return torch.tensor(time, dtype=y0.dtype, device=dev)

    t0 = queries[0]
    y = y0.reshape(-1)
    f = func(at(real(t0)), y0).reshape(-1)
    dt = initial_step(lambda s, v: func(s, v.view(shape)).reshape(-1), t0, y, f, rtol, atol)
    buffer = None if torch.is_grad_enabled() else y.new_empty((7, y.numel()))
    writes_into = getattr(func, "writes_into", False)  # func(s, y, out=...) writes its value into out
    stages: list[torch.Tensor] = [f]
    if buffer is not None:
        buffer[0] = f
    out = [y0]
    q = 1
    steps = 0
    while q < len(queries):
        if steps >= max_steps:
            raise SolverDiverged(f"the decoder's ODE solve passed {max_steps} steps before s = {queries[q]:.6g} "
                                 f"(at s = {t0:.6g}, step {dt:.3g}): it does not converge")
        steps += 1
        t1 = t0 + dt
        if not np.isfinite(dt):
            raise SolverDiverged(f"the decoder's ODE state or field became non-finite at s = {t0:.6g}")
        if not t1 > t0:
            raise SolverDiverged(f"the decoder's ODE step size underflowed ({dt:.3g}) at s = {t0:.6g}")
        rt0, rdt = real(t0), real(dt)
        stage_t1 = np.nextafter(real(t1), real(-np.inf))
        for i, (alpha, beta) in enumerate(zip(_ALPHA, _BETA)):
            coef = torch.tensor([real(b) * rdt for b in beta], dtype=y0.dtype, device=dev)
            prev = buffer[:i + 1] if buffer is not None else torch.stack(stages[:i + 1])
            yi = torch.addmv(y, prev.t(), coef)
            ti = stage_t1 if alpha == 1.0 else rt0 + real(alpha) * rdt
            if buffer is None:
                stages.append(func(at(ti), yi.view(shape)).reshape(-1))
            elif writes_into:
                func(at(ti), yi.view(shape), out=buffer[i + 1].view(shape))
            else:
                buffer[i + 1] = func(at(ti), yi.view(shape)).reshape(-1)
        y1 = yi  # the last stage's input is the fifth-order solution (FSAL)
        every = buffer if buffer is not None else torch.stack(stages)
        err = every.t() @ torch.tensor([real(c) * rdt for c in _C_ERROR], dtype=y0.dtype, device=dev)
        y1_abs = y1.detach().abs()
        tol = torch.max(y.detach().abs(), y1_abs).mul_(rtol).add_(atol)  # atol + rtol * max(|y|, |y1|), in place
        ratio, peak = torch.stack([_rms(err.detach() / tol), y1_abs.max()]).tolist()
        if not np.isfinite(ratio):
            raise SolverDiverged(f"the decoder's ODE state became non-finite at s = {t0:.6g}")
        if ratio <= 1:
            if not peak <= bound:
                raise SolverDiverged(f"the decoder's ODE state left |h| <= {bound:.0e} at s = {t1:.6g} "
                                     f"(max |h| = {peak:.3g}): the solve diverges")
            while q < len(queries) and queries[q] <= t1:
                out.append(_dense(y, y1, every, rdt, (queries[q] - t0) / (t1 - t0), real).view(shape))
                q += 1
            t0, y = t1, y1
            if buffer is not None:
                buffer[0] = buffer[6]
            else:
                stages = [stages[6]]
        elif buffer is None:
            stages = stages[:1]
        dt = next_step(dt, ratio)
    return torch.stack(out), steps


def _dense(y0: torch.Tensor, y1: torch.Tensor, k: torch.Tensor, dt, x: float, real) -> torch.Tensor:
    """torchdiffeq's fourth-order interpolation through the step (through y0, y1, the midpoint estimate
    y0 + dt K^T c_mid and the slopes k_0, k_6) at x in [0, 1], written as one combination of y0, y1 and the
    stages: three tensor operations instead of its twenty-odd, the same polynomial."""
    x = float(real(x))
    dt = float(dt)
    x2, x3, x4 = x * x, x ** 3, x ** 4
    w_y0 = 1 - 11 * x2 + 18 * x3 - 8 * x4
    w_y1 = -5 * x2 + 14 * x3 - 8 * x4
    w_mid = 16 * x2 - 32 * x3 + 16 * x4
    w_f0 = dt * (x - 4 * x2 + 5 * x3 - 2 * x4)
    w_f1 = dt * (x2 - 3 * x3 + 2 * x4)
    coef = [w_mid * dt * c for c in _C_MID]
    coef[0] += w_f0
    coef[6] += w_f1
    base = torch.add(y0 * (w_y0 + w_mid), y1, alpha=w_y1)
    return torch.addmv(base, k.t(), torch.tensor(coef, dtype=y0.dtype, device=y0.device))


__all__ = ["dopri5", "SolverDiverged", "DIVERGENCE_BOUND", "MAX_STEPS"]
