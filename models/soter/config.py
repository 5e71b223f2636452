"""SOTER's configuration: one typed dataclass, saved as JSON beside every checkpoint."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

AUTHORS_HUB_ID = "SII-fkchen/SOTER"  # the authors' released checkpoint (here, not in authors.py: no torch needed)


SOLVER_IMPLS = ("native", "torchdiffeq")  # the decoder's dopri5 solve (models.soter.adapter.SolverImpl, tested equal)


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class SoterConfig:
    # backbone
    hidden_size: int = 256
    num_heads: int = 4
    intermediate_size: int = 512  # shared expert width; a routed expert has width I / top_k
    num_layers: int = 6
    cd_layer: int | None = 5  # index of the channel-dependent layer; None = channel-independent only
    num_experts: int = 6
    top_k: int = 2
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    # "official": per-row min-max to [0, T-1] on a 0.1 grid (float64); "authors": the same rule in
    # the authors' float32 arithmetic with their 1e-4 tie fix (parity); "none": raw seconds
    time_normalisation: str = "official"
    # routing
    router: str = "psd"  # "psd" (the paper) | "learned" (ablation: softmax gate + load-balancing loss)
    dft_length: int = 512  # N: bins 0..N/2
    dft_impl: str = "fast"  # "fast": fused numba kernel on CPU, chunked prefix sums on GPU | "torch" | "loop"
    router_aux_loss_coef: float = 0.01  # learned router only
    shared_expert_input: str = "window_mean"  # "window_mean" (the paper) | "causal_mean" (per-position causal)
    # "auto": grouped for CPU inference, dense elsewhere; "dense": every expert on every token, zero
    # weights for the others (no host syncs: GPU; every expert gets a gradient: DDP/FSDP training);
    # "grouped": each expert on its routed tokens only. Same sums.
    expert_execution: str = "auto"
    # decoder
    decoder_hidden: tuple[int, ...] = (128, 128)
    control: bool = True  # False: no control block at all (pure Neural ODE ablation)
    solver: str = "dopri5"  # any fixed or adaptive torchdiffeq method: "dopri5", "rk4", "euler", ...
    # "native": dopri5 by models/soter/dopri5.py (torchdiffeq's method and step control, 2x faster on this state);
    # "torchdiffeq": its odeint (parity checks). Other solvers always run through torchdiffeq
    solver_impl: str = "native"
    rtol: float = 1e-5
    atol: float = 1e-5
    rk4_steps: int = 8  # steps over s in [0, 1] for fixed-step solvers
    min_dt: float = 1e-5
    # beyond the paper (off by default = the paper's model; docs/soter-training.md, "Recipe options"):
    # "window": the backbone sees each (sample, channel) row standardised by the mean and standard
    # deviation of its observed context (floored at scale_floor), and predictions are mapped back
    # (loc + scale * readout): forecasts then move with a shifted or scaled signal
    input_scaling: str = "none"
    scale_floor: float = 1e-3
    # a linear value path Linear(1, H) (with bias) added to the gated embedding, drawn with std
    # value_embedding_init: the value enters linearly and above the RMSNorm eps
    value_embedding: bool = False
    value_embedding_init: float = 1.0
    # "last-value": prediction = last observed value + scale * (readout(h(t)) - readout(h_T)), so a
    # zero decoder change is exactly last value (last observation carried forward when imputing);
    # "damped-trend": the same plus g * slope * tau * (1 - exp(-dt / tau)), slope = least-squares slope of the
    # row's last ``trend_points`` observed points (per second), dt = query time - last observed time, and
    # (logit g, log tau) = Linear(H, 2)(h_T): the model chooses per window how far to follow the local trend
    # "naive-residual": prediction = last + w_k * (mean - last) + scale * (readout(h(t)) - readout(h_T)): a learned
    # per-step mix of last value and the observed context's mean, w_k = clamp(Linear(H, mix_steps)(h_T)[k], 0, 1) at
    # horizon step k (the query's distance from the last observation in sampling intervals, rounded, 1..mix_steps),
    # plus a residual whose readout starts at zero. The untrained model is then exactly a naive forecaster
    # (``naive_start``: last value, w = 0, or window mean, w = 1), and training moves away from it only where the loss
    # says so (a constant forecast beats small ODE forecasters on most irregular-series sets; docs/soter.md)
    output_skip: str = "none"
    trend_points: int = 8
    naive_start: str = "last-value"
    mix_steps: int = 64
    # "ode": the paper's continuous-time decoder; "direct" (with output_skip "naive-residual"): the control of that
    # decoder, a linear readout of h_T over the horizon (Linear(H, mix_steps), zero at the start, read at the query's
    # horizon step), no solve: the ablation asks whether the ODE adds anything
    decoder_head: str = "ode"
    # the decoder's field also sees log(dt / 1 s), dt = the row's solve span (the paper's field sees s in [0, 1]
    # only, so its change over the first steps is close to linear in dt)
    field_dt: bool = False
    # with an anchor (output_skip "last-value" or "damped-trend"): the anchor also moves from the last observed value
    # towards the observed context's mean, g * (mean - last) * (1 - exp(-n / tau)), n = steps after the last
    # observation in the context's mean sampling interval, (g, log tau) = Linear(H, 2)(h_T) per row; g starts at 0
    # (exactly the model without it). A model-free rule of this form (half-life 8 samples) beat the shipped SOTER
    # on the real held-out ECG (docs/soter-anchored-rules.md, "V11")
    mean_reversion: bool = False
    # > 0 (with an anchor): the anchor also follows the least-squares slope of the row's last ``short_trend_points``
    # observed points, g * slope * tau * interval * (1 - exp(-n / tau)), n and tau in the context's mean sampling
    # interval, (g, log tau) = Linear(H, 2)(h_T) per row; g starts at 0 (exactly the model without it). The
    # damped trend's 8-point slope lags at horizon step 1; a two- or three-point line beat last value there on both
    # held-out sets (docs/soter-anchored-rules.md, "V12")
    short_trend_points: int = 0
    # > 0 (issue #45): every prediction is clipped to [min - b * span, max + b * span] of its row's observed context
    # (span = max - min), b = output_bound: the forecast is bounded by construction whatever a head extrapolates
    # (protocols/adversarial.py checks that bound with b = 0.5). 0 = unbounded, the paper's model
    output_bound: float = 0.0
    # training
    huber_delta: float = 2.0
    initializer_range: float = 0.02
    max_length: int = 512

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ConfigError(f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}")
        if (self.hidden_size // self.num_heads) % 2:
            raise ConfigError("the head dimension must be even for rotary embeddings")
        if not 1 <= self.top_k <= self.num_experts:
            raise ConfigError(f"top_k must be in [1, num_experts], got {self.top_k}")
        if self.intermediate_size % self.top_k:
            raise ConfigError("intermediate_size must be divisible by top_k (routed expert width I / top_k)")
        if self.cd_layer is not None and not 0 <= self.cd_layer < self.num_layers:
            raise ConfigError(f"cd_layer {self.cd_layer} outside 0..{self.num_layers - 1}")
        if self.num_experts > self.dft_length // 2 + 1:
            raise ConfigError("more experts than DFT bins")
        choices = {"router": ("psd", "learned"), "dft_impl": ("fast", "torch", "loop"),
                   "time_normalisation": ("official", "authors", "none"),
                   "shared_expert_input": ("window_mean", "causal_mean"),
                   "expert_execution": ("auto", "dense", "grouped"), "solver_impl": SOLVER_IMPLS,
                   "input_scaling": ("none", "window"),
                   "output_skip": ("none", "last-value", "damped-trend", "naive-residual"),
                   "naive_start": ("last-value", "window-mean"), "decoder_head": ("ode", "direct")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if min(self.rtol, self.atol, self.min_dt, self.scale_floor) <= 0:
            raise ConfigError("rtol, atol, min_dt and scale_floor must be positive")
        if self.trend_points < 2:
            raise ConfigError(f"trend_points must be >= 2 (a slope needs two points), got {self.trend_points}")
        if (self.mean_reversion or self.short_trend_points) and self.output_skip == "none":
            raise ConfigError("mean_reversion and short_trend_points move the anchor: they need output_skip "
                              "'last-value' or 'damped-trend'")
        if self.short_trend_points == 1 or self.short_trend_points < 0:
            raise ConfigError(f"short_trend_points must be 0 (off) or >= 2, got {self.short_trend_points}")
        if self.output_skip == "naive-residual" and (self.mean_reversion or self.short_trend_points):
            raise ConfigError("output_skip 'naive-residual' has its own mix of last value and mean: mean_reversion and "
                              "short_trend_points are for the 'last-value' and 'damped-trend' anchors")
        if self.mix_steps < 1:
            raise ConfigError(f"mix_steps must be >= 1, got {self.mix_steps}")
        if self.decoder_head == "direct" and self.output_skip != "naive-residual":
            raise ConfigError("decoder_head 'direct' reads a residual over the horizon: it needs output_skip "
                              "'naive-residual'")
        if self.decoder_head == "direct" and self.field_dt:
            raise ConfigError("field_dt is an input of the ODE decoder's field: decoder_head 'direct' has none")
        if self.output_bound < 0:
            raise ConfigError(f"output_bound must be >= 0 (0: off), got {self.output_bound}")
        if self.value_embedding_init < 0:
            raise ConfigError(f"value_embedding_init must be >= 0, got {self.value_embedding_init}")

    @property
    def is_faithful(self) -> bool:
        """True when no option beyond the paper's architecture is on (the recipe may still differ)."""
        return (self.input_scaling, self.value_embedding, self.output_skip, self.field_dt, self.mean_reversion,
                self.short_trend_points, self.output_bound, self.decoder_head) == ("none", False, "none", False, False,
                                                                                  0, 0.0, "ode")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def expert_size(self) -> int:
        return self.intermediate_size // self.top_k

    def minimum_parameters(self) -> int:
        """The parameters this config's model has at least (every block's attention, norms, experts and shared
        expert, the final norm, the decoder's field and readout), from the numbers alone: a checkpoint's config is
        checked against its weights before any module is built, since building an oversized model (many layers or
        experts) costs minutes even on the meta device. Only the small optional heads and embeddings (a few times H
        parameters each) are left out: never above the built model's count, and the model it passes is about the
        weights' size, so that it can be built for its shapes to be checked."""
        h, width = self.hidden_size, 1 + self.hidden_size + int(self.control) + int(self.field_dt)
        block = 4 * h * h + 3 * h + 2 * h + 3 * h * (self.num_experts * self.expert_size + self.intermediate_size)
        dims = [width, *self.decoder_hidden, h]
        mix = h * self.mix_steps + self.mix_steps if self.output_skip == "naive-residual" else 0  # its mix head
        if self.decoder_head == "direct":  # no field; the readout spans the horizon
            return self.num_layers * block + h + h * self.mix_steps + self.mix_steps + mix
        field = sum(a * b + b for a, b in zip(dims[:-1], dims[1:]))
        return self.num_layers * block + h + field + h + 1 + mix

    @property
    def num_bins(self) -> int:
        return self.dft_length // 2 + 1

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["decoder_hidden"] = list(self.decoder_hidden)
        return {"model_type": "soter", **d}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SoterConfig":
        data = dict(data)
        if data.pop("model_type", "soter") != "soter":
            raise ConfigError("config is not a SOTER config (model_type != 'soter')")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown SOTER config field(s) {unknown}")
        if "decoder_hidden" in data:
            data["decoder_hidden"] = tuple(data["decoder_hidden"])
        return cls(**data)

    @classmethod
    def options(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Model options (field -> value) checked and typed against the fields: an unknown name is an error that
        lists the known ones, a string (a command-line value) becomes the field's type ("true", "3", "1e-2",
        "none" for an optional int, "64,64" for a tuple). The values themselves are checked when a config is
        built with them (``__post_init__``)."""
        if not isinstance(given, dict):
            raise ConfigError(f"model options must be a mapping of SoterConfig fields, got {type(given).__name__}")
        defaults = {f.name: getattr(cls(), f.name) for f in fields(cls)}
        unknown = sorted(set(given) - set(defaults))
        if unknown:
            raise ConfigError(f"unknown SOTER model option(s) {unknown}; known: {', '.join(sorted(defaults))}")
        return {name: _typed(name, value, defaults[name]) for name, value in given.items()}

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> "SoterConfig":
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (json.JSONDecodeError, TypeError) as exc:
            raise ConfigError(f"{path}: not a valid SOTER config ({exc})") from exc

    def replace(self, **changes: Any) -> "SoterConfig":
        return replace(self, **changes)


def _typed(name: str, value: Any, default: Any) -> Any:
    """``value`` as the type of the field's default (see :meth:`SoterConfig.options`)."""
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                return value.lower() in ("true", "1", "yes")
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if isinstance(default, tuple):
            items = value.split(",") if isinstance(value, str) else list(value)
            return tuple(type(default[0])(v) for v in items) if default else tuple(items)
        if default is None or name == "cd_layer":  # an optional int
            return None if value in (None, "none", "None", "") else int(value)
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if isinstance(default, float):
            return float(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"model option {name}: {value!r} is not a {type(default).__name__}") from exc


PRESETS: dict[str, SoterConfig] = {
    # tests and smoke runs only
    "soter-tiny": SoterConfig(hidden_size=32, num_heads=2, intermediate_size=64, num_layers=3, cd_layer=2,
                              num_experts=4, dft_length=64, decoder_hidden=(32, 32), max_length=256),
    # the official code's defaults
    "soter-small": SoterConfig(),
    # sized for pre-training on a 2-core CPU (docs/soter.md, BENCHMARKS.md): the paper's six layers with
    # the CD layer on top, head dimension 32 (CPU attention is faster there than at 16), DFT length =
    # the training context
    "soter-cpu-64": SoterConfig(hidden_size=64, num_heads=2, intermediate_size=128, num_experts=4,
                                dft_length=256, decoder_hidden=(64, 64), max_length=256),
    "soter-cpu-96": SoterConfig(hidden_size=96, num_heads=3, intermediate_size=192, num_experts=6,
                                dft_length=256, decoder_hidden=(96, 96), max_length=256),
    # six layers sized to the paper's 49.79M total / 20.29M active (docs/soter.md)
    "soter-paper": SoterConfig(hidden_size=576, num_heads=9, intermediate_size=576, num_experts=12,
                               decoder_hidden=(256, 256)),
}


def preset(name: str) -> SoterConfig:
    if name not in PRESETS:
        raise ConfigError(f"unknown SOTER preset {name!r}; known: {sorted(PRESETS)}")
    return PRESETS[name]


__all__ = ["SoterConfig", "ConfigError", "PRESETS", "preset"]
