"""The one model interface that SOTER and every baseline implement, and that the protocols measure.

It lives in ``protocols`` (the lowest layer) so that the protocols need not import ``models``.

Arrays cross this seam as numpy so that adapters built on torch, statsforecast or a
subprocess worker all look the same to the harness.  Shapes:

- ``values``      [B, C, T]  float, already normalised by the protocol;
- ``timestamps``  [B, T]     seconds, strictly increasing per row;
- ``mask``        [B, C, T]  bool, True where the value was observed;
- ``query_times`` [B, H]     seconds, strictly after the last context timestamp.

A per-channel model (``capabilities.multivariate is False``) is still called with the
full batch through :func:`forecast` / :func:`impute` / :func:`embed` below, which fold
channels into the batch for it, so the harness never special-cases a model.
"""

from __future__ import annotations

import abc
import functools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

import numpy as np



class ModelInputError(ValueError):
    """A batch handed to a model is malformed (shape, NaN, time order, too short)."""


class ModelDivergedError(ArithmeticError):
    """A model's numerical computation diverged (e.g. an ODE solve left its bound): the cell is an error row
    that names the windows and the cause, never a forecast of 1e17 scored as a number."""


@dataclass(frozen=True)
class Capabilities:
    """What a model can do; the harness only asks for what is declared."""

    forecast: bool = True
    impute: bool = False  # a native causal imputation; others get the documented default
    embed: bool = False
    multivariate: bool = False  # False: the harness feeds one channel at a time
    min_context: int = 1
    max_context: int | None = None
    # (context, horizon) settings the model supports; None means any.
    settings: tuple[tuple[int, int], ...] | None = None
    # forecasts quantiles too (``_forecast_quantiles``): the protocol then scores CRPS and weighted quantile loss
    quantiles: bool = False
    # supervised: trained on each fold's training subjects (``_fit``) before it forecasts that fold's test
    # subject; the protocol hands it those subjects' series only (:class:`TrainingSeries`), never the test subject's
    fit: bool = False

    def supports_setting(self, context: int, horizon: int) -> bool:
        if context < self.min_context:
            return False
        if self.settings is not None and (context, horizon) not in self.settings:
            return False
        return True


@dataclass(frozen=True)
class SeriesBatch:
    """A batch of multichannel context windows; validated on construction."""

    values: np.ndarray
    timestamps: np.ndarray
    mask: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        timestamps = np.asarray(self.timestamps, dtype=np.float64)
        if values.ndim != 3:
            raise ModelInputError(f"values must be [B, C, T], got shape {values.shape}")
        b, c, t = values.shape
        if b == 0 or c == 0 or t == 0:
            raise ModelInputError(f"empty batch: values shape {values.shape}")
        if timestamps.shape != (b, t):
            raise ModelInputError(
                f"timestamps must be [B, T] = {(b, t)}, got shape {timestamps.shape}"
            )
        mask = np.ones_like(values, dtype=bool) if self.mask is None else np.asarray(self.mask)
        if mask.shape != values.shape or mask.dtype != bool:
            raise ModelInputError(
                f"mask must be a bool array of shape {values.shape}, got {mask.dtype} {mask.shape}"
            )
        if not np.all(np.isfinite(values[mask])):
            raise ModelInputError("values contain NaN or infinite entries at observed positions")
        if not np.all(np.isfinite(timestamps)):
            raise ModelInputError("timestamps contain NaN or infinite entries")
        if t > 1 and not np.all(np.diff(timestamps, axis=1) > 0):
            raise ModelInputError("timestamps must be strictly increasing within each row")
        # Unobserved entries are zero-filled so that no model can read what was hidden.
        values = np.where(mask, values, 0.0)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "timestamps", timestamps)
        object.__setattr__(self, "mask", mask)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.values.shape  # type: ignore[return-value]

    def fold_channels(self) -> "SeriesBatch":
        """[B, C, T] -> [B*C, 1, T], channel-major within each sample."""
        b, c, t = self.shape
        return SeriesBatch(
            values=self.values.reshape(b * c, 1, t),
            timestamps=np.repeat(self.timestamps, c, axis=0),
            mask=self.mask.reshape(b * c, 1, t),
        )


def check_query_times(batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
    query_times = np.asarray(query_times, dtype=np.float64)
    b = batch.shape[0]
    if query_times.ndim != 2 or query_times.shape[0] != b:
        raise ModelInputError(f"query_times must be [B={b}, H], got shape {query_times.shape}")
    if not np.all(np.isfinite(query_times)):
        raise ModelInputError("query_times contain NaN or infinite entries")
    if not np.all(query_times[:, 0] > batch.timestamps[:, -1]):
        raise ModelInputError("query_times must lie strictly after the last context timestamp")
    if query_times.shape[1] > 1 and not np.all(np.diff(query_times, axis=1) > 0):
        raise ModelInputError("query_times must be strictly increasing within each row")
    return query_times


@dataclass(frozen=True)
class TrainingSeries:
    """What a supervised model is trained on in one fold and setting: every recording of the fold's training
    subjects, normalised by the fold's MinMax (fitted on those subjects), NaN where a sample is missing.

    ``values`` is one [C, T_i] array per recording (recordings differ in length), ``subjects`` the subject of
    each; ``context``/``horizon`` the setting the model is trained for. The test subject is never among them
    (checked by the protocol and by :func:`protocols.leakage.probe_fit`)."""

    values: tuple[np.ndarray, ...]
    subjects: tuple[str, ...]
    channels: tuple[str, ...]
    context: int
    horizon: int
    sampling_rate: float | None = None

    def __post_init__(self) -> None:
        if not self.values:
            raise ModelInputError("training series: no recordings")
        if len(self.subjects) != len(self.values):
            raise ModelInputError(f"training series: {len(self.values)} recordings but {len(self.subjects)} subjects")
        for v in self.values:
            if v.ndim != 2 or v.shape[0] != len(self.channels):
                raise ModelInputError(f"training series: a recording of shape {v.shape} is not "
                                      f"[C={len(self.channels)}, T]")
        if self.context < 1 or self.horizon < 1:
            raise ModelInputError(f"training series: setting {self.context}/{self.horizon} is not positive")

    def univariate(self) -> list[np.ndarray]:
        """Every channel of every recording as its own 1-D series (what a per-channel model trains on)."""
        return [row for v in self.values for row in v]


class NotFittedError(RuntimeError):
    """A supervised model was asked to forecast before it was trained on a fold's training subjects."""


class Model(abc.ABC):
    """Base class of every adapter.  Subclasses implement what their capabilities declare.

    Implementations receive batches whose channel count is 1 when the model is
    per-channel; callers go through the module-level functions below.
    """

    name: str = "model"
    capabilities: Capabilities = Capabilities()

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        """Return predictions [B, C, H] at ``query_times``."""
        raise NotImplementedError(f"{self.name} does not forecast")

    def _forecast_quantiles(self, batch: SeriesBatch, query_times: np.ndarray,
                            levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(point [B, C, H], quantiles [B, C, H, Q]) from one pass: the point must be exactly what
        ``_forecast`` returns, so that RMSE and MAE do not depend on whether quantiles were asked for."""
        raise NotImplementedError(f"{self.name} does not forecast quantiles")

    def _impute(self, batch: SeriesBatch, query_time: np.ndarray) -> np.ndarray:
        """Causal imputation: the value [B, C] at one query time per row.

        Default for forecast-only models: fill unobserved prefix points by carrying the
        last observation forward (the first observation backwards), then forecast on a
        regular grid whose k-th step lands exactly on the query time, k being the number
        of median context steps that fit in the gap.  Documented in docs/protocols.md.
        """
        filled = fill_prefix(batch)
        b, _, t = batch.shape
        median_step = np.median(np.diff(batch.timestamps, axis=1), axis=1) if t > 1 else np.ones(b)
        gap = query_time - batch.timestamps[:, -1]
        steps = np.maximum(1, np.rint(gap / median_step)).astype(int)
        step = gap / steps
        grid = batch.timestamps[:, -1:] + step[:, None] * np.arange(1, int(steps.max()) + 1)[None, :]
        pred = self._forecast(filled, grid)
        return pred[np.arange(b), :, steps - 1]

    def _fit(self, series: TrainingSeries, seed: int) -> None:
        """Train on a fold's training subjects (``capabilities.fit``), from scratch: nothing of an earlier
        fit may survive, so that a cell's result does not depend on which cells ran before it."""
        raise NotImplementedError(f"{self.name} is not trained per fold")

    def _embed(self, batch: SeriesBatch) -> np.ndarray:
        """Return a fixed-size vector [B, D] per sample."""
        raise NotImplementedError(f"{self.name} does not embed")

    def describe(self) -> dict[str, object]:
        """Facts recorded beside every result (model version, weights, mode)."""
        return {"name": self.name}

    def consumed(self, samples: int, rate: float | None) -> tuple[int, float | None]:
        """(samples, sampling rate in Hz) the model actually works on when handed ``samples`` samples at ``rate``:
        an adapter that resamples (NormWear) says so here, so that a row records what its model consumed, not
        only what the protocol handed it. Default: what it was handed."""
        return samples, rate


def fill_prefix(batch: SeriesBatch) -> SeriesBatch:
    """Last-observation-carried-forward fill of unobserved points (first observation backwards)."""
    values = batch.values.copy()
    mask = batch.mask
    b, c, t = values.shape
    idx = np.where(mask, np.arange(t)[None, None, :], -1)
    last = np.maximum.accumulate(idx, axis=2)
    first = np.argmax(mask, axis=2)  # first observed index per (b, c); 0 when none observed
    last = np.where(last < 0, first[..., None], last)
    filled = np.take_along_axis(values, last, axis=2)
    filled = np.where(mask.any(axis=2, keepdims=True), filled, 0.0)
    return SeriesBatch(values=filled, timestamps=batch.timestamps)


def _per_channel(model: Model) -> bool:
    return not model.capabilities.multivariate


def _check_context(model: Model, batch: SeriesBatch) -> None:
    t = batch.shape[2]
    caps = model.capabilities
    if t < caps.min_context:
        raise ModelInputError(f"model {model.name!r} needs a context of at least {caps.min_context} samples, got {t}")
    if caps.max_context is not None and t > caps.max_context:
        raise ModelInputError(f"model {model.name!r} accepts at most {caps.max_context} context samples, got {t}")


@dataclass
class ModelClock:
    """Seconds this process spent inside models' training (:func:`fit`) and inference calls (:func:`forecast`,
    :func:`forecast_quantiles`, :func:`impute`, :func:`embed`): what a row records as its training seconds and its
    inference seconds per window, the protocol's own work (window selection, scaling, metrics) left out."""

    training: float = 0.0
    inference: float = 0.0
    _depth: int = 0

    def reading(self) -> tuple[float, float]:
        return self.training, self.inference


CLOCK = ModelClock()
_F = TypeVar("_F", bound=Callable[..., Any])


def _timed(kind: str) -> Callable[[_F], _F]:
    """Add a call's seconds to :data:`CLOCK` (a call made inside another timed one is counted once)."""
    def wrap(fn: _F) -> _F:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if CLOCK._depth:
                return fn(*args, **kwargs)
            CLOCK._depth += 1
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                setattr(CLOCK, kind, getattr(CLOCK, kind) + time.perf_counter() - started)
                CLOCK._depth -= 1
        return timed  # type: ignore[return-value]
    return wrap


@_timed("training")
def fit(model: Model, series: TrainingSeries, seed: int) -> None:
    """Train a supervised model (``capabilities.fit``) on one fold's training series for their setting."""
    if not model.capabilities.fit:
        raise NotImplementedError(f"model {model.name!r} is not trained per fold")
    if not model.capabilities.supports_setting(series.context, series.horizon):
        raise ModelInputError(f"model {model.name!r} does not support setting {series.context}/{series.horizon}")
    model._fit(series, seed)


@_timed("inference")
def forecast(model: Model, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
    """Forecast [B, C, H], folding channels into the batch for per-channel models."""
    query_times = check_query_times(batch, query_times)
    _check_context(model, batch)
    b, c, _ = batch.shape
    if _per_channel(model) and c > 1:
        out = model._forecast(batch.fold_channels(), np.repeat(query_times, c, axis=0))
        out = np.asarray(out).reshape(b, c, -1)
    else:
        out = np.asarray(model._forecast(batch, query_times))
    _check_output(model, out, (b, c, query_times.shape[1]))
    return out


QUANTILE_LEVELS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  # fev's and GIFT-Eval's levels


def quantile_indices(native: tuple[float, ...] | list[float], levels: tuple[float, ...] | list[float],
                     model: str) -> list[int]:
    """Positions of ``levels`` among a model's own quantile levels (compared to 6 decimals, so 0.1 * 3
    finds 0.3); a level the model does not forecast is a ValueError naming the levels it does."""
    own = [round(float(q), 6) for q in native]
    missing = [q for q in levels if round(q, 6) not in own]
    if missing:
        raise ValueError(f"{model} forecasts the quantiles {own}, not {missing}")
    return [own.index(round(q, 6)) for q in levels]


@_timed("inference")
def forecast_quantiles(model: Model, batch: SeriesBatch, query_times: np.ndarray,
                       levels: tuple[float, ...] = QUANTILE_LEVELS) -> tuple[np.ndarray, np.ndarray]:
    """(point [B, C, H], quantiles [B, C, H, Q]) of a model that declares ``quantiles``."""
    if not model.capabilities.quantiles:
        raise NotImplementedError(f"model {model.name!r} does not declare quantile forecasts")
    query_times = check_query_times(batch, query_times)
    _check_context(model, batch)
    b, c, _ = batch.shape
    h, q = query_times.shape[1], len(levels)
    if _per_channel(model) and c > 1:
        point, quant = model._forecast_quantiles(batch.fold_channels(), np.repeat(query_times, c, axis=0), levels)
        point, quant = np.asarray(point).reshape(b, c, h), np.asarray(quant).reshape(b, c, h, q)
    else:
        point, quant = (np.asarray(a) for a in model._forecast_quantiles(batch, query_times, levels))
    _check_output(model, point, (b, c, h))
    _check_output(model, quant, (b, c, h, q))
    return point, quant


@_timed("inference")
def impute(model: Model, batch: SeriesBatch, query_time: np.ndarray) -> np.ndarray:
    """Causal imputation [B, C] at one query time per row."""
    query_time = np.asarray(query_time, dtype=np.float64).reshape(-1)
    check_query_times(batch, query_time[:, None])
    _check_context(model, batch)
    b, c, _ = batch.shape
    if _per_channel(model) and c > 1:
        out = np.asarray(model._impute(batch.fold_channels(), np.repeat(query_time, c))).reshape(b, c)
    else:
        out = np.asarray(model._impute(batch, query_time))
    _check_output(model, out, (b, c))
    return out


@_timed("inference")
def embed(model: Model, batch: SeriesBatch) -> np.ndarray:
    """Embedding [B, D]; per-channel models' channel vectors are averaged."""
    if not model.capabilities.embed:
        raise NotImplementedError(f"model {model.name!r} has no embed capability")
    _check_context(model, batch)
    b, c, _ = batch.shape
    if _per_channel(model) and c > 1:
        out = np.asarray(model._embed(batch.fold_channels()))
        out = out.reshape(b, c, -1).mean(axis=1)
    else:
        out = np.asarray(model._embed(batch))
    if out.ndim != 2 or out.shape[0] != b:
        raise RuntimeError(f"model {model.name!r} returned embeddings of shape {out.shape}")
    return out


def _check_output(model: Model, out: np.ndarray, expected: tuple[int, ...]) -> None:
    if out.shape != expected:
        raise RuntimeError(f"model {model.name!r} returned shape {out.shape}, expected {expected}")
    if not np.all(np.isfinite(out)):
        raise RuntimeError(f"model {model.name!r} returned NaN or infinite predictions")
