"""Forecasting under irregular sampling (issue #48 item 1): the forecasting windows observed by a pattern
(jitter, drop, renewal, multirate) at each severity; continuous-time models get the true timestamps, grid
models the context resampled onto the nominal grid (``protocols.irregular``, docs/protocols.md)."""

from __future__ import annotations

import dataclasses
import json

from harness.registry.options import MAX_WINDOWS_PER_SUBJECT, SETTINGS, Option, choice, given
from harness.tasks.base import ErrorTask, details
from harness.tasks.forecasting import sampling, setting_capable
from protocols.irregular import (PATTERNS, REGULAR, RESAMPLED, SEVERITIES, TRUE_TIMES, IrregularSpec,
                                 evaluate_irregular)
from protocols.splits import get_fold

PATTERNS_OPTION = Option("--patterns", f"how the windows are sampled (any of {', '.join(PATTERNS)}; "
                         "default: all)", choice(PATTERNS), many=True, metavar="PATTERN")
SEVERITIES_OPTION = Option("--severities", "severities in [0, 1) (default: "
                           f"{' '.join(f'{s:g}' for s in SEVERITIES)}; 0 is the regular window; docs/protocols.md)",
                           float, many=True, metavar="S")

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


class Irregular(ErrorTask):
    name = "irregular"
    description = "forecasting under irregular sampling (RMSE, MAE per pattern and severity)"
    default_seeds = (0,)
    replicates = ("setting", "seed")
    replicate_words = "setting-seed pairs"
    title = "Forecasting under irregular sampling"
    over = "settings and seeds"
    figure = "irregular sampling: error against severity per pattern"
    figure_stem = "irregular_sampling"
    figure_metrics = ("RMSE", "MAE")
    x_label = "severity"
    options = (SETTINGS, PATTERNS_OPTION, SEVERITIES_OPTION, MAX_WINDOWS_PER_SUBJECT)

    def spec(self, options, seed):
        return IrregularSpec(**given(settings=options.settings, patterns=options.patterns,
                                     severities=options.severities), sampling=sampling(options, seed))

    def points(self, spec):
        """Severity 0 once per setting (``regular``: the same windows for every pattern), then each pattern's."""
        return [(s, c, v) for s in spec.settings
                for c, v in dict.fromkeys((spec.condition(p, v), v) for p in spec.patterns for v in spec.severities)]

    def default_models(self):
        """The noise study's default models (a severity study of the same forecasts)."""
        from harness.registry.tasks import get_task

        return get_task("noise").default_models()

    def family(self, condition):
        return "" if condition == REGULAR else condition.partition("=")[0]

    def families(self, frame):
        """Each pattern's rows with the regular rows as its severity 0 (``drop=0``): its tables and figure
        start at the regular window."""
        out = super().families(frame)
        regular = [rows for f, rows in out if f == ""]
        if not regular:
            return [(f, rows) for f, rows in out if f]
        import pandas as pd

        return [(f, pd.concat([regular[0].assign(condition=f"{f}=0"), rows])) for f, rows in out if f]

    def family_label(self, family):
        return SEVERITY.get(family, self.x_label)

    def capable(self, model, cell):
        return setting_capable(model, cell)

    def evaluate(self, cell, dataset, model):
        pattern = cell.spec.patterns[0] if cell.condition == REGULAR else cell.condition.partition("=")[0]
        out = evaluate_irregular(model, dataset, get_fold(dataset, cell.fold), cell.point, cell.spec, pattern,
                                 cell.level, cell.seed, takes_true_times(cell.model, model))
        facts = {"input": out.input_path, "observed_context": round(out.observed_context, 6),
                 "scored_target": round(out.scored_target, 6)}
        return self.error_row(cell, out, {"details": details(**facts)})

    def tables(self, frame, models=None, datasets=None):
        """The severity tables of each pattern, each with a note naming every row's input path."""
        note = input_note(frame[frame["task"] == self.name]) if "details" in frame else ""
        return [(stem, dataclasses.replace(t, notes=t.notes + (note,)) if note else t)
                for stem, t in super().tables(frame, models, datasets)]


def input_note(rows) -> str:
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
    return ("Input path: " + "; ".join(f"{', '.join(paths[p])}: {p}" for p in order)
            + " (grid forecasts linearly interpolated to the true target times; docs/protocols.md).")


TASK = Irregular()  # registered by harness.tasks
