"""Models registered only for tests, through the SOTER_BENCH_PLUGINS hook: with ``@register_model``, and
``test-needs-weights`` (a second name for ``Broken``) with ``register(ModelSpec(...))``, the spelt-out path."""

from __future__ import annotations

import time

import numpy as np

from models.registry import ModelSpec, register, register_model
from protocols.interface import Capabilities, Model, SeriesBatch


class SeedOnly(Model):
    """A test model whose one option is the seed, which it does not need."""

    def __init__(self, seed: int = 0) -> None:
        pass


def filled(batch: SeriesBatch, query_times: np.ndarray, value: float) -> np.ndarray:
    """A forecast of ``value`` everywhere: [batch, channels, queries]."""
    return np.full((*batch.values.shape[:2], query_times.shape[1]), value)


class Filled(SeedOnly):
    """Forecasts :attr:`value` everywhere, whatever the context."""

    value = 0.0

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return filled(batch, query_times, self.value)


def last_value(batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
    """Each channel's last context value, repeated over the queries."""
    return np.repeat(batch.values[:, :, -1:], query_times.shape[1], axis=2)


@register_model(description="test only", default=False)
class SlowLastValue(Model):
    """Last value, slowed down so that a test can interrupt a run half way."""

    name = "test-slow-last-value"
    capabilities = Capabilities(multivariate=False)

    def __init__(self, delay: float = 0.3, seed: int = 0) -> None:
        self.delay = delay

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        time.sleep(self.delay)
        return last_value(batch, query_times)


@register_model(description="test only", default=False)
class Broken(Model):
    name = "test-broken"
    capabilities = Capabilities(multivariate=True)

    def __init__(self, seed: int = 0, weights: str | None = None) -> None:  # weights: as test-needs-weights
        pass

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        raise RuntimeError("this model always fails")


register(ModelSpec(name="test-needs-weights", factory="tests.plugin_models:Broken",
                   description="test only", default=False,
                   check="tests.plugin_models:needs_weights"))


def needs_weights(weights: str | None = None, **_: object) -> str | None:
    return None if weights else "test-needs-weights needs --weights test-needs-weights=DIR"


@register_model(description="test only", default=False, tasks=("classification",))
class MeanStdEmbedder(SeedOnly):
    """Per-channel mean and std as an embedding (test only)."""

    name = "test-mean-std"
    capabilities = Capabilities(forecast=False, embed=True, multivariate=True)

    def _embed(self, batch: SeriesBatch) -> np.ndarray:
        return np.concatenate([batch.values.mean(axis=2), batch.values.std(axis=2)], axis=1)


@register_model(description="test only", default=False)
class Overflowing(Filled):
    """Forecasts so large that their squared error overflows float64 (test only)."""

    name = "test-overflow"
    capabilities = Capabilities(multivariate=True)
    value = 1e300


@register_model(description="test only: ignores its input (input-sensitivity probe)", default=False)
class ConstantForecast(Filled):
    """The same value whatever the context (test only: the input-sensitivity probe flags it)."""

    name = "test-constant"
    capabilities = Capabilities(multivariate=False)
    value = 0.5


@register_model(description="test only", default=False)
class KillsItsWorker(SeedOnly):
    """Kills the process it forecasts in, as the OOM killer would (test only: never run it in process)."""

    name = "test-kills-worker"
    capabilities = Capabilities(multivariate=True)

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


@register_model(description="test only", default=False)
class QuantileLastValue(Model):
    """Last value, with quantiles last value + (level - 0.5) * spread (test only)."""

    name = "test-quantile-last-value"
    capabilities = Capabilities(multivariate=True, quantiles=True)

    def __init__(self, spread: float = 0.0, seed: int = 0) -> None:
        self.spread = spread

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return last_value(batch, query_times)

    def _forecast_quantiles(self, batch, query_times, levels):
        point = self._forecast(batch, query_times)
        return point, point[..., None] + (np.asarray(levels) - 0.5) * self.spread


@register_model(description="test only: simple exponential smoothing", default=False)
class SimpleExpSmoothing(Model):
    """Simple exponential smoothing per channel: the level after the context, repeated (test only; the
    ``ses`` of docs/adding-a-baseline.md). ``alpha`` changes the numbers: two values are two configurations."""

    name = "test-ses"
    capabilities = Capabilities(multivariate=True)

    def __init__(self, alpha: float = 0.5, seed: int = 0) -> None:
        self.alpha = alpha

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        level = batch.values[:, :, 0]
        for t in range(1, batch.values.shape[2]):
            level = self.alpha * batch.values[:, :, t] + (1 - self.alpha) * level
        return np.repeat(level[:, :, None], query_times.shape[1], axis=2)


@register_model(description="test only", default=False)
class RefusedLoad(Model):
    """A model whose load is refused (as an oversized checkpoint is), counting how often it was tried."""

    name = "test-refused-load"
    capabilities = Capabilities(multivariate=True)
    tries = 0

    def __init__(self, seed: int = 0) -> None:
        RefusedLoad.tries += 1
        raise ValueError("this checkpoint is refused")

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        raise AssertionError("never loaded")


@register_model(description="test only: input-independent but not constant (input-sensitivity probe)", default=False)
class FixedSinusoid(SeedOnly):
    """A sinusoid of the query times, never of the context (test only: the input-sensitivity probe flags it)."""

    name = "test-sinusoid"
    capabilities = Capabilities(multivariate=False)

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        wave = 0.5 + 0.4 * np.sin(2 * np.pi * 0.3 * query_times)[:, None, :]
        return filled(batch, query_times, 0.0) + wave



@register_model(description="test only", default=False)
class Diverging(SeedOnly):
    """Forecasts through SOTER's native ODE solve with a field that blows up: the solve's divergence status."""

    name = "test-diverging"
    capabilities = Capabilities(multivariate=True)
    forecasts = 0  # batches asked for, in this process

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        import torch

        from models.soter.dopri5 import dopri5

        Diverging.forecasts += 1
        start = torch.ones(batch.values.shape[0], batch.values.shape[1], dtype=torch.float64)
        dopri5(lambda s, h: 10 * h * h, start, torch.tensor([0.0, 1.0], dtype=torch.float64), 1e-5, 1e-5)
        raise AssertionError("the solve of dh/ds = 10 h^2 from 1 cannot reach s = 1")
