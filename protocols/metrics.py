"""Error metrics, kept as sums so that folds pool exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ErrorSums:
    sse: float = 0.0  # sum of squared errors
    sae: float = 0.0  # sum of absolute errors
    n: int = 0  # scored points

    def __add__(self, other: "ErrorSums") -> "ErrorSums":
        return ErrorSums(self.sse + other.sse, self.sae + other.sae, self.n + other.n)

    @property
    def rmse(self) -> float:
        return float(np.sqrt(self.sse / self.n)) if self.n else float("nan")

    @property
    def mae(self) -> float:
        return self.sae / self.n if self.n else float("nan")


def error_sums(prediction: np.ndarray, target: np.ndarray, mask: np.ndarray | None = None) -> ErrorSums:
    """Sums over every scored entry (all windows, channels and horizon steps)."""
    prediction = np.asarray(prediction, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    if prediction.shape != target.shape:
        raise ValueError(f"prediction shape {prediction.shape} != target shape {target.shape}")
    err = prediction - target
    if mask is not None:
        err = err[np.asarray(mask, dtype=bool)]
    if not np.all(np.isfinite(err)):
        raise ValueError("non-finite prediction or target among scored points")
    with np.errstate(over="ignore"):  # finite but huge errors overflow to inf: callers turn that into an error row
        return ErrorSums(float(np.sum(err**2)), float(np.sum(np.abs(err))), int(err.size))


@dataclass(frozen=True)
class WindowErrors:
    """Per-window error statistics of one cell, beside its pooled sums: what paired tests, bootstrap
    intervals over subjects, error-by-horizon curves and MASE need (kept in a sidecar of the records).

    ``sse``/``sae``/``n`` [B]: each window's sums over its channels and steps; ``step_sse``/``step_n`` [H]
    (and ``step_sae``): sums per horizon step over all windows and channels; ``mase`` [B]: each window's MAE over its
    channels, each divided by that channel's in-sample seasonal-naive MAE on the context (the season
    of :func:`protocols.seasonality.estimate_period`, else 1), averaged over the channels whose scale is
    not zero (NaN when none is); ``recording``/``start`` [B]: which window (aligns models' windows)."""

    sse: np.ndarray
    sae: np.ndarray
    n: np.ndarray
    step_sse: np.ndarray
    step_n: np.ndarray
    mase: np.ndarray
    recording: np.ndarray
    start: np.ndarray
    # [H] summed absolute errors per horizon step (MAE by step; files written before it was kept lack it)
    step_sae: np.ndarray | None = None
    # models that forecast quantiles: each window's summed quantile loss (the CRPS estimate's numerator:
    # 2 x pinball loss, averaged over the levels, summed over channels and steps) and summed |target|
    quantile_loss: np.ndarray | None = None
    abs_target: np.ndarray | None = None
    # the mean over channels hides which channels decide MASE: [B, C] each channel's MAE over the horizon
    # and its MASE scale (the in-sample seasonal-naive MAE, NaN when not usable), the channels' names [C]
    channel_mae: np.ndarray | None = None
    channel_scale: np.ndarray | None = None
    channels: np.ndarray | None = None
    # and what a breakdown by signal modality pools (``protocols.channel_errors.from_window_arrays``):
    # [B, C] each channel's sum of squared errors over the horizon, the channels' modalities [C]
    channel_sse: np.ndarray | None = None
    modalities: np.ndarray | None = None

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__ if getattr(self, name) is not None}


def seasonal_naive_scale(context: np.ndarray) -> np.ndarray:
    """[B, C] mean absolute error of the in-sample seasonal-naive forecast of each context channel."""
    from protocols.seasonality import estimate_periods

    b, c, length = context.shape
    scale = np.full((b, c), np.nan)
    rows = np.asarray(context, dtype=np.float64).reshape(b * c, length)
    finite = np.all(np.isfinite(rows), axis=1) if length >= 2 else np.zeros(b * c, dtype=bool)
    index = np.flatnonzero(finite)
    periods = np.maximum(estimate_periods(rows[index]), 1)  # no season: the naive forecast's lag 1
    flat = scale.reshape(-1)
    for m in np.unique(periods):
        at = index[periods == m]
        flat[at] = np.mean(np.abs(rows[at, m:] - rows[at, :-m]), axis=1)
    return scale


def quantile_loss(quantiles: np.ndarray, target: np.ndarray, levels: tuple[float, ...]) -> np.ndarray:
    """[B, C, H] mean over the levels of twice the pinball loss: its mean over points estimates the CRPS
    (GluonTS's and fev's mean weighted quantile loss divides its sum by the sum of |target|)."""
    q = np.asarray(quantiles, dtype=np.float64)
    y = np.asarray(target, dtype=np.float64)[..., None]
    tau = np.asarray(levels, dtype=np.float64)
    if q.shape != (*y.shape[:-1], tau.size):
        raise ValueError(f"quantiles shape {q.shape} != target shape {y.shape[:-1]} x {tau.size} levels")
    return (2.0 * np.abs((y - q) * ((y < q) - tau))).mean(axis=-1)


def window_errors(prediction: np.ndarray, target: np.ndarray, context: np.ndarray,
                  recording: np.ndarray, start: np.ndarray, quantiles: np.ndarray | None = None,
                  levels: tuple[float, ...] = (), channels: tuple[str, ...] = (),
                  modalities: tuple[str, ...] = ()) -> WindowErrors:
    """Per-window statistics of [B, C, H] forecasts (the pooled :class:`ErrorSums` are their sums)."""
    err = np.asarray(prediction, dtype=np.float64) - np.asarray(target, dtype=np.float64)
    if err.ndim != 3:
        raise ValueError(f"window errors need [B, C, H] forecasts, got shape {err.shape}")
    b, c, h = err.shape
    if not np.all(np.isfinite(err)):
        raise ValueError("non-finite prediction or target among scored points")
    abs_err = np.abs(err)
    scale = seasonal_naive_scale(np.asarray(context, dtype=np.float64))
    usable = np.isfinite(scale) & (scale > 0)
    ratio = np.where(usable, abs_err.mean(axis=2) / np.where(usable, scale, 1.0), 0.0)
    counts = usable.sum(axis=1)
    mase = np.where(counts > 0, ratio.sum(axis=1) / np.maximum(counts, 1), np.nan)
    return WindowErrors(
        sse=(err ** 2).sum(axis=(1, 2)), sae=abs_err.sum(axis=(1, 2)), n=np.full(b, c * h, dtype=np.int64),
        step_sse=(err ** 2).sum(axis=(0, 1)), step_n=np.full(h, b * c, dtype=np.int64), mase=mase,
        step_sae=abs_err.sum(axis=(0, 1)),
        recording=np.asarray(recording, dtype=np.int64), start=np.asarray(start, dtype=np.int64),
        quantile_loss=None if quantiles is None else quantile_loss(quantiles, target, levels).sum(axis=(1, 2)),
        abs_target=None if quantiles is None else np.abs(np.asarray(target, dtype=np.float64)).sum(axis=(1, 2)),
        channel_mae=abs_err.mean(axis=2), channel_scale=np.where(usable, scale, np.nan),
        channels=np.asarray(channels if len(channels) == c else [f"channel {j}" for j in range(c)], dtype=str),
        channel_sse=(err ** 2).sum(axis=2),
        modalities=np.asarray(modalities, dtype=str) if len(modalities) == c else None,
    )


def rmse(prediction: np.ndarray, target: np.ndarray) -> float:
    return error_sums(prediction, target).rmse


def mae(prediction: np.ndarray, target: np.ndarray) -> float:
    return error_sums(prediction, target).mae


def mean_std(values: list[float] | np.ndarray) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1, as the paper) over windows; std 0 for one value."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return float("nan"), float("nan")
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0
