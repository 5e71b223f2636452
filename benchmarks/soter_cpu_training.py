"""CPU training speed-ups, measured side by side: the reference path and each speed-up take turns
on the same batches (interleaved repetitions), so machine load affects both alike.

Usage: python benchmarks/soter_cpu_training.py [--config soter-cpu-64] [--batch 8] [--channels 4]
       [--length 256] [--threads 2] [--repeats 6] [--targets 32]
Prints the median seconds per train step (forward, backward, AdamW) and tokens/s of each variant,
and each variant's ratio to the reference (dense experts, the paper's fixed-length context).
The last variant adds ``--targets`` M targets per window in the full-history regime
(``--targets-per-window``, offsets uniform in 1..64): M solves from one backbone pass.
Random weights and inputs: speed does not depend on them.  Record results in BENCHMARKS.md.
"""

from __future__ import annotations

import os
import statistics
import time

import torch

from models.soter.config import preset
from models.soter.model import SoterModel
from models.soter.moe import zero_missing_grads
from soter_bench import soter_parser, started  # benchmarks/soter_bench.py (the script's folder is on sys.path)


def step_seconds(model: SoterModel, opt: torch.optim.Optimizer, length: int, batch: int, channels: int,
                 controlled: bool, seed: int, targets: int = 1) -> float:
    g = torch.Generator().manual_seed(seed)
    m = 1 if controlled else targets  # the missingness regime keeps one next-sample target
    values = torch.rand(batch, channels, length + m, generator=g)
    times = (torch.arange(length, dtype=torch.float64) / 64).repeat(batch, 1)
    offsets = torch.randint(1, 65, (batch, m), generator=g) if m > 1 else torch.ones(batch, 1)
    query = times[:, -1:] + offsets.double() / 64
    mask = torch.rand(batch, channels, length, generator=g) > (0.15 if controlled else -1.0)
    target, target_time = (values[..., length:], query) if m > 1 else (values[..., length], query[:, 0])
    t0 = time.perf_counter()
    loss = model.next_step_loss(values[..., :length], times, target, target_time, mask, controlled)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    zero_missing_grads(model)
    opt.step()
    return time.perf_counter() - t0


def main() -> None:
    p = soter_parser("soter-cpu-64", batch=8, channels=4, threads=2, device=False, length=256)
    p.add_argument("--min-context", type=int, default=32, help="the variable-length variant's lower bound")
    p.add_argument("--repeats", type=int, default=6)
    p.add_argument("--targets", type=int, default=32, help="targets per window of the last variant")
    args = started(p)
    base = preset(args.config)
    # (label, expert execution, context lengths of the repetitions)
    mean_length = (args.min_context + args.length) // 2
    variants = [("dense experts, fixed length (reference)", "dense", args.length),
                ("grouped experts, fixed length", "auto", args.length),
                (f"grouped experts, mean variable length ({mean_length})", "auto", mean_length),
                (f"grouped experts, mean variable length ({mean_length}), {args.targets} targets per window",
                 "auto", mean_length)]
    targets = [1, 1, 1, args.targets]
    models = []
    for _, mode, _ in variants:
        torch.manual_seed(0)
        m = SoterModel(base.replace(expert_execution=mode)).train()
        models.append((m, torch.optim.AdamW(m.parameters(), lr=1e-3)))
    times: list[list[float]] = [[] for _ in variants]
    for r in range(args.repeats + 1):  # the first round warms up (numba compilation, allocator)
        for i, ((_, _, length), (m, opt)) in enumerate(zip(variants, models)):
            s = step_seconds(m, opt, length, args.batch, args.channels, controlled=r % 2 == 1, seed=r,
                             targets=targets[i])
            if r:
                times[i].append(s)
    load = os.getloadavg()[0]
    print(f"# {args.config}, batch {args.batch} x C {args.channels}, threads {args.threads}, "
          f"{args.repeats} interleaved repetitions (both regimes), load average {load:.2f}, torch {torch.__version__}")
    ref = statistics.median(times[0])
    for (label, _, length), ts in zip(variants, times):
        med = statistics.median(ts)
        print(f"{label}: {med * 1000:.0f} ms per step, {args.batch * args.channels * length / med:,.0f} tokens/s, "
              f"{ref / med:.2f}x the reference's steps/s")


if __name__ == "__main__":
    main()
