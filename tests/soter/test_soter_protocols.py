"""SOTER through the harness protocols: the leakage probes pass, every task runs."""

from __future__ import annotations

import pytest

from models.registry import get_spec
from protocols.leakage import probe_forecasting, probe_imputation
from protocols.specs import ForecastingSpec, ImputationSpec, SamplingSpec, Setting
from protocols.splits import loso_folds
from tests.conftest import make_dataset


@pytest.mark.parametrize("name", ["soter-tiny-random", "soter"])
def test_soter_passes_the_leakage_probes_within_its_declared_tolerance(name):
    """At the tolerance SOTER declares for batch effects (``batch_tolerance``), nothing more."""
    ds = make_dataset(n_subjects=3, n_samples=200)
    fold = loso_folds(ds)[0]
    model = get_spec(name).load(seed=0)
    spec = ForecastingSpec(settings=(Setting(24, 8),), sampling=SamplingSpec(max_windows_per_subject=2))
    probe_forecasting(model, ds, fold, Setting(24, 8), spec, n_windows=2)
    probe_imputation(model, ds, fold, ImputationSpec(length=32, warmup=8, points_per_segment=2,
                                                     max_windows_per_subject=2), 0.5, seed=0, n_queries=2)
