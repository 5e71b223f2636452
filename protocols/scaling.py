"""Per-channel MinMax normalisation fitted on training subjects only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols.data import Dataset, DatasetError
from protocols.splits import Fold


@dataclass(frozen=True)
class MinMaxScaler:
    """x' = (x - min) / (max - min) per channel.

    A channel that is constant on the training subjects has range 0; it is then only
    shifted (range taken as 1), so its values stay finite and its errors stay in the
    units of the raw signal.  See docs/protocols.md.
    """

    minimum: np.ndarray  # [C]
    maximum: np.ndarray  # [C]

    @property
    def scale(self) -> np.ndarray:
        span = self.maximum - self.minimum
        return np.where(span > 0, span, 1.0)

    def transform(self, values: np.ndarray) -> np.ndarray:
        """values [..., C, T] -> normalised."""
        return (values - self.minimum[:, None]) / self.scale[:, None]

    def inverse(self, values: np.ndarray) -> np.ndarray:
        return values * self.scale[:, None] + self.minimum[:, None]


def fit_minmax(dataset: Dataset, subjects: tuple[str, ...] | list[str]) -> MinMaxScaler:
    recs = dataset.recordings_of(tuple(subjects))
    if not recs:
        raise DatasetError(f"dataset {dataset.name!r}: no recordings for subjects {list(subjects)}")
    stacked = np.concatenate([r.values for r in recs], axis=1)
    observed = np.isfinite(stacked).any(axis=1)
    if not observed.all():  # named before numpy is asked for the min of nothing (a warning, then NaN)
        empty = [dataset.channels[i] for i in np.flatnonzero(~observed)]
        raise DatasetError(f"dataset {dataset.name!r}: channel{'s' * (len(empty) > 1)} {', '.join(map(repr, empty))} "
                           f"{'have' if len(empty) > 1 else 'has'} no observed value on the training subjects "
                           f"{', '.join(map(str, subjects))}")
    lo, hi = np.nanmin(stacked, axis=1), np.nanmax(stacked, axis=1)
    return MinMaxScaler(lo.astype(np.float64), hi.astype(np.float64))


def fit_fold_scaler(dataset: Dataset, fold: Fold) -> MinMaxScaler:
    return fit_minmax(dataset, fold.train_subjects)
