"""Zero-shot forecasting: each fold's windows per setting, every model's forecast against the horizon (RMSE, MAE)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.tasks.base import ErrorTask, cells_frame, paper_cell
from harness.tasks.forecasting_base import ForecastingWindows
from protocols.forecasting import evaluate_forecasting
from protocols.splits import get_fold
from protocols.windows import select_windows


SETTING_TABLES = {"48/24": "tab:e-win24", "72/36": "tab:e-win36", "96/48": "tab:e-win48", "128/64": "tab:e-win64"}
MAIN_RESULTS = "tab:main_results"  # the paper's main table: the mean over its four settings
MAIN_CONDITION = "mean over 4 windows"  # the condition as the paper's transcription names it (results/paper/)
CAPTION_BODY = "RMSE and MAE in normalised space, x100, mean ± std over settings (folds pooled)."
CAPTION = f"Zero-shot forecasting: {CAPTION_BODY}"  # a table of zero-shot rows only


def planned_forecast_windows(cell, dataset, sampling) -> int:
    """The windows of the cell's setting that the rule selects for its test subject (``select_windows``)."""
    return len(select_windows(dataset, get_fold(dataset, cell.fold).test_subject, cell.point, sampling).windows)


class Forecasting(ForecastingWindows, ErrorTask):
    name = "forecasting"
    description = "zero-shot forecasting (RMSE, MAE per context/horizon setting)"
    scores_windows = True
    horizon_curves = True
    replicates = ("setting",)
    replicate_words = "settings"

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        return self.error_row(cell, evaluate_forecasting(model, dataset, fold, cell.point, cell.spec))

    def planned_windows(self, cell, dataset):
        return planned_forecast_windows(cell, dataset, cell.spec.sampling)

    def table(self, frame, models=None, datasets=None, caption: str | None = None):
        """The forecasting table: RMSE and MAE per dataset, mean ± std over settings (folds pooled), captioned
        with the groups of rows it holds (:func:`caption_of`); the training studies' tables too
        (``harness.reporting.report.study_table``, with their own caption)."""
        from harness.reporting.tables import error_table

        table = error_table(frame, self.name, "clean", models, datasets, caption or CAPTION)
        return table if caption else replace(table, caption=caption_of(table))

    def tables(self, frame, models=None, datasets=None):
        return [(self.name, self.table(frame, models, datasets))]

    def paper_cells(self, frame, paper_dataset):
        """Each setting's RMSE and MAE (the paper's per-setting tables) and their mean over the four settings
        (its main table: a cell with fewer complete settings is ``partial``)."""
        from harness.reporting.tables import SCALE, pooled

        rows = []
        per = pooled(frame, self.name)
        if not per.empty:
            per = per[per["condition"] == "clean"]
            for (ds, model), g in per.groupby(["dataset", "model"], sort=False):
                for _, r in g.iterrows():
                    for metric in ("RMSE", "MAE"):
                        rows.append(paper_cell(SETTING_TABLES.get(r["setting"], ""), model, ds, metric, r["setting"],
                                               r[metric.lower()] * SCALE if r["complete"] else np.nan, np.nan,
                                               r["status"], r["reason"]))
                ok = g[g["complete"]]
                for metric in ("RMSE", "MAE"):
                    values = ok[metric.lower()].to_numpy() * SCALE
                    status = "ok" if len(ok) == len(g) == 4 else (g["status"].iloc[0] if ok.empty else "partial")
                    rows.append(paper_cell(
                        MAIN_RESULTS, model, ds, metric, MAIN_CONDITION,
                        float(values.mean()) if len(values) else np.nan,
                        float(values.std(ddof=1)) if len(values) > 1 else np.nan, status,
                        "" if status == "ok" else f"{len(ok)} of 4 settings" if len(ok) else g["reason"].iloc[0]))
        return cells_frame(rows)


def caption_of(table) -> str:
    """The caption naming each group of rows present: "Zero-shot forecasting" when every row is zero-shot, else
    e.g. "Forecasting (zero-shot, adapted and supervised rows)": adapted and supervised models are no zero-shot."""
    from harness.reporting.tables import GROUP_NAMES, ZERO_SHOT

    names = [GROUP_NAMES[label] for label, _ in table.groups()]
    if names in ([], [ZERO_SHOT]):
        return CAPTION
    words = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"Forecasting ({words} rows): {CAPTION_BODY}"


TASK = Forecasting()  # registered by harness.tasks
