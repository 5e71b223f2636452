"""Physiological fidelity: heart rate (ECG, PPG) and breathing rate (respiration) of forecasts and of whole
imputed segments against the truth's, in beats or breaths per minute (``protocols.physiology``).

One row per (fold, source, measure): the source is a forecast (setting ``30s/20s``, condition the measure,
e.g. ``hr-ecg``) or a whole segment imputed point by point (setting ``20s``, condition e.g.
``hr-ecg missing=25%``).  A cell's forecasts or imputed segments serve every measure of its source: they are
kept in this process for the measures' other cells (results never depend on it)."""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict

import numpy as np

from harness.registry.options import (MASK_OPTIONS, MAX_WINDOWS_PER_SUBJECT, MISSING_RATES_OPTION, PHYSIO_CONTEXT,
                                      PHYSIO_HORIZON, PHYSIO_MEASURES, PHYSIO_SEGMENT, PHYSIO_SOURCES, given, mask_of,
                                      windows_per_subject)
from harness.tasks.base import Task, add_cell_files, details, family_stem
from protocols.physiology import (MEASURES, forecast_spans, imputed_segments, measure_unavailable,
                                  physiology_scores)
from protocols.data import nominal_sampling_rate
from protocols.interface import ModelDivergedError
from protocols.specs import PhysiologySpec, SamplingSpec, samples
from protocols.splits import get_fold

_CACHE: OrderedDict = OrderedDict()  # (model, options, dataset, fold, seed, setting, level, spec) -> result
_CACHE_SIZE = 256


def measure_of(condition: str) -> str:
    """``hr-ecg missing=25%`` -> ``hr-ecg``."""
    return condition.split(" ", 1)[0]


def source_of(condition: str) -> str:
    """The source of a condition: ``forecast`` or the imputation's mask and rate (``missing=25%``)."""
    rest = condition.partition(" ")[2]
    return rest or "forecast"


class Physiology(Task):
    name = "physiology"
    description = "physiological fidelity: heart and breathing rate error (per minute) of forecasts and imputed segments"
    default_seeds = (0,)
    replicates = ("seed",)
    replicate_words = "seeds"
    figure = "heart- and breathing-rate error"
    scale = 1.0  # breakdowns: rates are in their own unit (bpm, breaths/min), not x100
    unit = "per minute"

    options = (PHYSIO_CONTEXT, PHYSIO_HORIZON, PHYSIO_SEGMENT, PHYSIO_SOURCES, PHYSIO_MEASURES, MISSING_RATES_OPTION,
               *MASK_OPTIONS, MAX_WINDOWS_PER_SUBJECT)

    def spec(self, options, seed):
        base = PhysiologySpec(**given(context_seconds=options.physio_context, horizon_seconds=options.physio_horizon,
                                      segment_seconds=options.physio_segment, sources=options.physio_sources,
                                      measures=options.physio_measures))
        return dataclasses.replace(base, rates=options.rates or base.rates, mask=mask_of(options),
                                   sampling=SamplingSpec(seed=seed, **windows_per_subject(self.name, options)))

    ok_fields = ("sse", "sae", "n_points")  # the sums pool exactly over folds

    def ok_row_problem(self, row):
        """The sums always; RMSE and MAE exactly when a pair was scored (``n_points`` > 0). A fold whose every
        prediction has no detectable rate scores no pair: its RMSE and MAE are undefined, left empty, while its
        sums (zero) and its failures (``details``) pool into the cell (docs/records.md)."""
        problem = super().ok_row_problem(row)
        if problem:
            return problem
        scored = int(row["n_points"]) > 0
        for name in ("rmse", "mae"):
            if scored and row.get(name, "") == "":
                return f"an ok row without {name} although {row['n_points']} (span, channel) pairs were scored"
            if not scored and row.get(name, "") != "":
                return f"an ok row with {name} {row[name]!r} although no (span, channel) pair was scored"
        return None

    def points(self, spec):
        out = []
        if "forecast" in spec.sources:
            out += [(spec.forecast_setting, m, None) for m in spec.measures]
        if "imputation" in spec.sources:
            out += [(spec.segment_setting, f"{m} {spec.mask.condition(r)}", r) for r in spec.rates for m in spec.measures]
        return out

    def default_models(self):
        """The default models of forecasting and of imputation (each takes part in the sources it can)."""
        from harness.registry.tasks import get_task

        return tuple(dict.fromkeys(get_task("forecasting").default_models() + get_task("imputation").default_models()))

    def capable(self, model, cell):
        caps = model.capabilities
        if cell.level is None:
            return None if caps.forecast else f"{cell.model} does not forecast"
        # a whole segment costs one call per missing point: the forecast-then-read fallback of forecasting
        # models (protocols.interface.Model._impute) is not run here, a model needs its own causal imputation
        return None if caps.impute else f"{cell.model} has no causal imputation of its own"

    def evaluate(self, cell, dataset, model):
        measure = MEASURES[measure_of(cell.condition)]
        reason = measure_unavailable(dataset, measure)
        if reason:
            return {"status": "unavailable", "error": reason}
        spec = cell.spec
        if cell.level is None:
            fs = nominal_sampling_rate(dataset)
            c, h = samples(spec.context_seconds, fs), samples(spec.horizon_seconds, fs)
            if not model.capabilities.supports_setting(c, h):
                return {"status": "unavailable", "error": f"{cell.model} does not support a {c}/{h}-sample forecast "
                                                          f"({cell.setting} at {fs:g} Hz)"}
        scores, recon = self._scores(cell, dataset, model)
        s = scores[measure.name]
        sel = recon.selection
        counts = {"n_windows": int(recon.truth.shape[0]), "skipped_missing": sel.skipped_missing,
                  "short_recordings": sel.short_recordings}
        facts = {"unit": measure.unit, "pairs": int(s.truth.size), "truth_failed": s.truth_failed,
                 "prediction_failed": s.prediction_failed}
        if cell.level is not None:
            facts["missing_share"] = round(recon.missing_share, 6)
        if s.truth.size == 0:  # spans whose truth has no rate are skipped and counted, a fold without spans is an error
            return {"status": "error", "n_points": 0, **counts, "details": details(**facts),
                    "error": (f"no span of {cell.setting} could be taken for test subject {cell.fold}: "
                              f"{sel.short_recordings} recording(s) too short, {sel.skipped_missing} candidate(s) "
                              "skipped for missing values or time gaps")}
        row = {"status": "ok", "sse": s.sse, "sae": s.sae, "n_points": s.n, **counts, "details": details(**facts)}
        if s.n:
            row.update(rmse=float(np.sqrt(s.sse / s.n)), mae=s.sae / s.n)
        add_cell_files(row, rates=s)
        return row

    def _scores(self, cell, dataset, model):
        key = (cell.model, cell.model_options, cell.dataset, cell.fold, cell.seed, cell.setting, cell.level,
               repr(cell.spec), id(model))
        if key in _CACHE:
            _CACHE.move_to_end(key)
            if isinstance(_CACHE[key], ModelDivergedError):
                raise _CACHE[key]
            return _CACHE[key]
        fold = get_fold(dataset, cell.fold)
        try:
            recon = (forecast_spans(model, dataset, fold, cell.spec) if cell.level is None
                     else imputed_segments(model, dataset, fold, cell.spec, cell.level, cell.seed))
            result = (physiology_scores(recon, dataset, cell.spec.measures), recon)
        except ModelDivergedError as exc:  # the same spans diverge for every measure: solved once, not per measure
            result = exc
        _CACHE[key] = result
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        if isinstance(result, ModelDivergedError):
            raise result
        return result

    # -- tables ------------------------------------------------------------------------------
    def pooled(self, frame):
        """One row per (dataset, model, condition, seed): folds pooled; MAE and RMSE over scored pairs, the share
        of pairs whose prediction has no rate, completeness as the error tables count it."""
        import pandas as pd

        rows = frame[frame["task"] == self.name]
        out = []
        for (ds, model, cond, seed), g in rows.groupby(["dataset", "model", "condition", "seed"], sort=False):
            ok = g[g["status"] == "ok"]
            facts = [json.loads(d) if isinstance(d, str) and d else {} for d in ok["details"]]
            n = float(ok["n_points"].sum()) if len(ok) else 0.0
            pairs = sum(f.get("pairs", 0) for f in facts)
            valid = pairs - sum(f.get("truth_failed", 0) for f in facts)
            failed = sum(f.get("prediction_failed", 0) for f in facts)
            complete = len(ok) == len(g) and valid > 0
            errors = sorted({e for e in g.loc[g["status"] != "ok", "error"] if isinstance(e, str) and e})
            if len(ok) == len(g) and not valid:
                errors = [f"the detector found no rate in the truth of any of {pairs} (span, channel) pair(s)"]
            out.append({"dataset": ds, "model": model, "condition": cond, "seed": seed,
                        "truth_skipped": pairs - valid, "all_pairs": pairs,
                        "mae": ok["sae"].sum() / n if complete and n else np.nan,
                        "rmse": float(np.sqrt(ok["sse"].sum() / n)) if complete and n else np.nan,
                        "no_rate": 100.0 * failed / valid if complete else np.nan, "pairs": valid,
                        "complete": complete, "unit": facts[0].get("unit", "") if facts else "",
                        "status": "ok" if complete else ("unavailable" if set(g["status"]) == {"unavailable"} else "error"),
                        "reason": errors[0] if errors else ""})
        return pd.DataFrame(out)

    def tables(self, frame, models=None, datasets=None):
        from harness.reporting.tables import file_stem

        per = self.pooled(frame)
        if per.empty:
            return []
        per["source"] = per["condition"].map(source_of)
        out = []
        for source in dict.fromkeys(per["source"]):
            stem = "physiology_forecast" if source == "forecast" else f"physiology_imputation_{file_stem(source)}"
            if source != "forecast" and source.rpartition("missing=")[0].strip():
                stem = f"physiology_imputation_{family_stem(source.rpartition('missing=')[0].strip())}_{file_stem(source)}"
            out.append((stem, self._table(per[per["source"] == source], source, models, datasets,
                                          frame[frame["task"] == self.name])))
        return out

    def _table(self, per, source, models, datasets, rows=None):
        """One source's table; ``rows``: the task's records (its supervised and scored rows are ranked apart)."""
        from harness.reporting.tables import (Column, Entry, Table, grouped, model_notes, measured_models,
                                              summary_entry)

        datasets = datasets or list(dict.fromkeys(per["dataset"]))
        models = models or list(dict.fromkeys(per["model"]))
        columns, entries, notes = [], {}, []
        for ds in datasets:
            here = per[per["dataset"] == ds]
            for cond in dict.fromkeys(here["condition"]):
                g_all = here[here["condition"] == cond]
                if set(g_all["status"]) == {"unavailable"}:
                    notes.append(f"{measure_of(cond)} on {ds}: {g_all['reason'].iloc[0]}")
                    continue
                # the measure's own unit (rows that scored nothing, or errors only, carry none in their details)
                unit = next((u for u in g_all["unit"] if u), "") or _measure_unit(measure_of(cond))
                first = g_all[g_all["complete"]].head(1)
                if len(first) and int(first["truth_skipped"].iloc[0]):
                    notes.append(f"{measure_of(cond)} on {ds}: {int(first['truth_skipped'].iloc[0])} of "
                                 f"{int(first['all_pairs'].iloc[0])} (span, channel) pairs skipped, no rate in the truth")
                mae_col = Column(ds, f"{measure_of(cond)} MAE ({unit})" if unit else f"{measure_of(cond)} MAE")
                fail_col = Column(ds, f"{measure_of(cond)} no rate %")
                columns += [mae_col, fail_col]
                for model in models:
                    g = g_all[g_all["model"] == model]
                    if g.empty:
                        continue
                    ok = g[g["complete"]]
                    statuses = set(g["status"])
                    mae = ok["mae"].to_numpy()
                    entries[(model, mae_col)] = (_plain(summary_entry(mae[np.isfinite(mae)], statuses, len(g)))
                                                 if np.isfinite(mae).any() or ok.empty else
                                                 Entry(np.nan, np.nan, 0, len(g), "no rate"))
                    entries[(model, fail_col)] = _plain(summary_entry(ok["no_rate"].to_numpy(), statuses, len(g)))
                    if len(ok) < len(g):
                        reason = next((r for r in g.loc[~g["complete"], "reason"] if r), "")
                        notes.append(f"{model} on {ds}, {measure_of(cond)}: {len(ok)}/{len(g)} seeds complete"
                                     + (f" ({reason})" if reason else ""))
        what = "forecast horizons" if source == "forecast" else f"whole imputed segments, {source}"
        caption = (f"Physiological fidelity, {what}: mean absolute error of the rate (per minute) over the (span, "
                   "channel) pairs with a rate in truth and prediction, and the share of pairs whose prediction has "
                   "no detectable rate; folds pooled, mean ± std over seeds. Spans without a rate in the truth are "
                   "skipped (details column of the records).")
        table = Table(caption, tuple(columns), tuple(models), entries, tuple(dict.fromkeys(notes)),
                      model_notes(measured_models(entries)))
        return grouped(table, rows) if rows is not None else table

    def figures(self, frame, out_dir):
        from harness.reporting.physiology_figure import physiology_figure

        per = self.pooled(frame)
        if per.empty or not per["complete"].any():
            return []
        per["source"] = per["condition"].map(source_of)
        per["measure"] = per["condition"].map(measure_of)
        return physiology_figure(per[per["complete"]], out_dir / "physiology_rate_error")


def _measure_unit(name: str) -> str:
    measure = MEASURES.get(name)
    return measure.unit if measure is not None else "per minute"


def _plain(entry):
    """Rates are shown in their own unit: undo summary_entry's x100."""
    from harness.reporting.tables import SCALE, Entry

    if entry.status != "ok":
        return entry
    return Entry(entry.mean / SCALE, entry.std / SCALE, entry.replicates, entry.requested, entry.status)


TASK = Physiology()  # registered by harness.tasks
