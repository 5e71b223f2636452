"""Normalised permutation entropy (Bandt & Pompe): the complexity column of the paper's dataset table.

NPE = H(ordinal patterns of ``order`` points spaced by ``delay``) / log(order!), in [0, 1]:
0 for a monotone signal, close to 1 for white noise.  The paper does not state its parameters;
we use order 4, delay 1 (our choice, a common default), average over channels and recordings,
and cap each recording at ``max_samples`` so that long recordings stay cheap.
"""

from __future__ import annotations

import math

import numpy as np


def permutation_entropy(x: np.ndarray, order: int = 4, delay: int = 1) -> float:
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = x.size - (order - 1) * delay
    if n < 1:
        raise ValueError(f"a series of {x.size} points is too short for order {order}, delay {delay}")
    windows = np.stack([x[i * delay: i * delay + n] for i in range(order)], axis=1)
    patterns = np.argsort(windows, axis=1, kind="stable")
    codes = (patterns * (order ** np.arange(order))).sum(axis=1)
    _, counts = np.unique(codes, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum() / math.log(math.factorial(order)))


def dataset_npe(values: list[np.ndarray], order: int = 4, delay: int = 1, max_samples: int = 20_000) -> float:
    """Mean NPE over every channel of every recording ([C, T] arrays)."""
    scores = [permutation_entropy(v[c, :max_samples], order, delay) for v in values for c in range(v.shape[0])
              if np.isfinite(v[c, :max_samples]).sum() > (order - 1) * delay]
    return float(np.mean(scores)) if scores else float("nan")
