"""Forecasting under context noise: the forecasting settings with noise of level beta added to the context."""

from __future__ import annotations

from harness.registry.options import ARTEFACT, ARTEFACT_PLACEMENT, MAINS_HZ, NOISE_LEVELS_OPTION, artefact_of
from harness.tasks.forecasting_base import WINDOW_OPTIONS, ForecastingVariant
from harness.tasks.forecasting import planned_forecast_windows
from protocols.artefacts import ArtefactUnavailable
from protocols.noise import evaluate_noise
from protocols.specs import NoiseSpec
from protocols.splits import get_fold

SEVERITY = {"clip": "clip severity (share of context samples saturated)"}


class Noise(ForecastingVariant):
    name = "noise"
    description = "forecasting under context noise (RMSE, MAE per noise level beta)"
    title = "Forecasting under context noise"
    figure = "noise robustness"
    figure_stem = "noise_robustness"
    x_label = "noise level beta"
    options = (*WINDOW_OPTIONS, NOISE_LEVELS_OPTION, ARTEFACT, MAINS_HZ, ARTEFACT_PLACEMENT)
    spec_type = NoiseSpec

    def spec_fields(self, options):
        artefact = artefact_of(options)
        return {"levels": options.levels or artefact.default_levels, "artefact": artefact}

    def conditions(self, spec):
        return [(spec.artefact.condition(b), b) for b in spec.levels]

    def family(self, condition):
        """The artefact of a condition: "" for the paper's Gaussian noise (``beta=0.1``), else e.g. ``wander``."""
        name = condition.partition("=")[0]
        return "" if name == "beta" else name

    def family_label(self, family):
        return SEVERITY.get(family, f"{family} severity (RMS where present / sigma)")

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        try:
            out = evaluate_noise(model, dataset, fold, cell.point, cell.spec, cell.level, cell.seed)
        except ArtefactUnavailable as exc:  # mains above this dataset's Nyquist frequency
            return {"status": "unavailable", "error": str(exc)}
        return self.error_row(cell, out)

    def planned_windows(self, cell, dataset):
        return planned_forecast_windows(cell, dataset, cell.spec.forecasting().sampling)


TASK = Noise()  # registered by harness.tasks
