"""The tables of docs/stress-tests.md, "Irregular sampling", from the runs' records (no number typed by hand).

Usage: python benchmarks/irregular_summary.py [rmse|mae]

Reads ``results/runs/irr-{cohort,mitbih,bidmc,default}/records.csv`` (the runs listed in that doc), pools the folds with
the harness's own ``harness.reporting.tables.pooled``, and prints per dataset one table: a row per model (with its
input path), a column per pattern and severity (x100, normalised). It also checks the ``regular`` rows against the
committed forecasting rows of the same windows (``results/<folder>/records.csv``, 96/48): their error sums must be
equal, bit for bit; it prints how many rows it compared and how many differ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.records.store import read_records
from harness.reporting.tables import SCALE, pooled

RUNS = Path("results/runs")
DATASETS = (("cohort", "cohort", "cohort"), ("mitbih", "MIT-BIH 100", "mitbih-100"), ("bidmc", "bidmc", None),
            ("default", "cohort, the default run (`run irregular`: 16 windows, no fracast)", "cohort"))


def regular_check(frame, committed: Path | None) -> str:
    """How many regular rows equal the committed forecasting rows of the same fold, model and windows."""
    if committed is None or not committed.is_file():
        return "no committed forecasting records of this dataset to compare with"
    fc = read_records(committed)
    fc = fc[(fc["task"] == "forecasting") & (fc["setting"] == "96/48") & (fc["status"] == "ok")]
    reg = frame[(frame["condition"] == "regular") & (frame["status"] == "ok")]
    ref = {(r.fold, r.model, r.protocol): (r.sse, r.sae, r.n_points) for r in fc.itertuples()}
    same = differ = 0
    for r in reg.itertuples():
        want = ref.get((r.fold, r.model, r.protocol.replace("irregular-v1;", "")))
        if want is None:
            continue
        if (float(r.sse), float(r.sae), int(r.n_points)) == tuple(map(float, want[:2])) + (int(want[2]),):
            same += 1
        else:
            differ += 1
    return f"regular rows equal to the committed forecasting rows (sse, sae, n): {same} of {same + differ}"


def main(metric: str = "rmse") -> None:
    for folder, label, committed in DATASETS:
        path = RUNS / f"irr-{folder}" / "records.csv"
        if not path.is_file():
            continue
        frame = read_records(path)
        frame = frame[frame["task"] == "irregular"]
        per = pooled(frame, "irregular")
        conditions = ["regular"] + sorted(c for c in set(per["condition"]) if c != "regular")
        inputs = {m: json.loads(d).get("input", "") for m, d in zip(frame["model"], frame["details"].fillna("{}"))
                  if d}
        print(f"\n**{label}** ({metric.upper()} x100; {len(frame)} rows)\n")
        print("| model (input) | " + " | ".join(conditions) + " |")
        print("|---" * (len(conditions) + 1) + "|")
        for model in dict.fromkeys(per["model"]):
            cells = []
            for c in conditions:
                row = per[(per["model"] == model) & (per["condition"] == c)]
                if row.empty:
                    cells.append("-")
                else:
                    r = row.iloc[0]
                    cells.append(f"{r[metric] * SCALE:.2f}" if r["complete"] else str(r["status"]))
            print(f"| {model} ({inputs.get(model, '?')}) | " + " | ".join(cells) + " |")
        print("\n" + regular_check(frame, Path("results") / committed / "records.csv" if committed else None))


if __name__ == "__main__":
    main(*sys.argv[1:])
