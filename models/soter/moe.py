"""The PSD-guided mixture of experts (Eq. 4-5) and the learned-router ablation."""

from __future__ import annotations

import torch
from torch import nn

from models.soter.config import SoterConfig
from models.soter.layers import SwiGLU
from models.soter.routing import psd_route


class MixtureOfExperts(nn.Module):
    def __init__(self, cfg: SoterConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.experts = nn.ModuleList(SwiGLU(cfg.hidden_size, cfg.expert_size) for _ in range(cfg.num_experts))
        self.shared = SwiGLU(cfg.hidden_size, cfg.intermediate_size)
        self.gate = nn.Linear(cfg.hidden_size, cfg.num_experts, bias=False) if cfg.router == "learned" else None

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logits, indices, weights, auxiliary loss)."""
        cfg = self.cfg
        if self.gate is None:
            logits, idx, w = psd_route(x, cfg.num_experts, cfg.top_k, cfg.dft_length, cfg.dft_impl)
            return logits, idx, w, x.new_zeros(())
        logits = self.gate(x)
        probs = torch.softmax(logits.float(), dim=-1)
        idx = torch.topk(logits, cfg.top_k, dim=-1).indices
        w = torch.gather(probs, -1, idx).to(x.dtype)
        # Switch-style load balancing: E * sum_e (share of routed slots) * (mean probability)
        counts = torch.zeros(cfg.num_experts, device=x.device).index_add_(
            0, idx.reshape(-1), torch.ones(idx.numel(), device=x.device))
        share = counts / idx.numel()
        aux = cfg.num_experts * (share * probs.reshape(-1, cfg.num_experts).mean(0)).sum()
        return logits, idx, w, cfg.router_aux_loss_coef * aux

    def shared_input(self, x: torch.Tensor) -> torch.Tensor:
        if self.cfg.shared_expert_input == "window_mean":
            return x.mean(dim=1, keepdim=True)  # the paper: a sequence-level residual
        steps = torch.arange(1, x.shape[1] + 1, device=x.device, dtype=x.dtype)[None, :, None]
        return torch.cumsum(x, dim=1) / steps  # option: the mean of the causal prefix

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x [R, T, H] -> (output, auxiliary loss, chosen experts [R, T, k])."""
        logits, idx, w, aux = self.route(x)
        # dense combine weights [R, T, E] (zero for experts not chosen): no host syncs
        combine = torch.zeros(*x.shape[:-1], self.cfg.num_experts, dtype=x.dtype, device=x.device)
        combine.scatter_(-1, idx, w)
        out = self.shared(self.shared_input(x)).expand_as(x)
        for e, expert in enumerate(self.experts):
            out = out + combine[..., e:e + 1] * expert(x)
        return out, aux, idx
