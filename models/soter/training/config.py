"""Every training value as a field, with the paper's value as default (docs/soter-training.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class TrainConfig:
    model: str = "soter-small"  # a preset name of models.soter.config
    solver: str = ""  # decoder ODE solver for training (e.g. "rk4"); "" = the preset's (dopri5)
    corpus: str = "corpus"  # folder written by `build_corpus`
    out: str = "runs/soter"  # checkpoints, logs, figure
    steps: int = 1000  # total optimisation steps (the cosine spans them)
    batch_size: int = 8  # per rank
    grad_accum: int = 1
    max_length: int = 512  # context tokens; the window has one more sample, the target
    min_length: int = 64  # shorter recordings are skipped
    lr: float = 3e-4
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    weight_decay: float = 0.01
    warmup_steps: int = 20
    # per-step dataset draw: "size" (by window count), "uniform", or "sqrt" (by the square root of the window
    # count: a 5-hour recording is not drawn 500 times as often as a 30-second clip, nor as rarely)
    dataset_weighting: str = "size"
    missing_prob: float = 0.5  # per step: the fair coin between the two regimes
    missing_rate: float = 0.15  # share of context points masked in the missingness regime
    # beyond the paper (off by default; docs/soter-training.md): in the full-history regime the target
    # is k samples after the context, k = 1 with probability next_step_prob, else uniform in 2..K
    max_target_offset: int = 1
    next_step_prob: float = 1.0
    min_context: int = 0  # > 0: each step's context length uniform in [min_context, max_length]
    # > 1 (needs max_target_offset > 1): in the full-history regime M targets per window, each offset drawn
    # as above, each decoded by its own solve from the one h_T (more supervision per backbone pass)
    targets_per_window: int = 1
    # > 0: re-draw the gated input embedding's two Linear(1, H) weights with this std after the model's own
    # initialisation (normal, std initializer_range = 0.02 in the official code). With inputs in [0, 1] that
    # init gives embeddings of RMS ~1e-4, under the RMSNorm eps: see docs/soter-training.md. 0 = the official init
    embedding_init_std: float = 0.0
    # a new run (step 0, fresh optimizer and schedule) whose weights start from this SOTER checkpoint folder
    # (fine-tuning, or continuing on other hardware without the optimizer state); "" = random initialisation
    init_weights: str = ""
    # beyond the paper: model options (SoterConfig fields of the same names; "" / "none" / False leave the
    # preset's value) stored in the checkpoint's config.json, so the checkpoint runs as trained everywhere
    input_scaling: str = ""
    value_embedding: bool = False
    output_skip: str = ""
    field_dt: bool = False
    mean_reversion: bool = False
    short_trend_points: int = 0
    # > 0 (with output_skip "last-value" or "damped-trend"): the absolute readout's Huber loss at the target and at t_T, times
    # this weight, is added to the loss, so the readout keeps carrying the level (it cannot die)
    aux_absolute_weight: float = 0.0
    # > 0 (with output_skip="damped-trend"): the trend head's learning rate (its own AdamW group; the schedule
    # scales it like lr). Its two outputs sit behind a zero-initialised Linear(H, 2): at the backbone's lr they
    # move about lr per step, too slowly for a fine-tune of a few thousand steps. 0 = lr
    trend_head_lr: float = 0.0
    # > 0 (with mean_reversion): the mean-reversion head's learning rate (its own AdamW group, as trend_head_lr)
    reversion_head_lr: float = 0.0
    # > 0 (with short_trend_points): the short-trend head's learning rate (its own AdamW group, as trend_head_lr)
    short_trend_head_lr: float = 0.0
    # > 0: the Huber loss's delta (SoterConfig.huber_delta, stored in config.json; training only). The preset's
    # 2.0 on values MinMax-normalised to [0, 1] makes the loss exactly half the squared error: a small delta
    # (say 0.01) makes it about |error| * delta, so MAE is trained too (rule V8). 0 = the preset's value
    huber_delta: float = 0.0
    # held-out loss: a second corpus (e.g. other synthetic seeds), val_batches fixed batches every val_every steps
    val_corpus: str = ""
    val_every: int = 500
    val_batches: int = 16
    bf16: bool = True  # autocast on CUDA only
    fsdp: bool = False  # shard parameters, gradients and optimizer state (FSDP2) instead of DDP when world_size > 1
    seed: int = 42
    log_every: int = 10
    checkpoint_every: int = 200
    exposure_marks: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 1.0)  # checkpoints kept for the exposure study
    eval_every: int = 100
    eval_dataset: str = ""  # registered name or folder for the quick evaluation ("" = none)
    eval_samples: int = 32
    eval_context: int = 128
    eval_horizon: int = 64
    eval_seed: int = 123

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.grad_accum < 1:
            raise ValueError("steps, batch_size and grad_accum must be >= 1")
        if not 0 <= self.missing_prob <= 1 or not 0 <= self.missing_rate < 1:
            raise ValueError("missing_prob must be in [0, 1] and missing_rate in [0, 1)")
        if self.min_length > self.max_length:
            raise ValueError("min_length must not exceed max_length")
        if min(self.aux_absolute_weight, self.trend_head_lr, self.reversion_head_lr, self.short_trend_head_lr,
               self.huber_delta) < 0:
            raise ValueError("aux_absolute_weight, the heads' learning rates and huber_delta must be >= 0")

    def model_overrides(self) -> dict[str, Any]:
        """The SoterConfig fields this run sets beyond its preset (the options left at their defaults
        keep the preset's values)."""
        out: dict[str, Any] = {}
        if self.input_scaling:
            out["input_scaling"] = self.input_scaling
        if self.value_embedding:
            out["value_embedding"] = True
        if self.output_skip:
            out["output_skip"] = self.output_skip
        if self.field_dt:
            out["field_dt"] = True
        if self.mean_reversion:
            out["mean_reversion"] = True
        if self.short_trend_points:
            out["short_trend_points"] = self.short_trend_points
        if self.huber_delta > 0:
            out["huber_delta"] = self.huber_delta
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown training config field(s) {unknown}")
        data = dict(data)
        for key in ("betas", "exposure_marks"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)
