"""SOTER: gated embedding -> L pre-norm blocks (CI causal attention with CT-RoPE, one CD layer,
PSD-guided MoE in every block) -> final RMSNorm -> continuous-time decoder -> Linear(H, 1)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from models.soter.attention import Attention, channel_dependent
from models.soter.config import SoterConfig
from models.soter.decoder import Decoder
from models.soter.layers import GatedEmbedding, RMSNorm
from models.soter.moe import MixtureOfExperts
from models.soter.rope import normalise_timestamps, normalise_timestamps_authors, rotary_angles, rotary_angles_authors
from models.soter.spline import NaturalCubicSpline


ROLLOUTS = ("autoregressive", "direct", "per-query")


class Block(nn.Module):
    def __init__(self, cfg: SoterConfig, index: int) -> None:
        super().__init__()
        self.channel_dependent = cfg.cd_layer == index
        self.attn_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.attn = Attention(cfg.hidden_size, cfg.num_heads)
        self.moe_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.moe = MixtureOfExperts(cfg)

    def forward(self, x: torch.Tensor, rotary, channels: int):
        y = self.attn_norm(x)
        if self.channel_dependent and channels > 1:
            x = x + channel_dependent(self.attn, y, channels)
        else:  # CI layer, or the CD layer falling back to CI when C = 1
            x = x + self.attn(y, rotary, causal=True)
        out, aux, experts = self.moe(self.moe_norm(x))
        return x + out, aux, experts


@dataclass
class Encoded:
    hidden: torch.Tensor  # [B*C, T, H] after the final norm
    aux_loss: torch.Tensor
    experts: list[torch.Tensor]  # per layer [B*C, T, k]
    channels: int


class SoterModel(nn.Module):
    def __init__(self, cfg: SoterConfig) -> None:
        super().__init__()
        self.config = cfg
        self.embed = GatedEmbedding(cfg.hidden_size)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.decoder = Decoder(cfg)
        self.apply(self._init)

    def _init(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=self.config.initializer_range)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    # -- backbone --------------------------------------------------------------------------
    def positions(self, timestamps: torch.Tensor) -> torch.Tensor:
        if self.config.time_normalisation == "official":
            return normalise_timestamps(timestamps)
        if self.config.time_normalisation == "authors":
            return normalise_timestamps_authors(timestamps)
        return timestamps.double()

    def rotary(self, timestamps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        angles = rotary_angles_authors if self.config.time_normalisation == "authors" else rotary_angles
        return angles(self.positions(timestamps), self.config.head_dim, self.config.rope_theta)

    def encode(self, values: torch.Tensor, timestamps: torch.Tensor) -> Encoded:
        """values [B, C, T] (missing points zero-filled), timestamps [B, T] seconds."""
        b, c, t = values.shape
        x = self.embed(values.reshape(b * c, t, 1).to(self.embed.gate.weight.dtype))
        cos, sin = self.rotary(timestamps)
        rotary = (cos.repeat_interleave(c, dim=0), sin.repeat_interleave(c, dim=0))
        aux = x.new_zeros(())
        experts = []
        for block in self.blocks:
            x, a, e = block(x, rotary, c)
            aux = aux + a
            experts.append(e)
        return Encoded(self.norm(x), aux, experts, c)

    # -- heads -------------------------------------------------------------------------------
    def control_spline(self, values: torch.Tensor, timestamps: torch.Tensor, mask: torch.Tensor) -> NaturalCubicSpline:
        """Natural cubic spline per (sample, channel) row through its observed prefix points."""
        b, c, t = values.shape
        times = timestamps.double().repeat_interleave(c, dim=0)
        return NaturalCubicSpline(times, values.reshape(b * c, t).double(), mask.reshape(b * c, t))

    def predict(self, values: torch.Tensor, timestamps: torch.Tensor, mask: torch.Tensor,
                query_times: torch.Tensor, controlled: bool = False) -> torch.Tensor:
        """One backbone pass, one solve from h_T to every query time: [B, C, Q].

        ``controlled``: the CDE regime (spline control from the observed prefix), else z = 0.
        """
        b, c, t = values.shape
        enc = self.encode(values * mask, timestamps)
        h_last = enc.hidden[:, -1]
        t_last = timestamps[:, -1].double().repeat_interleave(c)
        t_query = query_times.double().repeat_interleave(c, dim=0)
        spline = self.control_spline(values, timestamps, mask) if controlled else None
        out = self.decoder(h_last.to(self.decoder.readout.weight.dtype), t_last, t_query, spline)
        return out.view(b, c, -1)

    def predict_each(self, values: torch.Tensor, timestamps: torch.Tensor, query_times: torch.Tensor) -> torch.Tensor:
        """One backbone pass, then every query time decoded by its own solve from h_T (z = 0): [B, C, Q].

        Each query is then exactly the single-target prediction the model makes for it (as in
        training with ``max_target_offset`` > 1); the solves run as one batch of B*C*Q rows.
        """
        b, c, t = values.shape
        q = query_times.shape[1]
        enc = self.encode(values, timestamps)
        h_last = enc.hidden[:, -1].repeat_interleave(q, dim=0)  # [B*C*Q, H]
        t_last = timestamps[:, -1].double().repeat_interleave(c * q)
        t_query = query_times.double().repeat_interleave(c, dim=0).reshape(-1, 1)
        out = self.decoder(h_last.to(self.decoder.readout.weight.dtype), t_last, t_query)
        return out.view(b, c, q)

    def forecast(self, values: torch.Tensor, timestamps: torch.Tensor, query_times: torch.Tensor,
                 rollout: str = "autoregressive") -> torch.Tensor:
        """[B, C, H].  ``autoregressive`` (official): per step one backbone pass on the growing
        context and one solve to the next timestamp, the prediction fed back; ``direct``: one
        pass and one solve read out at every query time; ``per-query``: one pass and one solve per
        query time (each the model's single-target prediction for it)."""
        mask = torch.ones_like(values, dtype=torch.bool)
        if rollout == "direct":
            return self.predict(values, timestamps, mask, query_times)
        if rollout == "per-query":
            return self.predict_each(values, timestamps, query_times)
        if rollout != "autoregressive":
            raise ValueError(f"rollout must be one of {ROLLOUTS}, got {rollout!r}")
        preds = []
        for k in range(query_times.shape[1]):
            step = self.predict(values, timestamps, mask, query_times[:, k:k + 1])
            preds.append(step)
            values = torch.cat([values, step.to(values.dtype)], dim=2)
            timestamps = torch.cat([timestamps, query_times[:, k:k + 1].to(timestamps.dtype)], dim=1)
            mask = torch.ones_like(values, dtype=torch.bool)
        return torch.cat(preds, dim=2)

    def embed_batch(self, values: torch.Tensor, timestamps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Final-norm hidden states, masked mean over time, then mean over channels: [B, H]."""
        b, c, t = values.shape
        enc = self.encode(values * mask, timestamps)
        m = mask.reshape(b * c, t, 1).to(enc.hidden.dtype)
        per_row = (enc.hidden * m).sum(1) / m.sum(1).clamp_min(1.0)
        return per_row.view(b, c, -1).mean(1)

    # -- training objective ------------------------------------------------------------------------
    def forward(self, values: torch.Tensor, timestamps: torch.Tensor, target: torch.Tensor,
                target_time: torch.Tensor, mask: torch.Tensor, controlled: bool) -> torch.Tensor:
        """The pre-training loss (so that DistributedDataParallel can wrap the model)."""
        return self.next_step_loss(values, timestamps, target, target_time, mask, controlled)

    def next_step_loss(self, values: torch.Tensor, timestamps: torch.Tensor, target: torch.Tensor,
                       target_time: torch.Tensor, mask: torch.Tensor, controlled: bool) -> torch.Tensor:
        """Huber loss of the prediction at the next timestamp (the pre-training target), plus the
        learned router's auxiliary loss when that ablation is on.  ``target`` [B, C] at ``target_time``
        [B]; or, full-history regime only, [B, C, M] at [B, M]: M targets of the same context, each
        decoded by its own solve from h_T (``predict_each``), the loss their mean."""
        if target_time.dim() == 2:
            if controlled:
                raise ValueError("several targets per window are for the full-history regime (z = 0) only")
            pred = self.predict_each(values, timestamps, target_time)
        else:
            pred = self.predict(values, timestamps, mask, target_time[:, None], controlled)[..., 0]
        loss = nn.functional.huber_loss(pred, target.to(pred.dtype), delta=self.config.huber_delta)
        enc_aux = self.encode(values * mask, timestamps).aux_loss if self.config.router == "learned" else 0.0
        return loss + enc_aux


def count_parameters(model: SoterModel) -> tuple[int, int]:
    """(total, active under top-k routing): routed experts count top_k of num_experts."""
    cfg = model.config
    total = sum(p.numel() for p in model.parameters())
    routed = sum(p.numel() for blk in model.blocks for ex in blk.moe.experts for p in ex.parameters())
    active = total - routed + routed * cfg.top_k // cfg.num_experts
    return total, active
