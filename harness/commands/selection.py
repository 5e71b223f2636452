"""Held-out model selection for SOTER training runs: one number per model, from the harness's own forecasting
records on held-out sets, never from the evaluation datasets.

Issue #45's rule (``--rule best-naive``, on the broad selection set of ``models.soter.training.selection_set``):
per set and metric (RMSE, MAE; each the mean over the settings, folds pooled), the model's ratio to the BEST of the
naive baselines on that set (last value, window mean, drift, seasonal naive); a run's score is the geometric mean
of those ratios (below 1 beats the best naive forecaster on average), reported with the number of sets on which
it beats every naive baseline on both metrics.

    python -m harness.selection run --weights soter-anchored=RUN/checkpoint-00004000 --out score/x
        [--sets SELDIR]   # builds the selection set there if needed, runs the cells (cached), prints the scores

Issue #26's rule (``--rule last-value``, the default of the form below; rules V2-V14):

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
NAIVE = ("last-value", "window-mean", "drift", "seasonal-naive")
# a win over a naive baseline must be larger than float32 rounding: a model whose forecast IS that baseline's (an
# untrained naive-residual SOTER computes it in float32, the baseline in float64) differs from it by ~1e-7
WIN_MARGIN = 1e-6


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


def best_naive(frame: pd.DataFrame, naive: tuple[str, ...] = NAIVE) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Issue #45's rule. Per (dataset, model) the ratios to the best naive baseline of that dataset and whether it
    beats every naive baseline on both metrics; per model the score (geometric mean of the ratios; NaN with an
    incomplete cell or a dataset missing) and the number of such wins."""
    cells = pooled(frame, "forecasting")
    if cells.empty:
        raise ValueError("no forecasting records")
    grouped = cells.groupby(["dataset", "model"], sort=False)
    table = grouped[list(METRICS)].mean().join(grouped["complete"].all()).reset_index()
    missing = [m for m in naive if m not in set(table["model"])]
    if missing:
        raise ValueError(f"the naive baselines {missing} have no records here")
    ref = table[table["model"].isin(naive)]
    for m in METRICS:
        best = ref.groupby("dataset")[m].min()
        table[f"{m}_ratio"] = table[m] / table["dataset"].map(best)
        table[f"{m}_best_naive"] = table["dataset"].map(ref.loc[ref.groupby("dataset")[m].idxmin()]
                                                        .set_index("dataset")["model"])
    table["beats_all_naive"] = (table["rmse_ratio"] < 1 - WIN_MARGIN) & (table["mae_ratio"] < 1 - WIN_MARGIN)
    datasets = table["dataset"].nunique()
    rows = []
    for model, g in table.groupby("model", sort=False):
        ok = bool(g["complete"].all()) and len(g) == datasets
        ratios_ = g[[f"{m}_ratio" for m in METRICS]].to_numpy()
        rows.append({"model": model, "score": float(np.exp(np.log(ratios_).mean())) if ok else np.nan,
                     "sets_beating_every_naive": int(g["beats_all_naive"].sum()), "sets": len(g)})
    return table, pd.DataFrame(rows)


def run_selection(weights: list[str], out: Path, sets: Path, data_root: Path | None = None, log=print) -> Path:
    """Builds the selection set under ``sets`` (checked against its frozen fingerprints) and runs the forecasting
    cells of the weighted models and the naive baselines on it into ``out`` (cached, resumable)."""
    from harness.run.runner import RunConfig, execute
    from models.soter.training.selection_set import build, dataset_names

    build(sets, data_root or Path("../shared/data"))
    pairs = tuple(tuple(w.split("=", 1)) for w in weights)
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError("--weights expects MODEL=DIR")
    models = tuple(dict.fromkeys([*(m for m, _ in pairs), *NAIVE]))
    config = RunConfig(task="forecasting", datasets=tuple(str(sets / n) for n in dataset_names()), models=models,
                       out=out, weights=pairs, progress=False)
    execute(config, log=log)
    return out / "records.csv"


def _print_best_naive(frame: pd.DataFrame) -> None:
    table, summary = best_naive(frame)
    shown = table[~table["model"].isin(NAIVE)]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(shown[["dataset", "model", "rmse_ratio", "rmse_best_naive", "mae_ratio", "mae_best_naive",
                     "beats_all_naive"]].round(4).to_string(index=False))
        print("\nscore (geometric mean of the ratios to the best naive baseline per set; lower is better):")
        print(summary.round(4).to_string(index=False))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        r = argparse.ArgumentParser(prog="python -m harness.selection run", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        r.add_argument("--weights", nargs="+", required=True, help="MODEL=DIR: the checkpoints to score")
        r.add_argument("--out", type=Path, required=True, help="records folder (cached)")
        r.add_argument("--sets", type=Path, default=Path("results/runs/selection-set"),
                       help="where the selection set is built (default: %(default)s)")
        r.add_argument("--data-root", type=Path, default=None, help="../shared/data by default")
        args = r.parse_args(argv[1:])
        try:
            records = run_selection(args.weights, args.out, args.sets, args.data_root)
        except ValueError as exc:
            r.error(str(exc))
        _print_best_naive(read_records(records))
        return 0
    p = argparse.ArgumentParser(prog="python -m harness.selection", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, nargs="+", required=True, help="run folders (records.csv) to score")
    p.add_argument("--reference", default="last-value")
    p.add_argument("--rule", choices=("last-value", "best-naive"), default="last-value",
                   help="best-naive: issue #45's rule (the selection set); last-value: issue #26's (V2-V14)")
    args = p.parse_args(argv)
    frame = pd.concat([read_records(d / "records.csv") for d in args.out], ignore_index=True)
    if args.rule == "best-naive":
        _print_best_naive(frame)
        return 0
    table = ratios(frame, args.reference)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print((table.assign(**{m: table[m] * 100 for m in METRICS})).round(4).to_string(index=False))
        print("\nscore (mean ratio to %s; lower is better):" % args.reference)
        print(scores(frame, args.reference).round(4).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
