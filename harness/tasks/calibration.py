"""Calibration of quantile forecasts (issue #48): empirical coverage of the central 50/80/90 % intervals and the
PIT histogram, over the forecasting settings' windows, for every model that forecasts quantiles.

A task of its own, not columns of forecasting's rows: the forecasting protocol and its rows stay as they are. A
row keeps its cell's counts (``details``: levels, points inside each interval, PIT bin counts), so folds,
settings and seeds pool exactly; a point forecaster's row is ``unavailable`` with the reason, never a number.
"""

from __future__ import annotations

import json

import numpy as np

from harness.registry.metrics import Metric
from harness.tasks.forecasting_base import ForecastingWindows
from protocols.calibration import NOMINAL, CalibrationCounts, evaluate_calibration, pool
from protocols.splits import get_fold

COVERAGE = tuple(Metric(f"coverage_{round(p * 100)}", f"{p:.0%} cov.", nan_when_ok=True) for p in NOMINAL)
CALIBRATION_ERROR = Metric("calibration_error", "cal. err.")
PIT_DEVIATION = Metric("pit_deviation", "PIT dev.")
QUANTILE_MODEL = "fracast"  # the quantile model whose weights ship offline: part of the default run
POINT_ONLY = "point forecasts only"  # the reason of a point forecaster's rows (tables group them in one note)
BOOTSTRAP = 2000  # resamples of subjects for the coverage intervals
CAPTION = ("Calibration: empirical coverage of the central 50/80/90 % intervals (x100; nominal 50, 80, 90), mean "
           "absolute coverage error over them and the PIT histogram's distance from flat (total variation), x100, "
           "mean ± std over settings (folds pooled). Intervals whose ends lie outside the model's quantile levels: "
           "n/a.")


class Calibration(ForecastingWindows):
    name = "calibration"
    description = "calibration of quantile forecasts (coverage of central 50/80/90 % intervals, PIT histogram)"
    figure = "calibration (PIT histograms, reliability diagram)"
    metrics = (*COVERAGE, CALIBRATION_ERROR, PIT_DEVIATION)
    ok_fields = ("n_points",)

    def default_models(self):
        """Forecasting's default models (point forecasters: their rows say why they have no interval) and
        fracast, whose nine deciles ship with its wheel."""
        from harness.registry.tasks import get_task
        from models.registry import all_specs

        defaults = get_task("forecasting").default_models()
        return defaults + ((QUANTILE_MODEL,) if QUANTILE_MODEL in all_specs() and QUANTILE_MODEL not in defaults
                           else ())

    def capable(self, model, cell):
        why = super().capable(model, cell)
        if why is None and not model.capabilities.quantiles:
            return f"{cell.model} gives {POINT_ONLY} (no quantiles): it has no interval to check"
        return why

    def evaluate(self, cell, dataset, model):
        out = evaluate_calibration(model, dataset, get_fold(dataset, cell.fold), cell.point, cell.spec)
        c = out.counts
        counts = {"n_windows": out.n_windows, "skipped_missing": out.skipped_missing,
                  "short_recordings": out.short_recordings}
        if not c.n:
            return {"status": "error", "n_points": 0, **counts,
                    "error": f"no window of {cell.setting} samples could be scored for test subject {cell.fold}: "
                             f"{out.short_recordings} recording(s) shorter than that, {out.skipped_missing} "
                             "candidate(s) skipped for missing values or time gaps"}
        coverage = dict(zip((m.name for m in COVERAGE), c.coverage()))
        return {"status": "ok", "n_points": c.n, **counts, **coverage, "calibration_error": c.calibration_error(),
                "pit_deviation": c.pit_deviation(),
                "details": json.dumps({"calibration": c.as_dict(), "levels_refused": out.refused})}

    # -- records -> tables and figures --------------------------------------------------------
    def tables(self, frame, models=None, datasets=None):
        return [(self.name, self.coverage_table(frame, models, datasets)),
                (f"{self.name}_statistics", self.statistics_table(frame, models, datasets))]

    def coverage_table(self, frame, models=None, datasets=None):
        """Coverage beside the nominal, the calibration error and the PIT distance: per dataset, mean ± std over
        the settings (and seeds) of the folds' pooled counts."""
        from harness.reporting.tables import Column, Entry, Table, grouped, model_notes, registry_names, SCALE
        from protocols.metrics import mean_std

        rows, per, datasets, models = self._selection(frame, models, datasets)
        if rows.empty:
            return Table(CAPTION, (), (), {}, (f"no {self.name} records",))
        columns, entries, notes = [], {}, []
        point_only: dict[str, list[str]] = {}
        for ds in datasets:
            cols = [Column(ds, m.label, ranked=False) for m in COVERAGE] + [Column(ds, CALIBRATION_ERROR.label),
                                                                          Column(ds, PIT_DEVIATION.label)]
            columns += cols
            for model in models:
                reps = [r for r in per if r["dataset"] == ds and r["model"] == model]
                if not reps:
                    continue
                done = [r["counts"] for r in reps if r["complete"]]
                statuses = {r["status"] for r in reps}
                values = [[*c.coverage(), c.calibration_error(), c.pit_deviation()] for c in done]
                for i, col in enumerate(cols):
                    v = np.array([x[i] for x in values], dtype=float)
                    if v.size and np.isfinite(v).all():
                        mean, std = mean_std(v * SCALE)
                        entries[(model, col)] = Entry(mean, std, len(v), len(reps), "ok")
                    elif v.size:
                        entries[(model, col)] = Entry(np.nan, np.nan, 0, len(reps), "n/a")
                    else:
                        entries[(model, col)] = Entry(np.nan, np.nan, 0, len(reps),
                                                      "unavailable" if statuses == {"unavailable"} else "error")
                reasons = sorted({r["reason"] for r in reps if r["reason"]})
                if reasons and all(POINT_ONLY in why for why in reasons):
                    point_only.setdefault(ds, []).append(model)
                elif len(done) < len(reps) and reasons:
                    word = ("unavailable" if statuses == {"unavailable"}
                            else f"{len(done)}/{len(reps)} settings complete")
                    notes.append(f"{model} on {ds}: {word} ({'; '.join(reasons)[:300]})")
        measured = [m for m in models if any(e.status == "ok" for (n, _), e in entries.items() if n == m)]
        notes += [f"unavailable on {ds}, {POINT_ONLY} (no quantiles, so no interval to check): {', '.join(names)}"
                  for ds, names in point_only.items()]
        notes += levels_notes(per)
        return grouped(Table(CAPTION, tuple(columns), tuple(models), entries, tuple(dict.fromkeys(notes)),
                             model_notes(registry_names(rows, measured), self.name)), rows)

    def statistics_table(self, frame, models=None, datasets=None):
        """Coverage pooled over every setting, seed and fold, with a 95 % bootstrap interval over test subjects
        (the folds: each subject's points resampled together, as they are not independent)."""
        from harness.reporting.tables import Column, Entry, Table, SCALE

        caption = (f"Calibration statistics: coverage (x100) pooled over settings and folds, with a 95 % percentile "
                   f"interval from {BOOTSTRAP} bootstrap resamples of the test subjects (seed 0); few "
                   "subjects give a coarse interval.")
        rows, per, datasets, models = self._selection(frame, models, datasets)
        if rows.empty:
            return Table(caption, (), (), {}, (f"no {self.name} records",))
        columns, entries, notes = [], {}, []
        for ds in datasets:
            labels = [w for p in NOMINAL for w in (f"{p:.0%} cov.", f"{p:.0%} lo", f"{p:.0%} hi")]
            cols = [Column(ds, label, ranked=False) for label in labels]
            columns += cols
            for model in models:
                reps = [r for r in per if r["dataset"] == ds and r["model"] == model]
                if not reps:
                    continue
                if not all(r["complete"] for r in reps):
                    status = "unavailable" if {r["status"] for r in reps} == {"unavailable"} else "error"
                    entries.update({(model, col): Entry(np.nan, np.nan, 0, 1, status) for col in cols})
                    continue
                subjects = subject_counts(rows[(rows["dataset"] == ds) & (rows["model"] == model)])
                values = []
                for i in range(len(NOMINAL)):
                    values += list(coverage_interval(subjects, i) * SCALE)
                notes.append(f"{model} on {ds}: {len(subjects)} test subjects resampled")
                for col, v in zip(cols, values):
                    entries[(model, col)] = (Entry(v, np.nan, 1, 1, "ok") if np.isfinite(v)
                                             else Entry(np.nan, np.nan, 0, 1, "n/a"))
        return Table(caption, tuple(columns), tuple(models), entries, tuple(notes + levels_notes(per)))

    def _selection(self, frame, models, datasets):
        """(the task's rows, their replicates, the datasets and models of a table: those given, else the rows')."""
        rows = frame[frame["task"] == self.name]
        if rows.empty:
            return rows, [], [], []
        return (rows, replicates(rows), datasets or list(dict.fromkeys(rows["dataset"])),
                models or list(dict.fromkeys(rows["model"])))

    def figures(self, frame, out_dir):
        from harness.reporting.calibration_figure import calibration_figure

        rows = frame[frame["task"] == self.name]
        pooled_counts = {}
        for r in replicates(rows):
            if r["complete"]:
                pooled_counts.setdefault((r["dataset"], r["model"]), []).append(r["counts"])
        drawn = {}
        for key, counts in pooled_counts.items():
            try:
                drawn[key] = pool(counts)
            except ValueError:  # levels differ between settings: no one histogram
                continue
        return calibration_figure(drawn, out_dir / "calibration") if drawn else []

    def figure_missing(self, frame):
        return ("no model with quantile forecasts has a complete calibration cell (point forecasters have no "
                "interval: run with --models fracast, or a supervised model such as deepar)")


def row_counts(row) -> CalibrationCounts | None:
    """The counts an ok row keeps in its details (None for other rows)."""
    if row["status"] != "ok" or not isinstance(row["details"], str) or '"calibration"' not in row["details"]:
        return None
    return CalibrationCounts.from_dict(json.loads(row["details"])["calibration"])


def replicates(rows) -> list[dict]:
    """One entry per (dataset, model, setting, seed): the folds' counts pooled when every fold that any model has
    on that dataset finished ok (``complete``), else the status and the reasons."""
    out = []
    for ds, drows in rows.groupby("dataset", sort=False):
        folds = set(drows["fold"])
        for (model, setting, seed), g in drows.groupby(["model", "setting", "seed"], sort=False):
            ok = g[g["status"] == "ok"]
            counts, reason = None, "; ".join(sorted({str(e) for e in g.loc[g["status"] != "ok", "error"]
                                                     if isinstance(e, str) and e}))
            complete = set(ok["fold"]) >= folds and len(ok) == len(g)
            if complete:
                try:
                    counts = pool([row_counts(r) for _, r in ok.iterrows()])
                except ValueError as exc:
                    complete, reason = False, str(exc)
            elif not reason:
                reason = f"folds without a finished row: {', '.join(sorted(map(str, folds - set(ok['fold']))))}"
            statuses = set(g["status"])
            out.append({"dataset": ds, "model": model, "setting": setting, "seed": seed, "complete": complete,
                        "counts": counts, "reason": reason, "status": "ok" if complete else
                        "unavailable" if statuses == {"unavailable"} else "error"})
    return out


def levels_notes(per: list[dict]) -> list[str]:
    """Which quantile levels each model's numbers come from (a model with the deciles only has no 90 % interval)."""
    seen: dict[str, set] = {}
    for r in per:
        if r["counts"] is not None:
            seen.setdefault(r["model"], set()).add(r["counts"].levels)
    return [f"{m}: quantile levels {', '.join(f'{q:g}' for q in sorted(set().union(*ls)))}" for m, ls in seen.items()]


def subject_counts(rows) -> list[CalibrationCounts]:
    """Each test subject's counts pooled over settings and seeds (the bootstrap's units)."""
    by_fold: dict[str, list[CalibrationCounts]] = {}
    for _, r in rows.iterrows():
        c = row_counts(r)
        if c is not None:
            by_fold.setdefault(str(r["fold"]), []).append(c)
    return [pool(cs) for _, cs in sorted(by_fold.items())]


def coverage_interval(subjects: list[CalibrationCounts], i: int, resamples: int = BOOTSTRAP,
                      seed: int = 0) -> np.ndarray:
    """(pooled coverage, 2.5 %, 97.5 % percentiles) of nominal interval ``i`` over subject resamples; NaNs
    when the interval is not available."""
    if not subjects or any(s.inside[i] is None for s in subjects):
        return np.full(3, np.nan)
    inside = np.array([s.inside[i] for s in subjects], dtype=float)
    n = np.array([s.n for s in subjects], dtype=float)
    pick = np.random.default_rng(seed).integers(0, len(subjects), size=(resamples, len(subjects)))
    boot = inside[pick].sum(axis=1) / np.maximum(n[pick].sum(axis=1), 1)
    return np.array([inside.sum() / n.sum(), *np.percentile(boot, [2.5, 97.5])])


TASK = Calibration()  # registered by harness.tasks
