"""A run's wall time on a quiet CPU and beside a controlled busy loop on every core, side by side.

Usage: python benchmarks/busy_cpu.py [--busy 2] [--repeats 1] [--variant NAME[:VAR=VALUE,...] ...]
       [-- HARNESS RUN ARGUMENTS]   (default: forecasting, the default models)

Each variant runs `python -m harness run ...` into a fresh output folder (the cohort cache is warmed
first), once with nothing of ours running and once beside ``--busy`` processes spinning `while True`
(one per core: a shared laptop or a login node), quiet and loaded alternating so that drifting
background load hits both. Prints per variant: wall seconds quiet and loaded, their ratio, and the
recorded cell seconds per model, with `uptime` before and after. Issue #32: the default forecasting
run must stay within 3x of its quiet time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd


@contextmanager
def busy_loops(n: int):
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    time.sleep(1.0)  # let them take the cores
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def run_once(run_args: list[str], env: dict[str, str]) -> tuple[float, dict[str, float]]:
    out = Path(tempfile.mkdtemp(prefix="busy-cpu-"))
    cmd = [sys.executable, "-m", "harness", "run", *run_args, "--out", str(out), "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    frame = pd.read_csv(out / "records.csv")
    return wall, frame.groupby("model")["seconds"].sum().round(1).to_dict()


def main() -> None:
    argv = sys.argv[1:]
    run_args = argv[argv.index("--") + 1:] if "--" in argv else ["forecasting"]
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser()
    p.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--no-warm", action="store_true", help="skip the untimed first run (caches already warm)")
    p.add_argument("--variant", nargs="+", default=["as-shipped"],
                   help="NAME or NAME:VAR=VALUE,VAR=VALUE (environment of that variant's runs)")
    args = p.parse_args(argv)
    variants = []
    for item in args.variant:
        name, _, assigns = item.partition(":")
        extra = dict(a.split("=", 1) for a in assigns.split(",") if a)
        variants.append((name, extra))
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    print(f"# harness run {' '.join(run_args)}; {os.cpu_count()} cores; busy loops: {args.busy}")
    print("# uptime before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if not args.no_warm:
        run_once(run_args, base)  # warm the cohort cache and the numba cache: not timed
    for _ in range(args.repeats):
        for name, extra in variants:
            env = {**base, **extra}
            quiet, q_models = run_once(run_args, env)
            with busy_loops(args.busy):
                loaded, l_models = run_once(run_args, env)
            print(f"{name:<14} quiet {quiet:7.1f} s  loaded {loaded:7.1f} s  ratio {loaded / quiet:5.2f}  "
                  f"cells quiet {q_models}  loaded {l_models}", flush=True)
    print("# uptime after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
