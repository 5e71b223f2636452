"""SOTER forecast speed: context 128 -> horizon 64, 2 channels, both rollout modes.

Usage: python benchmarks/soter_forecast.py [--config soter-small] [--batch 32] [--device cpu|cuda]
       [--threads 1] [--rollouts direct autoregressive] [--steps N] [--impl native|torchdiffeq]
Random weights (speed does not depend on them; say so when quoting).  Prints ms per sample and
the decoder's solver evaluations (NFE) per solve.  On CUDA the backbone runs under bf16 autocast.
``--steps`` times only the first N autoregressive steps and reports them as such.

Comparison of the decoder's solves on the shipped entries (the harness's adapters, their options):
       python benchmarks/soter_forecast.py --compare [--entries soter soter-anchored]
       [--settings 48/24 128/64] [--windows 32] [--rounds 5] [--data-root DIR]
times one forecast of ``--windows`` MIT-BIH 100 windows (MinMax-scaled as the harness does; synthetic ECG
without ``--data-root``) per entry, setting and solver, the solvers interleaved (A B A B ...) so that a
busy machine's load falls on both alike; prints CPU seconds per forecast (median over rounds) and the
median of the per-round ratios torchdiffeq / native.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from models.soter.config import preset
from models.soter.model import SoterModel
from soter_bench import soter_parser, started  # benchmarks/soter_bench.py (the script's folder is on sys.path)

IMPLS = ("torchdiffeq", "native")


def _windows(data_root: str | None, count: int, context: int, horizon: int):
    """[N, 2, L] contexts, their times and the query times at 360 Hz (MIT-BIH), MinMax-scaled."""
    import numpy as np

    fs = 360.0
    if data_root:
        from protocols.datasets.mitbih import load

        values = load(Path(data_root), records=("100",)).recordings[0].values
    else:
        t = np.arange(200_000) / fs
        values = np.stack([np.sin(2 * np.pi * 1.2 * t) ** 15, np.cos(2 * np.pi * 0.25 * t)])
    values = (values - values.min(axis=1, keepdims=True)) / np.ptp(values, axis=1, keepdims=True)
    starts = np.linspace(0, values.shape[1] - context - horizon - 1, count).astype(int)
    windows = np.stack([values[:, s:s + context + horizon] for s in starts])
    times = np.arange(context + horizon) / fs + starts[:, None] / fs
    return windows[..., :context], times[:, :context], times[:, context:]


def _timed(decoder) -> list[float]:
    """CPU seconds spent in the decoder's solves (``decoder.evolve``) accumulate in the returned cell."""
    spent = [0.0]
    evolve = decoder.evolve

    def timed(*a, **k):
        t0 = time.process_time()
        try:
            return evolve(*a, **k)
        finally:
            spent[0] += time.process_time() - t0

    decoder.evolve = timed
    return spent


def _set_impl(adapter, impl: str) -> None:
    adapter.model.config = adapter.model.config.replace(solver_impl=impl)
    adapter.model.decoder.cfg = adapter.model.config


def compare(args) -> None:
    """Interleaved CPU time of each entry's forecast with both solves (see the module docstring)."""
    import os
    import statistics

    os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))  # as the harness runs: numba's OpenMP pool
    # otherwise raises torch's thread count too (harness/run/threads.py)
    from models.registry import load_model
    from protocols import interface
    from protocols.interface import SeriesBatch

    print(f"# entries {args.entries}, settings {args.settings}, {args.windows} windows x 2 channels, "
          f"rounds {args.rounds}, threads {args.threads}, torch {torch.__version__}, "
          f"data {'MIT-BIH 100' if args.data_root else 'synthetic'}; CPU seconds per forecast (median)")
    print(f"{'entry':<16}{'setting':<9}{'torchdiffeq':>12}{'native':>9}{'ratio':>7}  {'solve td':>9}{'native':>8}"
          f"{'ratio':>7}  steps td/native")
    for name in args.entries:
        adapter = load_model(name)
        solve = _timed(adapter.model.decoder)
        for setting in args.settings:
            context, horizon = map(int, setting.split("/"))
            ctx, ctx_times, query = _windows(args.data_root, args.windows, context, horizon)
            batch = SeriesBatch(ctx, ctx_times)
            seconds: dict[str, list[float]] = {impl: [] for impl in IMPLS}
            solves: dict[str, list[float]] = {impl: [] for impl in IMPLS}
            steps = {}
            for _ in range(args.rounds + 1):  # the first round warms up
                for impl in IMPLS:
                    _set_impl(adapter, impl)
                    solve[0] = 0.0
                    t0 = time.process_time()
                    interface.forecast(adapter, batch, query)
                    seconds[impl].append(time.process_time() - t0)
                    solves[impl].append(solve[0])
                    steps[impl] = adapter.model.decoder.last_steps
            ratios = [a / b for a, b in zip(seconds["torchdiffeq"][1:], seconds["native"][1:])]
            solve_ratios = [a / b for a, b in zip(solves["torchdiffeq"][1:], solves["native"][1:])]
            td, nat = (statistics.median(seconds[i][1:]) for i in IMPLS)
            std, snat = (statistics.median(solves[i][1:]) for i in IMPLS)
            print(f"{name:<16}{setting:<9}{td:>12.3f}{nat:>9.3f}{statistics.median(ratios):>6.2f}x  {std:>9.3f}"
                  f"{snat:>8.3f}{statistics.median(solve_ratios):>6.2f}x  {steps['torchdiffeq']}/{steps['native']}")
        _set_impl(adapter, "native")


def main() -> None:
    p = soter_parser("soter-small", batch=32, channels=2, context=128, horizon=64)
    p.add_argument("--rollouts", nargs="+", default=["direct", "autoregressive"])
    p.add_argument("--steps", type=int, default=None, help="autoregressive: time only this many steps")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--impl", choices=IMPLS, default="native", help="the decoder's dopri5 solve")
    p.add_argument("--compare", action="store_true", help="both solves on the shipped entries, interleaved")
    p.add_argument("--entries", nargs="+", default=["soter", "soter-anchored"])
    p.add_argument("--settings", nargs="+", default=["48/24", "128/64"])
    p.add_argument("--windows", type=int, default=32)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--data-root", default=None, help="a folder holding MIT-BIH record 100 (else synthetic ECG)")
    args = started(p)
    if args.compare:
        compare(args)
        return
    torch.manual_seed(0)
    dev = torch.device(args.device)
    model = SoterModel(preset(args.config).replace(solver_impl=args.impl)).to(dev).eval()
    b, c, t = args.batch, args.channels, args.context
    values = torch.randn(b, c, t, device=dev)
    times = (torch.arange(t, dtype=torch.float64, device=dev) / 360).repeat(b, 1)
    print(f"# {args.config}, batch {b}, C {c}, {t}/{args.horizon}, device {dev}, threads {args.threads}, "
          f"torch {torch.__version__}")
    for rollout in args.rollouts:
        h = args.horizon if rollout == "direct" or args.steps is None else args.steps
        q = times[:, -1:] + torch.arange(1, h + 1, dtype=torch.float64, device=dev)[None] / 360
        autocast = torch.autocast("cuda", dtype=torch.bfloat16) if dev.type == "cuda" else torch.autocast("cpu", enabled=False)
        best, nfe = float("inf"), 0
        for _ in range(args.repeats):
            with torch.inference_mode(), autocast:
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                model.forecast(values, times, q, rollout)
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                best = min(best, time.perf_counter() - t0)
                nfe = model.decoder.last_nfe
        label = rollout if h == args.horizon else f"{rollout} (first {h} of {args.horizon} steps)"
        print(f"{label}: {1000 * best / b:.2f} ms/sample ({best:.3f} s per batch), NFE of the last solve {nfe}")


if __name__ == "__main__":
    main()
