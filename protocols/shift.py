"""Subject shift: forecasting on a test subject whose level or amplitude lies outside the training subjects'.

Why: the fold's MinMax is fitted on the training subjects only (``protocols.scaling``), so a test subject
recorded at another level (another electrode, skin, gain) lands outside [0, 1] in normalised space; a model
trained on [0, 1] inputs may fail there (SOTER's documented failure on EDA, docs/soter.md).  Here the test
subject's raw recordings, context and target both (the subject is different, not the measurement), are shifted
by a named amount before the fold's MinMax, fitted on the unshifted training subjects, normalises them; the
cell is then scored exactly as forecasting's (``protocols.forecasting.evaluate_forecasting``), in the fold's
normalised space, on the same windows as the plain run (docs/protocols.md, "Subject shift").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from protocols.data import Dataset, Recording
from protocols.forecasting import ForecastOutcome, evaluate_forecasting
from protocols.interface import Model
from protocols.scaling import fit_fold_scaler
from protocols.specs import ForecastingSpec, SamplingSpec, Setting, SpecError
from protocols.splits import Fold

# level: offset by s x the training subjects' per-channel range (the normalised signal moves by s);
# scale: amplitude about the test subject's per-channel mean multiplied by 1 + s;
# both: the scale change, then the offset, at one severity
SHIFT_KINDS: tuple[str, ...] = ("level", "scale", "both")
DEFAULT_SHIFT_KINDS: tuple[str, ...] = ("level", "scale")
SHIFT_SEVERITIES: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)
# windows per subject by default: half forecasting's 16, so that the default models and fracast finish the cohort's
# seven conditions in minutes on two CPU cores (docs/stress-tests.md); --max-windows-per-subject 16 is forecasting's
SHIFT_WINDOWS_PER_SUBJECT = 8
NO_SHIFT = "shift=0"  # the condition of severity 0: the plain forecasting run, one cell for every kind
# The finest step a recording here resolves, in training ranges: a 24-bit converter whose full scale is exactly the
# training range (every recording here is coarser). A shift may round the shifted signal by at most
# PRECISION_FRACTION of that step in float64; beyond, a level-equivariant forecaster's error would change with the
# severity (last value's RMSE 0.3294 -> 0.4028 at level 1e15), which the study reads as the model's doing.
SIGNAL_RESOLUTION = 2.0 ** -24
PRECISION_FRACTION = 2.0 ** -10


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


def check_severity(kind: str, severity: float) -> None:
    """A severity the kind can take: finite; an amplitude factor 1 + s above 0 for scale and both."""
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
    an offset of s ranges puts the signal near s, where float64 resolves only ``spacing(s)``; a scale change
    multiplies the amplitude with the values and loses nothing relative to it, unless it shrinks the amplitude
    far below the signal's level (about one range)."""
    factor = 1.0 + severity if kind in ("scale", "both") else 1.0
    offset = severity if kind in ("level", "both") else 0.0
    return float(np.spacing(abs(offset) + max(factor, 1.0)) / factor)


@dataclass(frozen=True)
class ShiftSpec:
    """The subject-shift study: every kind at every severity, forecasting's windows and settings."""

    kinds: tuple[str, ...] = DEFAULT_SHIFT_KINDS
    severities: tuple[float, ...] = SHIFT_SEVERITIES
    settings: tuple[Setting, ...] = (Setting(96, 48),)
    sampling: SamplingSpec = field(default_factory=lambda: SamplingSpec(SHIFT_WINDOWS_PER_SUBJECT))
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


def parse_condition(condition: str) -> Shift:
    """The shift of a records' condition (``level=0.5``, :data:`NO_SHIFT`)."""
    kind, _, value = condition.partition("=")
    return Shift(SHIFT_KINDS[0] if condition == NO_SHIFT else kind, float(value))


def subject_mean(dataset: Dataset, subject: str) -> np.ndarray:
    """Per-channel mean of a subject's observed raw values (0 where a channel has none: nothing to rescale)."""
    values = np.concatenate([r.values for r in dataset.recordings_of((subject,))], axis=1)
    observed = np.isfinite(values)
    count = observed.sum(axis=1)
    total = np.where(observed, values, 0.0).sum(axis=1)
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def shifted_dataset(dataset: Dataset, fold: Fold, shift: Shift) -> Dataset:
    """The dataset with the fold's test subject shifted in raw units; the training subjects are the same objects
    (so the fold's MinMax, and a supervised model's training data, are the unshifted ones).  Severity 0 returns
    ``dataset`` itself: the plain run, bit for bit."""
    if shift.severity == 0:
        return dataset
    span = fit_fold_scaler(dataset, fold).scale[:, None]  # the training subjects' range (1 for a constant channel)
    mean = subject_mean(dataset, fold.test_subject)[:, None]

    def move(values: np.ndarray) -> np.ndarray:
        scaled = values if shift.factor == 1 else mean + shift.factor * (values - mean)
        return scaled + shift.offset * span

    recordings = tuple(Recording(r.subject, r.name, move(r.values), r.timestamps, r.labels)
                       if r.subject == fold.test_subject else r for r in dataset.recordings)
    out = Dataset(dataset.name, dataset.channels, recordings, dataset.sampling_rate, dataset.label_names,
                  dataset.description, dict(dataset.metadata))
    # the windows are drawn with the data's content id (protocols.windows): the plain run's, so that every
    # severity scores the same windows (a shift leaves missing samples where they were)
    out.__dict__["content_id"] = dataset.content_id
    return out


def evaluate_shift(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: ShiftSpec,
                   shift: Shift) -> ForecastOutcome:
    """One cell: forecasting on the shifted test subject, scored in the fold's (unshifted) normalised space."""
    return evaluate_forecasting(model, shifted_dataset(dataset, fold, shift), fold, setting, spec.forecasting())
