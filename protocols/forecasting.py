"""The zero-shot forecasting protocol for one (dataset, fold, setting, model) cell."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from protocols import interface
from protocols.data import Dataset
from protocols.interface import Model, ModelDivergedError, SeriesBatch, TrainingSeries
from protocols.metrics import ErrorSums, WindowErrors, error_sums, window_errors
from protocols.modality import channel_modalities
from protocols.scaling import fit_fold_scaler
from protocols.specs import ForecastingSpec, Setting
from protocols.splits import Fold
from protocols.windows import WindowArrays, WindowRef, WindowSelection, extract, select_windows


@dataclass(frozen=True)
class ForecastOutcome:
    errors: ErrorSums
    n_windows: int
    skipped_missing: int
    short_recordings: int
    windows: WindowErrors | None = None  # per-window statistics (None: nothing was scored)


def fold_windows(dataset: Dataset, fold: Fold, setting: Setting, spec: ForecastingSpec) -> tuple[WindowArrays, WindowSelection]:
    """Normalised test windows of a fold in one setting; the scaler sees the training subjects only."""
    selection = select_windows(dataset, fold.test_subject, setting, spec.sampling)
    return windows_at(dataset, fold, setting, selection.windows), selection


def windows_at(dataset: Dataset, fold: Fold, setting: Setting, refs: tuple[WindowRef, ...]) -> WindowArrays:
    """The given windows of a fold, normalised as :func:`fold_windows` does: what a per-window breakdown
    recomputes for the windows a cell's per-window errors name (their recording and start)."""
    raw = extract(dataset, refs, setting)
    scaler = fit_fold_scaler(dataset, fold)
    return WindowArrays(
        context=scaler.transform(raw.context),
        context_times=raw.context_times,
        target=scaler.transform(raw.target),
        target_times=raw.target_times,
    )


def fold_training_series(dataset: Dataset, fold: Fold, setting: Setting) -> TrainingSeries:
    """What a supervised model trains on in a fold: the training subjects' recordings under the fold's MinMax
    (fitted on them), whole; the test subject's recordings are never read."""
    scaler = fit_fold_scaler(dataset, fold)
    recordings = dataset.recordings_of(fold.train_subjects)
    if any(r.subject == fold.test_subject for r in recordings):  # Fold forbids it; a leak is never silent
        raise ValueError(f"fold of {fold.test_subject!r}: the test subject is among the training subjects")
    return TrainingSeries(values=tuple(scaler.transform(r.values) for r in recordings),
                          subjects=tuple(r.subject for r in recordings), channels=tuple(dataset.channels),
                          context=setting.context, horizon=setting.horizon, sampling_rate=dataset.sampling_rate)


def fit_for_fold(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: ForecastingSpec) -> None:
    """Train a supervised model (``capabilities.fit``) on the fold's training subjects; others are left alone."""
    if model.capabilities.fit:
        interface.fit(model, fold_training_series(dataset, fold, setting), spec.sampling.seed)


def predict_windows(model: Model, arrays: WindowArrays, batch_size: int,
                    labels: Sequence[str] | None = None) -> np.ndarray:
    """Forecast every window; the model sees the context only (never the target). ``labels`` (one per window,
    :func:`window_labels`) name the windows of a batch whose forecast diverged."""
    return _predict(model, arrays, batch_size, labels=labels)[0]


def window_labels(dataset: Dataset, selection: WindowSelection) -> list[str]:
    """``recording@start`` for each window: what an error row names."""
    return [f"{dataset.recordings[w.recording].name}@{w.start}" for w in selection.windows]


def _predict(model: Model, arrays: WindowArrays, batch_size: int, levels: tuple[float, ...] | None = None,
             labels: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Point forecasts [N, C, H] and, when ``levels`` are given, quantiles [N, C, H, Q] at them (None: points only),
    in batches of ``batch_size`` windows; the model sees the context only. A model whose computation diverges on a
    batch raises :class:`ModelDivergedError` naming its windows."""
    points, quants = [], []
    n = arrays.context.shape[0]
    for a in range(0, n, batch_size):
        b = a + batch_size
        batch = SeriesBatch(arrays.context[a:b], arrays.context_times[a:b])
        try:
            if levels is not None:
                point, quant = interface.forecast_quantiles(model, batch, arrays.target_times[a:b], levels)
                quants.append(quant)
            else:
                point = interface.forecast(model, batch, arrays.target_times[a:b])
        except ModelDivergedError as exc:
            named = f" ({', '.join(labels[a:b])})" if labels is not None else ""
            raise ModelDivergedError(f"the forecast of windows {a}-{min(b, n) - 1} of {n}{named} diverged: "
                                     f"{exc}") from exc
        points.append(point)
    c, h = arrays.context.shape[1], arrays.target.shape[2]
    point = np.concatenate(points) if points else np.zeros((0, c, h))
    if levels is None:
        return point, None
    return point, np.concatenate(quants) if quants else np.zeros((0, c, h, len(levels)))


def evaluate_forecasting(
    model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: ForecastingSpec,
    corrupt_context: Callable[[np.ndarray], np.ndarray] | None = None,
) -> ForecastOutcome:
    """Score one cell.  ``corrupt_context`` (noise robustness) alters what the model sees,
    never the target it is scored against."""
    fit_for_fold(model, dataset, fold, setting, spec)  # supervised models only: the training subjects, clean
    arrays, selection = fold_windows(dataset, fold, setting, spec)
    clean_context = arrays.context  # MASE's scale: the in-sample error on the data, not on the noise added
    if corrupt_context is not None:
        arrays = dataclasses.replace(arrays, context=corrupt_context(arrays.context))
    levels = interface.QUANTILE_LEVELS if model.capabilities.quantiles else None
    prediction, quantiles = _predict(model, arrays, spec.batch_size, levels, labels=window_labels(dataset, selection))
    errors = error_sums(prediction, arrays.target)
    per_window = None
    if errors.n and np.isfinite(errors.sse) and np.isfinite(errors.sae):  # else an error row: no statistics
        per_window = window_errors(prediction, arrays.target, clean_context,
                                   np.array([w.recording for w in selection.windows], dtype=np.int64),
                                   np.array([w.start for w in selection.windows], dtype=np.int64),
                                   quantiles, interface.QUANTILE_LEVELS, tuple(dataset.channels),
                                   channel_modalities(dataset))
    return ForecastOutcome(
        errors=errors,
        n_windows=int(arrays.context.shape[0]),
        skipped_missing=selection.skipped_missing,
        short_recordings=selection.short_recordings,
        windows=per_window,  # with each channel's errors and modality (breakdowns by modality)
    )
