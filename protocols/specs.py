"""Typed, validated protocol parameters.  Defaults live here and nowhere else."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields


class SpecError(ValueError):
    """A protocol parameter is unknown or out of range."""


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


@dataclass(frozen=True)
class DurationSetting:
    """A setting given in seconds (``4s/2s``): a physiologist thinks in seconds and beats, and one setting in
    samples is 2 s at 64 Hz but 0.36 s at 360 Hz. It becomes a :class:`Setting` in samples at each dataset's rate
    (:meth:`at`), so that records, keys and tables keep settings in samples."""

    context_seconds: float
    horizon_seconds: float

    def __post_init__(self) -> None:
        for value in (self.context_seconds, self.horizon_seconds):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise SpecError(f"setting {self.name}: durations must be positive seconds")

    @property
    def name(self) -> str:
        return f"{self.context_seconds:g}s/{self.horizon_seconds:g}s"

    def at(self, sampling_rate: float) -> Setting:
        """The setting in samples at ``sampling_rate`` Hz: each duration rounded to the nearest sample (halves up),
        at least the shortest setting there is (context 2, horizon 1)."""
        if not (math.isfinite(sampling_rate) and sampling_rate > 0):
            raise SpecError(f"setting {self.name} needs a positive sampling rate, got {sampling_rate!r}")
        return Setting(max(2, _nearest(self.context_seconds * sampling_rate)),
                       max(1, _nearest(self.horizon_seconds * sampling_rate)))


def _nearest(value: float) -> int:
    return int(math.floor(value + 0.5 + 1e-9))  # 1e-9: 0.36 s x 360 Hz is 129.6 (not 129.59999)


def parse_setting(text: str) -> Setting | DurationSetting:
    """``96/48`` (samples) or ``4s/2s`` (seconds; both lengths in one unit): the words of ``--settings``."""
    parts = [p.strip() for p in str(text).split("/")]
    if len(parts) == 2 and all(p.endswith("s") for p in parts):
        try:
            seconds = float(parts[0][:-1]), float(parts[1][:-1])
        except ValueError:
            seconds = None
        if seconds is not None:
            return DurationSetting(*seconds)
    elif not any(p.endswith("s") for p in parts):
        return Setting.parse(text)
    raise SpecError(f"setting {text!r} is not of the form CONTEXT/HORIZON in samples (96/48) or in seconds (4s/2s)")


def settings_at(settings: tuple[Setting | DurationSetting, ...], sampling_rate: float | None) -> tuple[Setting, ...]:
    """``settings`` in samples at ``sampling_rate``: durations turned into samples; a setting that two words give
    at this rate (``64/32`` and ``1s/0.5s`` at 64 Hz) is one setting. Durations without a rate are a SpecError."""
    out: list[Setting] = []
    for s in settings:
        if isinstance(s, DurationSetting):
            if sampling_rate is None:
                raise SpecError(f"setting {s.name} is in seconds but the dataset has no sampling rate; give it in "
                                "samples (e.g. 96/48)")
            s = s.at(sampling_rate)
        if s not in out:
            out.append(s)
    return tuple(out)


PAPER_SETTINGS: tuple[Setting, ...] = (
    Setting(48, 24), Setting(72, 36), Setting(96, 48), Setting(128, 64),
)

# windows (segments) drawn per subject when --max-windows-per-subject is not given, per task: the one table of these
# defaults (the specs below take theirs from it; docs/protocols.md, "Windows per subject"). shift: half forecasting's,
# so that the default models and fracast finish the cohort's seven conditions in minutes on two CPU cores
WINDOWS_PER_SUBJECT: dict[str, int] = {
    "forecasting": 16, "calibration": 16, "noise": 16, "irregular": 16, "shift": 8,
    "imputation": 8, "physiology": 8, "classification": 60, "classification-heads": 60,
}


@dataclass(frozen=True)
class SamplingSpec:
    """How test windows are drawn from a test subject's recordings (docs/protocols.md).

    Candidate windows start every ``stride`` samples (default: the horizon, so that targets
    do not overlap); windows touching a missing (NaN) sample are skipped and counted; when a
    subject has more than ``max_windows_per_subject`` candidates, that many are drawn without
    replacement with a generator seeded by (seed, the data's content fingerprint, subject, setting): the
    dataset's name takes no part, so the same files under another name give the same windows.
    """

    max_windows_per_subject: int = WINDOWS_PER_SUBJECT["forecasting"]
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


MASK_KINDS: tuple[str, ...] = ("points", "contiguous")
MASK_CHANNELS: tuple[str, ...] = ("independent", "shared")
BURST_DISTRIBUTIONS: tuple[str, ...] = ("exponential", "fixed")


@dataclass(frozen=True)
class MaskSpec:
    """Where imputation's missing points fall (docs/protocols.md, "Missingness as wearables fail").

    ``points`` with ``independent`` channels is the paper's reading (each channel and position missing
    independently) and the default.  ``contiguous``: gaps whose lengths follow ``distribution`` with mean
    ``burst_seconds`` (seconds, so a gap means the same at every sampling rate), placed by a stationary
    alternating renewal process whose missing share is the rate.  ``shared``: one mask for every channel
    (the whole device drops out); ``independent``: each channel its own (sensors fail asynchronously).
    """

    kind: str = "points"
    channels: str = "independent"
    burst_seconds: float = 1.0  # contiguous: mean gap length
    distribution: str = "exponential"  # contiguous: gap length law (exponential: geometric in samples)

    def __post_init__(self) -> None:
        for what, value, known in (("mask kind", self.kind, MASK_KINDS), ("mask channels", self.channels, MASK_CHANNELS),
                                   ("burst distribution", self.distribution, BURST_DISTRIBUTIONS)):
            if value not in known:
                raise SpecError(f"unknown {what} {value!r}; known: {', '.join(known)}")
        if not (isinstance(self.burst_seconds, (int, float)) and 0 < self.burst_seconds < float("inf")):
            raise SpecError(f"burst_seconds must be a positive number of seconds, got {self.burst_seconds!r}")

    @property
    def is_paper(self) -> bool:
        """The paper's protocol: records, keys and conditions exactly as before these options existed."""
        return self.kind == "points" and self.channels == "independent"

    @property
    def name(self) -> str:
        """"" for the paper's mask; else e.g. ``contiguous-1s-exponential-independent``, ``points-shared``."""
        if self.is_paper:
            return ""
        if self.kind == "points":
            return f"points-{self.channels}"
        return f"contiguous-{self.burst_seconds:g}s-{self.distribution}-{self.channels}"

    def condition(self, rate: float) -> str:
        """The records' condition of a missing rate under this mask (the paper's: ``missing=25%``)."""
        return (f"{self.name} " if self.name else "") + f"missing={rate * 100:g}%"


ARTEFACT_KINDS: tuple[str, ...] = ("gaussian", "wander", "motion", "mains", "pops", "clip")
ARTEFACT_LEVELS: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 1.0)  # RMS where present / sigma_c
CLIP_LEVELS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.25, 0.5)  # share of context samples at the rails
MAINS_FREQUENCIES: tuple[float, ...] = (50.0, 60.0)
# where the events of motion and pops fall (protocols.artefacts, issue #51); the first is the default
ARTEFACT_PLACEMENTS: tuple[str, ...] = ("uniform", "origin", "context-interior")
EVENT_ARTEFACTS: tuple[str, ...] = ("motion", "pops")
# the generator's version in a record's fingerprint: motion's default draw changed in issue #51 (its bursts reach
# the forecast origin), so its rows of issue #31 (``motion-v1``, now ``--artefact-placement context-interior``)
# never pass for today's; every other draw is unchanged
_DRAW_VERSIONS: dict[tuple[str, str], int] = {("motion", "uniform"): 2}


@dataclass(frozen=True)
class ArtefactSpec:
    """What corrupts the context in the robustness study (``protocols.artefacts``): ``gaussian`` is the
    paper's additive white noise (levels beta); the other kinds are how wearable signals fail, each on
    its own severity scale (docs/protocols.md, "Artefacts")."""

    kind: str = "gaussian"
    mains_hz: float = 50.0  # mains: the interference frequency (50 Hz in most of the world, 60 Hz in the Americas)
    placement: str = ARTEFACT_PLACEMENTS[0]  # motion, pops: where the events fall (uniform: they reach the origin)

    def __post_init__(self) -> None:
        if self.kind not in ARTEFACT_KINDS:
            raise SpecError(f"unknown artefact {self.kind!r}; known: {', '.join(ARTEFACT_KINDS)}")
        if self.mains_hz not in MAINS_FREQUENCIES:
            raise SpecError(f"mains_hz must be one of {MAINS_FREQUENCIES}, got {self.mains_hz!r}")
        if self.placement not in ARTEFACT_PLACEMENTS:
            raise SpecError(f"unknown artefact placement {self.placement!r}; known: {', '.join(ARTEFACT_PLACEMENTS)}")
        if self.placement != ARTEFACT_PLACEMENTS[0] and self.kind not in EVENT_ARTEFACTS:
            raise SpecError(f"--artefact-placement places the events of {' and '.join(EVENT_ARTEFACTS)}; "
                            f"{self.kind} covers the whole context")

    @property
    def is_paper(self) -> bool:
        return self.kind == "gaussian"

    @property
    def name(self) -> str:
        """The condition's prefix: ``beta`` (the paper's), ``mains-50Hz``, or the kind."""
        if self.kind == "gaussian":
            return "beta"
        if self.kind == "mains":
            return f"mains-{self.mains_hz:g}Hz"
        return self.kind if self.placement == ARTEFACT_PLACEMENTS[0] else f"{self.kind}-{self.placement}"

    @property
    def draw(self) -> str:
        """The generator in a record's fingerprint: ``motion-v2`` (the default placement), ``pops-origin-v1``."""
        return f"{self.name}-v{_DRAW_VERSIONS.get((self.kind, self.placement), 1)}"

    def condition(self, level: float) -> str:
        return f"{self.name}={level:g}"

    @property
    def default_levels(self) -> tuple[float, ...]:
        return NOISE_LEVELS if self.kind == "gaussian" else CLIP_LEVELS if self.kind == "clip" else ARTEFACT_LEVELS


@dataclass(frozen=True)
class NoiseSpec:
    """Gaussian noise beta * sigma added to the context only; scored against the clean future.

    sigma is the per-channel standard deviation of the training subjects in normalised space.
    """

    levels: tuple[float, ...] = NOISE_LEVELS
    settings: tuple[Setting, ...] = (Setting(96, 48),)
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    batch_size: int = 64
    artefact: ArtefactSpec = field(default_factory=ArtefactSpec)  # gaussian: the paper's noise

    def __post_init__(self) -> None:
        if not self.levels or len(set(self.levels)) != len(self.levels) or min(self.levels) < 0:
            raise SpecError(f"noise levels must be distinct and >= 0, got {self.levels}")
        if not self.settings:
            raise SpecError("at least one setting is required")
        if self.artefact.kind == "clip" and max(self.levels) >= 1:
            raise SpecError(f"clip levels are shares of saturated samples, in [0, 1); got {self.levels}")

    def forecasting(self) -> ForecastingSpec:
        return ForecastingSpec(settings=self.settings, sampling=self.sampling, batch_size=self.batch_size)

    def fingerprint(self) -> str:
        s = self.sampling
        text = f"noise;maxw={s.max_windows_per_subject};stride={s.stride};seed={s.seed}"
        # the paper's Gaussian noise keeps its fingerprint (and so every key); an artefact names its generator
        return text if self.artefact.is_paper else f"{text};artefact={self.artefact.draw}"


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
    max_windows_per_subject: int = WINDOWS_PER_SUBJECT["imputation"]
    stride: int | None = None  # default: the length (segments do not overlap)
    mask: MaskSpec = field(default_factory=MaskSpec)  # the paper's: points, independent channels

    def __post_init__(self) -> None:
        _check_fractions("missing rates", self.rates)
        if any(r >= 1.0 for r in self.rates):
            raise SpecError("missing rates must be < 1")
        if not (2 <= self.warmup < self.length):
            raise SpecError(f"warmup must be in [2, length), got {self.warmup}")
        if self.points_per_segment < 1 or self.max_windows_per_subject < 1:
            raise SpecError("points_per_segment and max_windows_per_subject must be >= 1")

    def fingerprint(self) -> str:
        # the strings are unchanged by the renames of issue #17: they are part of every record's key
        text = (f"imputation;len={self.length};warmup={self.warmup};points={self.points_per_segment};"
                f"maxw={self.max_windows_per_subject};stride={self.stride}")
        return text if self.mask.is_paper else f"{text};mask={self.mask.name}-v1"


@dataclass(frozen=True)
class ClassificationSpec:
    """Frozen-embedding linear probes on label-pure segments (docs/protocols.md)."""

    length: int = 128
    stride: int | None = None  # default: the length
    max_windows_per_subject: int = WINDOWS_PER_SUBJECT["classification"]
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


PHYSIOLOGY_SOURCES: tuple[str, ...] = ("forecast", "imputation")
PHYSIOLOGY_MEASURES: tuple[str, ...] = ("hr-ecg", "hr-ppg", "br-resp")  # protocols.physiology.MEASURES


@dataclass(frozen=True)
class PhysiologySpec:
    """Physiological fidelity (docs/protocols.md): heart and breathing rates of the truth and of a
    forecast (``context_seconds`` -> ``horizon_seconds``) or of a whole imputed segment
    (``segment_seconds``, every missing point imputed from its causal prefix).  Lengths are in seconds so
    that a window holds several beats or breaths at every sampling rate."""

    context_seconds: float = 30.0
    horizon_seconds: float = 20.0  # 10 s holds 2-3 breaths: the detector found none in half the cohort's spans
    segment_seconds: float = 20.0
    warmup_seconds: float = 2.0  # imputation: the start of a segment is always observed
    # imputed segments are opt-in (``--physio-sources forecast imputation``): every missing point is one model call
    # on its whole prefix, about 14 minutes of CPU per fold for each SOTER entry on 2 cores (docs/run-times.md)
    sources: tuple[str, ...] = ("forecast",)
    measures: tuple[str, ...] = PHYSIOLOGY_MEASURES
    rates: tuple[float, ...] = (0.25,)  # imputation: missing rates
    mask: MaskSpec = field(default_factory=MaskSpec)
    sampling: SamplingSpec = field(default_factory=lambda: SamplingSpec(WINDOWS_PER_SUBJECT["physiology"]))
    batch_size: int = 16  # forecast rows per model call (long windows); results do not depend on it

    def __post_init__(self) -> None:
        for name in ("context_seconds", "horizon_seconds", "segment_seconds", "warmup_seconds"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < float("inf")):
                raise SpecError(f"{name} must be a positive number of seconds, got {value!r}")
        if self.warmup_seconds >= self.segment_seconds:
            raise SpecError(f"warmup_seconds ({self.warmup_seconds:g}) must be shorter than segment_seconds "
                            f"({self.segment_seconds:g})")
        for what, values, known in (("physiology source", self.sources, PHYSIOLOGY_SOURCES),
                                    ("physiology measure", self.measures, PHYSIOLOGY_MEASURES)):
            if not values or len(set(values)) != len(values):
                raise SpecError(f"{what}s must be distinct and at least one, got {values}")
            bad = [v for v in values if v not in known]
            if bad:
                raise SpecError(f"unknown {what}(s) {bad}; known: {', '.join(known)}")
        _check_fractions("missing rates", self.rates)
        if any(r >= 1.0 for r in self.rates):
            raise SpecError("missing rates must be < 1")
        if self.batch_size < 1:
            raise SpecError("batch_size must be >= 1")

    @property
    def forecast_setting(self) -> str:
        """The records' setting of forecast rows, e.g. ``30s/20s``."""
        return f"{self.context_seconds:g}s/{self.horizon_seconds:g}s"

    @property
    def segment_setting(self) -> str:
        """The records' setting of imputation rows, e.g. ``20s``."""
        return f"{self.segment_seconds:g}s"

    def fingerprint(self) -> str:
        s = self.sampling
        mask = f";mask={self.mask.name}" if not self.mask.is_paper else ""
        return (f"warmup={self.warmup_seconds:g}s;maxw={s.max_windows_per_subject};stride={s.stride};"
                f"seed={s.seed}{mask}")


# -- subject shift (protocols.shift; docs/protocols.md, "Subject shift") ----------------------------------------
# level: offset by s x the training subjects' per-channel range (the normalised signal moves by s);
# scale: amplitude about the test subject's per-channel mean multiplied by 1 + s;
# both: the scale change, then the offset, at one severity
SHIFT_KINDS: tuple[str, ...] = ("level", "scale", "both")
DEFAULT_SHIFT_KINDS: tuple[str, ...] = ("level", "scale")
SHIFT_SEVERITIES: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)
NO_SHIFT = "shift=0"  # the condition of severity 0: the plain forecasting run, one cell for every kind


@dataclass(frozen=True)
class Shift:
    """One shift of the test subject: ``kind`` at ``severity`` (0: none)."""

    kind: str
    severity: float

    def __post_init__(self) -> None:
        if self.kind not in SHIFT_KINDS:
            raise SpecError(f"unknown shift kind {self.kind!r}; known: {', '.join(SHIFT_KINDS)}")
        check_severity(self.kind, self.severity)

    @property
    def condition(self) -> str:
        """The records' condition: ``level=0.5``, ``scale=1``; every kind's severity 0 is :data:`NO_SHIFT`."""
        return NO_SHIFT if self.severity == 0 else f"{self.kind}={self.severity:g}"

    @property
    def factor(self) -> float:
        """The amplitude factor (1: unchanged)."""
        return 1.0 + self.severity if self.kind in ("scale", "both") else 1.0

    @property
    def offset(self) -> float:
        """The level offset in training ranges (0: unchanged)."""
        return self.severity if self.kind in ("level", "both") else 0.0


# The finest step a recording here resolves, in training ranges: a 24-bit converter whose full scale is exactly the
# training range (every recording here is coarser). A shift may round the shifted signal by at most
# PRECISION_FRACTION of that step in float64; beyond, a level-equivariant forecaster's error would change with the
# severity (last value's RMSE 0.3294 -> 0.4028 at level 1e15), which the study reads as the model's doing.
SIGNAL_RESOLUTION = 2.0 ** -24
PRECISION_FRACTION = 2.0 ** -10


def check_severity(kind: str, severity: float) -> None:
    """A severity the kind can take: finite; an amplitude factor 1 + s above 0 for scale and both; one at which
    float64 still resolves the shifted signal (:func:`rounding`)."""
    if not (isinstance(severity, (int, float)) and math.isfinite(severity)):
        raise SpecError(f"--shift-severities: {severity!r} is not a finite number")
    if kind in ("scale", "both") and severity <= -1:
        raise SpecError(f"--shift-severities {severity:g}: {kind} multiplies the amplitude by 1 + severity, which "
                        "must stay above 0 (severities > -1, e.g. --shift-severities -0.5 0 1)")
    lost = rounding(kind, severity)
    if lost > PRECISION_FRACTION * SIGNAL_RESOLUTION:
        fix = "a smaller |severity|" if kind != "scale" and abs(severity) >= 1 else "1 + severity farther from 0"
        raise SpecError(f"--shift-severities {severity:.12g}: {kind} at this severity makes float64 round the "
                        f"shifted signal to {lost:.2g} of its range, more than {PRECISION_FRACTION:.2g} of the finest "
                        f"step a recording resolves ({SIGNAL_RESOLUTION:.2g} of its range): errors would change with "
                        f"the severity, not with the model; use {fix}")


def rounding(kind: str, severity: float) -> float:
    """The float64 spacing of the shifted signal, in units of its own amplitude (training ranges x the factor):
    an offset of s ranges puts the signal near s, where float64 resolves only ``ulp(s)``; a scale change
    multiplies the amplitude with the values and loses nothing relative to it, unless it shrinks the amplitude
    far below the signal's level (about one range)."""
    factor = 1.0 + severity if kind in ("scale", "both") else 1.0
    offset = severity if kind in ("level", "both") else 0.0
    return float(math.ulp(abs(offset) + max(factor, 1.0)) / factor)


@dataclass(frozen=True)
class ShiftSpec:
    """The subject-shift study: every kind at every severity, forecasting's windows and settings."""

    kinds: tuple[str, ...] = DEFAULT_SHIFT_KINDS
    severities: tuple[float, ...] = SHIFT_SEVERITIES
    settings: tuple[Setting, ...] = (Setting(96, 48),)
    sampling: SamplingSpec = field(default_factory=lambda: SamplingSpec(WINDOWS_PER_SUBJECT["shift"]))
    batch_size: int = 64

    def __post_init__(self) -> None:
        if not self.kinds or len(set(self.kinds)) != len(self.kinds):
            raise SpecError(f"--shift-kinds: at least one kind, each once (of {', '.join(SHIFT_KINDS)}); "
                            f"got {' '.join(self.kinds) or 'none'}")
        if not self.severities or len(set(self.severities)) != len(self.severities):
            raise SpecError("--shift-severities: at least one severity, each once; got "
                            f"{' '.join(f'{s:g}' for s in self.severities) or 'none'}")
        if not self.settings:
            raise SpecError("at least one setting is required")
        for kind in self.kinds:
            for s in self.severities:
                check_severity(kind, s)

    @property
    def shifts(self) -> list[Shift]:
        """Every (kind, severity) to score; severity 0 once (:data:`NO_SHIFT`, whatever the kinds)."""
        out = [Shift(self.kinds[0], 0.0)] if 0 in self.severities else []
        return out + [Shift(k, s) for k in self.kinds for s in self.severities if s != 0]

    def forecasting(self) -> ForecastingSpec:
        return ForecastingSpec(settings=self.settings, sampling=self.sampling, batch_size=self.batch_size)

    def fingerprint(self) -> str:
        """What changes a cell's windows (the shift itself is in the cell's condition)."""
        s = self.sampling
        return f"shift;maxw={s.max_windows_per_subject};stride={s.stride};seed={s.seed}"


# -- irregular sampling (protocols.irregular; docs/protocols.md, "Irregular sampling") ---------------------------
PATTERNS: tuple[str, ...] = ("jitter", "drop", "renewal", "multirate")
SEVERITIES: tuple[float, ...] = (0.0, 0.5)  # a default run in minutes; --severities 0 0.25 0.5 0.75 draws curves
REGULAR = "regular"  # the condition of severity 0: one regular window, whatever the pattern
SOURCES: tuple[str, ...] = ("forecast", "impute")  # forecasting windows; causal imputation segments
IMPUTE = "impute "  # the prefix of an imputation cell's condition ("impute drop=0.5", "impute regular")
IMPUTE_RATE = MISSING_RATES[0]  # the imputation half's missing rate under every pattern (25 %)


@dataclass(frozen=True)
class IrregularSpec:
    """The forecasting windows of ``settings`` observed by each pattern at each severity."""

    patterns: tuple[str, ...] = PATTERNS
    severities: tuple[float, ...] = SEVERITIES
    settings: tuple[Setting, ...] = (Setting(96, 48),)
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    batch_size: int = 64
    sources: tuple[str, ...] = ("forecast",)  # "impute": the imputation half (protocols.irregular_imputation)

    def __post_init__(self) -> None:
        if not self.sources or len(set(self.sources)) != len(self.sources) or set(self.sources) - set(SOURCES):
            raise SpecError(f"--irregular-sources: distinct ones of {', '.join(SOURCES)}, got {' '.join(self.sources)}")
        unknown = [p for p in self.patterns if p not in PATTERNS]
        if not self.patterns or unknown or len(set(self.patterns)) != len(self.patterns):
            raise SpecError(f"--patterns: distinct ones of {', '.join(PATTERNS)}, got {' '.join(self.patterns)}")
        if (not self.severities or len(set(self.severities)) != len(self.severities)
                or not all(0.0 <= s < 1.0 for s in self.severities)):
            raise SpecError(f"--severities: distinct values in [0, 1), got {' '.join(map(str, self.severities))}")
        if not self.settings:
            raise SpecError("at least one setting is required")

    def forecasting(self) -> ForecastingSpec:
        """The forecasting spec whose windows are observed irregularly (severity 0: exactly these)."""
        return ForecastingSpec(settings=self.settings, sampling=self.sampling, batch_size=self.batch_size)

    def imputation(self) -> ImputationSpec:
        """The causal imputation segments observed irregularly: the protocol's defaults at one missing rate, as many
        segments per subject as the forecasting windows (so the fingerprint, unchanged by the sources, names them)."""
        return ImputationSpec(rates=(IMPUTE_RATE,), max_windows_per_subject=self.sampling.max_windows_per_subject)

    @staticmethod
    def condition(pattern: str, severity: float, source: str = "forecast") -> str:
        """``drop=0.5``; severity 0 is :data:`REGULAR` for every pattern (the same windows: computed once);
        imputation cells are prefixed :data:`IMPUTE` (``impute drop=0.5``): forecast conditions stay as they were."""
        return (IMPUTE if source == "impute" else "") + (REGULAR if severity == 0 else f"{pattern}={severity:g}")

    def fingerprint(self) -> str:
        s = self.sampling
        return f"maxw={s.max_windows_per_subject};stride={s.stride};seed={s.seed}"  # the task's token leads the row's


# -- classification heads (protocols.classification_heads; docs/protocols.md, "Classification heads") --------
HEADS: tuple[str, ...] = ("linear", "mlp", "finetune")
# finetune is opt-in (--heads linear mlp finetune): one SOTER cell fine-tunes the encoder in every fold, minutes to
# a quarter of an hour per cell on this project's CPU, so a default run with it would take hours
DEFAULT_HEADS: tuple[str, ...] = ("linear", "mlp")



@dataclass(frozen=True)
class HeadsSpec(ClassificationSpec):
    """The paper's classification spec plus the heads compared and their (small, named) training budgets."""

    max_windows_per_subject: int = WINDOWS_PER_SUBJECT["classification-heads"]
    heads: tuple[str, ...] = DEFAULT_HEADS
    mlp_hidden: int = 64  # units of the MLP's one hidden layer
    mlp_max_iter: int = 500  # adam epochs
    finetune_steps: int = 30  # full-batch AdamW steps on encoder + linear head, per fold
    finetune_lr: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        unknown = [h for h in self.heads if h not in HEADS]
        if unknown or not self.heads:
            raise SpecError(f"--heads {' '.join(unknown)}: heads are one or more of {', '.join(HEADS)}")
        if self.mlp_hidden < 1 or self.mlp_max_iter < 1 or self.finetune_steps < 1 or not self.finetune_lr > 0:
            raise SpecError("mlp_hidden, mlp_max_iter, finetune_steps and finetune_lr must be positive")

    def fingerprint(self) -> str:
        # the heads run are the cells' conditions; their training budgets belong to every cell
        return (super().fingerprint() + f";heads;mlp={self.mlp_hidden}x{self.mlp_max_iter}"
                f";finetune={self.finetune_steps}@{self.finetune_lr:g}")


def samples(seconds: float, rate: float) -> int:
    """A duration in samples at ``rate`` Hz (at least one)."""
    return max(1, int(round(seconds * rate)))
