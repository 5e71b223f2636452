"""Why SOTER slows down on a busy CPU: one forecast call of the shipped checkpoint (per-query decoding,
as the default run), timed per thread configuration, quiet and beside a busy loop on every core,
interleaved in one process so that background load hits every variant alike.

Usage: OMP_NUM_THREADS unset: python benchmarks/soter_threads_busy.py [--batch 64] [--repeats 3] [--busy 2]
Variants: torch intra-op threads (torch.set_num_threads) x numba threads (numba.set_num_threads: the
parallel prefix-DFT routing kernel, ``models.soter.routing_cpu``; OMP_NUM_THREADS does not reach it).
Prints the median seconds per call and the loaded/quiet ratio of each; with `uptime`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

import numba
import numpy as np
import torch

from busy_cpu import busy_loops  # benchmarks/busy_cpu.py (the script's folder is on sys.path)
from models.registry import load_model
from protocols.interface import SeriesBatch, forecast


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    args = p.parse_args()
    cores = os.cpu_count() or 2
    model = load_model("soter")
    rng = np.random.default_rng(0)
    values = rng.standard_normal((args.batch, 4, 128)).cumsum(-1) * 0.05 + 0.5
    times = np.tile(np.arange(128) / 64.0, (args.batch, 1))
    query = np.tile(128 / 64.0 + np.arange(64) / 64.0, (args.batch, 1))
    batch = SeriesBatch(values, times)
    variants = [("torch %d, numba %d" % (t, n), t, n) for t in (cores, 1) for n in (cores, 1)]
    print(f"# {cores} cores, numba layer {numba.config.THREADING_LAYER}, batch {args.batch}x4x128 -> 64")
    print("# uptime before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    reference = None
    results: dict[str, dict[str, list[float]]] = {name: {"quiet": [], "loaded": []} for name, _, _ in variants}
    forecast(model, batch, query)  # warm (numba compile cache, allocator)
    for _ in range(args.repeats):
        for state in ("quiet", "loaded"):
            with busy_loops(args.busy if state == "loaded" else 0):
                for name, t, n in variants:
                    torch.set_num_threads(t)
                    numba.set_num_threads(n)
                    t0 = time.perf_counter()
                    out = forecast(model, batch, query)
                    results[name][state].append(time.perf_counter() - t0)
                    print(f"  {state:<6} {name:<18} {results[name][state][-1]:6.2f} s", flush=True)
                    if reference is None:
                        reference = out
                    diff = float(np.max(np.abs(out - reference)))
                    if diff > 1e-5:
                        print(f"  {name}: forecasts differ from the first by {diff:.2e}")
    print(f"# numba threading layer used: {numba.threading_layer()}")
    for name, r in results.items():
        q, l = statistics.median(r["quiet"]), statistics.median(r["loaded"])
        print(f"{name:<18} quiet {q:6.2f} s  loaded {l:6.2f} s  ratio {l / q:5.2f}")
    print("# uptime after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
