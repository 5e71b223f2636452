"""Subject shift: forecasting on a test subject whose level or amplitude lies outside the training subjects'.

Why: the fold's MinMax is fitted on the training subjects only (``protocols.scaling``), so a test subject
recorded at another level (another electrode, skin, gain) lands outside [0, 1] in normalised space; a model
trained on [0, 1] inputs may fail there (SOTER's documented failure on EDA, docs/soter.md).  Here the test
subject's raw recordings, context and target both (the subject is different, not the measurement), are shifted
by a named amount before the fold's MinMax, fitted on the unshifted training subjects, normalises them; the
cell is then scored exactly as forecasting's (``protocols.forecasting.evaluate_forecasting``), in the fold's
normalised space, on the same windows as the plain run (docs/protocols.md, "Subject shift").
"""

from __future__ import annotations

import numpy as np

from protocols.data import Dataset, Recording
from protocols.forecasting import ForecastOutcome, evaluate_forecasting
from protocols.interface import Model
from protocols.scaling import fit_fold_scaler
from protocols.specs import NO_SHIFT, SHIFT_KINDS, Setting, Shift, ShiftSpec
from protocols.splits import Fold

def parse_condition(condition: str) -> Shift:
    """The shift of a records' condition (``level=0.5``, :data:`NO_SHIFT`)."""
    kind, _, value = condition.partition("=")
    return Shift(SHIFT_KINDS[0] if condition == NO_SHIFT else kind, float(value))


def subject_mean(dataset: Dataset, subject: str) -> np.ndarray:
    """Per-channel mean of a subject's observed raw values (0 where a channel has none: nothing to rescale)."""
    values = np.concatenate([r.values for r in dataset.recordings_of((subject,))], axis=1)
    observed = np.isfinite(values)
    count = observed.sum(axis=1)
    total = np.where(observed, values, 0.0).sum(axis=1)
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def shifted_dataset(dataset: Dataset, fold: Fold, shift: Shift) -> Dataset:
    """The dataset with the fold's test subject shifted in raw units; the training subjects are the same objects
    (so the fold's MinMax, and a supervised model's training data, are the unshifted ones).  Severity 0 returns
    ``dataset`` itself: the plain run, bit for bit."""
    if shift.severity == 0:
        return dataset
    span = fit_fold_scaler(dataset, fold).scale[:, None]  # the training subjects' range (1 for a constant channel)
    mean = subject_mean(dataset, fold.test_subject)[:, None]

    def move(values: np.ndarray) -> np.ndarray:
        scaled = values if shift.factor == 1 else mean + shift.factor * (values - mean)
        return scaled + shift.offset * span

    recordings = tuple(Recording(r.subject, r.name, move(r.values), r.timestamps, r.labels)
                       if r.subject == fold.test_subject else r for r in dataset.recordings)
    out = Dataset(dataset.name, dataset.channels, recordings, dataset.sampling_rate, dataset.label_names,
                  dataset.description, dict(dataset.metadata))
    # the windows are drawn with the data's content id (protocols.windows): the plain run's, so that every
    # severity scores the same windows (a shift leaves missing samples where they were)
    out.__dict__["content_id"] = dataset.content_id
    return out


def evaluate_shift(model: Model, dataset: Dataset, fold: Fold, setting: Setting, spec: ShiftSpec,
                   shift: Shift) -> ForecastOutcome:
    """One cell: forecasting on the shifted test subject, scored in the fold's (unshifted) normalised space."""
    return evaluate_forecasting(model, shifted_dataset(dataset, fold, shift), fold, setting, spec.forecasting())
