"""Causal imputation: segments with a share of their points missing, each filled from its observed prefix."""

from __future__ import annotations

import numpy as np

from harness.registry.options import (MASK_OPTIONS, MAX_WINDOWS_PER_SUBJECT, MISSING_RATES_OPTION, SEGMENT_LENGTH, given,
                                      mask_of, segment_options)
from harness.tasks.base import ErrorTask, cells_frame, details, paper_cell
from protocols.imputation import evaluate_imputation, select_imputation_segments
from protocols.specs import MISSING_RATES, ImputationSpec, RUN_SEEDS
from protocols.splits import get_fold


class Imputation(ErrorTask):
    name = "imputation"
    description = "causal imputation (RMSE, MAE per missing rate)"
    default_seeds = RUN_SEEDS
    replicates = ("seed",)
    replicate_words = "seeds"
    title = "Causal imputation"
    over = "seeds"
    figure = "imputation RMSE against missing rate"
    figure_stem = "imputation_rmse_vs_missing_rate"
    figure_metrics = ("RMSE",)
    x_label = "missing rate"
    x_ticks = "{:g}%"
    unit = "segment"
    options = (MISSING_RATES_OPTION, SEGMENT_LENGTH, MAX_WINDOWS_PER_SUBJECT, *MASK_OPTIONS)

    def spec(self, options, seed):
        return ImputationSpec(**given(rates=options.rates), mask=mask_of(options),
                              **segment_options(self.name, options))

    def points(self, spec):
        return [(spec.length, spec.mask.condition(r), r) for r in spec.rates]

    def family(self, condition):
        """The mask of a condition: "" for the paper's (``missing=25%``), else its name (``contiguous-...``)."""
        return condition.rpartition("missing=")[0].strip()

    def capable(self, model, cell):
        caps = model.capabilities
        return None if caps.impute or caps.forecast else f"{cell.model} neither imputes nor forecasts"

    def evaluate(self, cell, dataset, model):
        out = evaluate_imputation(model, dataset, get_fold(dataset, cell.fold), cell.spec, cell.level, cell.seed)
        facts = {"queries": out.n_queries}
        if not cell.spec.mask.is_paper:  # the paper's rows keep their details byte for byte
            facts["missing_share"] = round(out.missing_share, 6)
        return self.error_row(cell, out, {"details": details(**facts)}, nothing_scored=self._nothing_missing(cell, out))

    def planned_windows(self, cell, dataset):
        return len(select_imputation_segments(dataset, get_fold(dataset, cell.fold).test_subject, cell.spec).windows)

    @staticmethod
    def _nothing_missing(cell, out) -> str | None:
        """Why a cell whose segments were drawn has no query: its mask left nothing missing (a contiguous mask
        whose mean gap is as long as a segment leaves many segments whole), not a lack of segments."""
        if out.n_windows == 0 or out.n_queries:
            return None
        return (f"nothing to impute for test subject {cell.fold}: the mask left every entry of its {out.n_windows} "
                f"segment(s) of {cell.setting} samples observed after the warm-up (a mean gap as long as a segment "
                "leaves whole segments observed: a shorter --burst-seconds or a longer --segment-length)")

    def paper_cells(self, frame, paper_dataset):
        """RMSE and MAE per missing rate (the paper's tab:e-imp25, -50, -75), mean ± std over seeds."""
        from harness.reporting.tables import SCALE, pooled

        rows = []
        per = pooled(frame, self.name)
        per = per[per["condition"].map(self.family) == ""] if not per.empty else per  # the paper's masks only
        for (ds, model, cond), g in (per.groupby(["dataset", "model", "condition"], sort=False)
                                     if not per.empty else []):
            ok = g[g["complete"]]
            for metric in ("RMSE", "MAE"):
                v = ok[metric.lower()].to_numpy() * SCALE
                status = "ok" if len(v) == len(g) else "partial" if len(v) else g["status"].iloc[0]
                rows.append(paper_cell(f"tab:e-imp{cond.split('=')[-1].rstrip('%')}", model, ds, metric, cond,
                                       float(v.mean()) if len(v) else np.nan,
                                       float(v.std(ddof=1)) if len(v) > 1 else np.nan, status,
                                       "" if status == "ok" else f"{len(v)} of {len(g)} seeds" if len(v)
                                       else g["reason"].iloc[0]))
        return cells_frame(rows)


TASK = Imputation()  # registered by harness.tasks
