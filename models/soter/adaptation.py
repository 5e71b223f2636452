"""SOTER adapted to a fold's training subjects (issue #49): ``head`` or ``full`` fine-tuning on a named budget.

Why a module of its own: the frozen adapter (``models.soter.adapter``) must not import it, so that the committed
zero-shot rows keep their code digest; an adapted entry's factory is :func:`load_adapted_soter`, so its rows'
digest covers this module, the adapter and SOTER's training pieces it reuses.

The objective is SOTER's own pre-training loss (``SoterModel.next_step_loss`` through the trainer's
``batch_loss``: Huber at the target timestamps, full-history regime), with targets at horizon offsets of the
setting the fold is scored in (a per-query forecast is one solve per query from the context's last state,
exactly what a target k samples ahead trains). Every fit starts from the shipped weights: nothing of an earlier
fold survives. Training is seeded and single-process, so the same training subjects give the same model (the
fit leakage probe compares forecasts exactly).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from models.soter.adapter import SoterAdapter, load_random_tiny, load_soter
from models.soter.moe import zero_missing_grads
from models.soter.training.sampler import Batch
from models.soter.training.trainer import batch_loss

# the adapter's option types, spelt here so that the factory's signature can be read from this file's source
# (models/factory_signature.py reads no imported alias; tests/test_model_options.py checks both readings agree)
Rollout = Literal["autoregressive", "direct", "per-query"]
Beyond = Literal["extrapolate", "hold", "zero"]
from protocols.adaptation import AdaptationBudget, WindowPool, check_mode, get_budget
from protocols.interface import Model, NotFittedError, SeriesBatch, TrainingSeries
from protocols.windows import stable_seed

HEAD_MODULES = ("decoder", "trend_head", "reversion_head", "short_trend_head")  # what ``head`` trains


def trained_parameters(model: torch.nn.Module, mode: str) -> list[torch.nn.Parameter]:
    """``full``: every parameter; ``head``: the output side only (the ODE decoder and the anchor's heads), the
    backbone (embedding, transformer blocks, final norm) kept as shipped."""
    if check_mode(mode) == "full":
        return list(model.parameters())
    return [p for name, child in model.named_children() if name in HEAD_MODULES for p in child.parameters()]


def adapt(model: torch.nn.Module, series: TrainingSeries, mode: str, budget: AdaptationBudget, seed: int,
          device: str = "cpu") -> list[float]:
    """Fine-tune ``model`` in place on the training series; returns the loss of every step."""
    params = trained_parameters(model, mode)
    for p in model.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=budget.lr, weight_decay=budget.weight_decay)
    pool = WindowPool(series, series.context + series.horizon)
    m = min(budget.targets, series.horizon)
    torch.manual_seed(stable_seed(seed, "soter-adaptation") % 2**63)
    losses = []
    model.train()
    try:
        for step in range(budget.steps):
            values, times = pool.draw(budget.batch_size, seed, step)
            rng = np.random.default_rng(stable_seed(seed, "adaptation-offsets", step))
            offsets = np.sort(rng.choice(series.horizon, size=m, replace=False)) + series.context  # within the horizon
            keep = np.r_[np.arange(series.context), offsets]
            batch = Batch(values[..., keep], times[:, keep],
                          np.ones(values[..., :series.context].shape, dtype=bool), False, "adaptation", m)
            opt.zero_grad(set_to_none=True)
            loss = batch_loss(model, batch, torch.device(device))
            loss.backward()
            zero_missing_grads(model)
            opt.step()
            losses.append(float(loss.item()))
    finally:
        model.eval()
        for p in model.parameters():
            p.requires_grad_(True)
    return losses


class AdaptedSoter(Model):
    """A SOTER entry fine-tuned on each fold's training subjects before it forecasts that fold's test subject."""

    def __init__(self, base: SoterAdapter, mode: str, budget: AdaptationBudget, name: str) -> None:
        self.base, self.mode, self.budget, self.name = base, check_mode(mode), budget, name
        self.capabilities = dataclasses.replace(base.capabilities, fit=True, impute=False, embed=False)
        self._shipped = {k: v.detach().clone() for k, v in base.model.state_dict().items()}
        self._setting: tuple[int, int] | None = None
        self.losses: list[float] = []

    @property
    def batch_tolerance(self) -> tuple[float, float] | None:
        return self.base.batch_tolerance

    def _fit(self, series: TrainingSeries, seed: int) -> None:
        self._setting = None  # a failed fit leaves no forecasting model behind
        self.base.model.load_state_dict(self._shipped)  # from the shipped weights, every fold
        self.losses = adapt(self.base.model, series, self.mode, self.budget, seed, self.base.device)
        self._setting = (series.context, series.horizon)

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        if self._setting is None:
            raise NotFittedError(f"{self.name} forecasts only after it was adapted on a fold's training subjects")
        return self.base._forecast(batch, query_times)

    def describe(self) -> dict[str, object]:
        trained = sum(p.numel() for p in trained_parameters(self.base.model, self.mode))
        return {**self.base.describe(), "name": self.name,
                "adaptation": {"mode": self.mode, **self.budget.describe(), "trained_parameters": trained}}


def load_adapted_soter(weights: str | Path | None = None, mode: Literal["head", "full"] = "head",
                       budget: str = "cpu-small", rollout: Rollout = "per-query", name: str = "soter@head",
                       device: str = "cpu", batch_size: int = 256, seed: int = 0,
                       control_beyond: Beyond = "extrapolate", output_bound: float | None = None,
                       random_tiny: bool = False) -> AdaptedSoter:
    """A shipped SOTER entry (its ``weights``, passed by the registry) adapted per fold in ``mode`` on the named
    ``budget`` (``protocols.adaptation.BUDGETS``). ``random_tiny``: a random soter-tiny instead (tests only)."""
    if random_tiny:
        base = load_random_tiny(seed=seed, rollout=rollout, device=device, batch_size=batch_size)
    else:
        base = load_soter(weights, rollout=rollout, device=device, name=name, batch_size=batch_size, seed=seed,
                          control_beyond=control_beyond, output_bound=output_bound)
    return AdaptedSoter(base, mode, get_budget(budget), name)
