"""Fracast-0 (`fracast` on PyPI, Apache-2.0): a pretrained foundation model whose weights ship in
its wheel, so it gives a genuine pretrained forecast offline (beyond the paper's baselines).

Channels are forecast independently (the model's own design) in one batched call; the point
forecast is the median of its nine quantiles (0.1 .. 0.9, which it also gives as quantile
forecasts, from the same call; other levels are an error); unobserved context points are passed as NaN,
which the model masks.  It reads the latest 2,048 points; its native horizon is 48 steps and
longer horizons are rolled out by the library.  Query times are taken as successive steps.
"""

from __future__ import annotations

import numpy as np

from models.registry import register_model
from protocols.interface import Capabilities, Model, SeriesBatch, quantile_indices

MEDIAN = 4  # quantile levels 0.1 .. 0.9


@register_model(
    description="Fracast-0, a pretrained time-series foundation model (85k parameters) with weights in its "
                "wheel: real zero-shot forecasts offline (not in the default set: ~0.13 s per series on 2 CPU "
                "cores, see BENCHMARKS.md; --models fracast)", family="foundation",
    licence="Apache-2.0 (weights)", requires=("fracast",), extra="fracast", default=False)
class Fracast(Model):
    name = "fracast"
    capabilities = Capabilities(multivariate=False, min_context=16, quantiles=True)

    def __init__(self, weights: str | None = None, variant: str = "w8", device: str = "cpu", seed: int = 0) -> None:
        import fracast
        import torch
        from fracast import FracastModel

        torch.manual_seed(seed)
        self._model = FracastModel.from_pretrained(weights, weights=variant, device=device)
        self._info = {"name": self.name, "fracast": getattr(fracast, "__version__", "?"), "variant": variant,
                      "weights": weights or "bundled in the wheel"}

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self._forecast_quantiles(batch, query_times, ())[0]

    def _forecast_quantiles(self, batch: SeriesBatch, query_times: np.ndarray,
                            levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        asked = quantile_indices(self._model.quantiles, levels, self.name)
        context = np.where(batch.mask[:, 0], batch.values[:, 0], np.nan).astype(np.float32)
        out = self._model.forecast_batch(context, horizon=query_times.shape[1])  # [V, H, Q]
        point = np.asarray(out[:, :, MEDIAN], dtype=np.float64)[:, None, :]
        quantiles = np.asarray(out, dtype=np.float64)[:, None][..., asked]
        return point, quantiles

    def describe(self) -> dict[str, object]:
        return dict(self._info)
