"""Forecasting under context noise: the forecasting settings with noise of level beta added to the context."""

from __future__ import annotations

from harness.registry.options import MAX_WINDOWS_PER_SUBJECT, NOISE_LEVELS_OPTION, SETTINGS, given
from harness.tasks.base import ErrorTask
from harness.tasks.forecasting import sampling, setting_capable
from protocols.noise import evaluate_noise
from protocols.specs import NoiseSpec
from protocols.splits import get_fold


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
    options = (SETTINGS, NOISE_LEVELS_OPTION, MAX_WINDOWS_PER_SUBJECT)

    def spec(self, options, seed):
        return NoiseSpec(**given(levels=options.levels, settings=options.settings), sampling=sampling(options, seed))

    def points(self, spec):
        return [(s, f"beta={b:g}", b) for s in spec.settings for b in spec.levels]

    def capable(self, model, cell):
        return setting_capable(model, cell)

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        out = evaluate_noise(model, dataset, fold, cell.point, cell.spec, cell.level, cell.seed)
        return self.error_row(cell, out)


TASK = Noise()  # registered by harness.tasks
