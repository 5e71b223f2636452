"""SOTER training step (forward + backward + AdamW), next-timestamp Huber objective.

Usage: python benchmarks/soter_train_step.py [--config soter-small] [--batch 8] [--channels 4]
       [--length 512] [--device cpu|cuda] [--regime full|missing] [--dft fast|loop] [--steps 5]
Random weights and inputs.  Prints ms per step, tokens/s (batch x channels x length per step),
peak memory on CUDA, and the decoder's NFE.  bf16 autocast on CUDA.

``--impl native|torchdiffeq`` picks the decoder's dopri5 solve; ``--compare`` times both on the same weights
and batch, their steps interleaved (A B A B ...), and prints the median CPU seconds per step of each and the
median of the per-pair ratios torchdiffeq / native.
"""

from __future__ import annotations

import time

import torch

from models.soter.config import preset
from models.soter.model import SoterModel
from soter_bench import soter_parser, started  # benchmarks/soter_bench.py (the script's folder is on sys.path)


def compare(args) -> None:
    """Both solves on the same weights, batch and optimiser settings, steps interleaved; CPU seconds."""
    import os
    import statistics

    os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))
    cfg = preset(args.config).replace(dft_impl=args.dft)
    base = SoterModel(cfg)
    models, opts = {}, {}
    for impl in ("torchdiffeq", "native"):
        models[impl] = SoterModel(cfg.replace(solver_impl=impl))
        models[impl].load_state_dict(base.state_dict())
        models[impl].train()
        opts[impl] = torch.optim.AdamW(models[impl].parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                                       weight_decay=0.01)
    b, c, t = args.batch, args.channels, args.length
    values = torch.randn(b, c, t + 1)
    times = (torch.arange(t + 1, dtype=torch.float64) / 125).repeat(b, 1)
    mask = torch.ones(b, c, t, dtype=torch.bool)
    if args.regime == "missing":
        mask = torch.rand(b, c, t) > 0.15
    seconds = {impl: [] for impl in models}
    losses = {impl: [] for impl in models}
    for _ in range(args.steps + 1):  # the first pair warms up
        for impl, model in models.items():
            t0 = time.process_time()
            loss = model.next_step_loss(values[..., :t], times[:, :t], values[..., t], times[:, t], mask,
                                        controlled=args.regime == "missing")
            opts[impl].zero_grad(set_to_none=True)
            loss.backward()
            opts[impl].step()
            seconds[impl].append(time.process_time() - t0)
            losses[impl].append(loss.item())
    ratio = statistics.median(a / n for a, n in zip(seconds["torchdiffeq"][1:], seconds["native"][1:]))
    print(f"# {args.config}, batch {b} x C {c} x T {t}, regime {args.regime}, threads {args.threads}, "
          f"torch {torch.__version__}, {args.steps} interleaved pairs, CPU seconds per step (median)")
    print(f"torchdiffeq {statistics.median(seconds['torchdiffeq'][1:]):.3f}  native "
          f"{statistics.median(seconds['native'][1:]):.3f}  ratio {ratio:.2f}x  NFE "
          f"{models['torchdiffeq'].decoder.last_nfe}/{models['native'].decoder.last_nfe}  first loss "
          f"{losses['torchdiffeq'][0]:.6f}/{losses['native'][0]:.6f}")


def main() -> None:
    p = soter_parser("soter-small", batch=8, channels=4, length=512)
    p.add_argument("--regime", choices=("full", "missing"), default="full")
    p.add_argument("--dft", choices=("fast", "loop"), default="fast")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--impl", choices=("native", "torchdiffeq"), default="native", help="the decoder's dopri5 solve")
    p.add_argument("--compare", action="store_true", help="native vs torchdiffeq, interleaved")
    args = started(p)
    torch.manual_seed(42)
    if args.compare:
        compare(args)
        return
    dev = torch.device(args.device)
    cfg = preset(args.config).replace(dft_impl=args.dft, solver_impl=args.impl)
    model = SoterModel(cfg).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01)
    b, c, t = args.batch, args.channels, args.length
    values = torch.randn(b, c, t + 1, device=dev)
    times = (torch.arange(t + 1, dtype=torch.float64, device=dev) / 125).repeat(b, 1)
    mask = torch.ones(b, c, t, dtype=torch.bool, device=dev)
    if args.regime == "missing":
        mask = torch.rand(b, c, t, device=dev) > 0.15
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if dev.type == "cuda" else torch.autocast("cpu", enabled=False)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    durations = []
    for _ in range(args.steps + 1):  # the first step warms up
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with autocast:
            loss = model.next_step_loss(values[..., :t], times[:, :t], values[..., t], times[:, t], mask,
                                        controlled=args.regime == "missing")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        durations.append(time.perf_counter() - t0)
    step = sorted(durations[1:])[len(durations[1:]) // 2]
    peak = f", peak memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB" if dev.type == "cuda" else ""
    print(f"# {args.config}, batch {b} x C {c} x T {t}, regime {args.regime}, DFT {args.dft}, device {dev}, "
          f"threads {args.threads}, torch {torch.__version__}")
    print(f"median step {1000 * step:.1f} ms, {b * c * t / step:,.0f} tokens/s{peak}, "
          f"NFE {model.decoder.last_nfe}, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
