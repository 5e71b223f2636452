"""Forecasting under context noise: the forecasting settings with noise of level beta added to the context."""

from __future__ import annotations

from harness.tasks.base import ErrorTask
from harness.tasks.forecasting import sampling, setting_capable
from protocols.noise import evaluate_noise
from protocols.specs import NoiseSpec, Setting
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

    def spec(self, config, seed):
        return NoiseSpec(levels=config.noise_levels, settings=config.settings or NoiseSpec.settings,
                         sampling=sampling(config, seed))

    def points(self, spec):
        return [(s.name, f"beta={b:g}", b) for s in spec.settings for b in spec.levels]

    def capable(self, model, cell):
        return setting_capable(model, cell)

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        out = evaluate_noise(model, dataset, fold, Setting.parse(cell.setting), cell.spec, cell.level, cell.seed)
        return self.error_row(cell, out)


TASK = Noise()  # registered by harness.tasks
