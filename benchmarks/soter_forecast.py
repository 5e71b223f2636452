"""SOTER forecast speed: context 128 -> horizon 64, 2 channels, both rollout modes.

Usage: python benchmarks/soter_forecast.py [--config soter-small] [--batch 32] [--device cpu|cuda]
       [--threads 1] [--rollouts direct autoregressive] [--steps N]
Random weights (speed does not depend on them; say so when quoting).  Prints ms per sample and
the decoder's solver evaluations (NFE) per solve.  On CUDA the backbone runs under bf16 autocast.
``--steps`` times only the first N autoregressive steps and reports them as such.
"""

from __future__ import annotations

import time

import torch

from models.soter.config import preset
from models.soter.model import SoterModel
from soter_bench import soter_parser, started  # benchmarks/soter_bench.py (the script's folder is on sys.path)


def main() -> None:
    p = soter_parser("soter-small", batch=32, channels=2, context=128, horizon=64)
    p.add_argument("--rollouts", nargs="+", default=["direct", "autoregressive"])
    p.add_argument("--steps", type=int, default=None, help="autoregressive: time only this many steps")
    p.add_argument("--repeats", type=int, default=3)
    args = started(p)
    torch.manual_seed(0)
    dev = torch.device(args.device)
    model = SoterModel(preset(args.config)).to(dev).eval()
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
