"""Fracast-0 adapted to a fold's training subjects (issue #49): ``head`` or ``full`` fine-tuning on a named budget.

Why a module of its own: ``baselines/fracast_model.py`` stays as it is (the frozen rows keep their code digest); the
adapted entries' factory is :func:`load_adapted_fracast`, so their digest covers this module and the adapter.

The ``fracast`` package (0.1.0) offers inference only: no training API and no loss. Its two torch modules (``core``:
the causal convolution stack; ``head``: the gather head that reads the 48-step block of nine quantiles) are ordinary
``nn.Module``s, so they are fine-tuned here with the pinball (quantile) loss of those nine quantiles, the loss a
quantile forecaster is trained with, on the library's own input path: the context's last ``W`` points min-max
normalised per row (``FracastModel._predict_rows``, written out here with gradients) and the target in the same
units; each step's windows give one seeded channel each. ``head`` trains the head only, ``full`` both. Every fit starts from the shipped weights; training is seeded.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from baselines.fracast_model import Fracast
from protocols.adaptation import AdaptationBudget, WindowPool, check_mode, get_budget
from protocols.interface import Model, NotFittedError, SeriesBatch, TrainingSeries
from protocols.windows import stable_seed


def _normalised(context: np.ndarray, width: int):
    """The library's input: the last ``width`` points of each row min-max scaled by the row's observed range,
    left-padded with unobserved zeros; also each row's (loc, span) to scale the target alike."""
    import torch

    tail = context[:, -width:].astype(np.float32)
    loc = tail.min(axis=1, keepdims=True)
    span = np.maximum(tail.max(axis=1, keepdims=True) - loc, 1e-5)
    values = np.zeros((len(context), width), dtype=np.float32)
    observed = np.zeros((len(context), width), dtype=bool)
    values[:, width - tail.shape[1]:] = (tail - loc) / span
    observed[:, width - tail.shape[1]:] = True
    return torch.from_numpy(values[:, None]), torch.from_numpy(observed[:, None]), loc, span


def pinball(pred, target, levels):
    """Mean quantile loss of ``pred`` [N, H, Q] against ``target`` [N, H] at ``levels`` [Q]."""
    diff = target[..., None] - pred
    return (diff * (levels - (diff < 0).float())).mean()


class AdaptedFracast(Model):
    """Fracast-0 fine-tuned on each fold's training subjects before it forecasts that fold's test subject."""

    def __init__(self, base: Fracast, mode: str, budget: AdaptationBudget, name: str) -> None:
        import dataclasses

        self.base, self.mode, self.budget, self.name = base, check_mode(mode), budget, name
        self.capabilities = dataclasses.replace(base.capabilities, fit=True)
        fm = base._model
        self._shipped = ({k: v.detach().clone() for k, v in fm.core.state_dict().items()},
                         {k: v.detach().clone() for k, v in fm.head.state_dict().items()})
        self._setting: tuple[int, int] | None = None
        self.losses: list[float] = []

    def _modules(self):
        fm = self.base._model
        return [fm.head] if self.mode == "head" else [fm.core, fm.head]

    def _fit(self, series: TrainingSeries, seed: int) -> None:
        import torch

        self._setting = None
        fm = self.base._model
        fm.core.load_state_dict(self._shipped[0])
        fm.head.load_state_dict(self._shipped[1])
        params = [p for m in self._modules() for p in m.parameters()]
        for p in [*fm.core.parameters(), *fm.head.parameters()]:
            p.requires_grad_(False)
        for p in params:
            p.requires_grad_(True)
        opt = torch.optim.AdamW(params, lr=self.budget.lr, weight_decay=self.budget.weight_decay)
        horizon = min(series.horizon, fm.horizon)  # the native block: longer horizons roll it out
        pool = WindowPool(series, series.context + horizon)
        levels = torch.tensor(fm.quantiles, dtype=torch.float32)
        torch.manual_seed(stable_seed(seed, "fracast-adaptation") % 2**63)
        self.losses = []
        for m in self._modules():
            m.train()
        try:
            for step in range(self.budget.steps):
                values, _ = pool.draw(self.budget.batch_size, seed, step)
                # one channel of each window (the model is per channel): batch_size series of 2,048 points per step,
                # whatever the channel count (all of them made the cohort's cells 4x dearer, BENCHMARKS.md)
                channel = np.random.default_rng(stable_seed(seed, "fracast-channel", step)).integers(
                    values.shape[1], size=len(values))
                rows = values[np.arange(len(values)), channel]
                x, observed, loc, span = _normalised(rows[:, :series.context], fm.context_length)
                target = torch.from_numpy(((rows[:, series.context:] - loc) / span).astype(np.float32))
                hidden = fm.core(x, observed, observed.to(torch.float32))
                pred = fm.head.forward_horizon(hidden, last_obs=x[:, 0, -1:], ctx=x[:, 0], ctx_mask=observed[:, 0])
                loss = pinball(pred[:, :horizon], target, levels)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                self.losses.append(float(loss.item()))
        finally:
            fm.core.eval()
            fm.head.eval()
            for p in [*fm.core.parameters(), *fm.head.parameters()]:
                p.requires_grad_(True)
        self._setting = (series.context, series.horizon)

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self._forecast_quantiles(batch, query_times, ())[0]

    def _forecast_quantiles(self, batch: SeriesBatch, query_times: np.ndarray,
                            levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        if self._setting is None:
            raise NotFittedError(f"{self.name} forecasts only after it was adapted on a fold's training subjects")
        return self.base._forecast_quantiles(batch, query_times, levels)

    def describe(self) -> dict[str, object]:
        trained = sum(p.numel() for m in self._modules() for p in m.parameters())
        return {**self.base.describe(), "name": self.name,
                "adaptation": {"mode": self.mode, **self.budget.describe(), "trained_parameters": trained,
                               "loss": "pinball of the nine quantiles"}}


def load_adapted_fracast(weights: str | None = None, variant: str = "w8", device: str = "cpu", seed: int = 0,
                         mode: Literal["head", "full"] = "head", budget: str = "cpu-small",
                         name: str = "fracast@head") -> AdaptedFracast:
    """Fracast-0 (bundled weights unless ``weights``) adapted per fold in ``mode`` on the named ``budget``."""
    return AdaptedFracast(Fracast(weights=weights, variant=variant, device=device, seed=seed), mode,
                          get_budget(budget), name)
