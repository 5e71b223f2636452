"""Causal imputation: each missing point is predicted from its causal prefix only.

Protocol (docs/protocols.md): segments of ``length`` samples are drawn from the test subject
(seeded, the same segments for every seed and rate); each (channel, position) at or after
``warmup`` is missing independently with the missing rate (seeded by the run seed); per
segment up to ``points_per_segment`` positions that hold a missing value are scored.  Other masks
(contiguous gaps, channels missing together) are named options (``protocols.masks``).  For a
scored position i the model receives samples [0, i) with their mask (missing values
zero-filled and flagged, timestamps kept) and the query time t_i, and returns every channel
at t_i; the channels missing at i are scored.  No write-back: a prediction never becomes
input for another query.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from protocols import interface
from protocols.channel_errors import ChannelErrors, channel_errors
from protocols.data import Dataset, nominal_sampling_rate
from protocols.interface import Model, SeriesBatch
from protocols.masks import draw_mask
from protocols.metrics import ErrorSums, error_sums
from protocols.modality import channel_modalities
from protocols.scaling import fit_fold_scaler
from protocols.specs import ImputationSpec, SamplingSpec
from protocols.splits import Fold
from protocols.windows import WindowSelection, extract_segments, select_segments, stable_seed


@dataclass(frozen=True)
class RecordedMask:
    """A cell's mask as recorded beside its row (``harness.records.cell_files``): enough to score it again."""

    observed: np.ndarray  # [B, C, L] bool
    queries: tuple[tuple[int, int], ...]  # (segment, position)
    recording: np.ndarray  # [B] which recording each segment comes from
    start: np.ndarray  # [B] its first sample

    def arrays(self) -> dict[str, np.ndarray]:
        q = np.asarray(self.queries, dtype=np.int64).reshape(-1, 2)
        return {"observed": self.observed, "query_segment": q[:, 0], "query_position": q[:, 1],
                "recording": self.recording, "start": self.start}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "RecordedMask":
        return cls(np.asarray(arrays["observed"], dtype=bool),
                   tuple(zip(map(int, arrays["query_segment"]), map(int, arrays["query_position"]))),
                   np.asarray(arrays["recording"], dtype=np.int64), np.asarray(arrays["start"], dtype=np.int64))


@dataclass(frozen=True)
class ImputationOutcome:
    errors: ErrorSums
    n_windows: int
    n_queries: int
    skipped_missing: int
    short_recordings: int
    mask: RecordedMask | None = None  # the mask and queries scored (re-scoring: evaluate_imputation(recorded=))
    channels: ChannelErrors | None = None  # the errors per channel (breakdowns by modality)
    missing_share: float = float("nan")  # realised share of missing entries after the warm-up


@dataclass(frozen=True)
class ImputationTask:
    """Normalised segments, their observation mask and the (segment, position) queries."""

    values: np.ndarray  # [B, C, L] normalised, complete (the truth)
    times: np.ndarray  # [B, L]
    observed: np.ndarray  # [B, C, L] bool
    queries: tuple[tuple[int, int], ...]  # (segment, position)


def missing_mask(shape: tuple[int, int, int], rate: float, warmup: int, rng: np.random.Generator) -> np.ndarray:
    """True where observed; positions before ``warmup`` are always observed."""
    observed = rng.random(shape) >= rate
    observed[:, :, :warmup] = True
    return observed


def select_imputation_segments(dataset: Dataset, subject: str, spec: ImputationSpec) -> WindowSelection:
    """The segments of ``subject`` the imputation rule selects (a fixed draw: the run seed varies the mask)."""
    sampling = SamplingSpec(max_windows_per_subject=spec.max_windows_per_subject, seed=0)
    return select_segments(dataset, subject, spec.length, spec.stride or spec.length, sampling,
                           tag=f"imputation|{spec.length}")


def build_task(dataset: Dataset, fold: Fold, spec: ImputationSpec, rate: float, seed: int,
               recorded: RecordedMask | None = None) -> tuple[ImputationTask, WindowSelection]:
    """The fold's segments, their mask and queries (``recorded``: a mask written by an earlier run, checked
    against the segments it was drawn for)."""
    selection = select_imputation_segments(dataset, fold.test_subject, spec)
    raw, times = extract_segments(dataset, selection.windows, spec.length)
    values = fit_fold_scaler(dataset, fold).transform(raw)
    if recorded is not None:
        _check_recorded(recorded, selection, values.shape)
        return ImputationTask(values, times, recorded.observed, recorded.queries), selection
    if spec.mask.is_paper:  # the paper's draw, unchanged: the same masks and queries as before masks had options
        rng = np.random.default_rng(stable_seed(seed, dataset.content_id, fold.test_subject, "imputation", rate))
        observed = missing_mask(values.shape, rate, spec.warmup, rng)
    else:
        rng = np.random.default_rng(stable_seed(seed, dataset.content_id, fold.test_subject, "imputation", rate,
                                                spec.mask.name))
        observed = draw_mask(values.shape, rate, spec.warmup, spec.mask, nominal_sampling_rate(dataset), rng)
    queries = []
    for b in range(values.shape[0]):
        candidates = np.flatnonzero(~observed[b].all(axis=0))
        picked = rng.choice(candidates, min(spec.points_per_segment, candidates.size), replace=False)
        queries.extend((b, int(i)) for i in np.sort(picked))
    return ImputationTask(values, times, observed, tuple(queries)), selection


def _check_recorded(recorded: RecordedMask, selection: WindowSelection, shape: tuple[int, ...]) -> None:
    refs = [(w.recording, w.start) for w in selection.windows]
    if recorded.observed.shape != tuple(shape) or refs != list(zip(recorded.recording.tolist(), recorded.start.tolist())):
        raise ValueError(f"the recorded mask (shape {recorded.observed.shape}) was drawn for other segments than "
                         f"this dataset and spec select (shape {tuple(shape)}): re-score it on the data it was made on")


def impute_queries(model: Model, task: ImputationTask, batch_size: int = 256) -> np.ndarray:
    """Predictions [Q, C] for every query, grouped by prefix length into batched calls."""
    by_position: dict[int, list[int]] = defaultdict(list)
    for q, (_, i) in enumerate(task.queries):
        by_position[i].append(q)
    c = task.values.shape[1]
    out = np.zeros((len(task.queries), c))
    for i, qs in sorted(by_position.items()):
        for a in range(0, len(qs), batch_size):
            chunk = qs[a:a + batch_size]
            rows = [task.queries[q][0] for q in chunk]
            batch = SeriesBatch(task.values[rows, :, :i], task.times[rows, :i], mask=task.observed[rows, :, :i])
            out[chunk] = interface.impute(model, batch, task.times[rows, i])
    return out


def evaluate_imputation(model: Model, dataset: Dataset, fold: Fold, spec: ImputationSpec, rate: float,
                        seed: int, recorded: RecordedMask | None = None) -> ImputationOutcome:
    """Score one cell; ``recorded`` re-scores the mask and queries an earlier run wrote."""
    task, selection = build_task(dataset, fold, spec, rate, seed, recorded)
    prediction = impute_queries(model, task)
    per_channel = None
    if task.queries:
        rows = np.array([b for b, _ in task.queries])
        cols = np.array([i for _, i in task.queries])
        target = task.values[rows, :, cols]  # [Q, C]
        scored = ~task.observed[rows, :, cols]
        errors = error_sums(prediction, target, mask=scored)
        per_channel = channel_errors(prediction, target, dataset.channels, channel_modalities(dataset), scored)
    else:
        errors = ErrorSums()
    mask = RecordedMask(task.observed, task.queries, np.array([w.recording for w in selection.windows], dtype=np.int64),
                        np.array([w.start for w in selection.windows], dtype=np.int64))
    after = task.observed[:, :, spec.warmup:]
    share = float(1.0 - after.mean()) if after.size else float("nan")
    return ImputationOutcome(errors, int(task.values.shape[0]), len(task.queries),
                             selection.skipped_missing, selection.short_recordings, mask, per_channel, share)
