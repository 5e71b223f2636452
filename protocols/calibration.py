"""Calibration of quantile forecasts: does a central p % interval hold p % of the truth (issue #48)?

CRPS and weighted quantile loss mix sharpness and calibration into one number; a clinician reads the interval,
so this protocol counts, over the forecasting settings' windows (the same windows, scaler and training as
:mod:`protocols.forecasting`), how many target points fall inside each central interval and in which bin of the
model's quantiles (the PIT histogram). Counts, not rates, are kept, so folds and settings pool exactly.

Levels: the model is asked for :data:`CALIBRATION_LEVELS` (the deciles plus 0.05, 0.25, 0.75, 0.95); a model
that refuses levels it does not forecast (a ``ValueError`` naming its own) is asked for the deciles
(``interface.QUANTILE_LEVELS``) instead, and the outcome records which set it gave. An interval's end that is
not among the levels is interpolated linearly between the two neighbouring levels; an end outside the levels'
range is never extrapolated: that interval is not available (``None``). Quantiles that cross are sorted per
point first (a quantile function is non-decreasing). Ties count as inside (``lo <= y <= hi``); the PIT bin of a
point is the number of quantiles strictly below it (bin 0: at or below the lowest level's forecast).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols import interface
from protocols.data import Dataset
from protocols.forecasting import _predict, fit_for_fold, fold_windows
from protocols.interface import Model
from protocols.specs import ForecastingSpec, Setting
from protocols.splits import Fold
from protocols.windows import WindowArrays

NOMINAL: tuple[float, ...] = (0.5, 0.8, 0.9)  # the central intervals checked
CALIBRATION_LEVELS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95)
_EPS = 1e-9


@dataclass(frozen=True)
class CalibrationCounts:
    """Pooled counts of one cell (or of several pooled): ``inside[i]`` points inside the central ``NOMINAL[i]``
    interval (None: the levels do not reach its ends), ``pit[k]`` points in PIT bin k (``len(levels) + 1`` bins)."""

    levels: tuple[float, ...]
    n: int
    inside: tuple[int | None, ...]
    pit: tuple[int, ...]

    def coverage(self) -> tuple[float, ...]:
        """Empirical coverage of each nominal interval (NaN where it is not available or nothing was scored)."""
        return tuple(np.nan if k is None or not self.n else k / self.n for k in self.inside)

    def calibration_error(self) -> float:
        """Mean absolute difference between empirical and nominal coverage over the available intervals."""
        gaps = [abs(c - p) for c, p in zip(self.coverage(), NOMINAL) if np.isfinite(c)]
        return float(np.mean(gaps)) if gaps else np.nan

    def pit_deviation(self) -> float:
        """Total-variation distance of the PIT histogram from the flat one: half the sum over bins of
        |observed share - bin width| (0: every bin holds its share; 1: the worst possible)."""
        if not self.n:
            return np.nan
        return float(0.5 * np.abs(np.asarray(self.pit) / self.n - bin_widths(self.levels)).sum())

    def below(self) -> np.ndarray:
        """Share of the truth at or below each level's forecast (the reliability diagram against ``levels``)."""
        return np.cumsum(self.pit)[:-1] / self.n if self.n else np.full(len(self.levels), np.nan)

    def as_dict(self) -> dict[str, object]:
        return {"levels": list(self.levels), "n": self.n, "inside": list(self.inside), "pit": list(self.pit)}

    @classmethod
    def from_dict(cls, d: dict) -> "CalibrationCounts":
        return cls(tuple(float(q) for q in d["levels"]), int(d["n"]),
                   tuple(None if k is None else int(k) for k in d["inside"]), tuple(int(k) for k in d["pit"]))


def bin_widths(levels: tuple[float, ...]) -> np.ndarray:
    """The share of a calibrated forecast's truth in each PIT bin: the gaps between 0, the levels and 1."""
    return np.diff(np.concatenate([[0.0], np.asarray(levels, dtype=float), [1.0]]))


def pool(counts: list[CalibrationCounts]) -> CalibrationCounts:
    """The counts of several cells together (exact: sums); they must share one level set."""
    if not counts:
        raise ValueError("nothing to pool")
    levels = {c.levels for c in counts}
    if len(levels) > 1:
        raise ValueError(f"cannot pool calibration counts over different quantile levels: {sorted(levels)}")
    inside = tuple(None if any(c.inside[i] is None for c in counts) else sum(c.inside[i] for c in counts)
                   for i in range(len(NOMINAL)))
    return CalibrationCounts(counts[0].levels, sum(c.n for c in counts), inside,
                             tuple(int(v) for v in np.sum([c.pit for c in counts], axis=0)))


def quantile_at(quantiles: np.ndarray, levels: tuple[float, ...], tau: float) -> np.ndarray | None:
    """The forecast at level ``tau`` from quantiles [..., Q] at sorted ``levels``: exact where ``tau`` is a level,
    linear between its two neighbours inside the range, None outside it (no extrapolation)."""
    lv = np.asarray(levels, dtype=float)
    if tau < lv[0] - _EPS or tau > lv[-1] + _EPS:
        return None
    j = int(np.searchsorted(lv, tau - _EPS))
    if abs(lv[j] - tau) <= _EPS:
        return quantiles[..., j]
    w = (tau - lv[j - 1]) / (lv[j] - lv[j - 1])
    return (1.0 - w) * quantiles[..., j - 1] + w * quantiles[..., j]


def calibration_counts(quantiles: np.ndarray, target: np.ndarray, levels: tuple[float, ...]) -> CalibrationCounts:
    """Counts of quantile forecasts [..., Q] at ``levels`` against the truth [...] (finite target points only)."""
    order = np.argsort(levels)
    levels = tuple(float(levels[i]) for i in order)
    q = np.sort(np.asarray(quantiles, dtype=float)[..., order], axis=-1)
    y = np.asarray(target, dtype=float)
    keep = np.isfinite(y)
    q, y = q[keep], y[keep]  # [n, Q], [n]
    inside = []
    for p in NOMINAL:
        lo, hi = quantile_at(q, levels, (1 - p) / 2), quantile_at(q, levels, (1 + p) / 2)
        inside.append(None if lo is None or hi is None else int(((lo <= y) & (y <= hi)).sum()))
    bins = (q < y[:, None]).sum(axis=1)
    pit = np.bincount(bins, minlength=len(levels) + 1)
    return CalibrationCounts(levels, int(y.size), tuple(inside), tuple(int(v) for v in pit))


@dataclass(frozen=True)
class CalibrationOutcome:
    counts: CalibrationCounts
    n_windows: int
    skipped_missing: int
    short_recordings: int
    refused: str = ""  # why the model did not give CALIBRATION_LEVELS (its own error), "" when it did


def model_quantiles(model: Model, arrays: WindowArrays, batch_size: int) -> tuple[np.ndarray, tuple[float, ...], str]:
    """(quantiles, their levels, why the wider set was refused): :data:`CALIBRATION_LEVELS` when the model gives
    them, else the deciles every quantile model gives (its refusal kept, in its words)."""
    try:
        return _predict(model, arrays, batch_size, CALIBRATION_LEVELS)[1], CALIBRATION_LEVELS, ""
    except ValueError as exc:  # interface.quantile_indices: levels the model does not forecast
        levels = tuple(interface.QUANTILE_LEVELS)
        return _predict(model, arrays, batch_size, levels)[1], levels, str(exc)


def evaluate_calibration(model: Model, dataset: Dataset, fold: Fold, setting: Setting,
                         spec: ForecastingSpec) -> CalibrationOutcome:
    """Count one cell: the forecasting protocol's windows of the fold and setting (a supervised model trained on
    the fold's training subjects first), the model's quantiles against the targets."""
    if not model.capabilities.quantiles:
        raise ValueError(f"model {model.name!r} does not forecast quantiles")
    fit_for_fold(model, dataset, fold, setting, spec)
    arrays, selection = fold_windows(dataset, fold, setting, spec)
    quantiles, levels, refused = model_quantiles(model, arrays, spec.batch_size)
    return CalibrationOutcome(calibration_counts(quantiles, arrays.target, levels), int(arrays.context.shape[0]),
                              selection.skipped_missing, selection.short_recordings, refused)
