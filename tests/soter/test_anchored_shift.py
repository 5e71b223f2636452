"""Issue #26: a test subject whose level lies outside the training subjects' range. The fold's MinMax
(fitted on the training subjects) maps it outside [0, 1]; the shipped soter-anchored must forecast it
no worse, relative to last value, than the same subject unshifted."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models.registry import load_model
from models.soter.entries import discover
from protocols.datasets.synthetic import load_synthetic_cohort
from protocols.forecasting import evaluate_forecasting
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import get_fold

SETTING = Setting(48, 24)
SPEC = ForecastingSpec(settings=(SETTING,), sampling=SamplingSpec(max_windows_per_subject=6))


def _shifted(dataset, subject: str, channel: int, by_ranges: float):
    """The cohort with one subject's channel offset by ``by_ranges`` times the other subjects' range."""
    others = np.concatenate([r.values[channel] for r in dataset.recordings if r.subject != subject])
    offset = by_ranges * (others.max() - others.min())
    recs = []
    for r in dataset.recordings:
        if r.subject == subject:
            values = r.values.copy()
            values[channel] += offset
            r = dataclasses.replace(r, values=values)
        recs.append(r)
    shifted = dataclasses.replace(dataset, recordings=tuple(recs))
    # the same windows as the unshifted cohort: draws are seeded by the data's content (docs/records.md), and a
    # shifted copy would otherwise draw other windows than the one it is compared with
    shifted.__dict__["content_id"] = dataset.content_id
    return shifted


def _ratio(model, baseline, dataset, fold) -> float:
    errors = [evaluate_forecasting(m, dataset, fold, SETTING, SPEC).errors for m in (model, baseline)]
    return float(np.sqrt(errors[0].sse / errors[1].sse))


@pytest.fixture(scope="module")
def loaded() -> dict[str, object]:
    """Each entry loaded once for every subject (forecasting does not change a loaded model)."""
    return {}


@pytest.mark.parametrize("name", [n for n, e in discover().items() if not e.faithful])  # the shipped window-scaled entries
@pytest.mark.parametrize("subject, channel", [("S01", 3), ("S04", 0)])  # EDA (slow) and ECG
def test_shifted_test_subject_is_forecast_as_well_as_unshifted(subject, channel, name, loaded):
    cohort = load_synthetic_cohort()
    shifted = _shifted(cohort, subject, cohort.channels.index(cohort.channels[channel]), 2.0)
    fold = get_fold(cohort, subject)
    if name not in loaded:
        loaded[name] = load_model(name, seed=0)
    model = loaded[name]
    last = load_model("last-value", seed=0)
    plain = _ratio(model, last, cohort, fold)
    moved = _ratio(model, last, shifted, fold)
    assert np.isfinite(plain) and moved <= plain * (1 + 1e-3), (plain, moved)
