"""Causal imputation baselines: carry forward, linear and natural-spline extrapolation.

Each sees only the observed points of the causal prefix of its own channel (per-channel
models) and evaluates at the query time; none forecasts.
"""

from __future__ import annotations

import numpy as np

from models.registry import register_model
from protocols.interface import Capabilities, Model, SeriesBatch


class _PrefixImputer(Model):
    capabilities = Capabilities(forecast=False, impute=True, multivariate=False)

    def __init__(self, seed: int = 0) -> None:
        """``seed``: passed by the harness to every model; unused, this model is deterministic."""
        pass

    def _impute(self, batch: SeriesBatch, query_time: np.ndarray) -> np.ndarray:
        out = np.zeros((batch.shape[0], 1))
        for b in range(batch.shape[0]):
            seen = batch.mask[b, 0]
            t, v = batch.timestamps[b, seen], batch.values[b, 0, seen]
            out[b, 0] = self._at(t, v, float(query_time[b])) if t.size else 0.0
        return out

    def _at(self, t: np.ndarray, v: np.ndarray, query: float) -> float:
        raise NotImplementedError


@register_model(description="Last observation carried forward", tasks=("imputation",))
class CarryForward(_PrefixImputer):
    """Last observation carried forward (LOCF)."""

    name = "locf"

    def _at(self, t, v, query):
        return float(v[-1])


@register_model(description="Line through the last two observed points", tasks=("imputation",))
class LinearExtrapolation(_PrefixImputer):
    """The line through the last two observed points, evaluated at the query time."""

    name = "linear-extrapolation"

    def _at(self, t, v, query):
        if t.size < 2:
            return float(v[-1])
        slope = (v[-1] - v[-2]) / (t[-1] - t[-2])
        return float(v[-1] + slope * (query - t[-1]))


@register_model(description="Natural cubic spline of the observed prefix, extrapolated", tasks=("imputation",))
class SplineExtrapolation(_PrefixImputer):
    """Natural cubic spline through the observed prefix, extended past its last knot
    (scipy's extrapolation of the last cubic piece)."""

    name = "spline-extrapolation"

    def _at(self, t, v, query):
        if t.size < 3:
            return LinearExtrapolation._at(self, t, v, query)
        from scipy.interpolate import CubicSpline  # imported on use: `harness list` reads this module

        return float(CubicSpline(t, v, bc_type="natural", extrapolate=True)(query))
