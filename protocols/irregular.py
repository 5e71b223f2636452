"""Forecasting under irregular sampling (issue #48 item 1): the forecasting windows, sampled irregularly.

The paper gives every model regularly sampled windows, the one case where a continuous-time model has no
advantage. Here the same windows (``protocols.forecasting.fold_windows``) are observed by a seeded pattern
(docs/protocols.md, "Irregular sampling"):

- ``jitter``: every sample time moves off the grid by U(-s/2, s/2) sample periods (shared by the channels);
  values at the moved times are the recording linearly interpolated (context times are clamped into the
  context's span and interpolated from context samples only, so no target sample reaches the context);
- ``drop``: each time step (all channels) is lost with probability s (Bernoulli);
- ``renewal``: outages from an alternating renewal process (on/off durations gamma, shape 2; mean outage
  :data:`OUTAGE_SAMPLES` sample periods; share of time in outages s): lost samples come in bursts;
- ``multirate``: channel j of C keeps the grid samples of its own rate (1 - s (j + 1) / C) x the nominal rate,
  at a random phase per window and channel.

The context's first and last samples are always observed (every channel of every window has a start and the
forecast origin). Severity 0 is the regular window, unchanged: exactly the numbers of ``run forecasting``.
Scores are taken at the true target times that exist: the observed target samples (drop, renewal, multirate)
or the moved target times (jitter). How a model receives the context is its *input path*:
:data:`TRUE_TIMES` (continuous-time models: the observed samples at their true times, queried at the true
target times) or :data:`RESAMPLED` (grid models: each channel linearly interpolated onto the nominal grid,
ends held; the grid forecast linearly interpolated to the true target times).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from protocols import interface
from protocols.data import Dataset
from protocols.forecasting import fit_for_fold, fold_windows, predict_windows
from protocols.interface import Model, SeriesBatch
from protocols.metrics import ErrorSums, error_sums
from protocols.specs import PATTERNS, IrregularSpec, Setting
from protocols.splits import Fold
from protocols.windows import WindowArrays, stable_seed

OUTAGE_SAMPLES = 4.0  # renewal: mean outage length in sample periods
RENEWAL_SHAPE = 2.0  # renewal: gamma shape of on and off durations (1 would be memoryless, Markov)
TRUE_TIMES = "true timestamps"
RESAMPLED = "resampled to the grid (linear)"


@dataclass(frozen=True)
class IrregularWindows:
    """Windows as observed: values at the true times, which entries exist, and the nominal grid."""

    context: np.ndarray  # [B, C, T] values at context_times (unobserved entries: not to be read)
    context_times: np.ndarray  # [B, T] true times
    context_mask: np.ndarray  # [B, C, T] observed
    target: np.ndarray  # [B, C, H] the truth at target_times
    target_times: np.ndarray  # [B, H] true times
    target_mask: np.ndarray  # [B, C, H] the entries scored
    grid_context_times: np.ndarray  # [B, T] the nominal grid
    grid_target_times: np.ndarray  # [B, H]
    regular: bool  # nothing moved, nothing lost: the forecasting windows themselves

    def arrays(self) -> WindowArrays:
        return WindowArrays(self.context, self.context_times, self.target, self.target_times)


def _renewal_keep(length: int, severity: float, rng: np.random.Generator) -> np.ndarray:
    """[length] observed positions under outages of an alternating renewal process (stationary start)."""
    keep = np.ones(length, dtype=bool)
    mean_off = OUTAGE_SAMPLES
    mean_on = OUTAGE_SAMPLES * (1.0 - severity) / severity
    off = rng.random() < severity
    t = -rng.random() * (mean_off if off else mean_on)  # a random phase into the first period
    while t < length:
        d = rng.gamma(RENEWAL_SHAPE, (mean_off if off else mean_on) / RENEWAL_SHAPE)
        if off:
            keep[max(0, int(np.ceil(t))):max(0, int(np.ceil(min(t + d, length))))] = False
        t += d
        off = not off
    return keep


def observation_mask(shape: tuple[int, int, int], context: int, pattern: str, severity: float,
                     rng: np.random.Generator) -> np.ndarray:
    """[B, C, L] observed entries of windows of L = context + horizon samples (drop, renewal, multirate)."""
    b, c, length = shape
    if pattern == "drop":
        keep = np.broadcast_to((rng.random((b, length)) >= severity)[:, None, :], shape).copy()
    elif pattern == "renewal":
        keep = np.ones(shape, dtype=bool)
        if severity > 0:
            for i in range(b):
                keep[i] = _renewal_keep(length, severity, rng)[None, :]
    elif pattern == "multirate":
        rate = 1.0 - severity * (np.arange(c) + 1) / c  # [C] each channel's share of the nominal rate
        phase = rng.random((b, c))
        k = np.arange(length)
        keep = (np.floor((k + 1) * rate[None, :, None] + phase[..., None])
                > np.floor(k * rate[None, :, None] + phase[..., None]))
    else:
        raise ValueError(f"no observation mask for pattern {pattern!r}")
    keep[:, :, 0] = keep[:, :, context - 1] = True  # every channel has a start and the forecast origin
    return keep


def _jitter(arrays: WindowArrays, severity: float, rng: np.random.Generator) -> IrregularWindows:
    """Sample times moved by U(-s/2, s/2) periods, values the recording linearly interpolated there."""
    ctx_t, tgt_t = arrays.context_times, arrays.target_times
    b, c, t = arrays.context.shape
    h = tgt_t.shape[1]
    grid = np.concatenate([ctx_t, tgt_t], axis=1)
    step = np.median(np.diff(grid, axis=1), axis=1)  # [B] the nominal period (windows span no gap)
    moved = grid + (rng.random(grid.shape) - 0.5) * severity * step[:, None]
    new_ctx = np.clip(moved[:, :t], ctx_t[:, :1], ctx_t[:, -1:])  # inside the context: no target sample is read
    new_tgt = np.minimum(moved[:, t:], tgt_t[:, -1:])
    whole = np.concatenate([arrays.context, arrays.target], axis=2)
    context = np.stack([[np.interp(new_ctx[i], ctx_t[i], arrays.context[i, j]) for j in range(c)] for i in range(b)]) \
        if b else arrays.context.copy()
    target = np.stack([[np.interp(new_tgt[i], grid[i], whole[i, j]) for j in range(c)] for i in range(b)]) \
        if b else arrays.target.copy()
    return IrregularWindows(context, new_ctx, np.ones((b, c, t), bool), target, new_tgt, np.ones((b, c, h), bool),
                            ctx_t, tgt_t, regular=False)


def draw_windows(arrays: WindowArrays, pattern: str, severity: float, rng: np.random.Generator) -> IrregularWindows:
    """The windows ``arrays`` observed by ``pattern`` at ``severity`` (0: unchanged, ``regular``)."""
    b, c, t = arrays.context.shape
    h = arrays.target.shape[2]
    if pattern not in PATTERNS:
        raise ValueError(f"unknown irregular-sampling pattern {pattern!r}; known: {', '.join(PATTERNS)}")
    if severity == 0 or b == 0:
        return IrregularWindows(arrays.context, arrays.context_times, np.ones((b, c, t), bool), arrays.target,
                                arrays.target_times, np.ones((b, c, h), bool), arrays.context_times,
                                arrays.target_times, regular=True)
    if pattern == "jitter":
        return _jitter(arrays, severity, rng)
    keep = observation_mask((b, c, t + h), t, pattern, severity, rng)
    return IrregularWindows(arrays.context, arrays.context_times, keep[:, :, :t], arrays.target, arrays.target_times,
                            keep[:, :, t:], arrays.context_times, arrays.target_times, regular=False)


def _units(w: IrregularWindows, shared: bool) -> list[tuple[int, tuple[int, ...]]]:
    """(window, channels) called together: all channels where they share their times, else one by one."""
    b, c, _ = w.context.shape
    out = []
    for i in range(b):
        same = shared and all(np.array_equal(w.context_mask[i, 0], w.context_mask[i, j])
                              and np.array_equal(w.target_mask[i, 0], w.target_mask[i, j]) for j in range(c))
        out += [(i, tuple(range(c)))] if same else [(i, (j,)) for j in range(c)]
    return out


def predict_true_times(model: Model, w: IrregularWindows, batch_size: int) -> np.ndarray:
    """[B, C, H] forecasts of a continuous-time model given the observed samples at their true times and queried
    at the true target times (entries not scored stay 0). Windows and channels whose observed points share
    their times go together, so that a call holds no unobserved entry (SOTER's forecast reads no mask)."""
    if w.regular:
        return predict_windows(model, w.arrays(), batch_size)
    b, c, h = w.target.shape
    out = np.zeros((b, c, h))
    groups: dict[tuple, list[tuple[int, tuple[int, ...]]]] = defaultdict(list)
    for i, chans in _units(w, shared=True):
        ctx = w.context_mask[i, chans[0]]
        qry = w.target_mask[i, list(chans)].any(axis=0)
        if qry.any():
            groups[(chans, int(ctx.sum()), int(qry.sum()))].append((i, chans))
    for (chans, _, _), units in groups.items():
        for a in range(0, len(units), batch_size):
            chunk = units[a:a + batch_size]
            rows = [i for i, _ in chunk]
            ctx = [w.context_mask[i, chans[0]] for i in rows]
            qry = [w.target_mask[i, list(chans)].any(axis=0) for i in rows]
            batch = SeriesBatch(np.stack([w.context[i][list(chans)][:, m] for i, m in zip(rows, ctx)]),
                                np.stack([w.context_times[i, m] for i, m in zip(rows, ctx)]))
            pred = interface.forecast(model, batch, np.stack([w.target_times[i, q] for i, q in zip(rows, qry)]))
            for k, (i, q) in enumerate(zip(rows, qry)):
                out[i][np.ix_(list(chans), np.flatnonzero(q))] = pred[k]
    return out * w.target_mask


def resample_to_grid(w: IrregularWindows) -> np.ndarray:
    """[B, C, T] each channel's observed context linearly interpolated onto the nominal grid (ends held)."""
    b, c, t = w.context.shape
    out = np.empty((b, c, t))
    for i in range(b):
        for j in range(c):
            m = w.context_mask[i, j]
            out[i, j] = np.interp(w.grid_context_times[i], w.context_times[i, m], w.context[i, j, m])
    return out


def predict_resampled(model: Model, w: IrregularWindows, batch_size: int) -> np.ndarray:
    """[B, C, H] forecasts of a grid model: the context resampled onto the nominal grid, the forecast at the
    nominal target times linearly interpolated (from the resampled forecast origin on) to the true target times."""
    if w.regular:
        return predict_windows(model, w.arrays(), batch_size)
    grid_ctx = resample_to_grid(w)
    grid = predict_windows(model, WindowArrays(grid_ctx, w.grid_context_times, w.target, w.grid_target_times),
                           batch_size)
    b, c, h = w.target.shape
    out = np.empty((b, c, h))
    for i in range(b):
        xs = np.concatenate([w.grid_context_times[i, -1:], w.grid_target_times[i]])
        for j in range(c):
            out[i, j] = np.interp(w.target_times[i], xs, np.concatenate([grid_ctx[i, j, -1:], grid[i, j]]))
    return out * w.target_mask


@dataclass(frozen=True)
class IrregularOutcome:
    errors: ErrorSums
    n_windows: int
    skipped_missing: int
    short_recordings: int
    observed_context: float  # share of context entries observed
    scored_target: float  # share of target entries scored
    input_path: str  # TRUE_TIMES or RESAMPLED


def irregular_rng(seed: int, dataset: Dataset, fold: Fold, setting: Setting, pattern: str,
                  severity: float) -> np.random.Generator:
    """The pattern's draw of one cell: seeded by the run seed, data, subject, setting, pattern and severity."""
    return np.random.default_rng(stable_seed(seed, dataset.content_id, fold.test_subject, "irregular", pattern,
                                             severity, setting.context, setting.horizon))


def evaluate_irregular(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: IrregularSpec,
                       pattern: str, severity: float, seed: int, true_times: bool) -> IrregularOutcome:
    """Score one cell: the fold's forecasting windows observed by ``pattern`` at ``severity``; ``true_times``:
    the model is continuous-time (it gets the true timestamps), else it gets the resampled grid."""
    fspec = spec.forecasting()
    fit_for_fold(model, dataset, fold, setting, fspec)  # supervised models: the training subjects, regular
    arrays, selection = fold_windows(dataset, fold, setting, fspec)
    w = draw_windows(arrays, pattern, severity, irregular_rng(seed, dataset, fold, setting, pattern, severity))
    predict = predict_true_times if true_times else predict_resampled
    prediction = predict(model, w, fspec.batch_size)
    # the regular case scores exactly as protocols.forecasting does (no mask: the same sums, bit for bit)
    errors = error_sums(prediction, w.target) if w.regular else error_sums(prediction, w.target, mask=w.target_mask)
    return IrregularOutcome(errors, int(arrays.context.shape[0]), selection.skipped_missing,
                            selection.short_recordings,
                            float(w.context_mask.mean()) if w.context_mask.size else float("nan"),
                            float(w.target_mask.mean()) if w.target_mask.size else float("nan"),
                            TRUE_TIMES if true_times else RESAMPLED)
