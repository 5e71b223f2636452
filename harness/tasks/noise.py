"""Forecasting under context noise: the forecasting settings with noise of level beta added to the context."""

from __future__ import annotations

from harness.registry.options import (ARTEFACT, ARTEFACT_PLACEMENT, MAINS_HZ, MAX_WINDOWS_PER_SUBJECT,
                                      NOISE_LEVELS_OPTION, SETTINGS, artefact_of, given)
from harness.tasks.base import ErrorTask
from harness.tasks.forecasting import planned_forecast_windows, sampling, setting_capable
from protocols.artefacts import ArtefactUnavailable
from protocols.noise import evaluate_noise
from protocols.specs import NoiseSpec
from protocols.splits import get_fold

SEVERITY = {"clip": "clip severity (share of context samples saturated)"}


class Noise(ErrorTask):
    name = "noise"
    description = "forecasting under context noise (RMSE, MAE per noise level beta)"
    default_seeds = (0,)
    scores_windows = True
    replicates = ("setting", "seed")
    replicate_words = "setting-seed pairs"
    title = "Forecasting under context noise"
    over = "settings and seeds"
    figure = "noise robustness"
    figure_stem = "noise_robustness"
    figure_metrics = ("RMSE", "MAE")
    x_label = "noise level beta"
    options = (SETTINGS, NOISE_LEVELS_OPTION, MAX_WINDOWS_PER_SUBJECT, ARTEFACT, MAINS_HZ, ARTEFACT_PLACEMENT)

    def spec(self, options, seed):
        artefact = artefact_of(options)
        return NoiseSpec(**given(settings=options.settings), levels=options.levels or artefact.default_levels,
                         sampling=sampling(options, seed), artefact=artefact)

    def points(self, spec):
        return [(s, spec.artefact.condition(b), b) for s in spec.settings for b in spec.levels]

    def family(self, condition):
        """The artefact of a condition: "" for the paper's Gaussian noise (``beta=0.1``), else e.g. ``wander``."""
        name = condition.partition("=")[0]
        return "" if name == "beta" else name

    def family_label(self, family):
        return SEVERITY.get(family, f"{family} severity (RMS where present / sigma)")

    def capable(self, model, cell):
        return setting_capable(model, cell)

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
