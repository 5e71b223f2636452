"""Naive forecasting baselines, per channel, on the context's own sample grid.

They ignore timestamps except ``drift``, which extends its line in time.  Masked context
points are filled by carrying the last observation forward before use.
"""

from __future__ import annotations

import numpy as np

from models.registry import register_model
from protocols.interface import Capabilities, Model, SeriesBatch, fill_prefix
from protocols.seasonality import estimate_period


class _Naive(Model):
    capabilities = Capabilities(multivariate=False, min_context=2)

    def __init__(self, seed: int = 0) -> None:
        """``seed``: passed by the harness to every model; unused, this model is deterministic."""
        pass

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        filled = fill_prefix(batch) if not batch.mask.all() else batch
        return self._predict(filled.values[:, 0, :], filled.timestamps, query_times)[:, None, :]

    def _predict(self, y: np.ndarray, t: np.ndarray, q: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@register_model(description="Repeats the last observed value (per channel)")
class LastValue(_Naive):
    name = "last-value"

    def _predict(self, y, t, q):
        return np.repeat(y[:, -1:], q.shape[1], axis=1)


@register_model(description="Mean of the context (per channel)")
class WindowMean(_Naive):
    name = "window-mean"

    def _predict(self, y, t, q):
        return np.repeat(y.mean(axis=1, keepdims=True), q.shape[1], axis=1)


@register_model(description="Line through the first and last context points, extended in time")
class Drift(_Naive):
    """The line through the first and last context points, evaluated at the query times."""

    name = "drift"

    def _predict(self, y, t, q):
        slope = (y[:, -1] - y[:, 0]) / (t[:, -1] - t[:, 0])
        return y[:, -1:] + slope[:, None] * (q - t[:, -1:])


@register_model(description="Repeats the last season; period from the context's autocorrelation peak")
class SeasonalNaive(_Naive):
    """Repeats the last season; the period is the context's autocorrelation peak.

    Rule when the context has no peak above 0.3 in lags 2..T/2: period 1, i.e. the last value
    (the seasonal-naive forecast of a non-seasonal series). ``describe()`` states the rule but counts
    nothing: a count kept by a model that a worker reuses across cells would make a record depend on
    which cells that worker ran before (records must not depend on scheduling).
    """

    name = "seasonal-naive"

    def __init__(self, seed: int = 0) -> None:
        """``seed``: passed by the harness to every model; unused, this model is deterministic."""
        pass

    def _predict(self, y, t, q):
        h = q.shape[1]
        out = np.empty((y.shape[0], h))
        for i, row in enumerate(y):
            period = estimate_period(row)
            if period is None:
                period = 1
            season = row[-period:]
            out[i] = season[np.arange(h) % period]
        return out

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "period": "autocorrelation peak > 0.3 in lags 2..T/2, else 1"}
