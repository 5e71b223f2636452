"""Datasets as subjects with multichannel recordings; validated once, on construction."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


class DatasetError(ValueError):
    """A dataset is malformed; the message names the dataset, recording and problem."""


FLOAT32_MAX = float(np.finfo(np.float32).max)  # models run in float32: larger inputs turn into inf


def beyond_float32(values: np.ndarray) -> np.ndarray:
    """Mask of values a float32 input cannot hold (+-inf, |x| > FLOAT32_MAX); NaN (missing) is not one."""
    return np.abs(values) > FLOAT32_MAX


@dataclass(frozen=True)
class Recording:
    """One continuous multichannel recording of one subject.

    ``values`` is [C, T] float64, ``timestamps`` [T] seconds strictly increasing,
    ``labels`` [T] int codes into ``Dataset.label_names``, -1 for unlabelled samples (or None).  NaN marks a
    missing sample; windows that touch one are skipped by the protocol and counted.  Values must fit
    float32 (``|x| <= FLOAT32_MAX``): a larger one becomes inf in a float32 model and squashes MinMax.
    """

    subject: str
    name: str
    values: np.ndarray
    timestamps: np.ndarray
    labels: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return int(self.values.shape[1])


@dataclass(frozen=True)
class Dataset:
    name: str
    channels: tuple[str, ...]
    recordings: tuple[Recording, ...]
    sampling_rate: float | None = None  # Hz, when regular
    label_names: tuple[str, ...] | None = None
    description: str = ""
    metadata: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate(self)

    @cached_property
    def content_id(self) -> str:
        """A hash of the data alone (:func:`content_fingerprint`), not of the dataset's name: what every random
        draw of the protocol (windows, masks, noise, label budgets) is seeded with, so that the same files under
        another name give the same windows. Computed once per dataset object."""
        return content_fingerprint(self)

    @property
    def subjects(self) -> tuple[str, ...]:
        return tuple(sorted({r.subject for r in self.recordings}))

    def recordings_of(self, subjects: set[str] | frozenset[str] | tuple[str, ...]) -> list[Recording]:
        wanted = set(subjects)
        return [r for r in self.recordings if r.subject in wanted]

    def select_channels(self, names: tuple[str, ...] | list[str]) -> "Dataset":
        missing = [n for n in names if n not in self.channels]
        if missing:
            raise DatasetError(
                f"dataset {self.name!r} has no channel(s) {missing}; channels: {list(self.channels)}"
            )
        idx = [self.channels.index(n) for n in names]
        recs = tuple(
            Recording(r.subject, r.name, r.values[idx], r.timestamps, r.labels) for r in self.recordings
        )
        return Dataset(self.name, tuple(names), recs, self.sampling_rate, self.label_names,
                       self.description, dict(self.metadata))


def validate(ds: Dataset) -> None:
    if not ds.recordings:
        raise DatasetError(f"dataset {ds.name!r} has no recordings")
    if len(set(ds.channels)) != len(ds.channels) or not ds.channels:
        raise DatasetError(f"dataset {ds.name!r}: channel names must be unique and non-empty")
    c = len(ds.channels)
    for r in ds.recordings:
        where = f"dataset {ds.name!r}, recording {r.name!r}"
        if r.values.ndim != 2 or r.values.shape[0] != c:
            raise DatasetError(f"{where}: values must be [C={c}, T], got {r.values.shape}")
        if r.timestamps.shape != (r.values.shape[1],):
            raise DatasetError(
                f"{where}: {r.timestamps.shape[0]} timestamps for {r.values.shape[1]} samples"
            )
        if not np.all(np.isfinite(r.timestamps)):
            raise DatasetError(f"{where}: timestamps contain NaN or infinite values")
        if r.values.shape[1] > 1 and not np.all(np.diff(r.timestamps) > 0):
            bad = int(np.argmin(np.diff(r.timestamps) > 0)) + 1
            raise DatasetError(f"{where}: timestamps are not strictly increasing at sample {bad}")
        if np.isinf(r.values).any():
            ch, t = np.argwhere(np.isinf(r.values))[0]
            raise DatasetError(f"{where}: infinite value in channel {ds.channels[ch]!r} at sample {t}")
        huge = beyond_float32(r.values)
        if huge.any():
            ch, t = np.argwhere(huge)[0]
            raise DatasetError(f"{where}: value {float(r.values[ch, t])!r} in channel {ds.channels[ch]!r} "
                               f"at sample {t} is beyond the float32 range (|x| > {FLOAT32_MAX:.7g})")
        if r.labels is not None:
            if r.labels.shape != r.timestamps.shape:
                raise DatasetError(f"{where}: labels must have one entry per sample")
            if ds.label_names is None:
                raise DatasetError(f"{where}: labels given but the dataset has no label_names")
            if r.labels.min() < -1 or r.labels.max() >= len(ds.label_names):
                raise DatasetError(f"{where}: label codes outside -1..{len(ds.label_names) - 1}")


def dataset_fingerprint(ds: Dataset) -> str:
    """Content hash with the dataset's name (the records' ``data=``): results computed on other data are never
    reused. Unchanged since the first records, so that their keys are too."""
    return _fingerprint(ds, (ds.name, ds.channels, ds.sampling_rate, ds.label_names))


def content_fingerprint(ds: Dataset) -> str:
    """Content hash of the data alone: the channels, rate, label names and every recording's subject, name,
    values, timestamps and labels; the dataset's name left out (a renamed copy has the same one)."""
    return _fingerprint(ds, ("content", ds.channels, ds.sampling_rate, ds.label_names))


def _fingerprint(ds: Dataset, head: tuple) -> str:
    import hashlib

    h = hashlib.sha1()
    h.update(repr(head).encode())
    for r in ds.recordings:
        h.update(f"{r.subject}|{r.name}".encode())
        h.update(np.ascontiguousarray(r.values, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(r.timestamps, dtype=np.float64).tobytes())
        if r.labels is not None:
            h.update(np.ascontiguousarray(r.labels, dtype=np.int64).tobytes())
    return h.hexdigest()[:12]


def nominal_sampling_rate(ds: Dataset) -> float:
    """The dataset's declared rate, else 1 / the median time step of its recordings (Hz): what turns
    durations in seconds (gaps, artefacts, physiological windows) into samples.  A dataset with no two
    consecutive samples has none: a DatasetError."""
    if ds.sampling_rate is not None:
        return float(ds.sampling_rate)
    steps = np.concatenate([np.diff(r.timestamps) for r in ds.recordings if r.n_samples > 1] or [np.zeros(0)])
    if steps.size == 0:
        raise DatasetError(f"dataset {ds.name!r}: no two consecutive samples, so no sampling rate")
    return float(1.0 / np.median(steps))
