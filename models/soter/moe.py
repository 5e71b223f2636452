"""The PSD-guided mixture of experts (Eq. 4-5) and the learned-router ablation."""

from __future__ import annotations

import torch
from torch import nn

from models.soter.config import SoterConfig
from models.soter.layers import SwiGLU
from models.soter.routing import psd_route


def _distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def zero_missing_grads(module: nn.Module) -> int:
    """Give every routed-expert parameter without a gradient a zero one (an expert that received no
    token under grouped execution); returns how many were filled. The dense sum gives such an
    expert an exact zero gradient, and AdamW treats zero and missing differently (a missing one
    skips the moment decay and the weight decay), so this keeps grouped training equal to dense."""
    filled = 0
    for moe in module.modules():
        if isinstance(moe, MixtureOfExperts):
            for p in moe.experts.parameters():
                if p.requires_grad and p.grad is None:
                    p.grad = torch.zeros_like(p)
                    filled += 1
    return filled


def group_routings(idx: torch.Tensor, w: torch.Tensor, num_experts: int) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Routings [N, k] -> (token [M], weight [M], count per expert): every routing with a non-zero weight, grouped by
    expert (ascending) and within an expert by token (ascending); each token routes to an expert at most once, so
    a token's routings come in ascending expert order. The order from one numba pass on CPU
    (``routing_cpu.group_by_expert``), from torch's stable sort elsewhere: the same either way. The weights are
    indexed from ``w`` (a learned router's gradient flows through them)."""
    n, k = idx.shape
    keep = w.detach() != 0
    flat_w = w.reshape(-1)
    if idx.device.type == "cpu":
        from models.soter import routing_cpu

        if routing_cpu.available():
            position, counts = routing_cpu.group_by_expert(idx.numpy(), keep.numpy(), num_experts)
            flat_pos = torch.from_numpy(position)
            return flat_pos // k, flat_w[flat_pos], counts.tolist()
    expert, flat_pos = idx.reshape(-1), torch.arange(n * k, device=idx.device)
    if not bool(keep.all()):  # every weight non-zero (the learned router's softmax): no copies
        expert, flat_pos = expert[keep.reshape(-1)], flat_pos[keep.reshape(-1)]
    flat_pos = flat_pos[torch.argsort(expert, stable=True)]  # stable: within an expert, tokens ascending
    return flat_pos // k, flat_w[flat_pos], torch.bincount(expert, minlength=num_experts).tolist()


class MixtureOfExperts(nn.Module):
    def __init__(self, cfg: SoterConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.experts = nn.ModuleList(SwiGLU(cfg.hidden_size, cfg.expert_size) for _ in range(cfg.num_experts))
        self.shared = SwiGLU(cfg.hidden_size, cfg.intermediate_size)
        self.gate = nn.Linear(cfg.hidden_size, cfg.num_experts, bias=False) if cfg.router == "learned" else None

    def route(self, x: torch.Tensor, last_only: bool = False
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logits, indices, weights, auxiliary loss); ``last_only``: the last token's (T = 1), the PSD router
        still reading every token's prefix."""
        cfg = self.cfg
        if self.gate is None:
            logits, idx, w = psd_route(x, cfg.num_experts, cfg.top_k, cfg.dft_length, cfg.dft_impl, last_only)
            return logits, idx, w, x.new_zeros(())
        if last_only:
            x = x[:, -1:]
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

    def shared_input(self, x: torch.Tensor, last_only: bool = False) -> torch.Tensor:
        if self.cfg.shared_expert_input == "window_mean":
            return x.mean(dim=1, keepdim=True)  # the paper: a sequence-level residual
        steps = torch.arange(1, x.shape[1] + 1, device=x.device, dtype=x.dtype)[None, :, None]
        prefix = torch.cumsum(x, dim=1) / steps  # option: the mean of the causal prefix
        return prefix[:, -1:] if last_only else prefix

    def grouped(self, x: torch.Tensor) -> bool:
        """``auto``: grouped on CPU (inference and single-process training), dense on GPU and whenever
        a process group of several ranks is up: under autograd an expert that receives no token gets no
        gradient at all, which DistributedDataParallel and FSDP reject. Single-process training fills
        those gradients with zeros before the optimizer step (``zero_missing_grads``), which is what
        the dense sum gives them, so AdamW's update is the same."""
        mode = self.cfg.expert_execution
        if mode != "auto":
            return mode == "grouped"
        return x.device.type == "cpu" and not (torch.is_grad_enabled() and _distributed())

    def forward(self, x: torch.Tensor, last_only: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x [R, T, H] -> (output, auxiliary loss, chosen experts [R, T, k]); ``last_only``: the output and the
        experts of the last token only (T = 1): the routing and the shared input still read every token, so it
        is the full output's last row, for a fraction of the work."""
        # the full pass calls route(x) alone: callers that wrap it to record the routing (gates.py) keep working
        logits, idx, w, aux = self.route(x, last_only=True) if last_only else self.route(x)
        shared_in = self.shared_input(x, last_only)
        if last_only:
            x = x[:, -1:]
        shared = self.shared(shared_in).expand_as(x)
        if self.grouped(x):
            return self._grouped(x, shared, idx, w), aux, idx
        # dense combine weights [R, T, E] (zero for experts not chosen): no host syncs
        combine = torch.zeros(*x.shape[:-1], self.cfg.num_experts, dtype=x.dtype, device=x.device)
        combine.scatter_(-1, idx, w)
        out = shared
        for e, expert in enumerate(self.experts):
            out = out + combine[..., e:e + 1] * expert(x)
        return out, aux, idx

    def _grouped(self, x: torch.Tensor, shared: torch.Tensor, idx: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """The dense sum without its zero terms: tokens sorted by expert, each expert applied once to
        its contiguous slice (only routings with a non-zero weight), and the results added onto the
        shared output in that order (``index_add``, one index after the other), which per token is
        ascending expert order, the order of the dense sum: the same additions (a matmul over a subset
        of rows may round its last bit differently)."""
        hidden = x.shape[-1]
        flat = x.reshape(-1, hidden)
        token, wts, counts = group_routings(idx.reshape(flat.shape[0], -1), w.reshape(flat.shape[0], -1),
                                            self.cfg.num_experts)
        inputs = flat.index_select(0, token)
        pieces, start = [], 0
        for e, count in enumerate(counts):
            if count:
                pieces.append(self.experts[e](inputs[start:start + count]))
            start += count
        if not pieces:
            return shared.reshape(-1, hidden).view_as(x)
        # one copy of the shared output, added onto in place (an expanded one is copied by reshape anyway)
        out = shared.expand_as(x).clone(memory_format=torch.contiguous_format).view(-1, hidden)
        return out.index_add_(0, token, torch.cat(pieces).mul_(wts[:, None])).view_as(x)
