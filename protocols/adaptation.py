"""Adapting a pretrained model to a fold's training subjects (issue #49): the modes, the budgets, the windows.

Why a protocol module: what an adapted model may train on is part of the evaluation's rules, the same for
every model that adapts. It trains on the fold's :class:`~protocols.interface.TrainingSeries` only (the
training subjects, under the fold's MinMax): an adapted model declares ``Capabilities.fit``, so the forecasting
protocol (``fit_for_fold``) hands it those series and :func:`protocols.leakage.probe_fit` checks that the test
subject never reaches it. The budget of an adaptation (steps, learning rate, windows per step) is named
(:data:`BUDGETS`), and the name is one of the adapted model's options, hence part of every row key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols.interface import ModelInputError, TrainingSeries
from protocols.specs import SpecError
from protocols.windows import stable_seed

ZERO_SHOT = "zero-shot"  # the frozen model: no adaptation (its rows and keys are those of the model itself)
MODES = (ZERO_SHOT, "head", "full")  # head: only the output head's parameters train; full: every parameter
ADAPTED_MODES = MODES[1:]


@dataclass(frozen=True)
class AdaptationBudget:
    """How much an adaptation may train: ``steps`` optimiser steps (AdamW) of ``batch_size`` windows at ``lr``,
    constant, no warmup (few steps: a schedule would spend them warming up)."""

    name: str
    steps: int
    lr: float
    batch_size: int
    targets: int = 2  # horizon offsets supervised per window and step (each its own decoder solve)
    weight_decay: float = 0.0

    def describe(self) -> dict[str, object]:
        return {"budget": self.name, "steps": self.steps, "lr": self.lr, "batch_size": self.batch_size,
                "targets": self.targets, "weight_decay": self.weight_decay}


# sized for a 2-core CPU (BENCHMARKS.md, "adaptation"): cpu-small keeps one adapted SOTER cell to seconds
BUDGETS: dict[str, AdaptationBudget] = {b.name: b for b in (
    AdaptationBudget("cpu-small", steps=5, lr=1e-3, batch_size=8, targets=1),
    AdaptationBudget("cpu-medium", steps=50, lr=3e-4, batch_size=16, targets=4),
    AdaptationBudget("smoke", steps=2, lr=1e-2, batch_size=4, targets=1),  # tests and smoke runs: shapes, not results
)}
DEFAULT_BUDGET = "cpu-small"


def get_budget(name: str) -> AdaptationBudget:
    if name not in BUDGETS:
        raise SpecError(f"unknown adaptation budget {name!r}; known: {', '.join(BUDGETS)}")
    return BUDGETS[name]


def check_mode(mode: str, adapted_only: bool = True) -> str:
    allowed = ADAPTED_MODES if adapted_only else MODES
    if mode not in allowed:
        raise SpecError(f"unknown adaptation mode {mode!r}; known: {', '.join(allowed)}")
    return mode


class WindowPool:
    """Every gap-free window of ``length`` samples in a fold's training series (all channels observed), and
    seeded draws from them: the windows of step ``s`` are a pure function of (seed, s), so the same training
    series give the same adapted model."""

    def __init__(self, series: TrainingSeries, length: int) -> None:
        if series.sampling_rate is None or not series.sampling_rate > 0:
            raise ModelInputError("adaptation needs a regularly sampled dataset (its sampling rate); this one has none")
        self.series, self.length, self.step = series, length, 1.0 / float(series.sampling_rate)
        starts = []
        for r, values in enumerate(series.values):
            bad = np.concatenate([[0], np.cumsum(~np.isfinite(values).all(axis=0))])
            if values.shape[1] >= length:
                ok = np.flatnonzero(bad[length:] == bad[:-length])  # no missing sample in [a, a + length)
                starts.append(np.stack([np.full(len(ok), r), ok], axis=1))
        self.starts = np.concatenate(starts) if starts else np.zeros((0, 2), dtype=np.int64)
        if not len(self.starts):
            raise ModelInputError(f"adaptation: no gap-free window of {length} samples in the training subjects")

    def draw(self, count: int, seed: int, step: int) -> tuple[np.ndarray, np.ndarray]:
        """(values [count, C, length] float32, times [count, length] seconds from the recording's start)."""
        rng = np.random.default_rng(stable_seed(seed, "adaptation", step))
        picked = self.starts[rng.integers(len(self.starts), size=count)]
        values = np.stack([self.series.values[r][:, a:a + self.length] for r, a in picked]).astype(np.float32)
        times = (picked[:, 1:2] + np.arange(self.length)[None, :]) * self.step
        return values, times.astype(np.float64)
