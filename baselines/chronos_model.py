"""Chronos-2 and Chronos-Bolt (`chronos-forecasting`, Apache-2.0 weights), extra ``chronos``.

Chronos-2 is the paper's baseline (Small 27.93M, Base 119.5M). It forecasts a sample's channels
jointly (its group attention spans the variates of one series and nothing else: no cross-learning
between rows of a batch). Chronos-Bolt (not in the paper) forecasts each channel alone.

The point forecast is the median (0.5 quantile). Chronos-2 always decodes its full native horizon
(one forward pass: 1,024 steps for the released checkpoints) and the first H steps are kept, so a
step's forecast does not depend on the horizon asked for (Chronos-Bolt's already does not). Unobserved context points are passed as NaN,
which both models mask. Horizons beyond one forward pass are rolled out by the library.
Query times are taken as successive steps of the context's regular grid.
"""

from __future__ import annotations

import warnings

import numpy as np

from baselines.foundation import Card, FoundationModel, register_card
from protocols.interface import Capabilities, SeriesBatch

_FILES = (("config.json",), ("model.safetensors", "model.safetensors.index.json"))
_APACHE = "Apache-2.0 (weights)"


class Chronos(FoundationModel):
    """Both Chronos families behind one adapter; the checkpoint's config says which pipeline."""

    library, library_module, uses_transformers = "chronos-forecasting", "chronos", True

    def __init__(self, card: str, weights: str | None = None, device: str = "cpu", seed: int = 0,
                 batch_size: int = 256) -> None:
        super().__init__(card, weights, device, seed, batch_size=batch_size)

    def _load(self, source: str, device: str, batch_size: int) -> dict[str, object]:
        import torch
        from chronos import BaseChronosPipeline

        pipeline = BaseChronosPipeline.from_pretrained(source, dtype=torch.float32)
        pipeline.model.to(device).eval()
        self._pipeline, self._batch_size = pipeline, batch_size
        return {"pipeline": type(pipeline).__name__, "point": "median"}

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self._forecast_quantiles(batch, query_times, (0.5,))[0]

    def _forecast_quantiles(self, batch: SeriesBatch, query_times: np.ndarray,
                            levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The library's point (its median) and the asked quantiles (interpolated from its own)."""
        import torch

        context = np.where(batch.mask, batch.values, np.nan).astype(np.float32)  # [B, C, T]
        h = query_times.shape[1]
        asked = list(levels) or [0.5]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*prediction length.*")
            if self.capabilities.multivariate:  # Chronos-2: one multivariate series per row
                # its output patches attend to each other, so the first steps depend on how many are
                # asked for: always ask for the model's own horizon (at least) and truncate
                steps = max(h, self._pipeline.model_prediction_length)
                quant, mean = self._pipeline.predict_quantiles(list(context), prediction_length=steps,
                                                               quantile_levels=asked, batch_size=self._batch_size)
                point = np.stack([np.asarray(m, dtype=np.float64)[:, :h] for m in mean])  # [B, C, H]
                quantiles = np.stack([np.asarray(q, dtype=np.float64)[:, :h] for q in quant])  # [B, C, H, Q]
            else:
                parts = [self._pipeline.predict_quantiles(torch.from_numpy(context[i:i + self._batch_size, 0]),
                                                          prediction_length=h, quantile_levels=asked)
                         for i in range(0, len(context), self._batch_size)]
                point = np.concatenate([np.asarray(m, dtype=np.float64) for _, m in parts])[:, None, :]
                quantiles = np.concatenate([np.asarray(q, dtype=np.float64) for q, _ in parts])[:, None]
        return point, quantiles[..., :len(levels)]

_CHRONOS2 = dict(requires=("chronos",), extra="chronos", files=_FILES, licence=_APACHE,
                 capabilities=Capabilities(multivariate=True, min_context=16, quantiles=True), native_horizon=1024,
                 source="Hugging Face")
_BOLT = dict(requires=("chronos",), extra="chronos", files=_FILES, licence=_APACHE,
             capabilities=Capabilities(multivariate=False, min_context=16, quantiles=True), native_horizon=64,
             source="Hugging Face", notes="not in the paper; univariate predecessor of Chronos-2")

for _card in (
    Card("chronos-2-small", "Chronos2-Small", "27.93M", "autogluon/chronos-2-small",
         notes="channels forecast jointly (group attention within a sample)", **_CHRONOS2),
    Card("chronos-2-base", "Chronos2-Base", "119.5M", "amazon/chronos-2",
         notes="channels forecast jointly (group attention within a sample)", **_CHRONOS2),
    *(Card(f"chronos-bolt-{size}", f"Chronos-Bolt-{size.capitalize()}", None, f"amazon/chronos-bolt-{size}", **_BOLT)
      for size in ("tiny", "mini", "small", "base")),
):
    register_card(_card, Chronos)
