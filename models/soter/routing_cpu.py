"""A fused CPU kernel for the prefix-DFT routing statistic (numba; routing needs no gradient).

For every row and frequency bin it keeps the running real and imaginary sums of the H hidden
dimensions in cache while walking forward in time, so nothing of size [R, T, K, H] is ever
written: the eager torch version is memory-bound (about 38 s per layer at R = 64, T = 128,
H = 256 on one core), this one is compute-bound (see BENCHMARKS.md).  Sums run in the input's precision.
"""

from __future__ import annotations

import functools
import math

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba comes with statsforecast, a core dependency
    numba = None


if numba is not None:

    @numba.njit(parallel=True, fastmath=True, cache=True)
    def _prefix_dft(h: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
        r_n, t_n, d_n = h.shape
        k_n = cos.shape[1]
        out = np.empty((r_n, t_n, k_n), dtype=h.dtype)
        for job in numba.prange(r_n * k_n):
            r = job // k_n
            k = job % k_n
            re = np.zeros(d_n, dtype=h.dtype)  # float32 input: float32 sums, as the authors' complex64
            im = np.zeros(d_n, dtype=h.dtype)
            for t in range(t_n):
                c = cos[t, k]
                s = sin[t, k]
                acc = 0.0
                for d in range(d_n):
                    x = h[r, t, d]
                    re[d] += x * c
                    im[d] += x * s
                    acc += math.sqrt(re[d] * re[d] + im[d] * im[d])
                out[r, t, k] = acc / d_n
        return out

    @numba.njit(parallel=True, fastmath=True, cache=True)
    def _final_dft(h: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
        """``_prefix_dft``'s value at the last time step only, [R, 1, K]: the same running sums in the same
        order, one magnitude per bin and dimension instead of one per time step."""
        r_n, t_n, d_n = h.shape
        k_n = cos.shape[1]
        out = np.empty((r_n, 1, k_n), dtype=h.dtype)
        for job in numba.prange(r_n * k_n):
            r = job // k_n
            k = job % k_n
            re = np.zeros(d_n, dtype=h.dtype)
            im = np.zeros(d_n, dtype=h.dtype)
            for t in range(t_n):
                c = cos[t, k]
                s = sin[t, k]
                for d in range(d_n):
                    x = h[r, t, d]
                    re[d] += x * c
                    im[d] += x * s
            acc = 0.0
            for d in range(d_n):
                acc += math.sqrt(re[d] * re[d] + im[d] * im[d])
            out[r, 0, k] = acc / d_n
        return out


def available() -> bool:
    return numba is not None


@functools.lru_cache(maxsize=32)
def _phases(t: int, n: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [T, N/2+1] of the DFT's phases, computed in float64 and rounded once; kept because every layer
    of every pass asks for the same ones (at T = 1280 computing them cost a tenth of a layer's kernel)."""
    angle = 2 * math.pi * np.outer(np.arange(t, dtype=np.float64), np.arange(n // 2 + 1, dtype=np.float64)) / n
    # left writeable (never written): numba compiles read-only arrays as another type, whose code rounds differently
    return np.cos(angle).astype(dtype), np.sin(angle).astype(dtype)


def prefix_dft_numba(h: np.ndarray, n: int, last_only: bool = False) -> np.ndarray:
    """[R, T, H] -> p [R, T, N/2+1] (``last_only``: [R, 1, N/2+1], p at the last step); running sums in the input's
    precision (float32 halves the time; the phases are computed in float64 and rounded once), the mean over H in
    float64."""
    cos, sin = _phases(h.shape[1], n, h.dtype)
    return (_final_dft if last_only else _prefix_dft)(np.ascontiguousarray(h), cos, sin)
