"""Typed, validated protocol parameters.  Defaults live here and nowhere else."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields


class SpecError(ValueError):
    """A protocol parameter is unknown or out of range."""


def accepts_old_names(**renamed: str):
    """Let a dataclass's constructor (specs, ``Capabilities``) take the earlier names of renamed fields (issue #17) as keywords, for user code."""

    def wrap(cls):
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{cls.__name__}: {old} is the earlier name of {new}; give one of them")
                    kwargs[new] = kwargs.pop(old)
            init(self, *args, **kwargs)

        cls.__init__ = __init__
        return cls

    return wrap


@dataclass(frozen=True, order=True)
class Setting:
    """A forecasting setting: context and horizon lengths in samples (e.g. 96/48).

    The paper calls these "windows"; here a window is one sampled test window (``protocols.windows``),
    so the context/horizon pair is a setting throughout code and records (issue #17).
    """

    context: int
    horizon: int

    def __post_init__(self) -> None:
        if not (isinstance(self.context, int) and isinstance(self.horizon, int)):
            raise SpecError(f"setting lengths must be integers, got {self.context!r}/{self.horizon!r}")
        if self.context < 2 or self.horizon < 1:
            raise SpecError(f"setting {self.context}/{self.horizon}: context must be >= 2 and horizon >= 1")

    @property
    def name(self) -> str:
        return f"{self.context}/{self.horizon}"

    @property
    def length(self) -> int:
        return self.context + self.horizon

    @classmethod
    def parse(cls, text: str) -> "Setting":
        parts = str(text).split("/")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise SpecError(f"setting {text!r} is not of the form CONTEXT/HORIZON, e.g. 96/48")
        return cls(int(parts[0]), int(parts[1]))


WindowSpec = Setting  # deprecated: the earlier name of Setting, kept for user code


PAPER_SETTINGS: tuple[Setting, ...] = (
    Setting(48, 24), Setting(72, 36), Setting(96, 48), Setting(128, 64),
)
PAPER_WINDOWS = PAPER_SETTINGS  # deprecated: the earlier name of PAPER_SETTINGS, kept for user code


@dataclass(frozen=True)
class SamplingSpec:
    """How test windows are drawn from a test subject's recordings (docs/protocols.md).

    Candidate windows start every ``stride`` samples (default: the horizon, so that targets
    do not overlap); windows touching a missing (NaN) sample are skipped and counted; when a
    subject has more than ``max_windows_per_subject`` candidates, that many are drawn without
    replacement with a generator seeded by (seed, dataset, subject, setting).
    """

    max_windows_per_subject: int = 16
    stride: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_windows_per_subject < 1:
            raise SpecError(f"--max-windows-per-subject (max_windows_per_subject) must be a whole number >= 1, "
                            f"got {self.max_windows_per_subject}")
        if self.stride is not None and self.stride < 1:
            raise SpecError("stride must be >= 1")
        if self.seed < 0:
            raise SpecError("seed must be >= 0")

    def stride_for(self, setting: Setting) -> int:
        return self.stride if self.stride is not None else setting.horizon


@accepts_old_names(windows="settings")
@dataclass(frozen=True)
class ForecastingSpec:
    settings: tuple[Setting, ...] = PAPER_SETTINGS
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    batch_size: int = 64  # rows per model call; results do not depend on it

    def __post_init__(self) -> None:
        if not self.settings:
            raise SpecError("at least one setting is required")
        if len(set(self.settings)) != len(self.settings):
            raise SpecError("settings must be distinct")
        if self.batch_size < 1:
            raise SpecError("batch_size must be >= 1")

    @property
    def windows(self) -> tuple[Setting, ...]:  # deprecated: the earlier name of ``settings``
        return self.settings

    def fingerprint(self) -> str:
        """What changes the windows a cell scores (not the settings or the batch size)."""
        s = self.sampling
        return f"maxw={s.max_windows_per_subject};stride={s.stride};seed={s.seed}"


def spec_from_dict(cls: type, values: dict[str, object]):
    """Build a spec dataclass, rejecting unknown keys by name."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise SpecError(f"unknown {cls.__name__} field(s) {unknown}; known: {sorted(known)}")
    return cls(**values)


NOISE_LEVELS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
MISSING_RATES: tuple[float, ...] = (0.25, 0.5, 0.75)
LABEL_BUDGETS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
RUN_SEEDS: tuple[int, ...] = (0, 1, 2)


def _check_fractions(name: str, values: tuple[float, ...], low_open: bool = True) -> None:
    if not values:
        raise SpecError(f"{name}: at least one value is required")
    if len(set(values)) != len(values):
        raise SpecError(f"{name}: values must be distinct")
    for v in values:
        if not (0.0 < v <= 1.0 if low_open else 0.0 <= v <= 1.0):
            raise SpecError(f"{name}: {v} is out of range")


@accepts_old_names(windows="settings")
@dataclass(frozen=True)
class NoiseSpec:
    """Gaussian noise beta * sigma added to the context only; scored against the clean future.

    sigma is the per-channel standard deviation of the training subjects in normalised space.
    """

    levels: tuple[float, ...] = NOISE_LEVELS
    settings: tuple[Setting, ...] = (Setting(96, 48),)
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    batch_size: int = 64

    def __post_init__(self) -> None:
        if not self.levels or len(set(self.levels)) != len(self.levels) or min(self.levels) < 0:
            raise SpecError(f"noise levels must be distinct and >= 0, got {self.levels}")
        if not self.settings:
            raise SpecError("at least one setting is required")

    @property
    def windows(self) -> tuple[Setting, ...]:  # deprecated: the earlier name of ``settings``
        return self.settings

    def forecasting(self) -> ForecastingSpec:
        return ForecastingSpec(settings=self.settings, sampling=self.sampling, batch_size=self.batch_size)

    def fingerprint(self) -> str:
        s = self.sampling
        return f"noise;maxw={s.max_windows_per_subject};stride={s.stride};seed={s.seed}"


@accepts_old_names(points_per_window="points_per_segment")
@dataclass(frozen=True)
class ImputationSpec:
    """Causal imputation on segments of ``length`` samples (docs/protocols.md).

    Each (channel, position) at or after ``warmup`` is missing independently with the
    missing rate; per segment, up to ``points_per_segment`` positions holding a missing
    value are scored, each from its causal prefix only.
    """

    rates: tuple[float, ...] = MISSING_RATES
    length: int = 96
    warmup: int = 16
    points_per_segment: int = 8
    max_windows_per_subject: int = 8
    stride: int | None = None  # default: the length (segments do not overlap)

    def __post_init__(self) -> None:
        _check_fractions("missing rates", self.rates)
        if any(r >= 1.0 for r in self.rates):
            raise SpecError("missing rates must be < 1")
        if not (2 <= self.warmup < self.length):
            raise SpecError(f"warmup must be in [2, length), got {self.warmup}")
        if self.points_per_segment < 1 or self.max_windows_per_subject < 1:
            raise SpecError("points_per_segment and max_windows_per_subject must be >= 1")

    @property
    def points_per_window(self) -> int:  # deprecated: the earlier name of ``points_per_segment``
        return self.points_per_segment

    def fingerprint(self) -> str:
        # the strings are unchanged by the renames of issue #17: they are part of every record's key
        return (f"imputation;len={self.length};warmup={self.warmup};points={self.points_per_segment};"
                f"maxw={self.max_windows_per_subject};stride={self.stride}")


@dataclass(frozen=True)
class ClassificationSpec:
    """Frozen-embedding linear probes on label-pure segments (docs/protocols.md)."""

    length: int = 128
    stride: int | None = None  # default: the length
    max_windows_per_subject: int = 60
    budgets: tuple[float, ...] = LABEL_BUDGETS
    probe_max_iter: int = 1000

    def __post_init__(self) -> None:
        _check_fractions("label budgets", self.budgets)
        if self.length < 2 or self.max_windows_per_subject < 1:
            raise SpecError("length must be >= 2 and max_windows_per_subject >= 1")

    def fingerprint(self) -> str:
        # segments=seed: the run seed draws the segments (grid offset and per-subject cap), since issue #15
        return (f"classification;len={self.length};stride={self.stride};maxw={self.max_windows_per_subject}"
                ";segments=seed")
