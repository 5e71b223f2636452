"""Wall time of each task's default run on the embedded cohort (fresh output folder), and of its rerun.

Usage: python benchmarks/harness_tasks.py [--jobs N] [--tasks forecasting imputation ...] [--markdown]

Every registered task by default (physiology included), each `python -m harness run TASK --out FRESH` in a
subprocess, then the same command again (every row cached). One fresh cohort cache for the whole invocation
(``SOTER_BENCH_CACHE``), so the first task also generates the embedded cohort. The load average is printed before
and after each task: run it with nothing else busy on the machine and say the load with the figures
(docs/run-times.md, BENCHMARKS.md). ``--markdown`` prints the table docs/run-times.md shows.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    from harness.registry.tasks import all_tasks

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--tasks", nargs="+", default=list(all_tasks()))
    p.add_argument("--markdown", action="store_true", help="also print the rows as a Markdown table")
    args = p.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, python "
          f"{platform.python_version()}, jobs={args.jobs}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    env = {**os.environ, "SOTER_BENCH_CACHE": tempfile.mkdtemp(prefix="bench-cache-")}
    rows = []
    for task in args.tasks:
        out = Path(tempfile.mkdtemp(prefix=f"bench-{task}-"))
        cmd = [sys.executable, "-m", "harness", "run", task, "--out", str(out), "--jobs", str(args.jobs),
               "--no-progress"]
        before = _load()
        t0 = time.perf_counter()
        first = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
        t1 = time.perf_counter()
        second = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
        t2 = time.perf_counter()
        if first.returncode or second.returncode:
            print(first.stderr[-2000:], second.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"{task} failed")
        cells = next((line for line in first.stdout.splitlines() if " cells: " in line), "?")
        after = _load()
        rows.append((task, cells.split(" cells:")[0], t1 - t0, t2 - t1, before, after))
        print(f"{task}: first run {t1 - t0:.1f} s, rerun {t2 - t1:.1f} s  ({cells}); load {before} -> {after}",
              flush=True)
    if args.markdown:
        print("\n| task | cells | first run | rerun (cached) | load average before -> after |\n|---|---|---|---|---|")
        for task, cells, first_s, again_s, before, after in rows:
            print(f"| {task} | {cells} | {first_s:.0f} s | {again_s:.1f} s | {before} -> {after} |")


if __name__ == "__main__":
    main()
