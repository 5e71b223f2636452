"""gluonts' PyTorch models (DLinear, PatchTST, DeepAR, a feed-forward MLP), trained per fold by their own estimators.

Each cell trains a fresh network with the library's estimator on the fold's training subjects (every channel of
every recording one univariate series, MinMax-scaled with the fold's scaler: :class:`TrainingSeries`), with the
estimator's own training windows (its instance sampler draws windows of ``context + horizon`` from the series) and
a fixed budget (:class:`TrainingBudget`: ``epochs`` x ``batches_per_epoch`` batches of ``batch_size`` windows),
seeded with lightning's ``seed_everything`` (the cell's seed), on the CPU. Every other hyper-parameter is the
estimator's default unless listed in :data:`ARCHITECTURES` (smaller networks, so that a cell trains in seconds on
two cores). The point forecast is the forecast's median (``quantile(0.5)``); the quantiles at the harness's levels
give CRPS and WQL. Numbers: docs/supervised.md and BENCHMARKS.md.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import warnings
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from baselines.supervised import SUPERVISED_TASKS, SupervisedModel
from baselines.supervised_tuning import fit_chunks
from models.registry import SUPERVISED, register_model
from protocols.interface import Capabilities, SeriesBatch, TrainingSeries

FREQ = "s"  # gluonts needs a pandas frequency; the harness's series are sample-indexed (no calendar features)
DEEPAR_LAGS = (1, 2, 3, 4, 5, 6, 7, 8)  # DeepAR reads C - 8 context steps plus these lags: exactly the C given


@dataclass(frozen=True)
class TrainingBudget:
    """The training of one cell (fold x setting x seed); the defaults are every model's documented budget."""

    epochs: int = 4
    batches_per_epoch: int = 25
    batch_size: int = 32

    def __post_init__(self) -> None:
        if min(self.epochs, self.batches_per_epoch, self.batch_size) < 1:
            raise ValueError(f"training budget must be positive, got {self}")


# the estimator keywords that differ from gluonts' defaults, per model (besides lengths and the budget)
ARCHITECTURES: dict[str, dict[str, object]] = {
    "dlinear": {},  # DLinear's defaults: hidden_dimension 20, kernel 25, mean scaling, Student-t output
    "patchtst": {"patch_len": 16, "stride": 8, "d_model": 32, "nhead": 4, "dim_feedforward": 64,
                 "num_encoder_layers": 2},
    "deepar": {"num_layers": 2, "hidden_size": 20, "lags_seq": list(DEEPAR_LAGS), "time_features": [],
               "num_parallel_samples": 100, "freq": FREQ},
    "mlp": {"hidden_dimensions": [64, 64]},
}


def _estimator_class(name: str):
    if name == "dlinear":
        from gluonts.torch.model.d_linear import DLinearEstimator as cls
    elif name == "patchtst":
        from gluonts.torch.model.patch_tst import PatchTSTEstimator as cls
    elif name == "deepar":
        from gluonts.torch.model.deepar import DeepAREstimator as cls
    else:
        from gluonts.torch.model.simple_feedforward import SimpleFeedForwardEstimator as cls
    return cls


@contextlib.contextmanager
def _quiet():
    """Lightning's and gluonts' per-fit chatter (devices, tips, checkpoints) stays out of the run's stderr."""
    loggers = [logging.getLogger(n) for n in ("lightning", "lightning.pytorch", "pytorch_lightning", "gluonts",
                                               "lightning.fabric")]
    levels = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


@contextlib.contextmanager
def _interrupts_kept():
    """Ctrl-C (or SIGTERM) during training stays an interrupt: lightning catches it, ignores SIGINT from then on
    and exits with status 1, which would cost the harness its "rerun to resume" exit (130, 143) and its handler."""
    import signal

    handler = signal.getsignal(signal.SIGINT)
    try:
        yield
    except SystemExit as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise exc.__context__ from None  # the harness's own (Terminated for SIGTERM)
        raise
    finally:
        if signal.getsignal(signal.SIGINT) is not handler:
            with contextlib.suppress(ValueError, TypeError):  # not the main thread, or a handler set in C
                signal.signal(signal.SIGINT, handler)


def _dataset(series: list[np.ndarray]):
    import pandas as pd
    from gluonts.dataset.common import ListDataset

    start = pd.Period("2000-01-01 00:00:00", freq=FREQ)
    return ListDataset([{"start": start, "target": np.asarray(s, dtype=np.float32)} for s in series], freq=FREQ)


class _Gluonts(SupervisedModel):
    capabilities = Capabilities(multivariate=False, min_context=16, fit=True, quantiles=True)
    architecture = ""
    sampled = False  # the forecast is a set of sample paths (else a distribution: quantiles exact)

    def __init__(self, seed: int = 0, epochs: int = TrainingBudget.epochs,
                 batches_per_epoch: int = TrainingBudget.batches_per_epoch,
                 batch_size: int = TrainingBudget.batch_size, training: Literal["fixed", "tuned"] = "fixed") -> None:
        """``epochs``, ``batches_per_epoch``, ``batch_size``: the training budget of each cell (options, so
        part of the record key: ``--model-option dlinear.epochs=20``); ``training="tuned"``: validation subjects,
        early stopping and a grid over look-back and learning rate instead (the budget is then
        :class:`baselines.supervised_tuning.TuningBudget`'s; docs/supervised.md)."""
        import gluonts  # the extra is missing: an ImportError (the registry reports it before this)

        super().__init__(seed, training)
        self.budget = TrainingBudget(epochs, batches_per_epoch, batch_size)
        self._version = gluonts.__version__

    def _estimator(self, context: int, horizon: int, root: str, lr: float | None = None, epochs: int | None = None,
                   batches_per_epoch: int | None = None, batch_size: int | None = None, callbacks: list | None = None):
        """The estimator of a cell: the fixed budget, or (tuned mode) a candidate's look-back, rate and budget."""
        kwargs = dict(ARCHITECTURES[self.architecture])
        if lr is not None:
            kwargs["lr"] = lr
        context_length = context - len(DEEPAR_LAGS) if self.architecture == "deepar" else context
        trainer = {"max_epochs": self.budget.epochs if epochs is None else epochs, "accelerator": "cpu",
                   "devices": 1, "logger": False, "enable_progress_bar": False, "enable_model_summary": False,
                   "default_root_dir": root, "deterministic": True}
        if callbacks:
            trainer["callbacks"] = callbacks
        return _estimator_class(self.architecture)(
            prediction_length=horizon, context_length=context_length,
            batch_size=self.budget.batch_size if batch_size is None else batch_size,
            num_batches_per_epoch=self.budget.batches_per_epoch if batches_per_epoch is None else batches_per_epoch,
            trainer_kwargs=trainer, **kwargs)

    def _candidate(self, fit: list[np.ndarray], validation: np.ndarray, series: TrainingSeries, lookback: int,
                   rate: float, seed: int) -> tuple[object, float, int]:
        """One tuned candidate: trained on the fit series with validation loss early stopping (patience), its
        best epoch's weights kept (gluonts' checkpoint monitors ``val_loss`` once validation data is given)."""
        import lightning.pytorch as pl
        from lightning.pytorch.callbacks import EarlyStopping

        b = self.tuning
        pieces = fit_chunks(fit, lookback + series.horizon, b.chunk)
        data = [s for s in pieces if np.isfinite(s).sum() >= lookback + series.horizon]
        if not data:
            raise ValueError(f"no fitting series has {lookback + series.horizon} observed samples")
        with _interrupts_kept(), _quiet(), tempfile.TemporaryDirectory(prefix="soter-bench-gluonts-") as root:
            pl.seed_everything(seed, verbose=False)
            stop = EarlyStopping(monitor="val_loss", mode="min", patience=b.patience)
            estimator = self._estimator(lookback, series.horizon, root, lr=rate, epochs=b.max_epochs,
                                        batches_per_epoch=b.batches_per_epoch, batch_size=b.batch_size,
                                        callbacks=[stop])
            out = estimator.train_model(_dataset(data), validation_data=_dataset(list(validation)))
            score = out.trainer.checkpoint_callback.best_model_score
        loss = float(score) if score is not None else float("nan")
        return out.predictor, loss, int(out.trainer.current_epoch)

    def _train(self, series: TrainingSeries, seed: int) -> object:
        import lightning.pytorch as pl

        data = [s for s in series.univariate() if np.isfinite(s).sum() >= series.context + series.horizon]
        if not data:
            raise ValueError(f"no training series has {series.context + series.horizon} observed samples")
        with _interrupts_kept(), _quiet(), tempfile.TemporaryDirectory(prefix="soter-bench-gluonts-") as root:
            pl.seed_everything(seed, verbose=False)
            out = self._estimator(series.context, series.horizon, root).train_model(_dataset(data))
        return out.predictor

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self._forecast_quantiles(batch, query_times, ())[0]

    def _forecast_quantiles(self, batch: SeriesBatch, query_times: np.ndarray,
                            levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        contexts = self._contexts(batch)
        predictor = self._trained(contexts.shape[1], query_times.shape[1])
        if self.training == "tuned":  # (predictor, look-back): gluonts reads the last look-back samples itself
            predictor = predictor[0]
        with _quiet():
            if self.sampled:  # one seeded draw per row: a row's forecast does not depend on its batch
                forecasts = [f for row in contexts for f in self._predict(predictor, [row])]
            else:
                forecasts = self._predict(predictor, list(contexts))
        point = np.stack([f.quantile(0.5) for f in forecasts]).astype(np.float64)
        quantiles = np.stack([np.stack([f.quantile(q) for q in levels], axis=-1) if levels else
                              np.zeros((point.shape[1], 0)) for f in forecasts]).astype(np.float64)
        return point[:, None, :], quantiles[:, None, :, :]

    def _predict(self, predictor, contexts: list[np.ndarray]) -> list:
        import torch

        torch.manual_seed(self.fit_seed)  # sample paths (DeepAR): the cell's seed, the same input the same forecast
        return list(predictor.predict(_dataset(contexts)))

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "trained_on": "fold's training subjects", "gluonts": self._version,
                "estimator": _estimator_class(self.architecture).__name__, "point": "median",
                "budget": asdict(self.budget), "architecture": {k: v for k, v in ARCHITECTURES[self.architecture].items()
                                                                  if k != "freq"},
                **self._tuned_info(), **({"budget": "tuned (tuning.budget)"} if self.training == "tuned" else {})}


TUNED_NOTE = ("rows of --supervised-training tuned: validation subjects, early stopping, look-back x learning-rate "
              "grid, their model_info says the choice")


def _note(name: str, what: str) -> str:
    b = TrainingBudget()
    return (f"{name}: gluonts {what}, trained in every cell on the fold's training subjects (default budget "
            f"{b.epochs} epochs x {b.batches_per_epoch} batches of {b.batch_size} windows, seeded; point = median; "
            f"{TUNED_NOTE}; docs/supervised.md)")


_SPEC = dict(family=SUPERVISED, default=False, tasks=SUPERVISED_TASKS, requires=("gluonts", "lightning"),
             extra="supervised", licence="n/a (trained per fold; gluonts: Apache-2.0)")


@register_model(description="gluonts DLinear (trend + remainder linear maps), trained per fold", **_SPEC,
                note=_note("dlinear", "DLinearEstimator"))
class DLinear(_Gluonts):
    name = "dlinear"
    architecture = "dlinear"


@register_model(description="gluonts PatchTST (patch transformer, d_model 32), trained per fold", **_SPEC,
                note=_note("patchtst", "PatchTSTEstimator"))
class PatchTST(_Gluonts):
    name = "patchtst"
    architecture = "patchtst"


@register_model(description="gluonts DeepAR (autoregressive LSTM, 100 sample paths), trained per fold", **_SPEC,
                note=_note("deepar", "DeepAREstimator"))
class DeepAR(_Gluonts):
    name = "deepar"
    architecture = "deepar"
    sampled = True
    capabilities = Capabilities(multivariate=False, min_context=len(DEEPAR_LAGS) + 8, fit=True, quantiles=True)


@register_model(description="gluonts SimpleFeedForward (an MLP, 2 x 64 units), trained per fold", **_SPEC,
                note=_note("mlp", "SimpleFeedForwardEstimator"))
class MLP(_Gluonts):
    name = "mlp"
    architecture = "mlp"
