"""Per-series fit + forecast time of the statsforecast baselines at the paper's windows.

Usage: OMP_NUM_THREADS=1 python benchmarks/baselines_speed.py [--series 20] [--models auto-ets ...]
Cold = the first call (numba compilation included); warm = the mean over ``--series`` noisy sines.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from models.registry import get_spec
from protocols.interface import SeriesBatch, forecast
from protocols.specs import PAPER_SETTINGS


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--series", type=int, default=20)
    p.add_argument("--models", nargs="+", default=["auto-ets", "auto-theta", "auto-arima"])
    args = p.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    t = np.arange(192.0)
    ys = [np.sin(2 * np.pi * t / (20 + k)) + 0.1 * rng.standard_normal(t.size) for k in range(args.series)]
    for name in args.models:
        model = get_spec(name).load()
        for w in PAPER_SETTINGS:
            def run(y: np.ndarray) -> None:
                batch = SeriesBatch(y[None, None, : w.context], t[None, : w.context])
                forecast(model, batch, t[None, w.context: w.length])

            t0 = time.perf_counter()
            run(ys[0])
            cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            for y in ys:
                run(y)
            warm = (time.perf_counter() - t0) / len(ys)
            print(f"{name} {w.name}: cold {1000 * cold:.1f} ms, warm {1000 * warm:.1f} ms/series")


if __name__ == "__main__":
    main()
