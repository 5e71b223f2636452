"""System overhead (the paper's appendix): parameters, active parameters and latency per sample.

Usage: OMP_NUM_THREADS=1 python benchmarks/system_overhead.py [--models NAME ...] [--setting 128/64]
       [--channels 2] [--repeats 5] [--threads 1] [--out results/benchmarks/system_overhead.csv]
       [--weights NAME=DIR ...]

One sample (batch 1) of a random-walk context, forecast through the harness interface (channels
folded for per-channel models), after one warm-up call; the median over ``--repeats`` calls.
Models that cannot run here get a row with status ``unavailable`` and the reason.  Parameters are
counted from the torch modules an adapter holds (statistical models have none); active parameters
differ from the total only for mixture-of-experts models that report them (SOTER).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd


def torch_modules(obj: object, seen: set[int] | None = None, depth: int = 0) -> list:
    """Every torch module reachable from an adapter's attributes (a few levels deep)."""
    import torch

    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 4:
        return []
    seen.add(id(obj))
    if isinstance(obj, torch.nn.Module):
        return [obj]
    found = []
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else \
        getattr(obj, "__dict__", {}).values()
    for value in values:
        if isinstance(value, (str, bytes, int, float, np.ndarray)) or value is None:
            continue
        found.extend(torch_modules(value, seen, depth + 1))
    return found


def count(model: object) -> tuple[int | None, int | None]:
    from models.soter.model import SoterModel, count_parameters

    modules = torch_modules(model)
    if not modules:
        return None, None
    params = {id(p): p.numel() for m in modules for p in m.parameters()}
    total = int(sum(params.values()))
    soter = [m for m in modules if isinstance(m, SoterModel)]
    return total, count_parameters(soter[0])[1] if soter else total


def measure(name: str, context: int, horizon: int, channels: int, repeats: int, options: dict) -> dict:
    from models.registry import get_spec
    from protocols.interface import SeriesBatch, forecast

    spec = get_spec(name)
    reason = spec.unavailable_reason(**options)
    row = {"model": name, "family": spec.family, "status": "unavailable", "reason": reason}
    if reason is not None:
        return row
    model = spec.load(**options)
    rng = np.random.default_rng(0)
    values = np.cumsum(rng.normal(size=(1, channels, context)), axis=2)
    times = np.arange(context, dtype=np.float64)[None, :] / 64.0
    query = (context + np.arange(horizon, dtype=np.float64))[None, :] / 64.0
    batch = SeriesBatch(values=values, timestamps=times)
    forecast(model, batch, query)  # warm-up: compilation, caches
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        forecast(model, batch, query)
        seconds.append(time.perf_counter() - start)
    total, active = count(model)
    return {**row, "status": "ok", "reason": None, "parameters": total, "active_parameters": active,
            "ms_per_sample": 1e3 * statistics.median(seconds), "channels": channels,
            "setting": f"{context}/{horizon}", "repeats": repeats}


def main() -> None:
    from models.registry import all_specs

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=None, help="default: every registered forecaster")
    p.add_argument("--setting", default="128/64")
    p.add_argument("--channels", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--weights", nargs="+", default=[], metavar="NAME=DIR")
    p.add_argument("--out", type=Path, default=Path("results/benchmarks/system_overhead.csv"))
    args = p.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    context, horizon = (int(x) for x in args.setting.split("/"))
    weights = dict(w.split("=", 1) for w in args.weights)
    names = args.models or [s.name for s in all_specs().values() if "forecasting" in s.tasks]
    rows = []
    for name in names:
        options = {"weights": weights[name]} if name in weights else {}
        try:
            rows.append(measure(name, context, horizon, args.channels, args.repeats, options))
        except Exception as exc:  # one model failing must not lose the others' rows
            rows.append({"model": name, "status": "error", "reason": f"{type(exc).__name__}: {exc}"})
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
