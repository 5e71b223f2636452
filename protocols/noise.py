"""Noise robustness: Gaussian noise beta * sigma on the context (the paper's), or an artefact of wearable
signals (``protocols.artefacts``, a named option), scored on the clean future."""

from __future__ import annotations

import numpy as np

from protocols.artefacts import ArtefactUnavailable, apply_artefact, mains_unavailable, unit_artefact
from protocols.data import Dataset, nominal_sampling_rate
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


def noise_draw(shape: tuple[int, ...], seed: int, data: str, subject: str, setting: Setting) -> np.ndarray:
    """Standard normal noise, the same draw for every beta (common random numbers); ``data``: the dataset's
    ``content_id`` (the same data under another name draws the same noise)."""
    rng = np.random.default_rng(stable_seed(seed, data, subject, "noise", setting.context, setting.horizon))
    return rng.standard_normal(shape)


def evaluate_noise(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: NoiseSpec,
                   beta: float, seed: int) -> ForecastOutcome:
    if not spec.artefact.is_paper:
        return evaluate_artefact(model, dataset, fold, setting, spec, beta, seed)
    sigma = channel_sigma(dataset, fold)

    def corrupt(context: np.ndarray) -> np.ndarray:
        z = noise_draw(context.shape, seed, dataset.content_id, fold.test_subject, setting)
        return context + beta * sigma[None, :, None] * z

    return evaluate_forecasting(model, dataset, fold, setting, spec.forecasting(), corrupt_context=corrupt)


def artefact_unavailable(dataset: Dataset, spec: NoiseSpec) -> str | None:
    """Why the spec's artefact cannot exist on ``dataset`` (mains above Nyquist), or None."""
    if spec.artefact.kind != "mains":
        return None
    return mains_unavailable(nominal_sampling_rate(dataset), spec.artefact.mains_hz)


def evaluate_artefact(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: NoiseSpec,
                      level: float, seed: int) -> ForecastOutcome:
    """The context corrupted by ``spec.artefact`` at severity ``level``; the same draw at every level."""
    kind = spec.artefact.kind
    reason = artefact_unavailable(dataset, spec)
    if reason:
        raise ArtefactUnavailable(reason)
    sigma = channel_sigma(dataset, fold)
    fs = nominal_sampling_rate(dataset)

    def corrupt(context: np.ndarray) -> np.ndarray:
        rng = np.random.default_rng(stable_seed(seed, dataset.content_id, fold.test_subject, "artefact", kind,
                                                setting.context, setting.horizon))
        unit = unit_artefact(kind, context.shape, fs, rng, spec.artefact.mains_hz, spec.artefact.placement)
        return apply_artefact(kind, context, sigma, level, unit)

    return evaluate_forecasting(model, dataset, fold, setting, spec.forecasting(), corrupt_context=corrupt)
