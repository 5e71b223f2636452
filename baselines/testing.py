"""Contract every adapter must meet, importable by a user's own package (``baselines.testing``).

The test suite runs it on every registered model; a third-party adapter runs it in its own tests:
``from baselines.testing import check_forecast_contract``. It needs numpy only (no pytest): a
broken contract is an ``AssertionError`` saying which property failed.

Checks: shape and finiteness, no dependence on other rows of the batch (batch-size
invariance), no state carried between calls (having seen a longer series, the model forecasts
its truncation as a fresh model does), per-channel independence for per-channel models,
determinism under a seed, a clear error for a too-short context, the default causal
imputation path, the leakage probes of ``protocols.leakage`` (changing the future never
changes a forecast or an imputation) at the model's declared batch-invariance tolerance, and the input-sensitivity
probe of ``protocols.sensitivity`` (changing the context does change the forecast: no constant or input-independent
output).
"""

from __future__ import annotations

import numpy as np

from models.registry import ModelSpec
from protocols import interface
from protocols.data import Dataset, Recording
from protocols.interface import ModelInputError, SeriesBatch


def series(b: int, c: int, t: int, seed: int = 0) -> SeriesBatch:
    """A batch of noisy sines (b rows, c channels, t samples at 10 Hz), deterministic under ``seed``."""
    rng = np.random.default_rng(seed)
    times = np.tile(np.arange(t, dtype=float) / 10, (b, 1))
    base = np.sin(2 * np.pi * 0.07 * np.arange(t))[None, None] * rng.uniform(0.5, 1.5, (b, c, 1))
    return SeriesBatch(base + 0.05 * rng.standard_normal((b, c, t)) + 0.5, times)


def queries(batch: SeriesBatch, h: int) -> np.ndarray:
    """The ``h`` timestamps after each row's context, at its sampling step."""
    return batch.timestamps[:, -1:] + 0.1 * np.arange(1, h + 1)[None, :]


def toy_dataset(n_subjects: int = 4, n_samples: int = 400, channels: tuple[str, ...] = ("a", "b"),
                rate: float = 10.0, seed: int = 0, name: str = "toy") -> Dataset:
    """Small deterministic multichannel dataset (per-subject offset and frequency, two labels): enough
    subjects for leave-one-subject-out, small enough for a unit test."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_samples) / rate
    recs = []
    for s in range(n_subjects):
        freq = 0.5 + 0.1 * s
        vals = np.stack([np.sin(2 * np.pi * freq * t + k) * (1 + s) + s + 0.05 * rng.standard_normal(n_samples)
                         for k in range(len(channels))])
        labels = (np.arange(n_samples) * 2 // n_samples).astype(np.int64)
        recs.append(Recording(subject=f"S{s:02d}", name=f"S{s:02d}_r0", values=vals, timestamps=t.copy(),
                              labels=labels))
    return Dataset(name=name, channels=channels, recordings=tuple(recs), sampling_rate=rate,
                   label_names=("first", "second"))


class _refused:
    """``with _refused(what): ...``: the block must raise ModelInputError or ValueError (a clear error)."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is None:
            raise AssertionError(f"{self.what} was accepted; the model must refuse it with a clear error")
        return issubclass(kind, (ModelInputError, ValueError))  # anything else propagates


# a supervised gluonts model's smallest training budget (its factory options): contract tests in seconds
TINY_TRAINING = {"epochs": 1, "batches_per_epoch": 2, "batch_size": 8}


def check_forecast_contract(spec: ModelSpec, t: int = 48, h: int = 24, b: int = 5, c: int = 3,
                            atol: float = 1e-6, options: dict | None = None) -> None:
    """The forecasting contract of a registered model (``options``: passed to its factory, e.g. a supervised
    model's small training budget). A supervised model (``capabilities.fit``) is first trained, as in every
    cell, on a toy fold's training subjects for the setting ``t``/``h``; it is probed with
    :func:`protocols.leakage.probe_fit` and not for imputation (it takes no part in that task)."""
    options = options or {}
    toy = toy_dataset(n_subjects=3, n_samples=2 * (t + h), channels=("a", "b"))

    def load():
        return _trained(spec.load(seed=0, **options), toy, t, h)

    model = load()
    batch = series(b, c, t)
    q = queries(batch, h)
    out = interface.forecast(model, batch, q)
    assert out.shape == (b, c, h) and np.isfinite(out).all()

    # batch-size invariance: one row alone equals that row inside the batch (within the tolerance a
    # model declares, e.g. an adaptive ODE solver that picks one step size per batch)
    r = b // 2
    alone = interface.forecast(model, SeriesBatch(batch.values[r:r + 1], batch.timestamps[r:r + 1]), q[r:r + 1])
    b_rtol, b_atol = getattr(model, "batch_tolerance", None) or (0.0, atol)
    np.testing.assert_allclose(alone[0], out[r], rtol=b_rtol, atol=max(atol, b_atol))

    # no state carried between calls: in the protocol, one window's future is part of later
    # windows' contexts, so a model that remembered an earlier call could read the future
    longer = series(b, c, t + 30, seed=1)
    cut = SeriesBatch(longer.values[:, :, :t], longer.timestamps[:, :t])
    fresh = interface.forecast(load(), cut, queries(cut, h))
    used = load()
    if not used.capabilities.fit:  # a supervised model is trained for one context length only
        interface.forecast(used, longer, queries(longer, h))  # sees what follows the cut
    else:
        later = SeriesBatch(longer.values[:, :, 30:], longer.timestamps[:, 30:])  # the context after the cut
        interface.forecast(used, later, queries(later, h))
    np.testing.assert_allclose(interface.forecast(used, cut, queries(cut, h)), fresh, atol=atol)

    # per-channel models: channel 0's forecast ignores channel 1
    if not model.capabilities.multivariate:
        other = batch.values.copy()
        other[:, -1] = other[:, -1] * 3 + 1
        moved = interface.forecast(model, SeriesBatch(other, batch.timestamps), q)
        np.testing.assert_allclose(moved[:, :-1], out[:, :-1], atol=atol)

    # determinism under a seed
    again = interface.forecast(load(), batch, q)
    np.testing.assert_allclose(again, out, atol=atol)

    if model.capabilities.fit:
        _probe_fit(model, toy, t, h)
    else:
        # the default (or native) causal imputation returns one value per channel
        imputed = interface.impute(model, batch, q[:, 0])
        assert imputed.shape == (b, c) and np.isfinite(imputed).all()
        if not model.capabilities.impute:
            np.testing.assert_allclose(imputed, out[:, :, 0], atol=atol)
        _probe_leakage(model, t, h)
    _probe_input(model, toy, t, h)

    # a context shorter than the model accepts is a clear error, not garbage
    short = model.capabilities.min_context - 1
    if short >= 1:
        tiny = series(1, 1, short)
        with _refused(f"a context of {short} samples (min_context - 1)"):
            interface.forecast(model, tiny, queries(tiny, h))


def _trained(model, dataset, t: int, h: int):
    """``model`` itself, trained first on the first fold's training subjects when it is a supervised model."""
    if model.capabilities.fit:
        from protocols.forecasting import fold_training_series
        from protocols.specs import Setting
        from protocols.splits import loso_folds

        interface.fit(model, fold_training_series(dataset, loso_folds(dataset)[0], Setting(t, h)), seed=0)
    return model


def _probe_fit(model, dataset, t: int, h: int) -> None:
    """A supervised model's leakage probe: what it fitted cannot depend on the test subject or the future."""
    from protocols.leakage import probe_fit
    from protocols.specs import ForecastingSpec, SamplingSpec, Setting
    from protocols.splits import loso_folds

    setting = Setting(t, h)
    probe_fit(model, dataset, loso_folds(dataset)[0], setting,
              ForecastingSpec(settings=(setting,), sampling=SamplingSpec(max_windows_per_subject=2)), n_windows=1)


def _probe_leakage(model, t: int, h: int) -> None:
    """The protocol's leakage probes through the real scoring path, on a small three-subject dataset."""
    from protocols.leakage import probe_forecasting, probe_imputation
    from protocols.specs import ForecastingSpec, ImputationSpec, SamplingSpec, Setting
    from protocols.splits import loso_folds
    ds = toy_dataset(n_subjects=3, n_samples=2 * (t + h), channels=("a", "b"))
    fold = loso_folds(ds)[0]
    setting = Setting(t, h)
    spec = ForecastingSpec(settings=(setting,), sampling=SamplingSpec(max_windows_per_subject=2))
    probe_forecasting(model, ds, fold, setting, spec, n_windows=2)
    length = max(t, model.capabilities.min_context + 4)
    probe_imputation(model, ds, fold, ImputationSpec(length=length, warmup=length - 4, points_per_segment=2,
                                                     max_windows_per_subject=2), 0.5, seed=0, n_queries=2)


def _probe_input(model, dataset, t: int, h: int) -> None:
    """The input-sensitivity probe on the toy dataset's first fold: the forecasts follow the context."""
    from protocols.sensitivity import check_input_sensitivity, probe_input
    from protocols.specs import ForecastingSpec, SamplingSpec, Setting
    from protocols.splits import loso_folds

    setting = Setting(t, h)
    spec = ForecastingSpec(settings=(setting,), sampling=SamplingSpec(max_windows_per_subject=4, stride=h))
    check_input_sensitivity(probe_input(model, dataset, loso_folds(dataset)[0], setting, spec, fit=False))


def check_embed_contract(spec: ModelSpec, t: int = 64, b: int = 4, c: int = 3, rtol: float = 1e-5,
                         atol: float = 1e-6) -> None:
    """The embedding side of the contract: [B, D] and finite, independent of the rest of the batch, no
    state carried between calls, deterministic under a seed, a clear error for a too-short window."""
    model = spec.load(seed=0)
    batch = series(b, c, t)
    out = interface.embed(model, batch)
    assert out.ndim == 2 and out.shape[0] == b and out.shape[1] >= 1 and np.isfinite(out).all()
    assert not np.allclose(out[0], out[1]), "different windows gave the same embedding"

    r = b // 2  # batch-size invariance
    alone = interface.embed(model, SeriesBatch(batch.values[r:r + 1], batch.timestamps[r:r + 1]))
    np.testing.assert_allclose(alone[0], out[r], rtol=rtol, atol=atol)

    other = series(b + 2, c, t + 16, seed=3)  # no state carried between calls
    interface.embed(model, other)
    np.testing.assert_allclose(interface.embed(model, batch), out, rtol=rtol, atol=atol)

    np.testing.assert_allclose(interface.embed(spec.load(seed=0), batch), out, rtol=rtol, atol=atol)  # determinism

    short = model.capabilities.min_context - 1
    if short >= 1:
        tiny = series(1, c, short)
        with _refused(f"a context of {short} samples (min_context - 1)"):
            interface.embed(model, tiny)
