"""The continuous-time decoder: dh/ds = dt * f([s; h; z]), s in [0, 1] (Eq. 6-7, App. D).

One solve for every row at once: dopri5 by the native solve written for this state
(``models/soter/dopri5.py``, the default ``solver_impl = "native"``), torchdiffeq's ``odeint`` for every other
method or with ``solver_impl = "torchdiffeq"`` (parity checks).  Either stops with ``SolverDiverged`` when
the state leaves ``DIVERGENCE_BOUND`` or the solve passes ``MAX_STEPS`` steps.  s = 0 is the last observed time t_T of the row,
s = 1 its target, dt = max(t_target - t_T, min_dt) per row (seconds).  z(s) is the control: the
natural cubic spline of the row's observed causal prefix evaluated at t_T + s dt (the
observation-guided CDE regime), or 0 (forecasting: then the decoder is exactly a
time-augmented Neural ODE).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torchdiffeq import odeint

from models.soter.config import SoterConfig
from models.soter.dopri5 import DIVERGENCE_BOUND, MAX_STEPS, SolverDiverged, dopri5
from models.soter.spline import NaturalCubicSpline


FIXED_STEP_SOLVERS = ("rk4", "euler", "midpoint", "explicit_adams")  # take rk4_steps steps; others adapt


class VectorField(nn.Module):
    """f([s; h; z]): an MLP with SiLU; without the control block when cfg.control is False; with
    ``field_dt`` (beyond the paper) f([s; h; z; log dt]), the last input column zero at init."""

    def __init__(self, cfg: SoterConfig) -> None:
        super().__init__()
        self.control = cfg.control
        self.field_dt = cfg.field_dt
        width = 1 + cfg.hidden_size + (1 if cfg.control else 0) + (1 if cfg.field_dt else 0)
        dims = [width, *cfg.decoder_hidden, cfg.hidden_size]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def zero_dt_column(self) -> None:
        """The log-dt input's weights to zero: the field is then exactly the one without it."""
        if self.field_dt:
            with torch.no_grad():
                self.layers[0].weight[:, -1].zero_()

    def forward(self, s: torch.Tensor, h: torch.Tensor, z: torch.Tensor | None,
                log_dt: torch.Tensor | None = None) -> torch.Tensor:
        parts = [s.expand(h.shape[0], 1).to(h.dtype), h]
        if self.control:
            parts.append(torch.zeros_like(h[:, :1]) if z is None else z[:, None].to(h.dtype))
        if self.field_dt:
            if log_dt is None:
                raise ValueError("field_dt: the field needs log dt per row")
            parts.append(log_dt[:, None].to(h.dtype))
        x = torch.cat(parts, dim=-1)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.silu(x)
        return x

    def forward_split(self, s: torch.Tensor, h: torch.Tensor, z: torch.Tensor | None,
                      log_dt_term: torch.Tensor | None, scale: torch.Tensor, out: torch.Tensor | None = None
                      ) -> torch.Tensor:
        """``scale * forward(s, h, z, log_dt)`` without building the concatenated input: the first layer as
        ``h W_h^T + (b + s w_s + z w_z + log_dt w_dt)`` (the same sum, other float rounding), SiLU in place when no
        gradient is recorded, and with ``out`` (no gradient) the result written there (the solve's stage row).
        ``log_dt_term`` = log_dt[:, None] * w_dt, constant over a solve. Why: on the decoder's small state the copy
        and the extra elementwise passes are a fifth of a field evaluation."""
        first = self.layers[0]
        hidden = h.shape[1]
        offset = first.bias + s.to(h.dtype) * first.weight[:, 0]
        if self.control and z is not None:
            offset = offset + z[:, None].to(h.dtype) * first.weight[:, 1 + hidden]
        if log_dt_term is not None:
            offset = offset + log_dt_term
        x = torch.addmm(offset, h, first.weight[:, 1:1 + hidden].t())
        inplace = not torch.is_grad_enabled()
        if out is not None and not inplace:
            raise ValueError("forward_split writes into out only without autograd")
        rest = list(self.layers)[1:]  # a ModuleList's own slice builds a new ModuleList at every evaluation
        for i, layer in enumerate(rest):
            x = F.silu(x, inplace=inplace)
            if out is not None and i == len(rest) - 1:  # the last layer written into out: F.linear's own addmm
                x = torch.addmm(layer.bias, x, layer.weight.t(), out=out)
            else:
                x = layer(x)
        if out is not None and not rest:
            x = out.copy_(x)
        return x.mul_(scale) if inplace else x * scale


class _Dynamics(nn.Module):
    def __init__(self, field: VectorField, dt: torch.Tensor, t_last: torch.Tensor,
                 spline: NaturalCubicSpline | None) -> None:
        super().__init__()
        self.field, self.dt, self.t_last, self.spline = field, dt, t_last, spline
        self.log_dt = dt.log() if field.field_dt else None
        self.nfe = 0
        self.steps = 0
        self.split = False  # the native solve's evaluation (VectorField.forward_split)
        dtype = field.layers[0].weight.dtype
        self.scale = dt[:, None].to(dtype)
        self.log_dt_term = None if self.log_dt is None else self.log_dt[:, None].to(dtype) * field.layers[0].weight[:, -1]

    def callback_step(self, t0: torch.Tensor, y0: torch.Tensor, dt: torch.Tensor) -> None:
        """torchdiffeq calls this before each step: the same divergence status as the native solve."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise SolverDiverged(f"the decoder's ODE solve passed {MAX_STEPS} steps (at s = {float(t0):.6g}): "
                                 "it does not converge")
        peak = float(y0.detach().abs().max())
        if not peak <= DIVERGENCE_BOUND:
            raise SolverDiverged(f"the decoder's ODE state left |h| <= {DIVERGENCE_BOUND:.0e} at s = "
                                 f"{float(t0):.6g} (max |h| = {peak:.3g}): the solve diverges")

    @property
    def writes_into(self) -> bool:
        """The native solve may hand ``forward`` a stage row to write into (``dopri5``)."""
        return self.split

    def forward(self, s: torch.Tensor, h: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        self.nfe += 1
        z = None
        if self.spline is not None:
            z = self.spline.evaluate((self.t_last + s.to(self.t_last.dtype) * self.dt))
        if self.split:
            return self.field.forward_split(s, h, z, self.log_dt_term, self.scale, out)
        return self.dt[:, None].to(h.dtype) * self.field(s, h, z, self.log_dt)


class Decoder(nn.Module):
    def __init__(self, cfg: SoterConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.field = VectorField(cfg)
        self.readout = nn.Linear(cfg.hidden_size, 1)
        self.field.zero_dt_column()
        self.last_nfe = 0
        self.last_steps = 0

    def evolve(self, h0: torch.Tensor, t_last: torch.Tensor, t_query: torch.Tensor,
               spline: NaturalCubicSpline | None = None) -> torch.Tensor:
        """h0 [R, H], t_last [R], t_query [R, Q] increasing -> states [R, Q, H] at the query times.

        One solve to the last query; earlier queries are read on the way (``direct`` forecasting).
        All rows must share the relative positions s_q = (t_q - t_T) / (t_Q - t_T); they do on
        regular grids and for single queries.
        """
        cfg = self.cfg
        t_last = t_last.to(torch.float64)
        t_query = t_query.to(torch.float64)
        dt = (t_query[:, -1] - t_last).clamp_min(cfg.min_dt)
        s_rows = (t_query - t_last[:, None]) / dt[:, None]
        s = s_rows[0]
        if t_query.shape[1] > 1 and not torch.allclose(s_rows, s.expand_as(s_rows), atol=1e-9):
            raise ValueError("direct decoding needs the same relative query positions in every row; "
                             "decode rows with different query spacings separately")
        s = torch.cat([s.new_zeros(1), s.clamp(min=0.0)])
        if not torch.all(s[1:] > s[:-1]):
            s = torch.cat([s[:1], torch.cummax(s[1:], 0).values + 1e-12 * torch.arange(1, s.numel(), device=s.device)])
        dyn = _Dynamics(self.field, dt, t_last, spline)
        grid = s.to(h0.dtype) if h0.dtype == torch.float64 else s.float()
        if cfg.solver == "dopri5" and cfg.solver_impl == "native":
            dyn.split = True
            states, self.last_steps = dopri5(dyn, h0, grid, cfg.rtol, cfg.atol)
        else:
            options = {"step_size": 1.0 / cfg.rk4_steps} if cfg.solver in FIXED_STEP_SOLVERS else None
            states = odeint(dyn, h0, grid, method=cfg.solver, rtol=cfg.rtol, atol=cfg.atol, options=options)
            self.last_steps = dyn.steps
        self.last_nfe = dyn.nfe
        return states[1:].transpose(0, 1)  # [R, Q, H]

    def forward(self, h0: torch.Tensor, t_last: torch.Tensor, t_query: torch.Tensor,
                spline: NaturalCubicSpline | None = None) -> torch.Tensor:
        """Predictions [R, Q]."""
        return self.readout(self.evolve(h0, t_last, t_query, spline)).squeeze(-1)
