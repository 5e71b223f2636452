"""Every training value as a field, with the paper's value as default (docs/soter-training.md)."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from models.soter.config import SoterConfig, preset
from models.soter.training.augment import parse_augment
from models.soter.training.generators import DEFAULT_MIX, parse_mix


@dataclass(frozen=True)
class TrainConfig:
    model: str = "soter-small"  # a preset name of models.soter.config
    # the SoterConfig fields this run sets beyond its preset (``solver``, ``input_scaling``, ``huber_delta`` ...),
    # validated and typed by SoterConfig.options, stored in the checkpoint's config.json (the one place a model option
    # is written: a new option is a SoterConfig field, nothing here)
    model_options: dict[str, Any] = field(default_factory=dict)
    # parameter groups with their own learning rate: a submodule of SoterModel (e.g. "trend_head") -> its lr (the
    # schedule scales every group alike). A head behind a zero-initialised layer moves about lr per step at the
    # backbone's rate, too slowly for a fine-tune of a few thousand steps
    group_lr: dict[str, float] = field(default_factory=dict)
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
    # > 1 (issue #45): each step's windows read at every s-th sample, s uniform in 1..max_stride (several sampling
    # rates from one recording); 1 = the paper's windows
    max_stride: int = 1
    # > 0: each step (and micro-batch), with this probability, trains on series generated on the fly instead of
    # corpus windows (models/soter/training/generators.py; docs/soter-training.md); 0 = the corpus alone
    generated_share: float = 0.0
    # the generators' mix, NAME=WEIGHT pairs (normalised); one generator per generated step
    generators: str = DEFAULT_MIX
    # per-window augmentation, NAME=PROBABILITY pairs among decimate, resample, scale, offset, flip
    # (models/soter/training/augment.py); "" = none
    augment: str = ""
    # > 0: re-draw the gated input embedding's two Linear(1, H) weights with this std after the model's own
    # initialisation (normal, std initializer_range = 0.02 in the official code). With inputs in [0, 1] that
    # init gives embeddings of RMS ~1e-4, under the RMSNorm eps: see docs/soter-training.md. 0 = the official init
    embedding_init_std: float = 0.0
    # a new run (step 0, fresh optimizer and schedule) whose weights start from this SOTER checkpoint folder
    # (fine-tuning, or continuing on other hardware without the optimizer state); "" = random initialisation
    init_weights: str = ""
    # > 0 (with output_skip "last-value" or "damped-trend"): the absolute readout's Huber loss at the target and at
    # t_T, times this weight, is added to the loss, so the readout keeps carrying the level (it cannot die)
    aux_absolute_weight: float = 0.0
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
        if not 0 <= self.generated_share <= 1:
            raise ValueError(f"generated_share must be in [0, 1], got {self.generated_share}")
        parse_mix(self.generators)  # a ValueError naming the bad item
        parse_augment(self.augment)
        if self.aux_absolute_weight < 0:
            raise ValueError("aux_absolute_weight must be >= 0")
        object.__setattr__(self, "model_options", SoterConfig.options(self.model_options))
        bad = {k: v for k, v in self.group_lr.items() if not isinstance(v, (int, float)) or v <= 0}
        if bad:
            raise ValueError(f"group_lr: each group's learning rate must be a positive number, got {bad}")
        object.__setattr__(self, "group_lr", {k: float(v) for k, v in self.group_lr.items()})

    def model_config(self, base: SoterConfig | None = None) -> SoterConfig:
        """The run's model: ``base`` (default: the preset ``model``) with this run's model options."""
        return (preset(self.model) if base is None else base).replace(**self.model_options)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        data = _from_legacy(dict(data))
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown training config field(s) {unknown}")
        for key in ("betas", "exposure_marks"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)


# fields of TRAINING.json and trainer states written before model options had one place (2026-11-27): each SoterConfig
# field was mirrored here, each head had its own learning-rate field. Read, never written.
_LEGACY_MODEL = {"solver": "", "input_scaling": "", "value_embedding": False, "output_skip": "", "field_dt": False,
                 "mean_reversion": False, "short_trend_points": 0, "huber_delta": 0.0}
_LEGACY_LR = {"trend_head_lr": "trend_head", "reversion_head_lr": "reversion_head",
              "short_trend_head_lr": "short_trend_head"}


def _from_legacy(data: dict[str, Any]) -> dict[str, Any]:
    """An old config's mirrored model fields as model options, its heads' rates as groups (unset values dropped)."""
    options, groups = dict(data.get("model_options", {})), dict(data.get("group_lr", {}))
    for name, unset in _LEGACY_MODEL.items():
        value = data.pop(name, unset)
        if value not in (unset, None):
            options.setdefault(name, value)
    for name, group in _LEGACY_LR.items():
        rate = data.pop(name, 0.0)
        if rate:
            groups.setdefault(group, rate)
    if options:
        data["model_options"] = options
    if groups:
        data["group_lr"] = groups
    return data


def read_recipe(path: str | Path) -> dict[str, Any]:
    """A training recipe: a TOML file of TrainConfig fields (``[model_options]`` and ``[group_lr]`` as tables), the
    values a run takes unless its flags say otherwise (models/soter/recipes/). Errors name the file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: not a readable recipe: {exc}") from exc
    unknown = sorted(set(raw) - {f.name for f in fields(TrainConfig)})
    if unknown:
        raise ValueError(f"{path}: unknown recipe field(s) {unknown}")
    return raw
