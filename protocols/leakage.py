"""Leakage probes: perturb the future in place, check that no prediction moves.

The harness hands a model only the causal context, so a model can read the future only
through a side channel (a handle on the data source, a cache, a global).  The probes
overwrite the recording *in place* after each scored point's causal cut, rerun the scoring
path for that point, and require identical predictions; the original values are restored
afterwards, whatever happens.
"""

from __future__ import annotations

import contextlib

import numpy as np

from models.interface import Model
from protocols.data import Dataset
from protocols.forecasting import fold_windows, predict_windows
from protocols.imputation import build_task, impute_queries
from protocols.specs import ForecastingSpec, ImputationSpec, WindowSpec
from protocols.splits import Fold


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


def probe_forecasting(model: Model, dataset: Dataset, fold: Fold, window: WindowSpec, spec: ForecastingSpec,
                      n_windows: int = 3, atol: float = 0.0) -> None:
    arrays, selection = fold_windows(dataset, fold, window, spec)
    reference = predict_windows(model, arrays, spec.batch_size)
    for k, ref in enumerate(selection.windows[:n_windows]):
        with _perturbed_after(dataset, ref.recording, ref.start + window.context, seed=k):
            again, _ = fold_windows(dataset, fold, window, spec)
            moved = predict_windows(model, again, spec.batch_size)[k]
        if not np.allclose(moved, reference[k], atol=atol, rtol=0):
            raise LeakageError(f"{model.name}: forecast of window {k} changed when only values after its "
                               "context changed")


def probe_imputation(model: Model, dataset: Dataset, fold: Fold, spec: ImputationSpec, rate: float, seed: int,
                     n_queries: int = 3, atol: float = 0.0) -> None:
    task, selection = build_task(dataset, fold, spec, rate, seed)
    reference = impute_queries(model, task)
    for q, (b, i) in enumerate(task.queries[:n_queries]):
        ref = selection.windows[b]
        with _perturbed_after(dataset, ref.recording, ref.start + i, seed=q):
            again, _ = build_task(dataset, fold, spec, rate, seed)
            moved = impute_queries(model, again)[q]
        if not np.allclose(moved, reference[q], atol=atol, rtol=0):
            raise LeakageError(f"{model.name}: imputation of query {q} changed when only values at or after "
                               "its query time changed")
