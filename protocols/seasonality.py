"""The season of a context: shared by the seasonal-naive forecaster and the MASE scale, so that MASE
is scaled by exactly the in-sample error of the seasonal-naive forecast."""

from __future__ import annotations

import numpy as np


def estimate_period(y: np.ndarray, min_period: int = 2, threshold: float = 0.3) -> int | None:
    """Lag of the highest autocorrelation peak in [min_period, T/2], if it exceeds ``threshold``.

    A peak is a lag whose autocorrelation is above both neighbours.  None means the context
    shows no season strong enough to repeat (the caller then documents what it does).
    """
    period = int(estimate_periods(np.asarray(y)[None], min_period, threshold)[0])
    return period or None


def estimate_periods(rows: np.ndarray, min_period: int = 2, threshold: float = 0.3) -> np.ndarray:
    """:func:`estimate_period` of every row of ``rows`` [N, T] at once, 0 where it is None.

    Why batched: the MASE scale needs a period per window and channel, and one Python loop over lags per row
    dominated a cheap model's cell. Each lag's products are one ``np.vecdot`` over all rows, which calls the
    same BLAS dot per row as ``np.dot`` on one row: the periods are bit for bit those of the row-by-row rule.
    """
    x = rows - rows.mean(axis=-1, keepdims=True)
    n_rows, n = x.shape
    periods = np.zeros(n_rows, dtype=np.int64)
    max_period = n // 2
    if max_period < min_period + 1 or n_rows == 0:
        return periods
    denom = np.vecdot(x, x)
    usable = denom > 0
    if not usable.any():
        return periods
    x, denom = x[usable], denom[usable]
    # acf[:, k - 1] = lag k, k = 1 .. max_period + 1
    acf = np.stack([np.vecdot(x[:, :-k], x[:, k:]) / denom for k in range(1, max_period + 2)], axis=1)
    lags = np.arange(min_period, max_period + 1)
    v = acf[:, lags - 1]
    peak = (v > acf[:, lags - 2]) & (v >= acf[:, lags]) & (v > threshold)
    score = np.where(peak, v, -np.inf)
    first_best = np.argmax(score, axis=1)  # the first of equal maxima, as the strict running maximum keeps it
    found = peak.any(axis=1)
    periods[np.flatnonzero(usable)[found]] = lags[first_best[found]]
    return periods
