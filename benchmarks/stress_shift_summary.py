"""The summary tables of docs/stress-tests.md, "Subject shift", from the runs' records.

Usage: python benchmarks/stress_shift_summary.py [rmse|mae] [--ratio]

Reads ``results/runs/shift-{cohort,mit100,bidmc}/records.csv`` (the runs listed in that doc) and pools the folds
with the harness's own ``harness.reporting.tables.pooled``, so that no number in the doc is typed by hand: one row
per dataset and model, one column per condition (x100, normalised); ``--ratio``: each cell divided by last value's
cell of the same dataset and condition (last value is level-equivariant and scale-equivariant: its ratio is the
model's own loss under the shift). A cell that is not complete shows its status instead of a number.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.records.store import read_records
from harness.reporting.tables import SCALE, condition_value, pooled

RUNS = Path("results/runs")
DATASETS = (("cohort", "cohort"), ("mit100", "MIT-BIH 100"), ("bidmc", "bidmc"))
REFERENCE = "last-value"


def main(metric: str = "rmse", ratio: bool = False) -> None:
    frames = {label: pooled(read_records(RUNS / f"shift-{folder}" / "records.csv"), "shift")
              for folder, label in DATASETS if (RUNS / f"shift-{folder}" / "records.csv").is_file()}
    conditions = sorted({c for f in frames.values() for c in f.condition},
                        key=lambda c: (c.partition("=")[0] if c != "shift=0" else "", condition_value(c)))
    print("| dataset | model | " + " | ".join(conditions) + " |")
    print("|---|---|" + "---|" * len(conditions))
    for label, f in frames.items():
        for model in dict.fromkeys(f.model):
            cells = []
            for condition in conditions:
                g = f[(f.model == model) & (f.condition == condition)]
                ref = f[(f.model == REFERENCE) & (f.condition == condition)]
                if g.empty:
                    cells.append("")
                elif not g.complete.all():
                    cells.append(str(g.status.iloc[0]))
                elif ratio:
                    cells.append(f"{float(g[metric].iloc[0]) / float(ref[metric].iloc[0]):.2f}x" if len(ref) else "")
                else:
                    cells.append(f"{float(g[metric].iloc[0]) * SCALE:.2f}")
            print(f"| {label} | {model} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    words = [w for w in sys.argv[1:] if w != "--ratio"]
    main(words[0] if words else "rmse", "--ratio" in sys.argv[1:])
