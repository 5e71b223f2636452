"""The control of SOTER's continuous-time decoder: a linear readout of h_T over the horizon, no solve.

``decoder_head = "direct"`` replaces the decoder by ``Linear(H, K)`` read at each query's horizon step (the
query's distance from the last observation in sampling intervals, rounded, clamped to 1..K). It exists to answer
one question with an ablation row: does the ODE decoder add anything over a readout on the same encoder and budget
(fitted curves of a latent state beat an ODE solve at a tenth of the cost, arXiv 2405.03582)? Its weights start
at zero, so with the naive-residual output the untrained model is exactly its naive start.
"""

from __future__ import annotations

import torch
from torch import nn

from models.soter.config import SoterConfig


def horizon_steps(intervals: torch.Tensor, steps: int) -> torch.Tensor:
    """Query distances from the last observation in sampling intervals [R, Q] -> 0-based horizon step indices
    (rounded, clamped to 1..``steps``, minus one): the per-step tables' column of each query."""
    return intervals.round().clamp(1, steps).long() - 1


class DirectHead(nn.Module):
    """Readouts [R, Q] = Linear(H, K)(h_T) at each query's horizon step; 0 at t_T (no change before the horizon)."""

    def __init__(self, cfg: SoterConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.readout = nn.Linear(cfg.hidden_size, cfg.mix_steps)
        nn.init.zeros_(self.readout.weight)
        nn.init.zeros_(self.readout.bias)
        self.last_nfe = 0  # the decoder's counters, for code that reads them after a forecast
        self.last_steps = 0

    def forward(self, h_last: torch.Tensor, intervals: torch.Tensor) -> torch.Tensor:
        """h_T [R, H], query distances in sampling intervals [R, Q] -> readouts [R, Q]."""
        return self.readout(h_last).gather(1, horizon_steps(intervals, self.cfg.mix_steps))
