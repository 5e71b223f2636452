"""Causal imputation under irregular sampling (issue #48 item 1, the imputation half of ``run irregular``).

The causal imputation protocol's segments, missing mask and queries (``protocols.imputation.build_task``, at
:data:`IMPUTE_RATE`) are observed by a pattern of ``protocols.irregular`` as well (docs/protocols.md, "Irregular
sampling"):

- ``jitter``: every sample time moves by U(-s/2, s/2) periods (clamped into the segment's span; shared by the
  channels); each value is the recording linearly interpolated at the moved time: the truth of a query is the
  value at its moved time, where it is scored;
- ``drop``, ``renewal``, ``multirate``: samples are lost (``protocols.irregular.observation_mask``; a segment's
  first sample is always kept). A lost sample is neither input nor scored: a query keeps the channels the
  protocol hid and the pattern kept, and a query with none left is dropped (the rest are the same queries).

Each query is imputed causally from the observed prefix (samples before it, no write-back). Input paths as in
forecasting: :data:`~protocols.irregular.TRUE_TIMES` (continuous-time models: the prefix's time steps that hold a
sample at their true times, the mask flagging what the protocol hid or the pattern lost, queried at the true
time) or :data:`~protocols.irregular.RESAMPLED` (grid models: each channel's observed prefix linearly
interpolated onto the nominal grid, ``protocols.irregular.resample_to_grid``, the protocol's mask kept, so the
model's own missing-value mechanism handles what the protocol hid; queried at the true time, which the default
``Model._impute`` maps onto its forecast grid). Severity 0 is ``run imputation``'s cell for the same segments,
bit for bit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from protocols import interface
from protocols.data import Dataset
from protocols.imputation import ImputationTask, build_task, impute_queries
from protocols.interface import Model, SeriesBatch
from protocols.irregular import (RESAMPLED, TRUE_TIMES, IrregularWindows, observation_mask,  # noqa: F401
                                 resample_to_grid)
from protocols.metrics import ErrorSums, error_sums
from protocols.specs import ImputationSpec
from protocols.splits import Fold
from protocols.windows import stable_seed

@dataclass(frozen=True)
class IrregularSegments:
    """The segments as observed: values at the true times and which entries exist."""

    values: np.ndarray  # [B, C, L] the truth at ``times``
    times: np.ndarray  # [B, L] true times
    kept: np.ndarray  # [B, C, L] observed by the pattern
    grid_times: np.ndarray  # [B, L] the nominal grid
    regular: bool


def draw_segments(task: ImputationTask, pattern: str, severity: float, rng: np.random.Generator) -> IrregularSegments:
    """The task's segments observed by ``pattern`` at ``severity`` (0: unchanged)."""
    values, times = task.values, task.times
    b, c, length = values.shape
    if severity == 0 or b == 0:
        return IrregularSegments(values, times, np.ones(values.shape, bool), times, regular=True)
    if pattern == "jitter":
        step = np.median(np.diff(times, axis=1), axis=1)  # [B] the nominal period
        moved = np.clip(times + (rng.random(times.shape) - 0.5) * severity * step[:, None], times[:, :1], times[:, -1:])
        moved_values = np.stack([[np.interp(moved[i], times[i], values[i, j]) for j in range(c)] for i in range(b)])
        return IrregularSegments(moved_values, moved, np.ones(values.shape, bool), times, regular=False)
    kept = observation_mask((b, c, length), 1, pattern, severity, rng)  # position 0 kept on every channel
    return IrregularSegments(values, times, kept, times, regular=False)


def scored_queries(task: ImputationTask, seg: IrregularSegments) -> tuple[tuple[int, int], ...]:
    """The task's queries that keep a channel to score: hidden by the protocol and kept by the pattern."""
    return tuple((b, i) for b, i in task.queries if (~task.observed[b, :, i] & seg.kept[b, :, i]).any())


def impute_true_times(model: Model, task: ImputationTask, seg: IrregularSegments,
                      queries: tuple[tuple[int, int], ...], batch_size: int = 256) -> np.ndarray:
    """[Q, C] imputations of a continuous-time model: the prefix's time steps holding a sample at their true times,
    mask = protocol-observed and pattern-kept, queried at the query's true time; grouped by prefix length."""
    prefixes = [np.flatnonzero(seg.kept[b, :, :i].any(axis=0)) for b, i in queries]
    groups: dict[int, list[int]] = defaultdict(list)
    for q, idx in enumerate(prefixes):
        groups[idx.size].append(q)
    out = np.zeros((len(queries), task.values.shape[1]))
    for _, qs in sorted(groups.items()):
        for a in range(0, len(qs), batch_size):
            chunk = qs[a:a + batch_size]
            rows = [queries[q][0] for q in chunk]
            idx = [prefixes[q] for q in chunk]
            batch = SeriesBatch(np.stack([seg.values[b][:, k] for b, k in zip(rows, idx)]),
                                np.stack([seg.times[b, k] for b, k in zip(rows, idx)]),
                                mask=np.stack([(task.observed[b] & seg.kept[b])[:, k] for b, k in zip(rows, idx)]))
            out[chunk] = interface.impute(model, batch, np.array([seg.times[b, queries[q][1]]
                                                                  for b, q in zip(rows, chunk)]))
    return out


def impute_resampled(model: Model, task: ImputationTask, seg: IrregularSegments,
                     queries: tuple[tuple[int, int], ...], batch_size: int = 256) -> np.ndarray:
    """[Q, C] imputations of a grid model: each channel's observed prefix (protocol-observed and pattern-kept)
    linearly interpolated onto the nominal grid before the query (``resample_to_grid``: ends held), the protocol's
    mask kept; queried at the query's true time. Grouped by position (the prefix length)."""
    by_position: dict[int, list[int]] = defaultdict(list)
    for q, (_, i) in enumerate(queries):
        by_position[i].append(q)
    b_, c, _ = task.values.shape
    out = np.zeros((len(queries), c))
    for i, qs in sorted(by_position.items()):
        for a in range(0, len(qs), batch_size):
            chunk = qs[a:a + batch_size]
            rows = [queries[q][0] for q in chunk]
            n = len(rows)
            prefix = IrregularWindows(seg.values[rows, :, :i], seg.times[rows, :i],
                                      task.observed[rows, :, :i] & seg.kept[rows, :, :i], np.zeros((n, c, 0)),
                                      np.zeros((n, 0)), np.zeros((n, c, 0), bool), seg.grid_times[rows, :i],
                                      np.zeros((n, 0)), regular=False)
            batch = SeriesBatch(resample_to_grid(prefix), seg.grid_times[rows, :i], mask=task.observed[rows, :, :i])
            out[chunk] = interface.impute(model, batch, seg.times[rows, i])
    return out


@dataclass(frozen=True)
class IrregularImputationOutcome:
    errors: ErrorSums
    n_windows: int
    n_queries: int  # the queries scored (the protocol's, less those the pattern left nothing to score)
    skipped_missing: int
    short_recordings: int
    kept: float  # share of entries the pattern kept
    input_path: str  # TRUE_TIMES or RESAMPLED


def imputation_rng(seed: int, dataset: Dataset, fold: Fold, spec: ImputationSpec, pattern: str,
                   severity: float) -> np.random.Generator:
    """The pattern's draw of one cell: seeded by the run seed, data, subject, segment length, pattern, severity."""
    return np.random.default_rng(stable_seed(seed, dataset.content_id, fold.test_subject, "irregular-imputation",
                                             pattern, severity, spec.length))


def evaluate_irregular_imputation(model: Model, dataset: Dataset, fold: Fold, spec: ImputationSpec, pattern: str,
                                  severity: float, seed: int, true_times: bool) -> IrregularImputationOutcome:
    """Score one cell: the fold's imputation segments (at ``spec.rates[0]``) observed by ``pattern`` at
    ``severity``; ``true_times``: a continuous-time model (the true timestamps), else the resampled grid."""
    rate = spec.rates[0]
    task, selection = build_task(dataset, fold, spec, rate, seed)
    seg = draw_segments(task, pattern, severity, imputation_rng(seed, dataset, fold, spec, pattern, severity))
    if seg.regular:  # exactly protocols.imputation's call and scoring (bit for bit)
        queries = task.queries
        prediction = impute_queries(model, task)
    else:
        queries = scored_queries(task, seg)
        prediction = (impute_true_times if true_times else impute_resampled)(model, task, seg, queries)
    if queries:
        rows = np.array([b for b, _ in queries])
        cols = np.array([i for _, i in queries])
        errors = error_sums(prediction, seg.values[rows, :, cols], mask=~task.observed[rows, :, cols]
                            & seg.kept[rows, :, cols])
    else:
        errors = ErrorSums()
    return IrregularImputationOutcome(errors, int(task.values.shape[0]), len(queries), selection.skipped_missing,
                                      selection.short_recordings,
                                      float(seg.kept.mean()) if seg.kept.size else float("nan"),
                                      TRUE_TIMES if true_times else RESAMPLED)
