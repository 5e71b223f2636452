"""The season of a context: shared by the seasonal-naive forecaster and the MASE scale, so that MASE
is scaled by exactly the in-sample error of the seasonal-naive forecast."""

from __future__ import annotations

import numpy as np


def estimate_period(y: np.ndarray, min_period: int = 2, threshold: float = 0.3) -> int | None:
    """Lag of the highest autocorrelation peak in [min_period, T/2], if it exceeds ``threshold``.

    A peak is a lag whose autocorrelation is above both neighbours.  None means the context
    shows no season strong enough to repeat (the caller then documents what it does).
    """
    x = y - y.mean()
    denom = float(np.dot(x, x))
    n = x.size
    max_period = n // 2
    if denom <= 0 or max_period < min_period + 1:
        return None
    acf = np.array([np.dot(x[:-k], x[k:]) / denom for k in range(1, max_period + 2)])  # acf[k-1] = lag k
    best, best_val = None, threshold
    for lag in range(min_period, max_period + 1):
        v = acf[lag - 1]
        if v > acf[lag - 2] and v >= acf[lag] and v > best_val:
            best, best_val = lag, v
    return best
