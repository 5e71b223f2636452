"""Input-sensitivity probe: a forecast that does not change when its context changes ignores its input.

Why: a model with constant or input-independent output (NormWear users reported exactly this, NormWear #8)
passes every other check: its forecasts have the right shape, are finite, deterministic, batch-invariant, and
they never read the future (the leakage probes of ``protocols.leakage`` catch the opposite failure only).

The probe forecasts a few real test windows of a fold (``fold_windows``: the scoring path) four times: with
their own context and with three changed contexts, each keeping the timestamps and the query times:

- ``level``: the context shifted by ``LEVEL_SHIFT`` of its own standard deviations (per window and channel). Every
  forecaster of the values themselves moves with it: last value and window mean by exactly the shift.
- ``reversed``: the context in time-reversed order. Same values, so the same mean and spread; another shape and
  another last value (a window mean ignores it by construction, which is no fault).
- ``other``: the context of another probed window of the same test subject (another shape and level).

Measure: per window, the mean absolute change of its forecast (over channels and horizon) divided by the mean
standard deviation of its original context over channels (1 for a flat context), both over the channels whose
context varies (all of them when none does): a constant channel's forecast need not move; per change, the median
over the probed windows. A change is *ignored* when that is at most ``rtol`` (default ``RTOL`` = 1% of a standard deviation,
while the level shift moves the input by three). Verdict: ``input-independent`` (flagged) when every change is
ignored; ``ignores level`` (flagged) when only the level shift is: the forecast does not follow the values it was
given (e.g. a model that normalises its input and never restores the level); else ``responds``, with the changes
it ignored named beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols.data import Dataset
from protocols.forecasting import fit_for_fold, fold_windows, predict_windows
from protocols.interface import Model
from protocols.specs import ForecastingSpec, Setting
from protocols.splits import Fold
from protocols.windows import WindowArrays

LEVEL_SHIFT = 3.0  # standard deviations of the context
RTOL = 0.01  # a change is ignored when the forecast moves by at most this share of the context's std
CHANGES = ("level", "reversed", "other")
INDEPENDENT, IGNORES_LEVEL, RESPONDS = "input-independent", "ignores level", "responds"
_WORDS = {"level": f"shifted in level by {LEVEL_SHIFT:g} standard deviations", "reversed": "time-reversed",
          "other": "replaced by another window of the test subject"}


class InputSensitivityError(AssertionError):
    """A model's forecasts did not change when its context did."""


@dataclass(frozen=True)
class SensitivityReport:
    """One model's probe: per change, the median relative forecast change (None: not measured, e.g. ``other``
    with a single window), the tolerance, and how many windows were probed."""

    model: str
    changes: dict[str, float | None]
    rtol: float
    n_windows: int

    @property
    def ignored(self) -> tuple[str, ...]:
        return tuple(c for c, v in self.changes.items() if v is not None and v <= self.rtol)

    @property
    def verdict(self) -> str:
        measured = [c for c, v in self.changes.items() if v is not None]
        if measured and set(self.ignored) == set(measured):
            return INDEPENDENT
        return IGNORES_LEVEL if "level" in self.ignored else RESPONDS

    @property
    def flagged(self) -> bool:
        return self.verdict != RESPONDS

    def describe(self) -> str:
        """One line: the verdict, and which input changes left the forecasts unchanged."""
        if not self.ignored:
            return f"{self.verdict}: its forecasts changed under every input change"
        said = [_WORDS[c] for c in self.ignored]
        words = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]
        return (f"{self.verdict}: its forecasts did not change (by more than {self.rtol:g} of the context's "
                f"standard deviation, median of {self.n_windows} windows) when the context was {words}")


def changed_contexts(context: np.ndarray) -> dict[str, np.ndarray]:
    """The probe's changed contexts of ``context`` [N, C, L] (``other``: window k gets window k+1's, cyclically;
    absent for a single window)."""
    spread = _spread(context)[:, :, None]
    out = {"level": context + LEVEL_SHIFT * spread, "reversed": context[:, :, ::-1].copy()}
    if context.shape[0] > 1:
        out["other"] = np.roll(context, -1, axis=0)
    return out


def _spread(context: np.ndarray) -> np.ndarray:
    """Per window and channel: the context's standard deviation, 1 where it is flat (or all missing)."""
    s = np.nanstd(context, axis=2) if np.isfinite(context).any() else np.ones(context.shape[:2])
    return np.where(np.isfinite(s) & (s > 1e-12), s, 1.0)


def _varying(context: np.ndarray) -> np.ndarray:
    """[N, C] the channels the measure reads: those whose context varies, or every channel of a window none of
    whose channels varies. A constant channel's forecast rightly stays put when another constant context
    replaces it (``other``): counting it would dilute the change of the channels that move, and flag a model
    that follows them as ignoring its input."""
    raw = np.nanstd(context, axis=2) if np.isfinite(context).any() else np.zeros(context.shape[:2])
    varying = np.isfinite(raw) & (raw > 1e-12)
    return varying | ~varying.any(axis=1, keepdims=True)


def probe_arrays(model: Model, arrays: WindowArrays, batch_size: int, rtol: float = RTOL) -> SensitivityReport:
    """The probe on the windows ``arrays`` (their targets are never read)."""
    reference = predict_windows(model, arrays, batch_size)
    measured = _varying(arrays.context)  # [N, C]
    scale = np.nanmean(np.where(measured, _spread(arrays.context), np.nan), axis=1)  # [N]
    changes: dict[str, float | None] = dict.fromkeys(CHANGES)
    for name, context in changed_contexts(arrays.context).items():
        moved = predict_windows(model, WindowArrays(context, arrays.context_times, arrays.target,
                                                    arrays.target_times), batch_size)
        change = np.where(measured[:, :, None], np.abs(moved - reference), np.nan)
        per_window = np.nanmean(change, axis=(1, 2)) / scale
        changes[name] = float(np.nanmedian(per_window))
    return SensitivityReport(model=getattr(model, "name", type(model).__name__), changes=changes, rtol=rtol,
                             n_windows=int(arrays.context.shape[0]))


def probe_input(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: ForecastingSpec,
                n_windows: int = 4, seed: int = 0, rtol: float = RTOL, fit: bool = True) -> SensitivityReport:
    """The probe on ``n_windows`` of the fold's test windows (drawn under ``seed`` from the fold's windows in
    ``setting``), through the scoring path. A supervised model is first trained on the fold (``fit``)."""
    arrays, _ = fold_windows(dataset, fold, setting, spec)
    if arrays.context.shape[0] == 0:
        raise ValueError(f"no test window of {fold.test_subject!r} in setting {setting.context}/{setting.horizon} "
                         "to probe")
    picked = np.sort(np.random.default_rng(seed).choice(arrays.context.shape[0],
                                                        size=min(n_windows, arrays.context.shape[0]),
                                                        replace=False))
    if fit:
        fit_for_fold(model, dataset, fold, setting, spec)
    chosen = WindowArrays(*(a[picked] for a in (arrays.context, arrays.context_times, arrays.target,
                                                arrays.target_times)))
    return probe_arrays(model, chosen, spec.batch_size, rtol)


def check_input_sensitivity(report: SensitivityReport) -> None:
    """Raise :class:`InputSensitivityError` when the report flags its model."""
    if report.flagged:
        raise InputSensitivityError(f"{report.model}: {report.describe()}")
