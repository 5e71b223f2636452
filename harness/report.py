"""`python -m harness report`: every paper table and figure the records support, the paper's own
numbers beside ours, and a list of what could not be produced and why.

Pure functions turn records into "our cells" in the paper's names (:func:`our_cells`) and line
them up with the transcribed paper tables (:func:`compare`); :func:`write_report` renders our task
tables and figures (the same renderer as ``run``), one comparison file per paper table, and
``REPORT.md``, and returns a :class:`Report` whose text is the summary ``harness report`` prints.
One unit everywhere: every RMSE, MAE, Macro-F1 and Macro-AUROC is x100 (``tables.SCALE``), ours and
the paper's alike (the paper printed its per-window and imputation tables unscaled; they are
rescaled here), shown with two decimals.  A cell this run lacks is listed as missing with the
reason; it is never filled from the paper.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness import paper
from harness.tables import SCALE, classification_table, label_efficiency_table, pooled, render, task_tables

DATASETS = {"heartrate": "HeartRate", "mitbih": "MIT-BIH", "scientisst-move": "ScientiSST MOVE",
            "ieee-ppg": "IEEE PPG", "mmash": "MMASH", "wdd": "WDD"}
WINDOW_TABLES = {"48/24": "tab:e-win24", "72/36": "tab:e-win36", "96/48": "tab:e-win48", "128/64": "tab:e-win64"}
SCALED_METRICS = ("RMSE", "MAE", "Macro-F1", "Macro-AUROC")  # shown x SCALE; others (NPE, seconds) as printed
TASK_FIGURES = {"imputation": "imputation RMSE against missing rate", "noise": "noise robustness",
                "classification": "label efficiency"}  # drawn from the records (harness.figures)
COPIED_FIGURES = {  # made by other commands, copied in when found under --results: (file pattern, how to make it)
    "forecasting examples": ("forecast-example-*.png", "run `python -m harness examples` (and with `--channels NAME`)"),
    "gate similarity": ("gate-similarity-*.png", "needs a trained SOTER (`python -m models.soter.gates`)"),
    "pre-training convergence": ("pretrain_log.png", "needs a pre-training run's `pretrain_log.png` under --results"),
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
                        r[metric.lower()] * SCALE if r["complete"] else np.nan, np.nan, r["status"], r["reason"])
            ok = g[g["complete"]]
            for metric in ("RMSE", "MAE"):
                values = ok[metric.lower()].to_numpy() * SCALE
                status = "ok" if len(ok) == len(g) == 4 else (g["status"].iloc[0] if ok.empty else "partial")
                add("tab:main_results", model, ds, metric, "mean over 4 windows",
                    float(values.mean()) if len(values) else np.nan,
                    float(values.std(ddof=1)) if len(values) > 1 else np.nan, status,
                    "" if status == "ok" else f"{len(ok)} of 4 windows" if len(ok) else g["reason"].iloc[0])
    per = pooled(frame, "imputation")
    for (ds, model, cond), g in (per.groupby(["dataset", "model", "condition"], sort=False) if not per.empty else []):
        ok = g[g["complete"]]
        for metric in ("RMSE", "MAE"):
            v = ok[metric.lower()].to_numpy() * SCALE
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
    """Every cell of one paper table with ours beside it (NaN where this run has none); the paper's
    RMSE, MAE, Macro-F1 and Macro-AUROC rescaled to x100 whatever scale it printed them in."""
    label = paper_table["table"].iloc[0]
    mine = ours[ours["table"] == label]
    key = ["method", "dataset", "metric", "condition"]
    first = paper_table.columns[1]  # the row label: method, exposure, dataset, dft ...
    merged = paper_table.assign(method=paper_table[first]).merge(
        mine[key + ["ours", "ours_std", "status", "reason"]], on=key, how="left")
    factor = np.where(merged["metric"].isin(SCALED_METRICS), SCALE / pd.to_numeric(merged["scale"]), 1.0)
    merged["paper"] = pd.to_numeric(merged["value"], errors="coerce") * factor
    merged["paper_std"] = pd.to_numeric(merged["std"], errors="coerce") * factor
    merged["diff"] = merged["ours"] - merged["paper"]
    return merged


def _markdown(rows: pd.DataFrame, columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, r in rows.iterrows():
        lines.append("| " + " | ".join(_show(r[c]) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _show(v) -> str:
    """Numbers with two decimals (the x100 values the paper prints), blanks for missing."""
    if isinstance(v, (float, np.floating)):
        return "" if np.isnan(v) else f"{v:.2f}"
    return "" if v is None else str(v)


UNIT_HEADERS = {"paper": "paper (x100)", "paper_std": "paper std (x100)", "ours": "ours (x100)",
                "ours_std": "ours std (x100)", "diff": "ours - paper (x100)"}


def _unit_line(merged: pd.DataFrame) -> str:
    """What the numbers are, and whether the paper's were rescaled to get there."""
    scaled = merged["metric"].isin(SCALED_METRICS)
    present = set(merged["metric"])
    others = list(dict.fromkeys(merged.loc[~scaled, "metric"]))
    units = [text for metrics, text in ((("RMSE", "MAE"), "RMSE and MAE in normalised space, x100"),
                                        (("Macro-F1", "Macro-AUROC"), "Macro-F1 and Macro-AUROC in % (x100)"))
             if present & set(metrics)]
    parts = [f"Numbers x100: {'; '.join(units)}."] if units else []
    if (scaled & (pd.to_numeric(merged["scale"]) != SCALE)).any():
        parts.append("The paper printed these unscaled; its values are shown x100 here.")
    if others:
        parts.append(f"{', '.join(others)}: as the paper printed them.")
    return " ".join(parts)


def comparison_markdown(label: str, caption: str, merged: pd.DataFrame, extra_ours: pd.DataFrame) -> str:
    both = merged[merged["ours"].notna()]
    out = [f"# {label}", "", f"Paper: {caption}", "", _unit_line(merged), ""]
    if both.empty:
        out.append(f"No cell in common with this run ({len(merged)} paper cells; this run has no records for "
                   "these datasets and models).")
    else:
        out += [f"{len(both)} of {len(merged)} paper cells have a number from this run:", "",
                _markdown(both.rename(columns=UNIT_HEADERS),
                          ["method", "dataset", "metric", "condition", *UNIT_HEADERS.values(), "status"])]
    if not extra_ours.empty:
        out += ["", f"This run's cells with no paper counterpart ({len(extra_ours)}; e.g. our embedded cohort):", "",
                _markdown(extra_ours.rename(columns=UNIT_HEADERS),
                          ["method", "dataset", "metric", "condition", UNIT_HEADERS["ours"], UNIT_HEADERS["ours_std"],
                           "status"])]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Report:
    """What ``harness report`` wrote: ``REPORT.md`` and one line per thing produced and per thing not
    produced (with why). Its text is the summary the command prints, so a user sees the outcome
    without opening the file."""

    path: Path
    produced: tuple[str, ...]
    missing: tuple[tuple[str, str], ...]  # (what, why)

    def summary(self) -> str:
        """One line per thing produced; one line per reason for what was not, naming what it holds back."""
        why: dict[str, list[str]] = {}
        for what, reason in self.missing:
            why.setdefault(reason, []).append(what)
        return "\n".join([f"Produced ({len(self.produced)}):", *[f"  {p}" for p in self.produced],
                          f"Not produced ({len(self.missing)}):",
                          *[f"  {', '.join(whats)}: {reason}" for reason, whats in why.items()],
                          f"Report: {self.path} (paths above are relative to {self.path.parent})"])

    def __str__(self) -> str:  # `python -m harness report` prints what write_report returns
        return self.summary()


def write_report(results: Path, out: Path, paper_dir: Path = paper.PAPER_DIR) -> Report:
    """Every table and figure the records under ``results`` support, written under ``out``."""
    from harness.store import COLUMNS, read_records

    records_file = results / "records.csv" if results.is_dir() else results
    frame = read_records(records_file) if records_file.is_file() else pd.DataFrame(columns=list(COLUMNS))
    out.mkdir(parents=True, exist_ok=True)
    produced = _task_tables(frame, out)
    made, missing = _task_figures(frame, out)
    produced += made
    made, not_found = _copied_figures(results.parent if results.is_file() else results, out)
    produced, missing = produced + made, missing + not_found
    made, not_compared = _comparisons(our_cells(frame), paper.load(paper_dir), out)
    produced, missing = produced + made, missing + not_compared
    report = out / "REPORT.md"
    report.write_text("\n".join([
        "# Report", "", f"Records: {records_file} ({len(frame)} rows). Paper tables: {paper_dir}.", "",
        "Units: every RMSE and MAE (normalised space), Macro-F1 and Macro-AUROC is x100, shown with two decimals, "
        "in tables, comparisons and figures alike.", "",
        "## Produced", "", *[f"- {p}" for p in produced], "", "## Not produced", "",
        *[f"- {what}: {why}" for what, why in missing], ""]))
    return Report(report, tuple(produced), tuple(missing))


def _tasks(frame: pd.DataFrame) -> list[str]:
    return [t for t in ("forecasting", "imputation", "noise", "classification") if (frame["task"] == t).any()]


def _task_tables(frame: pd.DataFrame, out: Path) -> list[str]:
    """This run's tables (Markdown and LaTeX), one line per task."""
    lines = []
    for task in _tasks(frame):
        stems = []
        for stem, table in task_tables(frame, task):
            for style, ext in (("markdown", "md"), ("latex", "tex")):
                path = out / "tables" / f"{stem}.{ext}"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render(table, style))
            stems.append(stem)
        lines.append(f"this run's {task} tables: {', '.join(stems)} (tables/<name>.md and .tex)")
    return lines


def _task_figures(frame: pd.DataFrame, out: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """The figures drawn from the records, each listed once: (produced, not produced with why)."""
    from harness.figures import task_figures

    produced, missing = [], []
    for task, figure in TASK_FIGURES.items():
        files = task_figures(frame, task, out / "figures") if (frame["task"] == task).any() else []
        png = [f.relative_to(out).as_posix() for f in files if f.suffix == ".png"]
        if png:
            produced.append(f"figure: {figure} ({', '.join(png)}, and .pdf)")
        elif not (frame["task"] == task).any():
            missing.append((f"figure: {figure}", f"no {task} records"))
        elif task == "classification" and frame.loc[frame["task"] == task, "condition"].nunique() < 2:
            missing.append((f"figure: {figure}", "needs classification records at two or more label budgets "
                                                 "(`python -m harness run classification --budgets 1 10 100`)"))
        else:
            missing.append((f"figure: {figure}", f"no {task} cell finished ok"))
    return produced, missing


def _copied_figures(root: Path, out: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """Figures other commands made, copied in from under ``root`` (never from ``out`` itself)."""
    produced, missing = [], []
    for figure, (pattern, how) in COPIED_FIGURES.items():
        found = {f.name: f for f in sorted(root.glob(f"**/{pattern}"))
                 if not f.resolve().is_relative_to(out.resolve())}
        for name, f in found.items():
            target = out / "figures" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
        if found:
            produced.append(f"figure: {figure} ({', '.join(f'figures/{n}' for n in found)})")
        else:
            missing.append((f"figure: {figure}", how))
    return produced, missing


def _comparisons(ours: pd.DataFrame, tables: dict[str, pd.DataFrame],
                 out: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """One comparison file per paper table: (tables compared, tables not compared with why)."""
    produced, missing = [], []
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
                              + (" (this run's own cells are under comparison/)" if len(mine) else ""))
            missing.append((label, why))
    return produced, missing
