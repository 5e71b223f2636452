"""`python -m harness report`: every paper table and figure the records support, the paper's own
numbers beside ours, and a list of what could not be produced and why.

Pure functions turn records into "our cells" in the paper's names and scales
(:func:`our_cells`) and line them up with the transcribed paper tables (:func:`compare`);
:func:`write_report` renders our task tables and figures (the same renderer as ``run``), one
comparison file per paper table, and ``REPORT.md``.  A cell this run lacks is listed as missing
with the reason; it is never filled from the paper.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from harness import paper
from harness.tables import classification_table, label_efficiency_table, pooled, render, task_tables

DATASETS = {"heartrate": "HeartRate", "mitbih": "MIT-BIH", "scientisst-move": "ScientiSST MOVE",
            "ieee-ppg": "IEEE PPG", "mmash": "MMASH", "wdd": "WDD"}
WINDOW_TABLES = {"48/24": "tab:e-win24", "72/36": "tab:e-win36", "96/48": "tab:e-win48", "128/64": "tab:e-win64"}
PAPER_FIGURES = {
    "imputation RMSE against missing rate": ("imputation", "figures/imputation_*"),
    "noise robustness": ("noise", "figures/noise_*"),
    "forecasting examples": (None, "forecast-example-*.png"),
    "gate similarity": (None, "gate-similarity-*.png"),
    "pre-training convergence": (None, "pretrain_log.png"),
}
WHY_NOT = {
    "tab:ablation": "needs the ablation study's records (`python -m models.soter.training.studies evaluate --study "
                    "ablation`), i.e. variants trained on a GPU",
    "tab:corpus_matched": "needs SOTER and the Chronos-2 retrained from scratch on the same corpus "
                          "(`python -m baselines.scratch.chronos2`), trained on a GPU",
    "tab:pretraining_exposure": "needs the exposure checkpoints of a pre-training run evaluated on the paper's datasets",
    "tab:sensitivity": "needs the sensitivity study (`python -m models.soter.training.studies --study sensitivity`) "
                       "trained on a GPU",
    "tab:eval-stats": "comes from `python -m harness data stats`, not from records",
}


def paper_model_names() -> dict[str, str]:
    from baselines.foundation import CARDS

    names = {card.name: card.paper_name for card in CARDS.values()}
    return {**names, "soter": "SOTER", "random": "Random Baseline"}


def _fmt(x: float, scale: float) -> float:
    return float(x) * scale


def our_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """This run's numbers in the paper's names, conditions and scales (one row per cell)."""
    names = paper_model_names()
    rows = []

    def add(table, model, dataset, metric, condition, value, std, status="ok", reason=""):
        rows.append({"table": table, "model": model, "method": names.get(model, model),
                     "dataset": DATASETS.get(dataset, dataset), "metric": metric, "condition": condition,
                     "ours": value, "ours_std": std, "status": status, "reason": reason})

    per = pooled(frame, "forecasting")
    if not per.empty:
        per = per[per["condition"] == "clean"]
        for (ds, model), g in per.groupby(["dataset", "model"], sort=False):
            for _, r in g.iterrows():
                for metric in ("RMSE", "MAE"):
                    add(WINDOW_TABLES.get(r["window"], ""), model, ds, metric, r["window"],
                        r[metric.lower()] if r["complete"] else np.nan, np.nan, r["status"], r["reason"])
            ok = g[g["complete"]]
            for metric in ("RMSE", "MAE"):
                values = ok[metric.lower()].to_numpy() * 100
                status = "ok" if len(ok) == len(g) == 4 else (g["status"].iloc[0] if ok.empty else "partial")
                add("tab:main_results", model, ds, metric, "mean over 4 windows",
                    float(values.mean()) if len(values) else np.nan,
                    float(values.std(ddof=1)) if len(values) > 1 else np.nan, status,
                    "" if status == "ok" else f"{len(ok)} of 4 windows" if len(ok) else g["reason"].iloc[0])
    per = pooled(frame, "imputation")
    for (ds, model, cond), g in (per.groupby(["dataset", "model", "condition"], sort=False) if not per.empty else []):
        ok = g[g["complete"]]
        for metric in ("RMSE", "MAE"):
            v = ok[metric.lower()].to_numpy()
            add(f"tab:e-imp{cond.split('=')[-1].rstrip('%')}", model, ds, metric, cond,
                float(v.mean()) if len(v) else np.nan, float(v.std(ddof=1)) if len(v) > 1 else np.nan,
                "ok" if len(v) else g["status"].iloc[0], g["reason"].iloc[0] if not len(v) else "")
    cls = frame[frame["task"] == "classification"]
    if not cls.empty:
        table = classification_table(frame)
        average = paper.average_of(DATASETS.get(d, d) for d in dict.fromkeys(cls["dataset"]))
        for (model, col), e in table.entries.items():
            dataset = average if col.group == "Average" else col.group
            add("tab:classification", model, dataset, col.label, "budget=100%", e.mean, e.std, e.status)
        for ds in dict.fromkeys(cls["dataset"]):
            for (model, col), e in label_efficiency_table(frame, ds).entries.items():
                add("tab:label_efficiency", model, ds, col.label, f"budget={col.group}", e.mean, e.std, e.status)
    return pd.DataFrame(rows, columns=["table", "model", "method", "dataset", "metric", "condition", "ours",
                                       "ours_std", "status", "reason"])


def compare(paper_table: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Every cell of one paper table with ours beside it (NaN where this run has none)."""
    label = paper_table["table"].iloc[0]
    mine = ours[ours["table"] == label]
    key = ["method", "dataset", "metric", "condition"]
    first = paper_table.columns[1]  # the row label: method, exposure, dataset, dft ...
    merged = paper_table.assign(method=paper_table[first]).merge(
        mine[key + ["ours", "ours_std", "status", "reason"]], on=key, how="left")
    merged["paper"] = pd.to_numeric(merged["value"], errors="coerce")
    merged["paper_std"] = merged["std"]
    merged["diff"] = merged["ours"] - merged["paper"]
    return merged


def _markdown(rows: pd.DataFrame, columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, r in rows.iterrows():
        lines.append("| " + " | ".join(_show(r[c]) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _show(v) -> str:
    if isinstance(v, float):
        return "" if np.isnan(v) else f"{v:.4g}"
    return "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)


def comparison_markdown(label: str, caption: str, merged: pd.DataFrame, extra_ours: pd.DataFrame) -> str:
    both = merged[merged["ours"].notna()]
    out = [f"# {label}", "", f"Paper: {caption}", ""]
    if both.empty:
        out.append(f"No cell in common with this run ({len(merged)} paper cells; this run has no records for "
                   "these datasets and models).")
    else:
        out += [f"{len(both)} of {len(merged)} paper cells have a number from this run:", "",
                _markdown(both, ["method", "dataset", "metric", "condition", "paper", "paper_std", "ours", "ours_std",
                                 "diff", "status"])]
    if not extra_ours.empty:
        out += ["", f"This run's cells with no paper counterpart ({len(extra_ours)}; e.g. our embedded cohort):", "",
                _markdown(extra_ours, ["method", "dataset", "metric", "condition", "ours", "ours_std", "status"])]
    return "\n".join(out) + "\n"


def write_report(results: Path, out: Path, paper_dir: Path = paper.PAPER_DIR) -> Path:
    from harness.figures import task_figures
    from harness.store import COLUMNS, read_records

    records_file = results / "records.csv" if results.is_dir() else results
    frame = read_records(records_file) if records_file.is_file() else pd.DataFrame(columns=list(COLUMNS))
    out.mkdir(parents=True, exist_ok=True)
    produced, missing = [], []
    tasks = [t for t in ("forecasting", "imputation", "noise", "classification") if (frame["task"] == t).any()]
    for task in tasks:
        for stem, table in task_tables(frame, task):
            for style, ext in (("markdown", "md"), ("latex", "tex")):
                path = out / "tables" / f"{stem}.{ext}"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render(table, style))
            produced.append(f"this run's table `{stem}` (tables/{stem}.md, .tex)")
        for f in task_figures(frame, task, out / "figures"):
            if f.suffix == ".png":
                produced.append(f"figure {f.relative_to(out)}")
    ours = our_cells(frame)
    tables = paper.load(paper_dir)
    for label, ptable in tables.items():
        merged = compare(ptable, ours)
        mine = ours[ours["table"] == label]
        extra = mine.merge(merged[["method", "dataset", "metric", "condition"]], how="left", indicator=True,
                           on=["method", "dataset", "metric", "condition"])
        extra = extra[extra["_merge"] == "left_only"]
        name = label.split(":", 1)[1]
        path = out / "comparison" / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(comparison_markdown(label, ptable.attrs["caption"], merged, extra))
        common = int(merged["ours"].notna().sum())
        if common:
            produced.append(f"{label}: {common} of {len(merged)} cells compared (comparison/{name}.md)")
        else:
            why = WHY_NOT.get(label, "this run has no records for the paper's datasets and models in it"
                              + (f" (this run's own cells are in comparison/{name}.md)" if len(mine) else ""))
            missing.append(f"{label}: {why}")
    for figure, (task, pattern) in PAPER_FIGURES.items():
        found = sorted(results.parent.glob(pattern) if results.is_file() else results.glob(f"**/{pattern}"))
        found += sorted(out.glob(pattern))
        if found:
            for f in found:
                if not f.is_relative_to(out):
                    target = out / "figures" / f.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, target)
            produced.append(f"figure: {figure}")
        else:
            how = {"forecasting examples": "run `python -m harness examples` (and with `--channels NAME`)",
                   "gate similarity": "needs a trained SOTER (`python -m models.soter.gates`)",
                   "pre-training convergence": "needs a pre-training run's `pretrain_log.png` under --results"}
            missing.append(f"figure: {figure}: " + how.get(figure, f"no {task} records"))
    report = out / "REPORT.md"
    report.write_text("\n".join([
        "# Report", "", f"Records: {records_file} ({len(frame)} rows). Paper tables: {paper_dir}.", "",
        "## Produced", "", *[f"- {p}" for p in produced], "", "## Not produced", "",
        *[f"- {m}" for m in missing], ""]))
    return report
