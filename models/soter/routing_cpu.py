"""A fused CPU kernel for the prefix-DFT routing statistic (numba; routing needs no gradient).

For every row and frequency bin it keeps the running real and imaginary sums of the H hidden
dimensions in cache while walking forward in time, so nothing of size [R, T, K, H] is ever
written: the eager torch version is memory-bound (about 38 s per layer at R = 64, T = 128,
H = 256 on one core), this one is compute-bound (see BENCHMARKS.md).  Sums run in the input's precision;
the full and the last-step kernel measure with one loop, so that they round alike.
"""

from __future__ import annotations

import math

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba comes with statsforecast, a core dependency
    numba = None

BINS = 4  # frequency bins one job of the prefix kernel walks at once (its body is written out for four)

if numba is not None:

    @numba.njit(fastmath=True, inline="always")
    def _advance(h: np.ndarray, r: int, t: int, st: np.ndarray, cos: np.ndarray, sin: np.ndarray, k: int
                 ) -> None:  # pragma: no cover - jitted
        """Adds step t of row r to the running sums ``st`` [8, H] of the four bins k..k+3 (real, imaginary)."""
        c0, s0, c1, s1 = cos[t, k], sin[t, k], cos[t, k + 1], sin[t, k + 1]
        c2, s2, c3, s3 = cos[t, k + 2], sin[t, k + 2], cos[t, k + 3], sin[t, k + 3]
        for d in range(h.shape[2]):
            x = h[r, t, d]
            st[0, d] += x * c0
            st[1, d] += x * s0
            st[2, d] += x * c1
            st[3, d] += x * s1
            st[4, d] += x * c2
            st[5, d] += x * s2
            st[6, d] += x * c3
            st[7, d] += x * s3

    @numba.njit(fastmath=True, inline="always")
    def _add_and_measure(st: np.ndarray, row: int, d: int, x, c, s):  # pragma: no cover - jitted
        """Adds x e^{-j phase} to one bin's running sum of dimension d (rows ``row``, ``row + 1`` of ``st``: real,
        imaginary) and returns its new magnitude."""
        u = st[row, d] + x * c
        v = st[row + 1, d] + x * s
        st[row, d], st[row + 1, d] = u, v
        return math.sqrt(u * u + v * v)

    @numba.njit(fastmath=True, inline="always")
    def _advance_and_measure(h: np.ndarray, r: int, t: int, st: np.ndarray, cos: np.ndarray, sin: np.ndarray,
                             k: int) -> tuple:  # pragma: no cover - jitted
        """``_advance``, then each of the four bins' magnitudes summed over H (in the input's precision), in one
        pass over the H dimensions: the one loop both kernels measure with, so that they round alike."""
        c0, s0, c1, s1 = cos[t, k], sin[t, k], cos[t, k + 1], sin[t, k + 1]
        c2, s2, c3, s3 = cos[t, k + 2], sin[t, k + 2], cos[t, k + 3], sin[t, k + 3]
        zero = st.dtype.type(0.0)
        a0, a1, a2, a3 = zero, zero, zero, zero
        for d in range(h.shape[2]):
            x = h[r, t, d]
            a0 += _add_and_measure(st, 0, d, x, c0, s0)
            a1 += _add_and_measure(st, 2, d, x, c1, s1)
            a2 += _add_and_measure(st, 4, d, x, c2, s2)
            a3 += _add_and_measure(st, 6, d, x, c3, s3)
        return a0, a1, a2, a3

    @numba.njit(fastmath=True, inline="always")
    def _store(out: np.ndarray, r: int, t: int, k: int, k_n: int, d_n: int, sums: tuple
               ) -> None:  # pragma: no cover - jitted
        a0, a1, a2, a3 = sums
        out[r, t, k] = a0 / d_n
        if k + 1 < k_n:
            out[r, t, k + 1] = a1 / d_n
        if k + 2 < k_n:
            out[r, t, k + 2] = a2 / d_n
        if k + 3 < k_n:
            out[r, t, k + 3] = a3 / d_n

    @numba.njit(parallel=True, fastmath=True, cache=True)
    def _prefix_dft(h: np.ndarray, cos: np.ndarray, sin: np.ndarray, k_n: int
                    ) -> np.ndarray:  # pragma: no cover - jitted
        """p [R, T, k_n]; ``cos``/``sin`` [T, K'] with K' >= k_n a multiple of ``BINS`` (zero columns past k_n).
        A job walks four bins of one row through time at once, so that each pass over the H dimensions does
        four bins' work (fewer, longer vector loops: 5-16 % less CPU than a bin per job, BENCHMARKS.md)."""
        r_n, t_n, d_n = h.shape
        blocks = cos.shape[1] // BINS
        out = np.empty((r_n, t_n, k_n), dtype=h.dtype)
        for job in numba.prange(r_n * blocks):
            r = job // blocks
            k = (job % blocks) * BINS
            st = np.zeros((2 * BINS, d_n), dtype=h.dtype)  # float32 input: float32 sums, as the authors' complex64
            for t in range(t_n):
                _store(out, r, t, k, k_n, d_n, _advance_and_measure(h, r, t, st, cos, sin, k))
        return out

    @numba.njit(parallel=True, fastmath=True, cache=True)
    def _final_dft(h: np.ndarray, cos: np.ndarray, sin: np.ndarray, k_n: int
                   ) -> np.ndarray:  # pragma: no cover - jitted
        """``_prefix_dft``'s value at the last time step only, [R, 1, k_n]: the same running sums, measured once,
        by the same loop, at the last step."""
        r_n, t_n, d_n = h.shape
        blocks = cos.shape[1] // BINS
        out = np.empty((r_n, 1, k_n), dtype=h.dtype)
        for job in numba.prange(r_n * blocks):
            r = job // blocks
            k = (job % blocks) * BINS
            st = np.zeros((2 * BINS, d_n), dtype=h.dtype)
            for t in range(t_n - 1):
                _advance(h, r, t, st, cos, sin, k)
            _store(out, r, 0, k, k_n, d_n, _advance_and_measure(h, r, t_n - 1, st, cos, sin, k))
        return out

    @numba.njit(cache=True)
    def _group(idx: np.ndarray, keep: np.ndarray, e_n: int) -> tuple:  # pragma: no cover - jitted
        """``group_by_expert``'s kernel: a counting sort of the N x k routings by expert."""
        n, k = idx.shape
        counts = np.zeros(e_n, dtype=np.int64)
        for i in range(n):
            for j in range(k):
                if keep[i, j]:
                    counts[idx[i, j]] += 1
        fill = np.zeros(e_n, dtype=np.int64)
        for e in range(1, e_n):
            fill[e] = fill[e - 1] + counts[e - 1]
        position = np.empty(fill[e_n - 1] + counts[e_n - 1], dtype=np.int64)
        for i in range(n):
            for j in range(k):
                if keep[i, j]:
                    e = idx[i, j]
                    position[fill[e]] = i * k + j
                    fill[e] += 1
        return position, counts


def available() -> bool:
    return numba is not None


_PHASES: dict[tuple[int, np.dtype], tuple[np.ndarray, np.ndarray]] = {}  # (N, dtype) -> cos, sin of the longest T


def _phases(t: int, n: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [T, K'] of the DFT's N/2+1 bins (K' the next multiple of ``BINS``, zero columns past them),
    computed in float64 and rounded once. One table per N and dtype, grown to the longest T asked for (a power of
    two) and served as its first T rows (the phases of step tau do not depend on T): every layer of every pass asks
    for them, and an imputed segment asks for every prefix length in turn."""
    have = _PHASES.get((n, dtype))
    if have is None or have[0].shape[0] < t:
        rows = 1 << max(t - 1, 1).bit_length()
        bins = n // 2 + 1
        angle = 2 * math.pi * np.outer(np.arange(rows, dtype=np.float64), np.arange(bins, dtype=np.float64)) / n
        cos, sin = (np.zeros((rows, -(-bins // BINS) * BINS), dtype=dtype) for _ in range(2))
        cos[:, :bins], sin[:, :bins] = np.cos(angle), np.sin(angle)
        # left writeable (never written): numba compiles read-only arrays as another type, whose code rounds
        # differently
        have = _PHASES[(n, dtype)] = (cos, sin)
    return have[0][:t], have[1][:t]


def prefix_dft_numba(h: np.ndarray, n: int, last_only: bool = False) -> np.ndarray:
    """[R, T, H] -> p [R, T, N/2+1] (``last_only``: [R, 1, N/2+1], p at the last step); running sums in the input's
    precision (float32 halves the time; the phases are computed in float64 and rounded once), and so is the sum of
    the magnitudes over H (as the authors' complex64 statistic; a float64 sum cost 20 % more per layer and moved
    forecasts by under 1e-5 relative, BENCHMARKS.md)."""
    cos, sin = _phases(h.shape[1], n, h.dtype)
    return (_final_dft if last_only else _prefix_dft)(np.ascontiguousarray(h), cos, sin, n // 2 + 1)


def group_by_expert(idx: np.ndarray, keep: np.ndarray, num_experts: int) -> tuple[np.ndarray, np.ndarray]:
    """Routings [N, k] (expert indices, which to keep) -> (flat position i * k + j [M], count per expert [E]): the
    kept routings grouped by expert in ascending order and within an expert by ascending position, the order of a
    stable sort by expert; one pass each way instead of torch's argsort, index and bincount."""
    return _group(np.ascontiguousarray(idx), np.ascontiguousarray(keep), num_experts)
