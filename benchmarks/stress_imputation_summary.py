"""The summary table of docs/stress-tests.md, "Contiguous gaps beside scattered points", from the runs' records.

Usage: python benchmarks/stress_imputation_summary.py [rmse|mae]

Reads ``results/runs/stress-{cohort,mit100,bidmc}[-hold]/records.csv`` (the runs listed in that doc) and pools
the folds with the harness's own ``harness.reporting.tables.pooled``, so that no number in the doc is typed by
hand. A cell that is not complete shows its status instead of a number.
"""

from __future__ import annotations

import sys
from pathlib import Path
from harness.records.store import read_records
from harness.reporting.tables import pooled, SCALE

RUNS = Path("results/runs")
DATASETS = (("cohort", "cohort"), ("mit100", "MIT-BIH 100"), ("bidmc", "bidmc"))
COLS = (("", "locf"), ("", "linear-extrapolation"), ("", "soter"), ("", "soter-anchored"),
        ("-hold", "soter"), ("-hold", "soter-anchored"))
metric = sys.argv[1] if len(sys.argv) > 1 else "rmse"
print("| dataset | rate | mask | locf | linear-extrapolation | soter | soter-anchored | soter, z held | soter-anchored, z held |")
print("|---|---|---|---|---|---|---|---|---|")
for folder, label in DATASETS:
    frames = {}
    for suffix in ("", "-hold"):
        path = RUNS / f"stress-{folder}{suffix}" / "records.csv"
        if path.is_file():
            frames[suffix] = pooled(read_records(path), "imputation")
    for rate in ("25%", "50%"):
        for mask, fam in (("points", ""), ("contiguous 0.5 s", "contiguous-0.5s-exponential-independent ")):
            cells = []
            for suffix, model in COLS:
                f = frames.get(suffix)
                if f is None or (fam == "" and suffix):
                    cells.append("")
                    continue
                g = f[(f.model == model) & (f.condition == f"{fam}missing={rate}")]
                if g.empty:
                    cells.append("")
                elif not g.complete.all():
                    cells.append(f"{g.status.iloc[0]}")
                else:
                    cells.append(f"{float(g[metric].iloc[0]) * SCALE:.2f}")
            low = min((float(c) for c in cells if c.replace('.', '', 1).isdigit()), default=None)
            cells = [f"**{c}**" if low is not None and c.replace('.', '', 1).isdigit() and float(c) == low else c for c in cells]
            print(f"| {label} | {rate[:-1]} % | {mask} | " + " | ".join(cells) + " |")
