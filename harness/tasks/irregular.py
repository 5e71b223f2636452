"""Forecasting and causal imputation under irregular sampling (issue #48 item 1): the forecasting windows (and,
with ``--irregular-sources impute``, the imputation segments) observed by a pattern (jitter, drop, renewal,
multirate) at each severity; continuous-time models get the true timestamps, grid models the context resampled
onto the nominal grid (``protocols.irregular``, ``protocols.irregular_imputation``, docs/protocols.md)."""

from __future__ import annotations

import dataclasses
import json

from harness.registry.options import Option, choice, given
from harness.tasks.base import details
from harness.tasks.forecasting_base import WINDOW_OPTIONS, ForecastingVariant
from protocols.irregular import RESAMPLED, TRUE_TIMES, evaluate_irregular
from protocols.irregular_imputation import evaluate_irregular_imputation
from protocols.specs import IMPUTE, IMPUTE_RATE, PATTERNS, REGULAR, SEVERITIES, SOURCES, IrregularSpec
from protocols.splits import get_fold

PATTERNS_OPTION = Option("--patterns", f"how the windows are sampled (any of {', '.join(PATTERNS)}; "
                         "default: all)", choice(PATTERNS), many=True, metavar="PATTERN")
SEVERITIES_OPTION = Option("--severities", "severities in [0, 1) (default: "
                           f"{' '.join(f'{s:g}' for s in SEVERITIES)}; 0 is the regular window; docs/protocols.md)",
                           float, many=True, metavar="S")
SOURCES_OPTION = Option("--irregular-sources", f"forecasts and/or causal imputation (of {', '.join(SOURCES)}; "
                        f"default: {' '.join(IrregularSpec.sources)})", choice(SOURCES), many=True, metavar="SOURCE")

# the registry families whose models are continuous-time: they get the true timestamps (SOTER's forecast reads
# each row's timestamps and queries at arbitrary times). A model may declare itself with ``continuous_time = True``.
CONTINUOUS_TIME_FAMILIES = ("soter",)

SEVERITY = {
    "jitter": "jitter severity (sample times moved by U(-s/2, s/2) periods)",
    "drop": "drop severity (share of time steps lost, Bernoulli)",
    "renewal": "renewal severity (share of time in outages)",
    "multirate": "multirate severity (channel j at 1 - s(j+1)/C of the rate)",
}


def takes_true_times(name: str, model) -> bool:
    """Whether a model is given the true timestamps (continuous time) rather than the resampled grid."""
    declared = getattr(model, "continuous_time", None)
    if declared is not None:
        return bool(declared)
    from models.registry import all_specs

    spec = all_specs().get(name)
    return spec is not None and spec.family in CONTINUOUS_TIME_FAMILIES


class Irregular(ForecastingVariant):
    name = "irregular"
    description = "forecasting under irregular sampling (RMSE, MAE per pattern and severity)"
    scores_windows = False  # its rows keep no per-window errors: the statistics do not apply
    title = "Forecasting under irregular sampling"
    figure = "irregular sampling: error against severity per pattern"
    figure_stem = "irregular_sampling"
    x_label = "severity"
    options = (*WINDOW_OPTIONS, PATTERNS_OPTION, SEVERITIES_OPTION, SOURCES_OPTION)
    spec_type = IrregularSpec

    def spec_fields(self, options):
        return given(patterns=options.patterns, severities=options.severities, sources=options.irregular_sources)

    def points(self, spec):
        """Severity 0 once per setting (``regular``: the same windows for every pattern), then each pattern's;
        the imputation cells (``impute ...``) at the segment length, after the forecast cells."""
        def conditions(source):
            return dict.fromkeys((spec.condition(p, v, source), v) for p in spec.patterns for v in spec.severities)

        forecast = [(s, c, v) for s in spec.settings for c, v in conditions("forecast")] \
            if "forecast" in spec.sources else []
        impute = [(spec.imputation().length, c, v) for c, v in conditions("impute")] if "impute" in spec.sources else []
        return forecast + impute

    def default_models(self):
        """The noise study's default models (a severity study of the same forecasts)."""
        from harness.registry.tasks import get_task

        return get_task("noise").default_models()

    def family(self, condition):
        """The pattern (``drop``; ``impute drop`` for imputation); the regular cells: "" and ``impute``."""
        source, rest = (IMPUTE, condition[len(IMPUTE):]) if condition.startswith(IMPUTE) else ("", condition)
        return (source + ("" if rest == REGULAR else rest.partition("=")[0])).strip()

    def families(self, frame):
        """Each pattern's rows with its source's regular rows as its severity 0 (``drop=0``, ``impute drop=0``):
        its tables and figure start at the regular window (segment)."""
        out = super().families(frame)
        regular = {f: rows for f, rows in out if f in ("", IMPUTE.strip())}
        import pandas as pd

        def source(f):
            return IMPUTE.strip() if f.startswith(IMPUTE) else ""

        return [(f, pd.concat([regular[source(f)].assign(condition=f"{f}=0"), rows]) if source(f) in regular else rows)
                for f, rows in out if f not in regular]

    def family_label(self, family):
        imputed = family.startswith(IMPUTE)
        label = SEVERITY.get(family[len(IMPUTE):] if imputed else family, self.x_label)
        return f"{label}, imputation" if imputed else label

    def capable(self, model, cell):
        if cell.condition.startswith(IMPUTE):  # as the imputation task: a forecaster imputes by the default
            caps = model.capabilities
            return None if caps.impute or caps.forecast else f"{cell.model} neither imputes nor forecasts"
        return super().capable(model, cell)

    def evaluate(self, cell, dataset, model):
        imputed = cell.condition.startswith(IMPUTE)
        condition = cell.condition[len(IMPUTE):] if imputed else cell.condition
        pattern = cell.spec.patterns[0] if condition == REGULAR else condition.partition("=")[0]
        fold = get_fold(dataset, cell.fold)
        if imputed:
            out = evaluate_irregular_imputation(model, dataset, fold, cell.spec.imputation(), pattern, cell.level,
                                                cell.seed, takes_true_times(cell.model, model))
            facts = {"input": out.input_path, "missing_rate": IMPUTE_RATE, "queries": out.n_queries,
                     "kept": round(out.kept, 6)}
            return self.error_row(cell, out, {"details": details(**facts)},
                                  nothing_left(pattern, cell, out.n_windows, "segment", "query with its true value"))
        out = evaluate_irregular(model, dataset, fold, cell.point, cell.spec, pattern,
                                 cell.level, cell.seed, takes_true_times(cell.model, model))
        facts = {"input": out.input_path, "observed_context": round(out.observed_context, 6),
                 "scored_target": round(out.scored_target, 6)}
        return self.error_row(cell, out, {"details": details(**facts)},
                              nothing_left(pattern, cell, out.n_windows, "window", "target sample"))

    def tables(self, frame, models=None, datasets=None):
        """The severity tables of each pattern, each with a note naming every row's input path (imputation's:
        captioned as such, the missing rate named)."""
        rows = frame[frame["task"] == self.name]
        out = []
        for stem, t in super().tables(frame, models, datasets):
            imputed = stem.startswith(f"{self.name}_impute")
            mine = rows[rows["condition"].str.startswith(IMPUTE) == imputed] if len(rows) else rows
            note = input_note(mine, imputed) if "details" in frame else ""
            if imputed:
                t = dataclasses.replace(t, caption=t.caption.replace(
                    self.title, f"Causal imputation (missing rate {IMPUTE_RATE:.0%}) under irregular sampling", 1))
            out.append((stem, dataclasses.replace(t, notes=t.notes + (note,)) if note else t))
        return out


def nothing_left(pattern: str, cell, drawn: int, unit: str, what: str) -> str | None:
    """Why a cell whose windows were drawn scored nothing: the pattern removed every entry there was to score (drop
    or renewal near severity 1), not short recordings or missing values (the generic reason, when none were drawn)."""
    if not drawn:
        return None
    return (f"{pattern} at severity {cell.level:g} left no {what} observed in any of the {drawn} {unit}(s) of test "
            f"subject {cell.fold}: nothing to score (a lower severity keeps some)")


def input_note(rows, imputed: bool = False) -> str:
    """'Input: soter: true timestamps; last-value, ...: resampled ...' from the rows' details."""
    paths: dict[str, list[str]] = {}
    for model, text in zip(rows["model"], rows["details"].fillna("")):
        try:
            path = json.loads(text).get("input") if text else None
        except (ValueError, AttributeError):
            path = None
        if path and model not in paths.setdefault(path, []):
            paths[path].append(model)
    if not paths:
        return ""
    order = [p for p in (TRUE_TIMES, RESAMPLED) if p in paths] + sorted(set(paths) - {TRUE_TIMES, RESAMPLED})
    how = ("the protocol's mask kept: each model's own missing-value mechanism fills what it hid; queried at the "
           "true times" if imputed else "grid forecasts linearly interpolated to the true target times")
    return "Input path: " + "; ".join(f"{', '.join(paths[p])}: {p}" for p in order) + f" ({how}; docs/protocols.md)."


TASK = Irregular()  # registered by harness.tasks
