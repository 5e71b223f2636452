"""The base of the tasks scored on the forecasting windows: forecasting and calibration (:class:`ForecastingWindows`)
and forecasting's error variants, noise, shift and irregular (:class:`ForecastingVariant`).

They share one header and one plumbing: ``--settings`` and ``--max-windows-per-subject``, a spec holding the settings
and the window sampling, a cell per (setting, condition), and the models that forecast each setting. A task built on
them declares only what differs: its spec type, the spec fields its own options set, its conditions, its cell."""

from __future__ import annotations

from typing import Any

from harness.registry.options import MAX_WINDOWS_PER_SUBJECT, SETTINGS, given, windows_per_subject
from harness.tasks.base import ErrorTask, Task
from protocols.specs import ForecastingSpec, SamplingSpec

WINDOW_OPTIONS = (SETTINGS, MAX_WINDOWS_PER_SUBJECT)  # every such task's options start with these


def setting_capable(model, cell) -> str | None:
    """A forecasting setting needs a model that forecasts and supports its context and horizon."""
    caps = model.capabilities
    s = cell.point
    if not caps.forecast or not caps.supports_setting(s.context, s.horizon):
        return f"{cell.model} does not support forecasting setting {cell.setting}"
    return None


class ForecastingWindows(Task):
    """A task on the forecasting windows. A subclass names its :attr:`spec_type` (a spec dataclass with
    ``settings`` and ``sampling`` fields), lists ``options = (*WINDOW_OPTIONS, its own ...)``, returns the spec
    fields its own options set from :meth:`spec_fields` and the conditions of each setting from :meth:`conditions`."""

    default_seeds = (0,)
    options = WINDOW_OPTIONS
    spec_type: type = ForecastingSpec

    def spec(self, options, seed):
        return self.spec_type(**given(settings=options.settings), **self.spec_fields(options),
                              sampling=self.sampling(options, seed))

    def spec_fields(self, options) -> dict[str, Any]:
        """The spec's fields that the task's own options set (a field left out keeps the spec's default)."""
        return {}

    def sampling(self, options, seed: int) -> SamplingSpec:
        """How the windows are drawn: the seed, and --max-windows-per-subject (given, else the task's default)."""
        return SamplingSpec(seed=seed, **windows_per_subject(self.name, options))

    def points(self, spec):
        return [(s, condition, level) for s in spec.settings for condition, level in self.conditions(spec)]

    def conditions(self, spec) -> list[tuple[str, float | None]]:
        """The (condition, level) pairs scored at every setting (default: the clean windows)."""
        return [("clean", None)]

    def capable(self, model, cell):
        return setting_capable(model, cell)


class ForecastingVariant(ForecastingWindows, ErrorTask):
    """Forecasting under a condition (noise, shift, irregular sampling): RMSE and MAE per condition and level, a
    table per condition and a figure per family, each cell's mean ± std over the settings and seeds."""

    scores_windows = True
    replicates = ("setting", "seed")
    replicate_words = "setting-seed pairs"
    over = "settings and seeds"
    figure_metrics = ("RMSE", "MAE")
