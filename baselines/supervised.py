"""Supervised references trained on each fold's training subjects (``Capabilities.fit``), and their shared base.

The question a zero-shot result must answer first: does a small model trained on the other subjects beat it?
The harness fits these models in every cell (fold x setting x seed) on the fold's training subjects, MinMax-scaled
with the fold's scaler (``protocols.forecasting.fold_training_series``), then forecasts the test subject's windows.
They are off in the default run, grouped apart in every table (family ``supervised``), and never mixed with the
zero-shot models' ranks. ``ridge`` here is the cheapest one (scikit-learn, no extra); the gluonts models are in
:mod:`baselines.gluonts_models` (extra ``supervised``).
"""

from __future__ import annotations

import numpy as np

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

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.fit_seed = seed  # the cell's seed of the last fit: what a sampling forecast draws with
        self._fitted: object | None = None
        self._setting: tuple[int, int] | None = None

    def _fit(self, series: TrainingSeries, seed: int) -> None:
        self._fitted, self._setting = None, None  # a failed fit leaves no earlier model behind
        self._fitted = self._train(series, seed)
        self._setting, self.fit_seed = (series.context, series.horizon), seed

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
                     "at most 20,000 windows; docs/supervised.md)")
class Ridge(SupervisedModel):
    """scikit-learn ``Ridge`` on the last ``context`` values -> the next ``horizon`` values, from at most
    ``max_windows`` gap-free training windows (evenly spaced, stride 1 before thinning); ``alpha`` its penalty."""

    name = "ridge"

    def __init__(self, seed: int = 0, alpha: float = 1.0, max_windows: int = 20000) -> None:
        super().__init__(seed)
        if alpha < 0 or max_windows < 1:
            raise ValueError(f"ridge: alpha must be >= 0 and max_windows >= 1, got {alpha}, {max_windows}")
        self.alpha, self.max_windows = float(alpha), int(max_windows)

    def _train(self, series: TrainingSeries, seed: int) -> object:
        from sklearn.linear_model import Ridge as SkRidge

        windows = sliding_windows(series.univariate(), series.context + series.horizon, self.max_windows)
        return SkRidge(alpha=self.alpha).fit(windows[:, :series.context], windows[:, series.context:])

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        contexts = self._contexts(batch)
        model = self._trained(contexts.shape[1], query_times.shape[1])
        return np.asarray(model.predict(contexts), dtype=np.float64)[:, None, :]

    def describe(self) -> dict[str, object]:
        import sklearn

        return {"name": self.name, "trained_on": "fold's training subjects", "scikit-learn": sklearn.__version__,
                "alpha": self.alpha, "max_windows": self.max_windows}
