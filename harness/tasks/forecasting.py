"""Zero-shot forecasting: each fold's windows, every model's forecast against the horizon (RMSE, MAE)."""

from __future__ import annotations

from harness.tasks.base import ErrorTask
from protocols.forecasting import evaluate_forecasting
from protocols.specs import PAPER_WINDOWS, ForecastingSpec, SamplingSpec, WindowSpec
from protocols.splits import get_fold


def sampling(config, seed: int) -> SamplingSpec:
    """How forecasting-type tasks draw their windows: the seed, and --max-windows-per-subject if given."""
    maxw = {} if config.max_windows_per_subject is None else {"max_windows_per_subject": config.max_windows_per_subject}
    return SamplingSpec(seed=seed, **maxw)


def window_capable(model, cell) -> str | None:
    """A forecasting window needs a model that forecasts and supports its context and horizon."""
    caps = model.capabilities
    w = WindowSpec.parse(cell.window)
    if not caps.forecast or not caps.supports_window(w.context, w.horizon):
        return f"{cell.model} does not support forecasting window {cell.window}"
    return None


class Forecasting(ErrorTask):
    name = "forecasting"
    description = "zero-shot forecasting (RMSE, MAE per context/horizon window)"
    default_seeds = (0,)
    scores_windows = True
    horizon_curves = True
    replicates = ("window",)
    replicate_words = "windows"

    def spec(self, config, seed):
        return ForecastingSpec(windows=config.windows or PAPER_WINDOWS, sampling=sampling(config, seed))

    def points(self, spec):
        return [(w.name, "clean", None) for w in spec.windows]

    def capable(self, model, cell):
        return window_capable(model, cell)

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        return self.error_row(cell, evaluate_forecasting(model, dataset, fold, WindowSpec.parse(cell.window), cell.spec))

    def tables(self, frame, models=None, datasets=None):
        from harness.tables import forecasting_table

        return [("forecasting", forecasting_table(frame, models, datasets))]


TASK = Forecasting()  # registered by harness.tasks
