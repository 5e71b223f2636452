"""Zero-shot forecasting: each fold's windows per setting, every model's forecast against the horizon (RMSE, MAE)."""

from __future__ import annotations

import numpy as np

from harness.registry.options import MAX_WINDOWS_PER_SUBJECT, SETTINGS, given
from harness.tasks.base import ErrorTask, cells_frame, paper_cell
from protocols.forecasting import evaluate_forecasting
from protocols.specs import ForecastingSpec, SamplingSpec
from protocols.splits import get_fold
from protocols.windows import select_windows


def sampling(options, seed: int) -> SamplingSpec:
    """How forecasting-type tasks draw their windows: the seed, and --max-windows-per-subject if given."""
    return SamplingSpec(seed=seed, **given(max_windows_per_subject=options.max_windows_per_subject))


def setting_capable(model, cell) -> str | None:
    """A forecasting setting needs a model that forecasts and supports its context and horizon."""
    caps = model.capabilities
    s = cell.point
    if not caps.forecast or not caps.supports_setting(s.context, s.horizon):
        return f"{cell.model} does not support forecasting setting {cell.setting}"
    return None


SETTING_TABLES = {"48/24": "tab:e-win24", "72/36": "tab:e-win36", "96/48": "tab:e-win48", "128/64": "tab:e-win64"}
MAIN_RESULTS = "tab:main_results"  # the paper's main table: the mean over its four settings
MAIN_CONDITION = "mean over 4 windows"  # the condition as the paper's transcription names it (results/paper/)
CAPTION = ("Zero-shot forecasting: RMSE and MAE in normalised space, x100, mean ± std over settings "
           "(folds pooled).")


def planned_forecast_windows(cell, dataset, sampling: SamplingSpec) -> int:
    """The windows of the cell's setting that the rule selects for its test subject (``select_windows``)."""
    return len(select_windows(dataset, get_fold(dataset, cell.fold).test_subject, cell.point, sampling).windows)


class Forecasting(ErrorTask):
    name = "forecasting"
    description = "zero-shot forecasting (RMSE, MAE per context/horizon setting)"
    default_seeds = (0,)
    scores_windows = True
    horizon_curves = True
    replicates = ("setting",)
    replicate_words = "settings"
    options = (SETTINGS, MAX_WINDOWS_PER_SUBJECT)

    def spec(self, options, seed):
        return ForecastingSpec(**given(settings=options.settings), sampling=sampling(options, seed))

    def points(self, spec):
        return [(s, "clean", None) for s in spec.settings]

    def capable(self, model, cell):
        return setting_capable(model, cell)

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        return self.error_row(cell, evaluate_forecasting(model, dataset, fold, cell.point, cell.spec))

    def planned_windows(self, cell, dataset):
        return planned_forecast_windows(cell, dataset, cell.spec.sampling)

    def table(self, frame, models=None, datasets=None, caption: str = CAPTION):
        """The forecasting table: RMSE and MAE per dataset, mean ± std over settings (folds pooled); the
        training studies' tables too (``harness.reporting.report.study_table``, with their own caption)."""
        from harness.reporting.tables import error_table

        return error_table(frame, self.name, "clean", models, datasets, caption)

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


TASK = Forecasting()  # registered by harness.tasks
