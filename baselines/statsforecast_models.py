"""statsforecast AutoETS, AutoARIMA and AutoTheta, per channel (imported lazily).

Statistical models assume the context's regular step: the horizon's query times are taken
as successive steps.  Non-seasonal fits (season_length = 1): the context windows are short
(48-128 samples) against the periods of wearable signals, and a season estimated per window
makes the automatic model search unstable; seasonal-naive covers the periodic case.
"""

from __future__ import annotations

import warnings

import numpy as np

from models.registry import register_model
from protocols.interface import Capabilities, Model, SeriesBatch, fill_prefix


class _StatsForecast(Model):
    capabilities = Capabilities(multivariate=False, min_context=8)
    model_class = ""

    def __init__(self, seed: int = 0) -> None:
        """``seed``: passed by the harness to every model; unused, the fits are deterministic."""
        import statsforecast
        from statsforecast import models

        self._cls = getattr(models, self.model_class)
        self._version = statsforecast.__version__

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        values = (fill_prefix(batch) if not batch.mask.all() else batch).values[:, 0, :]
        h = query_times.shape[1]
        out = np.empty((values.shape[0], h))
        for i, y in enumerate(values):
            if np.ptp(y) == 0:
                # documented rule: a constant context has a constant forecast (the automatic
                # searches divide by the series' variance)
                out[i] = y[-1]
                continue
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="possible convergence problem")
                out[i] = self._cls(season_length=1).forecast(y=y.astype(np.float64), h=h)["mean"]
        return out[:, None, :]

    def describe(self) -> dict[str, object]:
        # no per-call counts: a model reused across cells would make records depend on scheduling
        return {"name": self.name, "statsforecast": self._version, "season_length": 1,
                "constant_context": "constant forecast"}


@register_model(description="statsforecast AutoETS per channel", family="statistical", requires=("statsforecast",))
class AutoETS(_StatsForecast):
    name = "auto-ets"
    model_class = "AutoETS"


@register_model(description="statsforecast AutoTheta per channel", family="statistical", requires=("statsforecast",))
class AutoTheta(_StatsForecast):
    name = "auto-theta"
    model_class = "AutoTheta"


@register_model(description="statsforecast AutoARIMA per channel (not in the default set: ~0.6 s per series here, "
                            "see BENCHMARKS.md; add it with --models auto-arima --jobs N)",
                family="statistical", requires=("statsforecast",), default=False)
class AutoARIMA(_StatsForecast):
    name = "auto-arima"
    model_class = "AutoARIMA"
