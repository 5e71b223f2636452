"""SOTER's CPU time in source trees side by side: forecast cells, training steps, imputation calls.

Usage: python benchmarks/soter_ab.py --trees OLD NEW [NEW2 ...] [--what forecast train impute] [--rounds 5]
       [--repeats 3] [--entries soter soter-anchored] [--settings 48/24 128/64] [--windows 32] [--data-root DIR]
       [--train-config soter-cpu-64] [--train-shapes 8x2x256 8x2x64:missing] [--impute-shapes 4x4x640]

``OLD``, ``NEW``, ... are folders holding the project's source (a ``git worktree add`` of a commit, or this checkout);
every later tree is compared with ``OLD``. Each round starts one child process per tree, in the given order, the next
round in the reverse order (A B B A ...), so that a busy machine's load falls on all alike; a child imports the
models from its tree only (PYTHONPATH), runs one untimed warm-up of every case, then times ``--repeats`` calls of
each (``time.process_time``: CPU seconds of the child, one torch and one numba thread as the harness runs). Printed
per case: the median over rounds of each tree's CPU seconds per call and the median of the per-round ratios
OLD / tree.

Cases: ``forecast``: one forecast of ``--windows`` windows x 2 channels by each shipped entry through the harness's
adapter (its ``entry.toml`` options), MIT-BIH 100 with ``--data-root`` (MinMax-scaled, as benchmarks/soter_forecast.py
takes them), else synthetic ECG; ``train``: one step (forward, backward, AdamW) of a randomly initialised
``--train-config`` on random B x C x T inputs (``:missing``: the CDE regime, 15 % of points missing), an expert
without a gradient given a zero one before the step as the trainer does; ``impute``: one causal imputation call of
the first entry (the CDE regime on a B x C x T prefix with 25 % missing, the call a whole imputed segment makes once
per missing point).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _child(args: argparse.Namespace) -> None:
    """Runs inside one tree: prints {case: CPU seconds per call} as JSON on its last line."""
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # as harness/run/threads.py: numba's pool raises torch's too
    import numpy as np
    import torch

    torch.set_num_threads(1)
    cases: dict[str, object] = {}
    if "forecast" in args.what:
        from models.registry import load_model
        from protocols import interface
        from protocols.interface import SeriesBatch
        from soter_forecast import _windows  # benchmarks/ is on sys.path: this script's folder

        for name in args.entries:
            adapter = load_model(name)
            for setting in args.settings:
                context, horizon = map(int, setting.split("/"))
                ctx, ctx_times, query = _windows(args.data_root, args.windows, context, horizon)
                batch = SeriesBatch(ctx, ctx_times)
                cases[f"forecast {name} {setting}"] = (lambda a=adapter, b=batch, q=query: interface.forecast(a, b, q))
    if "impute" in args.what:
        from models.registry import load_model
        from protocols import interface
        from protocols.interface import SeriesBatch

        adapter = load_model(args.entries[0])
        for shape in args.impute_shapes:
            b, c, t = map(int, shape.split("x"))
            rng = np.random.default_rng(0)
            values = rng.standard_normal((b, c, t))
            times = np.tile(np.arange(t) / 64.0, (b, 1))
            mask = rng.random((b, c, t)) > 0.25
            mask[..., :8] = True
            batch = SeriesBatch(values, times, mask=mask)
            query = times[:, -1] + 1 / 64.0
            cases[f"impute {args.entries[0]} {shape}"] = (lambda a=adapter, bt=batch, q=query: interface.impute(a, bt, q))
    if "train" in args.what:
        from models.soter.config import preset
        from models.soter.model import SoterModel
        from models.soter.moe import zero_missing_grads

        for shape in args.train_shapes:
            dims, _, regime = shape.partition(":")
            b, c, t = map(int, dims.split("x"))
            torch.manual_seed(42)
            model = SoterModel(preset(args.train_config)).train()
            opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01)
            values = torch.randn(b, c, t + 1)
            times = (torch.arange(t + 1, dtype=torch.float64) / 125).repeat(b, 1)
            mask = torch.rand(b, c, t) > 0.15 if regime == "missing" else torch.ones(b, c, t, dtype=torch.bool)

            def step(m=model, o=opt, v=values, ts=times, mk=mask, t=t, controlled=regime == "missing"):
                loss = m.next_step_loss(v[..., :t], ts[:, :t], v[..., t], ts[:, t], mk, controlled=controlled)
                o.zero_grad(set_to_none=True)
                loss.backward()
                zero_missing_grads(m)  # as the trainer does before every step
                o.step()

            cases[f"train {args.train_config} {shape}"] = step
    for run in cases.values():  # warm-up: compilation, caches, first allocations
        run()
    seconds = {}
    for name, run in cases.items():
        t0 = time.process_time()
        for _ in range(args.repeats):
            run()
        seconds[name] = (time.process_time() - t0) / args.repeats
    print(json.dumps(seconds))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trees", nargs="+", type=Path, help="OLD NEW [NEW2 ...]: source trees, the first the reference")
    p.add_argument("--what", nargs="+", choices=("forecast", "train", "impute"), default=["forecast"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3, help="timed calls of each case per child")
    p.add_argument("--entries", nargs="+", default=["soter", "soter-anchored"])
    p.add_argument("--settings", nargs="+", default=["48/24", "128/64"])
    p.add_argument("--windows", type=int, default=32)
    p.add_argument("--data-root", default=None)
    p.add_argument("--train-config", default="soter-cpu-64")
    p.add_argument("--train-shapes", nargs="+", default=["8x2x256", "8x2x64:missing"])
    p.add_argument("--impute-shapes", nargs="+", default=["4x4x640"])
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args)
        return
    if not args.trees or len(args.trees) < 2:
        p.error("--trees OLD NEW [NEW2 ...] is required")
    for tree in args.trees:
        if not (tree / "models" / "soter").is_dir():
            print(f"error: {tree} holds no models/soter (a source tree of this project is needed)", file=sys.stderr)
            sys.exit(2)
    forwarded = [a for a in sys.argv[1:] if a != "--trees" and Path(a) not in args.trees]
    results: dict[str, list[dict[str, float]]] = {str(t): [] for t in args.trees}
    print(f"# {' '.join(sys.argv)}\n# load at start: {os.getloadavg()}", flush=True)
    for r in range(args.rounds):
        order = args.trees if r % 2 == 0 else args.trees[::-1]
        for tree in order:
            env = dict(os.environ, PYTHONPATH=str(tree.resolve()), OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
                       HF_HUB_OFFLINE="1")
            out = subprocess.run([sys.executable, __file__, "--child", *forwarded], cwd=tree, env=env,
                                 capture_output=True, text=True)
            if out.returncode:
                print(out.stderr[-3000:], file=sys.stderr)
                sys.exit(out.returncode)
            results[str(tree)].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"# round {r + 1} done, load {os.getloadavg()}", flush=True)
    old = results[str(args.trees[0])]
    for tree in args.trees[1:]:
        new = results[str(tree)]
        print(f"OLD = {args.trees[0]}, NEW = {tree}")
        print(f"{'case':<36}{'OLD s':>9}{'NEW s':>9}{'OLD/NEW':>9}   per-round ratios")
        for case in old[0]:
            ratios = [a[case] / b[case] for a, b in zip(old, new)]
            print(f"{case:<36}{statistics.median(a[case] for a in old):>9.4f}"
                  f"{statistics.median(b[case] for b in new):>9.4f}{statistics.median(ratios):>8.2f}x   "
                  f"{' '.join(f'{x:.2f}' for x in ratios)}")
    print(f"# load at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
