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
    return ErrorSums(float(np.sum(err**2)), float(np.sum(np.abs(err))), int(err.size))


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
