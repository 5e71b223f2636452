"""Forecasting under context noise: the forecasting windows with noise of level beta added to the context."""

from __future__ import annotations

from harness.tasks.base import ErrorTask
from harness.tasks.forecasting import sampling, window_capable
from protocols.noise import evaluate_noise
from protocols.specs import NoiseSpec, WindowSpec
from protocols.splits import get_fold


class Noise(ErrorTask):
    name = "noise"
    description = "forecasting under context noise (RMSE, MAE per noise level beta)"
    default_seeds = (0,)
    scores_windows = True
    replicates = ("window", "seed")
    replicate_words = "window-seed pairs"
    title = "Forecasting under context noise"
    over = "windows and seeds"
    figure = "noise robustness"
    figure_stem = "noise_robustness"
    figure_metrics = ("RMSE", "MAE")
    x_label = "noise level beta"

    def spec(self, config, seed):
        return NoiseSpec(levels=config.noise_levels, windows=config.windows or NoiseSpec.windows,
                         sampling=sampling(config, seed))

    def points(self, spec):
        return [(w.name, f"beta={b:g}", b) for w in spec.windows for b in spec.levels]

    def capable(self, model, cell):
        return window_capable(model, cell)

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        out = evaluate_noise(model, dataset, fold, WindowSpec.parse(cell.window), cell.spec, cell.level, cell.seed)
        return self.error_row(cell, out)


TASK = Noise()  # registered by harness.tasks
