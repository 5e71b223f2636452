"""What the golden numbers are made of: one small run of every built-in task, and fixed forecasts of a few models.

Small enough that the whole suite costs about a minute of CPU, wide enough that every part of a task's evaluation
leaves a trace: each task runs through the real runner on a tiny dataset with its cheap models (and SOTER where the
task's default includes it and it stays cheap), few settings and windows. The models' own goldens are their
forecasts of fixed noisy sines at 48/24 and 128/64, so that a model's change is caught even when no task run
includes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from protocols.data import Dataset
from protocols.specs import Setting


def toy() -> Dataset:
    """The tests' three-subject dataset (two channels, two labels) at 64 Hz, the rate the shipped SOTER
    checkpoints were trained at (at 10 Hz their forecasts of 96/48 diverge: numbers too fragile for a golden)."""
    from tests.conftest import make_dataset

    return make_dataset(n_subjects=3, n_samples=300, rate=RATE)


def physio() -> Dataset:
    """Simulated ECG, PPG and respiration at 100 Hz (physiology needs channels it can read a rate from)."""
    from tests.test_physiology import physio_dataset

    return physio_dataset()


@dataclass(frozen=True)
class TaskCase:
    """One run of a task: ``RunConfig`` fields (models, seeds) and the task's options, on ``dataset()``."""

    fields: dict[str, Any]
    options: dict[str, Any]
    dataset: Callable[[], Dataset] = toy


RATE = 64.0
FORECAST = (Setting(48, 24),)
TASK_CASES: dict[str, TaskCase] = {
    "forecasting": TaskCase(dict(models=("last-value", "window-mean", "drift", "seasonal-naive", "auto-theta",
                                         "soter", "soter-anchored")),
                            dict(settings=(Setting(48, 24), Setting(96, 48)), max_windows_per_subject=4)),
    "imputation": TaskCase(dict(models=("locf", "linear-extrapolation", "last-value", "soter"), seeds=(0, 1)),
                           dict(rates=(0.25,), segment_length=32, max_windows_per_subject=4)),
    "noise": TaskCase(dict(models=("last-value", "seasonal-naive", "soter")),
                      dict(settings=FORECAST, levels=(0.0, 0.1), max_windows_per_subject=4)),
    "classification": TaskCase(dict(models=("stat-features", "random", "soter"), seeds=(0,)),
                               dict(budgets=(0.5, 1.0), segment_length=32)),
    # physiology without SOTER: its 10 s contexts at 100 Hz cost minutes of CPU, not seconds
    "physiology": TaskCase(dict(models=("last-value", "seasonal-naive", "locf")),
                           dict(rates=(0.25,), max_windows_per_subject=2, physio_context=10.0, physio_horizon=20.0,
                                physio_segment=20.0, physio_sources=("forecast", "imputation")), physio),
    "calibration": TaskCase(dict(models=("fracast", "last-value")), dict(settings=FORECAST, max_windows_per_subject=4)),
    "shift": TaskCase(dict(models=("last-value", "window-mean", "soter-anchored")),
                      dict(settings=FORECAST, shift_kinds=("level", "scale"), shift_severities=(0.0, 1.0),
                           max_windows_per_subject=2)),
    "irregular": TaskCase(dict(models=("last-value", "soter")),
                          dict(settings=(Setting(32, 16),), patterns=("drop", "jitter"), severities=(0.0, 0.5),
                               max_windows_per_subject=2)),
    "classification-heads": TaskCase(dict(models=("stat-features", "soter"), seeds=(0,)),
                                     dict(budgets=(1.0,), heads=("linear", "mlp"), segment_length=32)),
}


@dataclass(frozen=True)
class ModelCase:
    """Fixed forecasts of one registered model: ``batch`` noisy sines of ``channels`` channels per setting, sampled
    at ``rate`` Hz."""

    settings: tuple[Setting, ...] = (Setting(48, 24), Setting(128, 64))
    batch: int = 3
    channels: int = 2
    rate: float = RATE
    options: dict[str, Any] = field(default_factory=lambda: {"seed": 0})


MODEL_CASES: dict[str, ModelCase] = {
    "soter-tiny-random": ModelCase(),  # SOTER's code alone: random initialisation from a fixed seed
    "soter": ModelCase(),  # models/soter/checkpoints/soter-cpu-64
    "soter-anchored": ModelCase(),  # models/soter/checkpoints/soter-cpu-64-noaux
    "fracast": ModelCase(),
    "auto-theta": ModelCase(batch=2, channels=1),  # numba: every series is a fit of its own
}
