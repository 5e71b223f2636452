"""Start-up time of the CLI: CPU time (user + system of the child) and wall time of `python -m harness --help`,
`list`, and of five usage errors of `run` (a misspelt task, an unknown model, a missing dataset folder, a misspelt
model option, a bad setting: each must come back, exit 2, before torch and the adapters are imported).

Usage: python benchmarks/cli_startup.py [--repeat N] [ROOT [ROOT2]]

Each command runs in a fresh subprocess with the repository ROOT as its working directory (so
`python -m harness` imports that checkout's code; default: this repository), its output thrown
away; after one untimed warm-up per command and checkout (byte-compilation, file cache), the
median, min and max of N runs are printed, CPU time first (what the command costs, less sensitive to the load
than wall time). With two checkouts (e.g. the committed code in a
worktree, `git worktree add /tmp/wt-start HEAD`, and the working tree) the runs are interleaved,
old and new one after the other in every repetition, so that load from other processes on the
machine falls on both alike. The load average is printed before and after: compare only figures
taken side by side.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {"--help": ["--help"], "list": ["list"],
            "bad task": ["run", "forecastin"],
            "bad model": ["run", "forecasting", "--models", "soter", "nope"],
            "no folder": ["run", "forecasting", "--dataset", "/nonexistent/dataset-folder"],
            "bad option": ["run", "forecasting", "--models", "soter", "--model-option", "soter.rolout=direct"],
            "bad setting": ["run", "forecasting", "--settings", "48/x"]}
USAGE_ERROR = 2  # what `run` returns for each usage error above


def timed(root: Path, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command: user + system time of the child, from the rusage of the
    children waited for (one at a time)."""
    if args[0] == "run":  # as from a user's shell: a run sets its one thread itself (which imports torch)
        env = {k: v for k, v in env.items() if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=root, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != (USAGE_ERROR if args[0] == "run" else 0):
        raise SystemExit(f"`python -m harness {' '.join(args)}` failed in {root} "
                         f"(exit {proc.returncode}):\n{proc.stderr}")
    return cpu, elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("roots", nargs="*", type=Path, metavar="ROOT",
                   help="repository checkouts to time, e.g. OLD NEW (default: this repository)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per command and checkout (default: 5)")
    args = p.parse_args()
    roots = [r.resolve() for r in args.roots] or [Path(__file__).resolve().parents[1]]
    if len(roots) > 2:
        p.error("at most two checkouts (old and new)")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)  # each checkout imports its own code (the working directory comes first)

    print(f"python {sys.version.split()[0]} ({sys.executable}), {os.cpu_count()} CPUs, "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    times: dict[tuple[str, Path], list[tuple[float, float]]] = {(c, r): [] for c in COMMANDS for r in roots}
    for name, cmd in COMMANDS.items():  # warm-up, untimed
        for root in roots:
            timed(root, cmd, env)
    for _ in range(args.repeat):
        for name, cmd in COMMANDS.items():
            for root in roots:
                times[name, root].append(timed(root, cmd, env))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    for i, root in enumerate(roots):
        print(f"  [{i + 1}] {root}")
    for what, index in (("CPU time (user + system)", 0), ("wall time", 1)):
        print(f"\n{what} of `python -m harness COMMAND`, seconds: median (min-max) of {args.repeat} runs")
        header = f"{'command':<12}" + "".join(f"{f'[{i + 1}]':>20}" for i in range(len(roots)))
        print(header + (f"{'[2] / [1]':>12}" if len(roots) == 2 else ""))
        for name in COMMANDS:
            runs = [[t[index] for t in times[name, r]] for r in roots]
            meds = [statistics.median(r) for r in runs]
            cells = [f"{m:.2f} ({min(r):.2f}-{max(r):.2f})" for m, r in zip(meds, runs)]
            line = f"{name:<12}" + "".join(f"{c:>20}" for c in cells)
            if len(roots) == 2:
                line += f"{meds[1] / meds[0]:>12.2f}"
            print(line)


if __name__ == "__main__":
    main()
