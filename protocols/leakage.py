"""Leakage probes: perturb the future in place, check that no prediction moves.

The harness hands a model only the causal context, so a model can read the future only
through a side channel (a handle on the data source, a cache, a global).  The probes
overwrite the recording *in place* after each scored point's causal cut, rerun the scoring
path for that point, and require identical predictions; the original values are restored
afterwards, whatever happens.

Tolerance: perturbing one window's future also changes other windows that are scored in the
same batch, and a batched float computation may let that move a row by rounding (or, for an
adaptive ODE solver that picks one step size per batch, by the solver's tolerance).  So the
in-batch probe allows exactly the batch-invariance error the model declares (``Model.batch_tolerance``,
(rtol, atol); the contract kit checks that declaration) and nothing else: a model that declares
none is probed at zero tolerance.  Each point is also scored alone, where nothing else changes:
that comparison is exact for every model.  A leak is not hidden by this: the perturbation is 10 standard
deviations, so a forecast that reads the future moves by orders of magnitude more.
"""

from __future__ import annotations

import contextlib

import numpy as np

from protocols import interface
from protocols.data import Dataset
from protocols.forecasting import fit_for_fold, fold_windows, predict_windows
from protocols.imputation import build_task, impute_queries
from protocols.interface import Model, SeriesBatch
from protocols.specs import ForecastingSpec, ImputationSpec, Setting
from protocols.splits import Fold
from protocols.windows import WindowArrays


class LeakageError(AssertionError):
    """A prediction changed when only values after its causal cut changed."""


@contextlib.contextmanager
def _perturbed_after(dataset: Dataset, recording: int, cut: int, seed: int):
    values = dataset.recordings[recording].values
    saved = values[:, cut:].copy()
    rng = np.random.default_rng(seed)
    try:
        values[:, cut:] = saved + rng.normal(0.0, 10.0 * (np.nanstd(saved) + 1.0), size=saved.shape)
        yield
    finally:
        values[:, cut:] = saved


def probe_tolerance(model: Model) -> tuple[float, float]:
    """(rtol, atol) of the in-batch probe: the model's declared batch-invariance tolerance, else exact."""
    return getattr(model, "batch_tolerance", None) or (0.0, 0.0)


def _one(arrays: WindowArrays, k: int) -> WindowArrays:
    return WindowArrays(*(a[k:k + 1] for a in (arrays.context, arrays.context_times, arrays.target,
                                               arrays.target_times)))


def _check(model: Model, what: str, alone: np.ndarray, alone_ref: np.ndarray, batched: np.ndarray,
           batched_ref: np.ndarray, tolerance: tuple[float, float]) -> None:
    if not np.array_equal(alone, alone_ref):
        raise LeakageError(f"{model.name}: {what} changed when only values after its causal cut changed "
                           "(scored alone, where nothing else in the batch changed)")
    rtol, atol = tolerance
    if not np.allclose(batched, batched_ref, rtol=rtol, atol=atol):
        worst = float(np.max(np.abs(batched - batched_ref)))
        raise LeakageError(f"{model.name}: {what} changed by {worst:.3g} when only values after its causal cut "
                           f"changed (scored in its batch; the model declares batch effects up to "
                           f"rtol={rtol:g}, atol={atol:g})")


def probe_forecasting(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: ForecastingSpec,
                      n_windows: int = 3, tolerance: tuple[float, float] | None = None) -> None:
    """Each probed window twice: alone (exact: a side channel such as a handle on the data moves it),
    and in its batch, whose other windows legitimately see the perturbed values (within ``tolerance``,
    default ``probe_tolerance``: a model pooling across rows would move it by far more)."""
    tolerance = tolerance if tolerance is not None else probe_tolerance(model)
    arrays, selection = fold_windows(dataset, fold, setting, spec)
    reference = predict_windows(model, arrays, spec.batch_size)
    for k, ref in enumerate(selection.windows[:n_windows]):
        alone_ref = predict_windows(model, _one(arrays, k), 1)[0]
        with _perturbed_after(dataset, ref.recording, ref.start + setting.context, seed=k):
            again, _ = fold_windows(dataset, fold, setting, spec)
            moved = predict_windows(model, again, spec.batch_size)[k]
            alone = predict_windows(model, _one(again, k), 1)[0]
        _check(model, f"forecast of window {k}", alone, alone_ref, moved, reference[k], tolerance)


@contextlib.contextmanager
def _test_subject_replaced(dataset: Dataset, fold: Fold, seed: int):
    """Every recording of the test subject overwritten in place (10 standard deviations of noise), restored after."""
    rng = np.random.default_rng(seed)
    saved = [(r.values, r.values.copy()) for r in dataset.recordings if r.subject == fold.test_subject]
    try:
        for values, original in saved:
            values[:] = original + rng.normal(0.0, 10.0 * (np.nanstd(original) + 1.0), size=original.shape)
        yield
    finally:
        for values, original in saved:
            values[:] = original


def probe_fit(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: ForecastingSpec,
              n_windows: int = 2) -> None:
    """A supervised model (``capabilities.fit``) learns nothing of the test subject: trained again after the
    test subject's recordings were replaced by noise, it forecasts the original test windows exactly as before
    (so what was fitted did not change); and after only the values behind a window's causal cut changed, the
    whole cell (fit, windows, forecast) gives that window exactly the same forecast. Exact comparisons: training
    is seeded, so the same training data must give the same model."""
    if not model.capabilities.fit:
        raise ValueError(f"{model.name} is not trained per fold: probe it with probe_forecasting")
    arrays, selection = fold_windows(dataset, fold, setting, spec)
    fit_for_fold(model, dataset, fold, setting, spec)
    reference = predict_windows(model, arrays, spec.batch_size)
    with _test_subject_replaced(dataset, fold, seed=len(selection.windows)):
        fit_for_fold(model, dataset, fold, setting, spec)
        again = predict_windows(model, arrays, spec.batch_size)
    if not np.array_equal(again, reference):
        worst = float(np.max(np.abs(again - reference)))
        raise LeakageError(f"{model.name}: what it fitted changed (forecasts moved by {worst:.3g}) when only the "
                           f"test subject {fold.test_subject!r}'s recordings changed")
    fit_for_fold(model, dataset, fold, setting, spec)
    for k, ref in enumerate(selection.windows[:n_windows]):
        alone_ref = predict_windows(model, _one(arrays, k), 1)[0]  # alone: a sampling model's draws depend on its batch
        with _perturbed_after(dataset, ref.recording, ref.start + setting.context, seed=k):
            fit_for_fold(model, dataset, fold, setting, spec)
            moved, _ = fold_windows(dataset, fold, setting, spec)
            alone = predict_windows(model, _one(moved, k), 1)[0]
        fit_for_fold(model, dataset, fold, setting, spec)
        if not np.array_equal(alone, alone_ref):
            raise LeakageError(f"{model.name}: the forecast of window {k} changed when only values after its causal "
                               "cut changed (the model was trained again on the fold, then scored alone)")


def _impute_one(model: Model, task, q: int) -> np.ndarray:
    b, i = task.queries[q]
    batch = SeriesBatch(task.values[[b], :, :i], task.times[[b], :i], mask=task.observed[[b], :, :i])
    return interface.impute(model, batch, task.times[[b], i])[0]


def probe_imputation(model: Model, dataset: Dataset, fold: Fold, spec: ImputationSpec, rate: float, seed: int,
                     n_queries: int = 3, tolerance: tuple[float, float] | None = None) -> None:
    """As ``probe_forecasting``, for causal imputation: the cut is the query time."""
    tolerance = tolerance if tolerance is not None else probe_tolerance(model)
    task, selection = build_task(dataset, fold, spec, rate, seed)
    reference = impute_queries(model, task)
    for q, (b, i) in enumerate(task.queries[:n_queries]):
        ref = selection.windows[b]
        alone_ref = _impute_one(model, task, q)
        with _perturbed_after(dataset, ref.recording, ref.start + i, seed=q):
            again, _ = build_task(dataset, fold, spec, rate, seed)
            moved = impute_queries(model, again)[q]
            alone = _impute_one(model, again, q)
        _check(model, f"imputation of query {q}", alone, alone_ref, moved, reference[q], tolerance)
