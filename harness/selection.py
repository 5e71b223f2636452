"""Held-out model selection for SOTER training runs (issue #26): one number per model, from the
harness's own forecasting records on held-out sets (``models.soter.training.heldout``), never
from the evaluation datasets.

    python -m harness run forecasting --dataset heldout/mimic-3234460_0016:blocks=6 heldout/synthetic-9000 \\
        --models soter last-value --weights soter=runs/x/checkpoint-00001500 --out score/x
    python -m harness.selection --out score/x

Score of a model = the mean, over the held-out datasets and over RMSE and MAE (each the mean over
the settings, folds pooled as in the tables), of its ratio to the reference model's (default
last value): below 1 beats copying the last sample on average. A model with any incomplete cell
has no score (the ratio would compare different windows).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from harness.records.store import read_records
from harness.reporting.tables import pooled

METRICS = ("rmse", "mae")


def ratios(frame: pd.DataFrame, reference: str = "last-value") -> pd.DataFrame:
    """Per (dataset, model): RMSE and MAE (means over settings) and their ratios to the reference's."""
    cells = pooled(frame, "forecasting")
    if cells.empty:
        raise ValueError("no forecasting records")
    grouped = cells.groupby(["dataset", "model"], sort=False)
    table = grouped[list(METRICS)].mean().join(grouped["complete"].all()).reset_index()
    if reference not in set(table["model"]):
        raise ValueError(f"the reference model {reference!r} has no records here")
    ref = table[table["model"] == reference].set_index("dataset")
    for m in METRICS:
        table[f"{m}_ratio"] = table[m] / table["dataset"].map(ref[m])
    return table


def scores(frame: pd.DataFrame, reference: str = "last-value") -> pd.Series:
    """Score per model (mean of its ratios); NaN for a model with an incomplete cell or dataset."""
    table = ratios(frame, reference)
    datasets = table["dataset"].nunique()
    out = {}
    for model, g in table.groupby("model", sort=False):
        ok = bool(g["complete"].all()) and len(g) == datasets
        out[model] = float(np.mean(g[[f"{m}_ratio" for m in METRICS]].to_numpy())) if ok else np.nan
    return pd.Series(out, name="score")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.selection", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, nargs="+", required=True, help="run folders (records.csv) to score")
    p.add_argument("--reference", default="last-value")
    args = p.parse_args(argv)
    frame = pd.concat([read_records(d / "records.csv") for d in args.out], ignore_index=True)
    table = ratios(frame, args.reference)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print((table.assign(**{m: table[m] * 100 for m in METRICS})).round(4).to_string(index=False))
        print("\nscore (mean ratio to %s; lower is better):" % args.reference)
        print(scores(frame, args.reference).round(4).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
