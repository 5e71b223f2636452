"""Test windows drawn from a subject's recordings by a seeded, documented rule."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from protocols.data import Dataset, Recording
from protocols.specs import SamplingSpec, Setting

GAP_FACTOR = 1.5  # a time step longer than 1.5 sample periods is a gap: one lost sample already makes it 2


@dataclass(frozen=True)
class WindowRef:
    recording: int  # index into Dataset.recordings
    start: int  # first sample of the context


@dataclass(frozen=True)
class WindowSelection:
    windows: tuple[WindowRef, ...]
    skipped_missing: int  # candidates touching a NaN sample or spanning a time gap (time_gaps)
    short_recordings: int  # recordings shorter than context + horizon


@dataclass(frozen=True)
class WindowArrays:
    context: np.ndarray  # [B, C, L]
    context_times: np.ndarray  # [B, L]
    target: np.ndarray  # [B, C, H]
    target_times: np.ndarray  # [B, H]


def stable_seed(*parts: object) -> int:
    """A seed that is the same in every process and Python run (unlike hash())."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def candidate_starts(n_samples: int, length: int, stride: int) -> np.ndarray:
    if n_samples < length:
        return np.zeros(0, dtype=np.int64)
    return np.arange(0, n_samples - length + 1, stride, dtype=np.int64)


def time_gaps(rec: Recording, sampling_rate: float | None) -> np.ndarray:
    """[T - 1] mask of steps (sample k to k + 1) longer than GAP_FACTOR sample periods: samples are lost there,
    so a window across one covers more time than its sample count says.  Only a declared rate defines
    the period; without one the timestamps are irregular by declaration and no step is a gap."""
    steps = np.diff(rec.timestamps)
    if sampling_rate is None:
        return np.zeros(steps.shape, dtype=bool)
    return steps > GAP_FACTOR / sampling_rate


def _touching(flags: np.ndarray, starts: np.ndarray, span: int) -> np.ndarray:
    """Which runs flags[s:s + span] hold a True, for every s in starts at once (prefix sums)."""
    if not flags.any():
        return np.zeros(starts.shape, dtype=bool)
    csum = np.concatenate([[0], np.cumsum(flags)])
    return (csum[starts + span] - csum[starts]) > 0


def select_segments(
    dataset: Dataset, subject: str, length: int, stride: int, sampling: SamplingSpec, tag: object,
    accept: Callable[[Recording, np.ndarray], np.ndarray] | None = None,
) -> WindowSelection:
    """Segments of ``length`` samples of one subject, by the rule in docs/protocols.md.

    Segments touching a missing (NaN) sample or spanning a time gap are skipped and counted together in
    ``skipped_missing``: a gap is samples that are missing from the file rather than marked NaN.

    ``tag`` enters the seed so that different window kinds draw independently; ``accept``
    (recording, starts) -> bool mask keeps only some candidates (e.g. label-pure ones)
    before the per-subject cap is applied.
    """
    candidates: list[WindowRef] = []
    skipped_missing = short = 0
    for i, rec in enumerate(dataset.recordings):
        if rec.subject != subject:
            continue
        starts = candidate_starts(rec.n_samples, length, stride)
        if starts.size == 0:
            short += 1
            continue
        # a segment's `length` samples hold `length - 1` time steps; both kinds of skip are counted once
        touched = (_touching(np.isnan(rec.values).any(axis=0), starts, length)
                   | _touching(time_gaps(rec, dataset.sampling_rate), starts, length - 1))
        skipped_missing += int(touched.sum())
        starts = starts[~touched]
        if accept is not None:
            starts = starts[accept(rec, starts)]
        candidates.extend(WindowRef(i, int(s)) for s in starts)
    if len(candidates) > sampling.max_windows_per_subject:
        rng = np.random.default_rng(stable_seed(sampling.seed, dataset.content_id, subject, tag))
        keep = np.sort(rng.choice(len(candidates), sampling.max_windows_per_subject, replace=False))
        candidates = [candidates[k] for k in keep]
    return WindowSelection(tuple(candidates), skipped_missing, short)


def select_windows(
    dataset: Dataset, subject: str, setting: Setting, sampling: SamplingSpec
) -> WindowSelection:
    """Forecasting windows (context + horizon of the setting) of one test subject."""
    return select_segments(dataset, subject, setting.length, sampling.stride_for(setting), sampling,
                           tag=f"{setting.context}|{setting.horizon}")


def extract_segments(dataset: Dataset, refs: tuple[WindowRef, ...], length: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw values [B, C, length] and timestamps [B, length] of the selected segments."""
    c = len(dataset.channels)
    if not refs:
        return np.zeros((0, c, length)), np.zeros((0, length))
    recs = dataset.recordings
    values = np.stack([recs[r.recording].values[:, r.start:r.start + length] for r in refs])
    times = np.stack([recs[r.recording].timestamps[r.start:r.start + length] for r in refs])
    return values, times


def extract(dataset: Dataset, refs: tuple[WindowRef, ...], setting: Setting) -> WindowArrays:
    """Raw (unnormalised) arrays for the selected windows, split into the setting's context and target."""
    values, times = extract_segments(dataset, refs, setting.length)
    c = setting.context
    return WindowArrays(values[:, :, :c], times[:, :c], values[:, :, c:], times[:, c:])
