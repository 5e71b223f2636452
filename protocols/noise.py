"""Noise robustness: Gaussian noise beta * sigma on the context, scored on the clean future."""

from __future__ import annotations

import numpy as np

from protocols.data import Dataset
from protocols.forecasting import ForecastOutcome, evaluate_forecasting
from protocols.interface import Model
from protocols.scaling import fit_fold_scaler
from protocols.specs import NoiseSpec, Setting
from protocols.splits import Fold
from protocols.windows import stable_seed


def channel_sigma(dataset: Dataset, fold: Fold) -> np.ndarray:
    """Per-channel signal scale: std of the training subjects' values, normalised space."""
    scaler = fit_fold_scaler(dataset, fold)
    train = np.concatenate([r.values for r in dataset.recordings_of(fold.train_subjects)], axis=1)
    return np.nanstd(scaler.transform(train), axis=1)


def noise_draw(shape: tuple[int, ...], seed: int, dataset: str, subject: str, setting: Setting) -> np.ndarray:
    """Standard normal noise, the same draw for every beta (common random numbers)."""
    rng = np.random.default_rng(stable_seed(seed, dataset, subject, "noise", setting.context, setting.horizon))
    return rng.standard_normal(shape)


def evaluate_noise(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: NoiseSpec,
                   beta: float, seed: int) -> ForecastOutcome:
    sigma = channel_sigma(dataset, fold)

    def corrupt(context: np.ndarray) -> np.ndarray:
        z = noise_draw(context.shape, seed, dataset.name, fold.test_subject, setting)
        return context + beta * sigma[None, :, None] * z

    return evaluate_forecasting(model, dataset, fold, setting, spec.forecasting(), corrupt_context=corrupt)
