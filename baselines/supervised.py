"""Supervised references trained on each fold's training subjects (``Capabilities.fit``), and their shared base.

The question a zero-shot result must answer first: does a small model trained on the other subjects beat it?
The harness fits these models in every cell (fold x setting x seed) on the fold's training subjects, MinMax-scaled
with the fold's scaler (``protocols.forecasting.fold_training_series``), then forecasts the test subject's windows.
They are off in the default run, grouped apart in every table (family ``supervised``), and never mixed with the
zero-shot models' ranks. ``ridge`` here is the cheapest one (scikit-learn, no extra); the gluonts models are in
:mod:`baselines.gluonts_models` (extra ``supervised``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from baselines.supervised_tuning import FitSummary, TuningBudget, grid_search, lookbacks, \
    split_by_subject, validation_windows
from models.registry import SUPERVISED, register_model
from protocols.interface import Capabilities, Model, NotFittedError, SeriesBatch, TrainingSeries, fill_prefix

SUPERVISED_TASKS = ("forecasting", "noise")  # the tasks whose cells go through protocols.forecasting's fit hook


def sliding_windows(series: list[np.ndarray], length: int, max_windows: int) -> np.ndarray:
    """[N, length] gap-free windows of the training series: of every series' windows (stride 1), at most
    ``max_windows`` evenly spaced ones, those with a missing sample dropped (deterministic: no draw, so the fit
    depends on the data only). Only the chosen windows are copied (a long recording has millions)."""
    views = [np.lib.stride_tricks.sliding_window_view(s, length) for s in series if s.shape[0] >= length]
    if not views:
        raise ValueError(f"no training recording is at least {length} samples long")
    offsets = np.cumsum([0] + [v.shape[0] for v in views])
    chosen = np.arange(offsets[-1]) if offsets[-1] <= max_windows else \
        np.unique(np.linspace(0, offsets[-1] - 1, max_windows).round().astype(np.int64))
    which = np.searchsorted(offsets, chosen, side="right") - 1
    windows = np.stack([views[i][j] for i, j in zip(which, chosen - offsets[which])])
    windows = windows[np.all(np.isfinite(windows), axis=1)]
    if windows.shape[0] == 0:
        raise ValueError(f"no gap-free training window of {length} samples")
    return windows


class SupervisedModel(Model):
    """A per-channel model fitted per fold: one model shared by every channel of the training subjects (a global
    model over their series, as gluonts trains), refitted from scratch by each ``_fit``."""

    capabilities = Capabilities(multivariate=False, min_context=2, fit=True)

    def __init__(self, seed: int = 0, training: Literal["fixed", "tuned"] = "fixed") -> None:
        if training not in ("fixed", "tuned"):
            raise ValueError(f"{self.name}: training must be 'fixed' or 'tuned', got {training!r}")
        self.seed = seed
        self.training = training
        self.tuning = TuningBudget()  # the tuned mode's search and budget (baselines.supervised_tuning)
        self.fit_seed = seed  # the cell's seed of the last fit: what a sampling forecast draws with
        self.fit_summary: FitSummary | None = None  # the tuned mode's choice in the last fit (model_info)
        self._fitted: object | None = None
        self._setting: tuple[int, int] | None = None

    def _fit(self, series: TrainingSeries, seed: int) -> None:
        self._fitted, self._setting, self.fit_summary = None, None, None  # a failed fit leaves no earlier model
        if self.training == "tuned":
            self._fitted, self.fit_summary = self._tune(series, seed)
        else:
            self._fitted = self._train(series, seed)
        self._setting, self.fit_seed = (series.context, series.horizon), seed

    def _tune(self, series: TrainingSeries, seed: int) -> tuple[object, FitSummary]:
        """The tuned mode (``training="tuned"``): every (look-back, rate) candidate fitted on the fit part of a
        validation split by subject, the lowest validation loss kept as trained; the fitted object remembers its
        look-back (``(model, lookback)``)."""
        budget = self.tuning
        split = split_by_subject(series.values, series.subjects, budget.validation_share, seed)
        grid = lookbacks(series.context, budget.lookback_fractions, self.capabilities.min_context)
        val = validation_windows(split.validation, series.context + series.horizon, budget.max_validation_windows)
        model, (lookback, rate, epochs, loss), tried = grid_search(
            grid, self._rates(), lambda lb, r: self._candidate(split.fit, val, series, lb, r, seed))
        summary = FitSummary(lookback=lookback, learning_rate=rate, epochs_run=epochs, validation_loss=loss,
                             candidates=tried, validation=split.how, fit_subjects=split.fit_subjects,
                             validation_subjects=split.validation_subjects, budget=self._budget_summary())
        return (model, lookback), summary

    def _rates(self) -> tuple[float, ...]:
        return self.tuning.learning_rates

    def _budget_summary(self) -> dict[str, object]:
        b = self.tuning
        return {"lookback_fractions": list(b.lookback_fractions), "rates": list(self._rates()),
                "max_epochs": b.max_epochs, "batches_per_epoch": b.batches_per_epoch, "batch_size": b.batch_size,
                "patience": b.patience, "validation_share": b.validation_share,
                "max_validation_windows": b.max_validation_windows, "chunk": b.chunk}

    def _candidate(self, fit: list[np.ndarray], validation: np.ndarray, series: TrainingSeries, lookback: int,
                   rate: float, seed: int) -> tuple[object, float, int]:
        """One tuned candidate: (model, validation loss, epochs run)."""
        raise NotImplementedError

    def _tuned_info(self) -> dict[str, object]:
        """``describe()``'s addition in the tuned mode (nothing in the fixed mode: its model_info is unchanged)."""
        if self.training != "tuned":
            return {}
        return {"training": "tuned", "tuning": self.fit_summary.as_dict() if self.fit_summary else None}

    def _train(self, series: TrainingSeries, seed: int) -> object:
        raise NotImplementedError

    def _trained(self, context: int, horizon: int) -> object:
        """The fitted model, checked against the setting it is asked to forecast."""
        if self._fitted is None:
            raise NotFittedError(f"{self.name} forecasts only after it was trained on a fold's training subjects "
                                 "(the harness trains it in every cell)")
        if self._setting != (context, horizon):
            raise NotFittedError(f"{self.name} was trained for setting {self._setting[0]}/{self._setting[1]}, "
                                 f"not {context}/{horizon}")
        return self._fitted

    @staticmethod
    def _contexts(batch: SeriesBatch) -> np.ndarray:
        """[B, T] of the per-channel batch, unobserved points carried forward (the harness's default)."""
        return (fill_prefix(batch) if not batch.mask.all() else batch).values[:, 0, :]


@register_model(description="Ridge regression from the context to the whole horizon (direct, per channel), "
                            "fitted per fold on the training subjects' windows: the cheapest supervised reference",
                family=SUPERVISED, default=False, tasks=SUPERVISED_TASKS,
                note="ridge: trained in every cell on the fold's training subjects (scikit-learn Ridge, alpha 1, "
                     "at most 20,000 windows; rows of --supervised-training tuned: look-back x alpha chosen on validation "
                     "subjects, their model_info says the choice; docs/supervised.md)")
class Ridge(SupervisedModel):
    """scikit-learn ``Ridge`` on the last ``context`` values -> the next ``horizon`` values, from at most
    ``max_windows`` gap-free training windows (evenly spaced, stride 1 before thinning); ``alpha`` its penalty."""

    name = "ridge"

    def __init__(self, seed: int = 0, alpha: float = 1.0, max_windows: int = 20000,
                 training: Literal["fixed", "tuned"] = "fixed") -> None:
        """``training="tuned"``: look-back and alpha chosen on validation subjects (docs/supervised.md)."""
        super().__init__(seed, training)
        if alpha < 0 or max_windows < 1:
            raise ValueError(f"ridge: alpha must be >= 0 and max_windows >= 1, got {alpha}, {max_windows}")
        self.alpha, self.max_windows = float(alpha), int(max_windows)

    def _train(self, series: TrainingSeries, seed: int) -> object:
        from sklearn.linear_model import Ridge as SkRidge

        windows = sliding_windows(series.univariate(), series.context + series.horizon, self.max_windows)
        return SkRidge(alpha=self.alpha).fit(windows[:, :series.context], windows[:, series.context:])

    def _rates(self) -> tuple[float, ...]:
        return self.tuning.ridge_alphas

    def _candidate(self, fit: list[np.ndarray], validation: np.ndarray, series: TrainingSeries, lookback: int,
                   rate: float, seed: int) -> tuple[object, float, int]:
        from sklearn.linear_model import Ridge as SkRidge

        windows = sliding_windows(fit, lookback + series.horizon, self.max_windows)
        model = SkRidge(alpha=rate).fit(windows[:, :lookback], windows[:, lookback:])
        c = series.context
        loss = float(np.mean((model.predict(validation[:, c - lookback:c]) - validation[:, c:]) ** 2))
        return model, loss, 0

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        contexts = self._contexts(batch)
        model = self._trained(contexts.shape[1], query_times.shape[1])
        if self.training == "tuned":
            model, lookback = model
            contexts = contexts[:, contexts.shape[1] - lookback:]
        return np.asarray(model.predict(contexts), dtype=np.float64)[:, None, :]

    def describe(self) -> dict[str, object]:
        import sklearn

        return {"name": self.name, "trained_on": "fold's training subjects", "scikit-learn": sklearn.__version__,
                "alpha": self.alpha, "max_windows": self.max_windows, **self._tuned_info()}
