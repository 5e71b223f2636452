"""SOTER: gated embedding -> L pre-norm blocks (CI causal attention with CT-RoPE, one CD layer,
PSD-guided MoE in every block) -> final RMSNorm -> continuous-time decoder -> Linear(H, 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from models.soter.attention import Attention, channel_dependent
from models.soter.config import SoterConfig
from models.soter.decoder import Decoder
from models.soter.direct_head import DirectHead, horizon_steps
from models.soter.layers import GatedEmbedding, RMSNorm
from models.soter.moe import MixtureOfExperts
from models.soter.rope import (normalise_timestamps, normalise_timestamps_authors, prepare_rotary, rotary_angles,
                               rotary_angles_authors)
from models.soter.spline import NaturalCubicSpline


ROLLOUTS = ("autoregressive", "direct", "per-query")
TREND_HEAD_INIT = (-2.0, math.log(0.1))  # the damped-trend head's bias at init: (logit gain, log tau in seconds)
TREND_LOG_TAU = (-7.0, 3.0)  # tau is kept in [1 ms, 20 s]
# the mean-reversion head's bias at init: (gain, log tau in sampling intervals); gain 0 is exactly the model without it
REVERSION_HEAD_INIT = (0.0, math.log(8.0))
REVERSION_LOG_TAU = (0.0, math.log(1024.0))  # tau is kept in [1, 1024] sampling intervals
# the short-trend head's bias at init: (gain, log tau in sampling intervals); gain 0 is exactly the model without it
SHORT_TREND_HEAD_INIT = (0.0, math.log(2.0))
SHORT_TREND_LOG_TAU = (math.log(0.25), math.log(64.0))  # tau is kept in [1/4, 64] sampling intervals


class Block(nn.Module):
    def __init__(self, cfg: SoterConfig, index: int) -> None:
        super().__init__()
        self.channel_dependent = cfg.cd_layer == index
        self.attn_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.attn = Attention(cfg.hidden_size, cfg.num_heads)
        self.moe_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.moe = MixtureOfExperts(cfg)

    def forward(self, x: torch.Tensor, rotary, channels: int, last_only: bool = False):
        """``last_only``: the output of the last token only, [R, 1, H] (see ``MixtureOfExperts.forward``)."""
        y = self.attn_norm(x)
        if self.channel_dependent and channels > 1:
            x = x + channel_dependent(self.attn, y, channels)
        else:  # CI layer, or the CD layer falling back to CI when C = 1
            x = x + self.attn(y, rotary, causal=True)
        out, aux, experts = self.moe(self.moe_norm(x), last_only)
        return (x[:, -1:] if last_only else x) + out, aux, experts


@dataclass
class WindowFrame:
    """Per (sample, channel) row: where the model's units sit in the data's, and the last observed
    value. ``loc`` = 0, ``scale`` = 1 unless ``input_scaling="window"``. All [B, C, 1].
    With ``output_skip="damped-trend"`` also the local slope (data units per second), and with it or
    ``mean_reversion`` the last observed time (seconds, float64); with ``mean_reversion`` the observed
    context's mean (data units) and the row's mean sampling interval (seconds); with ``short_trend_points``
    the slope of its last few observed points (per second), its last observed time and the interval."""
    loc: torch.Tensor
    scale: torch.Tensor
    last: torch.Tensor
    slope: torch.Tensor | None = None
    t_last: torch.Tensor | None = None
    mean: torch.Tensor | None = None
    interval: torch.Tensor | None = None
    short_slope: torch.Tensor | None = None
    low: torch.Tensor | None = None  # with output_bound: the bound's ends (data units)
    high: torch.Tensor | None = None

    def rows(self, name: str) -> torch.Tensor:
        """One of the fields as [B*C, 1] (the decoder's rows)."""
        return getattr(self, name).reshape(-1, 1)


def last_observed(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The last observed value of each row of [B, C, T] (0 where a row has none): [B, C, 1]."""
    t = values.shape[-1]
    idx = torch.where(mask, torch.arange(t, device=values.device), -1).amax(-1, keepdim=True)
    return torch.where(idx >= 0, values.gather(-1, idx.clamp_min(0)), torch.zeros_like(values[..., :1]))


def observed_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean of each row's observed points of [B, C, T] (0 where a row has none): [B, C, 1]."""
    w = mask.to(values.dtype)
    return (values * w).sum(-1, keepdim=True) / w.sum(-1, keepdim=True).clamp_min(1.0)


def last_observed_time(timestamps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each row's last observed time of [B, C, T] at timestamps [B, T], float64 [B, C, 1]; t_T where a row has
    no observed point."""
    t = timestamps.double()[:, None, :].expand(mask.shape)
    t_last = torch.where(mask, t, torch.full_like(t, -torch.inf)).amax(-1, keepdim=True)
    return torch.where(mask.any(-1, keepdim=True), t_last, t[..., -1:])


def mean_interval(timestamps: torch.Tensor, channels: int) -> torch.Tensor:
    """The mean sampling interval of each sample's context (span over T - 1), float64 [B, C, 1]: the unit in
    which the mean-reversion head's time constant is counted, so one head serves every sampling rate."""
    t = timestamps.double()
    span = (t[:, -1] - t[:, 0]) / max(t.shape[-1] - 1, 1)
    return span.clamp_min(1e-9)[:, None, None].expand(-1, channels, 1)


def intervals_since_last(fr: WindowFrame, t_query: torch.Tensor) -> torch.Tensor:
    """(query time - last observed time) [R, Q] in the row's mean sampling intervals, 0 before the last
    observation: the clock of the anchor terms that count in samples (mean reversion, short trend), so one head
    serves every sampling rate."""
    return ((t_query.double() - fr.rows("t_last")).clamp_min(0.0) / fr.rows("interval")).float()


def local_slope(values: torch.Tensor, timestamps: torch.Tensor, mask: torch.Tensor, points: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Least-squares slope (per second) of each row's last ``points`` observed samples of [B, C, T] at
    timestamps [B, T], and the row's last observed time: ([B, C, 1], [B, C, 1]) in float64. A row with fewer
    than two observed points (or all at one time) has slope 0; one with none takes t_T as its last time."""
    t = timestamps.double()[:, None, :].expand(values.shape)
    from_end = torch.flip(torch.cumsum(torch.flip(mask.long(), [-1]), -1), [-1])  # observed points at or after
    w = (mask & (from_end <= points)).double()
    n = w.sum(-1, keepdim=True)
    t_last = last_observed_time(timestamps, mask)
    tt = torch.where(mask, t - t_last, torch.zeros_like(t))  # relative times: no cancellation in float64
    y = torch.where(mask, values.double(), torch.zeros_like(t))
    t_mean = (w * tt).sum(-1, keepdim=True) / n.clamp_min(1.0)
    y_mean = (w * y).sum(-1, keepdim=True) / n.clamp_min(1.0)
    var = (w * (tt - t_mean) ** 2).sum(-1, keepdim=True)
    cov = (w * (tt - t_mean) * (y - y_mean)).sum(-1, keepdim=True)
    ok = (n >= 2) & (var > 0)
    return torch.where(ok, cov / torch.where(ok, var, torch.ones_like(var)), torch.zeros_like(var)), t_last


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
        # beyond the paper: a linear value path beside the gated embedding (absent by default, so the
        # paper's model has exactly the paper's parameters)
        self.value_path = nn.Linear(1, cfg.hidden_size) if cfg.value_embedding else None
        # beyond the paper: the damped-trend anchor's per-window (logit gain, log tau) from h_T
        self.trend_head = nn.Linear(cfg.hidden_size, 2) if cfg.output_skip == "damped-trend" else None
        # beyond the paper: the anchor's per-window reversion to the context mean, (gain, log tau) from h_T
        self.reversion_head = nn.Linear(cfg.hidden_size, 2) if cfg.mean_reversion else None
        # beyond the paper: the anchor's per-window short-term trend, (gain, log tau) from h_T
        self.short_trend_head = nn.Linear(cfg.hidden_size, 2) if cfg.short_trend_points else None
        # beyond the paper: the naive-residual output's per-step mix of last value and mean, from h_T
        self.mix_head = nn.Linear(cfg.hidden_size, cfg.mix_steps) if cfg.output_skip == "naive-residual" else None
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.decoder: Decoder | DirectHead = DirectHead(cfg) if cfg.decoder_head == "direct" else Decoder(cfg)
        self.apply(self._init)
        if self.value_path is not None:
            nn.init.normal_(self.value_path.weight, std=cfg.value_embedding_init)
        if isinstance(self.decoder, Decoder):
            self.decoder.field.zero_dt_column()  # field_dt: the log-dt input starts unused
        if self.trend_head is not None:  # starts as a barely followed (g = 0.12), fast-damped (0.1 s) trend
            nn.init.zeros_(self.trend_head.weight)
            with torch.no_grad():
                self.trend_head.bias.copy_(torch.tensor(TREND_HEAD_INIT))
        for head, bias in ((self.reversion_head, REVERSION_HEAD_INIT), (self.short_trend_head, SHORT_TREND_HEAD_INIT)):
            if head is not None:  # gain 0: exactly the model without the option
                nn.init.zeros_(head.weight)
                with torch.no_grad():
                    head.bias.copy_(torch.tensor(bias))
        if self.mix_head is not None:  # the untrained model is exactly its naive start, the residual zero
            nn.init.zeros_(self.mix_head.weight)
            nn.init.constant_(self.mix_head.bias, 1.0 if cfg.naive_start == "window-mean" else 0.0)
            nn.init.zeros_(self.decoder.readout.weight)
            nn.init.zeros_(self.decoder.readout.bias)

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

    # -- the model's units (input_scaling) ---------------------------------------------------------
    def frame(self, values: torch.Tensor, mask: torch.Tensor, timestamps: torch.Tensor | None = None) -> WindowFrame:
        """Location and scale of each row's observed context (0 and 1 unless ``input_scaling="window"``),
        its last observed value, with ``output_skip="damped-trend"`` (needs ``timestamps``) its local slope
        and last observed time, with ``mean_reversion`` (needs ``timestamps``) its last observed time,
        observed mean and mean sampling interval, and with ``short_trend_points`` (needs ``timestamps``) the
        slope of its last few observed points, its last observed time and mean sampling interval."""
        cfg = self.config
        last = last_observed(values, mask)
        extra: dict[str, torch.Tensor] = {}
        naive_mix = cfg.output_skip == "naive-residual"
        if (cfg.output_skip in ("damped-trend", "naive-residual") or cfg.mean_reversion or cfg.short_trend_points) \
                and timestamps is None:
            raise ValueError("output_skip 'damped-trend' and 'naive-residual', mean_reversion and short_trend_points "
                             "need the timestamps of the context")
        if cfg.output_skip == "damped-trend":
            extra["slope"], extra["t_last"] = local_slope(values, timestamps, mask, cfg.trend_points)
        if cfg.short_trend_points:
            extra["short_slope"], extra["t_last"] = local_slope(values, timestamps, mask, cfg.short_trend_points)
        mean = observed_mean(values, mask) if cfg.mean_reversion or naive_mix or cfg.input_scaling != "none" else None
        if cfg.mean_reversion or naive_mix:
            extra["mean"] = mean
        if cfg.mean_reversion or cfg.short_trend_points or naive_mix:
            extra.setdefault("t_last", last_observed_time(timestamps, mask))
            extra["interval"] = mean_interval(timestamps, values.shape[1])
        if cfg.output_bound > 0:
            lo = torch.where(mask, values, torch.full_like(values, float("inf"))).amin(-1, keepdim=True)
            hi = torch.where(mask, values, torch.full_like(values, float("-inf"))).amax(-1, keepdim=True)
            seen = torch.isfinite(lo)  # a row with no observation: no bound
            lo, hi = torch.where(seen, lo, torch.full_like(lo, -1e30)), torch.where(seen, hi, torch.full_like(hi, 1e30))
            span = (hi - lo).clamp_min(0.0) * seen
            extra["low"], extra["high"] = lo - cfg.output_bound * span, hi + cfg.output_bound * span
        if cfg.input_scaling == "none":
            return WindowFrame(torch.zeros_like(last), torch.ones_like(last), last, **extra)
        var = (((values - mean) * mask.to(values.dtype)) ** 2).sum(-1, keepdim=True) \
            / mask.to(values.dtype).sum(-1, keepdim=True).clamp_min(1.0)
        return WindowFrame(mean, var.sqrt().clamp_min(cfg.scale_floor), last, **extra)

    def model_inputs(self, values: torch.Tensor, mask: torch.Tensor, timestamps: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, WindowFrame]:
        """The values the backbone sees (in the frame's units, missing points zero-filled) and the frame."""
        fr = self.frame(values, mask, timestamps)
        if self.config.input_scaling == "none":
            return values * mask, fr
        return torch.where(mask, (values - fr.loc) / fr.scale, torch.zeros_like(values)), fr

    def to_data_units(self, readout: torch.Tensor, readout_last: torch.Tensor, fr: WindowFrame,
                      h_last: torch.Tensor | None = None, t_query: torch.Tensor | None = None) -> torch.Tensor:
        """Readouts [R, Q] at the query times and [R, 1] at t_T (the decoder's start) -> predictions
        [R, Q] in the data's units: loc + scale * readout, or with ``output_skip="last-value"`` the
        last observed value plus the scaled change of the readout since t_T; ``"damped-trend"`` adds the
        trend term, which needs h_T [R, H] and the query times [R, Q] (seconds)."""
        scale = fr.rows("scale").to(readout.dtype)
        if self.config.output_skip == "naive-residual":
            last = fr.rows("last").to(readout.dtype)
            weight = self.naive_mix(fr, h_last, t_query).to(readout.dtype)
            return self.bounded(last + weight * (fr.rows("mean").to(readout.dtype) - last)
                                + scale * (readout - readout_last), fr)
        if self.config.output_skip == "none":
            return self.bounded(fr.rows("loc").to(readout.dtype) + scale * readout, fr)
        anchor = fr.rows("last").to(readout.dtype)
        if self.config.output_skip == "damped-trend":
            anchor = anchor + self.trend(fr, h_last, t_query).to(readout.dtype)
        if self.config.mean_reversion:
            anchor = anchor + self.reversion(fr, h_last, t_query).to(readout.dtype)
        if self.config.short_trend_points:
            anchor = anchor + self.short_trend(fr, h_last, t_query).to(readout.dtype)
        return self.bounded(anchor + scale * (readout - readout_last), fr)

    def bounded(self, pred: torch.Tensor, fr: WindowFrame) -> torch.Tensor:
        """``pred`` [R, Q] clipped to the frame's bound (``output_bound``), else unchanged."""
        if self.config.output_bound <= 0:
            return pred
        return torch.minimum(torch.maximum(pred, fr.rows("low").to(pred.dtype)), fr.rows("high").to(pred.dtype))

    def naive_mix(self, fr: WindowFrame, h_last: torch.Tensor, t_query: torch.Tensor) -> torch.Tensor:
        """w [R, Q] in [0, 1]: each query's weight of the context mean against the last observed value, read from
        mix_head(h_T) at the query's horizon step (``horizon_steps``)."""
        if self.mix_head is None or fr.interval is None or h_last is None or t_query is None:
            raise ValueError("the naive-residual output needs its mix head, the frame's interval, h_T and the query "
                             "times")
        steps = horizon_steps(intervals_since_last(fr, t_query), self.config.mix_steps)
        return self.mix_head(h_last).float().gather(1, steps).clamp(0.0, 1.0)

    def decode(self, h_last: torch.Tensor, t_last: torch.Tensor, t_query: torch.Tensor, fr: WindowFrame,
               spline: NaturalCubicSpline | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Readouts [R, Q] at the query times and [R, 1] at t_T: one solve of the ODE decoder from h_T (rows
        t_last [R], queries [R, Q]), or the direct head's readout at each query's horizon step (0 at t_T)."""
        if isinstance(self.decoder, DirectHead):
            return self.decoder(h_last, intervals_since_last(fr, t_query)), h_last.new_zeros(h_last.shape[0], 1)
        return self.decoder(h_last, t_last, t_query, spline), self.decoder.readout(h_last)

    def trend(self, fr: WindowFrame, h_last: torch.Tensor, t_query: torch.Tensor) -> torch.Tensor:
        """g * slope * tau * (1 - exp(-dt / tau)) [R, Q]: the local slope followed for about tau seconds
        after the last observation, with (logit g, log tau) = trend_head(h_T) chosen per row."""
        if self.trend_head is None or fr.slope is None or h_last is None or t_query is None:
            raise ValueError("the damped-trend anchor needs its head, the frame's slope, h_T and the query times")
        logit_g, log_tau = self.trend_head(h_last).float().unbind(-1)
        gain = torch.sigmoid(logit_g)[:, None]
        tau = log_tau.clamp(*TREND_LOG_TAU).exp()[:, None]
        dt = (t_query.double() - fr.rows("t_last")).clamp_min(0.0).float()
        return gain * fr.rows("slope").float() * tau * -torch.expm1(-dt / tau)

    def reversion(self, fr: WindowFrame, h_last: torch.Tensor, t_query: torch.Tensor) -> torch.Tensor:
        """g * (mean - last) * (1 - exp(-n / tau)) [R, Q]: the anchor's move from the last observed value towards
        the observed context's mean, n = (query time - last observed time) in the row's mean sampling intervals,
        with (g, log tau) = reversion_head(h_T) chosen per row (g is not bounded: g < 0 moves away from the
        mean, g > 1 past it)."""
        if self.reversion_head is None or fr.mean is None or fr.interval is None or h_last is None or t_query is None:
            raise ValueError("mean reversion needs its head, the frame's mean and interval, h_T and the query times")
        gain, log_tau = self.reversion_head(h_last).float().unbind(-1)
        tau = log_tau.clamp(*REVERSION_LOG_TAU).exp()[:, None]
        n = intervals_since_last(fr, t_query)
        return gain[:, None] * (fr.rows("mean") - fr.rows("last")).float() * -torch.expm1(-n / tau)

    def short_trend(self, fr: WindowFrame, h_last: torch.Tensor, t_query: torch.Tensor) -> torch.Tensor:
        """g * short_slope * tau * interval * (1 - exp(-n / tau)) [R, Q]: the slope of the last few observed points
        followed for about tau sampling intervals, n = (query time - last observed time) in intervals, with
        (g, log tau) = short_trend_head(h_T) chosen per row (g unbounded; g = 1, tau large is the straight line
        through those points)."""
        if self.short_trend_head is None or fr.short_slope is None or fr.interval is None or h_last is None \
                or t_query is None:
            raise ValueError("the short trend needs its head, the frame's short slope and interval, h_T and the "
                             "query times")
        gain, log_tau = self.short_trend_head(h_last).float().unbind(-1)
        tau = log_tau.clamp(*SHORT_TREND_LOG_TAU).exp()[:, None]
        n = intervals_since_last(fr, t_query)
        return gain[:, None] * (fr.rows("short_slope") * fr.rows("interval")).float() * tau * -torch.expm1(-n / tau)

    def encode(self, values: torch.Tensor, timestamps: torch.Tensor, last_only: bool = False) -> Encoded:
        """values [B, C, T] in the model's units (``model_inputs``; missing points zero-filled),
        timestamps [B, T] seconds. ``last_only``: the hidden state of the last token only ([B*C, 1, H], the
        last block's experts [B*C, 1, k]): all a decoder start h_T needs; the last block's routing and shared
        input still read every token, so it equals the full pass's last row."""
        b, c, t = values.shape
        x_in = values.reshape(b * c, t, 1).to(self.embed.gate.weight.dtype)
        x = self.embed(x_in)
        if self.value_path is not None:
            x = x + self.value_path(x_in)
        cos, sin = self.rotary(timestamps)
        rotary = prepare_rotary(cos.repeat_interleave(c, dim=0), sin.repeat_interleave(c, dim=0), x.dtype,
                                self.config.num_heads)
        aux = x.new_zeros(())
        experts = []
        for i, block in enumerate(self.blocks):
            x, a, e = block(x, rotary, c, last_only and i == len(self.blocks) - 1)
            aux = aux + a
            experts.append(e)
        return Encoded(self.norm(x), aux, experts, c)

    # -- heads -------------------------------------------------------------------------------
    def control_spline(self, values: torch.Tensor, timestamps: torch.Tensor, mask: torch.Tensor,
                       beyond: str = "extrapolate") -> NaturalCubicSpline:
        """Natural cubic spline per (sample, channel) row through its observed prefix points; ``beyond``: its
        value past a row's last observation (``models.soter.spline``; the authors' extrapolation by default)."""
        b, c, t = values.shape
        times = timestamps.double().repeat_interleave(c, dim=0)
        return NaturalCubicSpline(times, values.reshape(b * c, t).double(), mask.reshape(b * c, t), beyond)

    def predict(self, values: torch.Tensor, timestamps: torch.Tensor, mask: torch.Tensor,
                query_times: torch.Tensor, controlled: bool = False,
                control_beyond: str = "extrapolate") -> torch.Tensor:
        """One backbone pass, one solve from h_T to every query time: [B, C, Q].

        ``controlled``: the CDE regime (spline control from the observed prefix), else z = 0;
        ``control_beyond``: the control past a channel's last observation (``models.soter.spline``).
        """
        return self.predict_with_readouts(values, timestamps, mask, query_times, controlled, control_beyond)[0]

    def predict_with_readouts(self, values: torch.Tensor, timestamps: torch.Tensor, mask: torch.Tensor,
                              query_times: torch.Tensor, controlled: bool = False,
                              control_beyond: str = "extrapolate"
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, WindowFrame]:
        """``predict``'s [B, C, Q], with the raw readouts it came from ([B*C, Q] at the queries,
        [B*C, 1] at t_T) and the frame (training's auxiliary loss needs them)."""
        b, c, t = values.shape
        inputs, fr = self.model_inputs(values, mask, timestamps)
        enc = self.encode(inputs, timestamps, last_only=True)
        h_last = enc.hidden[:, -1].to(self.decoder.readout.weight.dtype)
        t_last = timestamps[:, -1].double().repeat_interleave(c)
        t_query = query_times.double().repeat_interleave(c, dim=0)
        spline = self.control_spline(inputs, timestamps, mask, control_beyond) if controlled else None
        readout, readout_last = self.decode(h_last, t_last, t_query, fr, spline)
        pred = self.to_data_units(readout, readout_last, fr, h_last, t_query)
        return pred.view(b, c, -1), readout, readout_last, fr

    def predict_each(self, values: torch.Tensor, timestamps: torch.Tensor, query_times: torch.Tensor) -> torch.Tensor:
        """One backbone pass, then every query time decoded by its own solve from h_T (z = 0): [B, C, Q].

        Each query is then exactly the single-target prediction the model makes for it (as in
        training with ``max_target_offset`` > 1); the solves run as one batch of B*C*Q rows.
        """
        return self.predict_each_with_readouts(values, timestamps, query_times)[0]

    def predict_each_with_readouts(self, values: torch.Tensor, timestamps: torch.Tensor, query_times: torch.Tensor
                                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, WindowFrame]:
        """``predict_each``'s [B, C, Q], with its raw readouts ([B*C, Q] and [B*C, 1] at t_T) and frame."""
        b, c, t = values.shape
        q = query_times.shape[1]
        inputs, fr = self.model_inputs(values, torch.ones_like(values, dtype=torch.bool), timestamps)
        enc = self.encode(inputs, timestamps, last_only=True)
        h_last = enc.hidden[:, -1].to(self.decoder.readout.weight.dtype)  # [B*C, H]
        t_last = timestamps[:, -1].double().repeat_interleave(c * q)
        t_rows = query_times.double().repeat_interleave(c, dim=0)  # [B*C, Q]
        if isinstance(self.decoder, DirectHead):  # no solve: every query read from the one h_T
            readout, readout_last = self.decode(h_last, t_last, t_rows, fr)
        else:
            readout = self.decoder(h_last.repeat_interleave(q, dim=0), t_last, t_rows.reshape(-1, 1)).view(b * c, q)
            readout_last = self.decoder.readout(h_last)
        pred = self.to_data_units(readout, readout_last, fr, h_last, t_rows)
        return pred.view(b, c, q), readout, readout_last, fr

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
        enc = self.encode(self.model_inputs(values, mask, timestamps)[0], timestamps)
        m = mask.reshape(b * c, t, 1).to(enc.hidden.dtype)
        per_row = (enc.hidden * m).sum(1) / m.sum(1).clamp_min(1.0)
        return per_row.view(b, c, -1).mean(1)

    # -- training objective ------------------------------------------------------------------------
    def forward(self, values: torch.Tensor, timestamps: torch.Tensor, target: torch.Tensor,
                target_time: torch.Tensor, mask: torch.Tensor, controlled: bool,
                aux_absolute_weight: float = 0.0) -> torch.Tensor:
        """The pre-training loss (so that DistributedDataParallel can wrap the model)."""
        return self.next_step_loss(values, timestamps, target, target_time, mask, controlled, aux_absolute_weight)

    def next_step_loss(self, values: torch.Tensor, timestamps: torch.Tensor, target: torch.Tensor,
                       target_time: torch.Tensor, mask: torch.Tensor, controlled: bool,
                       aux_absolute_weight: float = 0.0) -> torch.Tensor:
        """Huber loss of the prediction at the next timestamp (the pre-training target), plus the
        learned router's auxiliary loss when that ablation is on.  ``target`` [B, C] at ``target_time``
        [B]; or, full-history regime only, [B, C, M] at [B, M]: M targets of the same context, each
        decoded by its own solve from h_T (``predict_each``), the loss their mean.

        ``aux_absolute_weight`` w > 0 (beyond the paper; for ``output_skip="last-value"``): adds w times
        the Huber loss of the absolute readout (loc + scale * readout) at the target and at t_T (against
        the last observed value), so the readout keeps carrying the level and cannot die."""
        if target_time.dim() == 2:
            if controlled:
                raise ValueError("several targets per window are for the full-history regime (z = 0) only")
            pred, readout, readout_last, fr = self.predict_each_with_readouts(values, timestamps, target_time)
        else:
            pred, readout, readout_last, fr = self.predict_with_readouts(values, timestamps, mask,
                                                                         target_time[:, None], controlled)
            pred = pred[..., 0]
        target = target.to(pred.dtype)
        loss = nn.functional.huber_loss(pred, target, delta=self.config.huber_delta)
        if aux_absolute_weight > 0:
            loc, scale = fr.rows("loc").to(pred.dtype), fr.rows("scale").to(pred.dtype)
            absolute = (loc + scale * readout).view(pred.shape)
            absolute_last = loc + scale * readout_last
            loss = loss + aux_absolute_weight * (
                nn.functional.huber_loss(absolute, target, delta=self.config.huber_delta)
                + nn.functional.huber_loss(absolute_last, fr.rows("last").to(pred.dtype), delta=self.config.huber_delta))
        if self.config.router == "learned":
            loss = loss + self.encode(self.model_inputs(values, mask, timestamps)[0], timestamps).aux_loss
        return loss


def count_parameters(model: SoterModel) -> tuple[int, int]:
    """(total, active under top-k routing): routed experts count top_k of num_experts."""
    cfg = model.config
    total = sum(p.numel() for p in model.parameters())
    routed = sum(p.numel() for blk in model.blocks for ex in blk.moe.experts for p in ex.parameters())
    active = total - routed + routed * cfg.top_k // cfg.num_experts
    return total, active
