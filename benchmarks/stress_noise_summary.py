"""The summary table of docs/stress-tests.md, "Artefacts beside Gaussian noise", from the runs' records.

Usage: python benchmarks/stress_noise_summary.py [rmse|mae]

Reads ``results/runs/stress-{cohort,mit100,bidmc}/records.csv`` (the runs listed in that doc) and pools the folds
with the harness's own ``harness.reporting.tables.pooled``, so that no number in the doc is typed by hand. A cell
that is not complete shows its status instead of a number; bold: the lowest of its dataset's row.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.records.store import read_records
from harness.reporting.tables import SCALE, pooled

RUNS = Path("results/runs")
DATASETS = (("cohort", "cohort"), ("mit100", "MIT-BIH 100"), ("bidmc", "bidmc"))
MODELS = ("soter", "last-value", "window-mean", "seasonal-naive")
CONDITIONS = ("beta=0", "beta=0.25", "beta=1", "wander=0.25", "wander=1", "motion=0.25", "motion=1",
              "motion-origin=0.25", "motion-origin=1", "motion-context-interior=0.25", "motion-context-interior=1",
              "mains-50Hz=0.25", "mains-50Hz=1", "pops=0.25", "pops=1", "clip=0.1", "clip=0.5")
LABELS = {"beta=0": "clean (beta=0)"}


def main(metric: str = "rmse") -> None:
    frames = {folder: pooled(read_records(RUNS / f"stress-{folder}" / "records.csv"), "noise")
              for folder, _ in DATASETS if (RUNS / f"stress-{folder}" / "records.csv").is_file()}
    header = ["condition"] + [f"{label}: {m}" if i == 0 else m for folder, label in DATASETS if folder in frames
                              for i, m in enumerate(MODELS)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for condition in CONDITIONS:
        cells = []
        for folder, _ in DATASETS:
            if folder not in frames:
                continue
            f = frames[folder]
            row = []
            for model in MODELS:
                g = f[(f.model == model) & (f.condition == condition)]
                row.append("" if g.empty else g.status.iloc[0] if not g.complete.all()
                           else f"{float(g[metric].iloc[0]) * SCALE:.2f}")
            numbers = [float(c) for c in row if c.replace(".", "", 1).isdigit()]
            low = min(numbers) if numbers else None
            cells += [f"**{c}**" if low is not None and c.replace(".", "", 1).isdigit() and float(c) == low else c
                      for c in row]
        print(f"| {LABELS.get(condition, condition)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "rmse")
