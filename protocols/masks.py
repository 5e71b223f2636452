"""Observation masks for imputation: scattered points (the paper's) or contiguous gaps (how wearables fail).

Why gaps: a wearable loses data in runs (off-wrist, motion, a dropped Bluetooth link), and each sensor on
its own schedule; points missing independently are the easiest case for carrying the last value forward.

Contiguous masks come from a stationary alternating renewal process over the positions after the warm-up:
gap lengths follow the spec's law with mean ``burst_seconds`` (in samples: that times the sampling rate,
at least one; ``exponential`` is its discrete form, geometric on 1, 2, ...; ``fixed`` is that length), and
the observed runs between gaps are geometric with mean ``gap * (1 - rate) / rate``, so the long-run missing
share is the rate.  The first run is drawn from the stationary law (missing with probability ``rate``, a
fixed gap's remaining length uniform), so every position is missing with probability ``rate``: the rate
holds in expectation at every position, per segment it varies (a long gap may cover a whole segment).
Where the rate needs longer gaps than the burst length gives (observed runs must last a sample), the
gap mean is raised to ``rate / (1 - rate)`` samples (``effective_gap``).  ``shared``: one draw for every
channel of a segment; ``independent``: one per channel.
"""

from __future__ import annotations

import numpy as np

from protocols.specs import MaskSpec


def effective_gap(spec: MaskSpec, rate: float, sampling_rate: float) -> float:
    """Mean gap length in samples that a contiguous mask uses at ``rate`` (see the module's doc)."""
    return max(spec.burst_seconds * sampling_rate, 1.0, rate / (1.0 - rate))


def _gap_lengths(spec: MaskSpec, mean: float, n: int, rng: np.random.Generator) -> np.ndarray:
    if spec.distribution == "fixed":
        return np.full(n, max(1, int(round(mean))), dtype=np.int64)
    return rng.geometric(1.0 / mean, size=n).astype(np.int64)


def _renewal_row(spec: MaskSpec, n: int, rate: float, gap: float, rng: np.random.Generator) -> np.ndarray:
    """One row of ``n`` positions: True where missing, from the stationary alternating renewal process."""
    missing = np.zeros(n, dtype=bool)
    observed_mean = max(gap * (1.0 - rate) / rate, 1.0)
    fixed = max(1, int(round(gap)))
    pos = 0
    in_gap = rng.random() < rate
    first = True
    while pos < n:
        if in_gap:
            if first and spec.distribution == "fixed":
                length = int(rng.integers(1, fixed + 1))  # the remaining part of a gap already under way
            else:
                length = int(_gap_lengths(spec, gap, 1, rng)[0])
            missing[pos:pos + length] = True
        else:
            length = int(rng.geometric(1.0 / observed_mean))
        pos += length
        in_gap = not in_gap
        first = False
    return missing


def contiguous_mask(shape: tuple[int, int, int], rate: float, warmup: int, spec: MaskSpec, sampling_rate: float,
                    rng: np.random.Generator) -> np.ndarray:
    """[B, C, L] True where observed; positions before ``warmup`` always are."""
    b, c, length = shape
    observed = np.ones(shape, dtype=bool)
    n = length - warmup
    if n <= 0:
        return observed
    gap = effective_gap(spec, rate, sampling_rate)
    for i in range(b):
        if spec.channels == "shared":
            observed[i, :, warmup:] = ~_renewal_row(spec, n, rate, gap, rng)[None, :]
        else:
            for j in range(c):
                observed[i, j, warmup:] = ~_renewal_row(spec, n, rate, gap, rng)
    return observed


def points_mask(shape: tuple[int, int, int], rate: float, warmup: int, shared: bool,
                rng: np.random.Generator) -> np.ndarray:
    """[B, C, L] True where observed: each position (each channel's, or with ``shared`` each time step of
    all channels) missing independently with ``rate``; positions before ``warmup`` always observed."""
    b, c, length = shape
    draw = rng.random((b, 1, length) if shared else shape) >= rate
    observed = np.broadcast_to(draw, shape).copy()
    observed[:, :, :warmup] = True
    return observed


def draw_mask(shape: tuple[int, int, int], rate: float, warmup: int, spec: MaskSpec, sampling_rate: float,
              rng: np.random.Generator) -> np.ndarray:
    """The observation mask of ``spec`` (the paper's points: ``protocols.imputation.missing_mask``)."""
    if spec.kind == "contiguous":
        return contiguous_mask(shape, rate, warmup, spec, sampling_rate, rng)
    return points_mask(shape, rate, warmup, spec.channels == "shared", rng)


def gap_runs(missing: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of every run of True in a 1-D mask (what a mask's burst lengths are measured by)."""
    padded = np.concatenate([[False], np.asarray(missing, dtype=bool), [False]])
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    return [(int(a), int(b - a)) for a, b in zip(edges[::2], edges[1::2])]
