"""Wall time of each task's default run on the embedded cohort (fresh output folder).

Usage: python benchmarks/harness_tasks.py [--jobs N] [--tasks forecasting imputation ...]
Prints one line per task: task, cells, seconds, and the rerun (cache) time.  Run it with
nothing else busy on the machine; record the figures in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--tasks", nargs="+", default=["forecasting", "imputation", "noise", "classification"])
    args = p.parse_args()
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}, jobs={args.jobs}")
    for task in args.tasks:
        out = Path(tempfile.mkdtemp(prefix=f"bench-{task}-"))
        cmd = [sys.executable, "-m", "harness", "run", task, "--out", str(out), "--jobs", str(args.jobs),
               "--no-progress"]
        t0 = time.perf_counter()
        first = subprocess.run(cmd, capture_output=True, text=True)
        t1 = time.perf_counter()
        second = subprocess.run(cmd, capture_output=True, text=True)
        t2 = time.perf_counter()
        if first.returncode or second.returncode:
            print(first.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"{task} failed")
        cells = next((line for line in first.stdout.splitlines() if " cells: " in line), "?")
        print(f"{task}: first run {t1 - t0:.1f} s, rerun {t2 - t1:.1f} s  ({cells})")


if __name__ == "__main__":
    main()
