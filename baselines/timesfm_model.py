"""TimesFM 2.5 (`timesfm` 3.x, the PyTorch build, Apache-2.0 weights), extra ``timesfm``.

Never install timesfm's ``[flax]`` or ``[xreg]`` extras: they pull jax with CUDA. TimesFM 1.0 and
2.0 (paper baselines too) need the older ``timesfm`` 1.x API: see ``baselines/paper_models.py``.

Per channel. The point forecast is the model's median with the settings of the model card
(continuous quantile head, flip invariance, quantile-crossing fix, input normalisation), except
``infer_is_positive``, which is off (it clamps forecasts of non-negative contexts at zero). The
context is left-padded (and masked) to ``max(1024, T rounded up to a 32-step patch)``; unobserved
points are passed as NaN, which the library fills by linear interpolation. Query times are taken
as successive steps.
"""

from __future__ import annotations

import math

import numpy as np

from baselines.foundation import Card, FoundationModel, register_card
from protocols.interface import Capabilities, SeriesBatch, quantile_indices

PATCH, OUTPUT_PATCH, CONTEXT_LIMIT = 32, 128, 16384


class TimesFM25(FoundationModel):
    library = library_module = "timesfm"

    def __init__(self, card: str, weights: str | None = None, device: str = "cpu", seed: int = 0,
                 min_padded_context: int = 1024, batch_size: int = 64) -> None:
        super().__init__(card, weights, device, seed, min_padded_context=min_padded_context, batch_size=batch_size)

    def _load(self, source: str, device: str, min_padded_context: int, batch_size: int) -> dict[str, object]:
        import timesfm
        import torch

        self._model = timesfm.TimesFM_2p5_200M_torch.from_pretrained(source, torch_compile=False)
        self._model.model.to(device).eval()
        self._model.model.device = torch.device(device)
        self._min_context, self._batch_size, self._compiled = min_padded_context, batch_size, None
        return {"point": "median", "padded_context": f"max({min_padded_context}, ceil(T/{PATCH})*{PATCH})"}

    def _compile(self, context: int, horizon: int, batch: int) -> None:
        import timesfm

        max_context = max(self._min_context, math.ceil(context / PATCH) * PATCH)
        max_horizon = math.ceil(horizon / OUTPUT_PATCH) * OUTPUT_PATCH
        key = (max_context, max_horizon, batch)
        if self._compiled == key:
            return
        if max_context + max_horizon > CONTEXT_LIMIT:
            raise ValueError(f"{self.name}: context {context} + horizon {horizon} exceed TimesFM 2.5's limit "
                             f"of {CONTEXT_LIMIT} steps")
        self._model.compile(timesfm.ForecastConfig(
            max_context=max_context, max_horizon=max_horizon, normalize_inputs=True, per_core_batch_size=batch,
            use_continuous_quantile_head=True, force_flip_invariance=True, infer_is_positive=False,
            fix_quantile_crossing=True))
        self._compiled = key

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self._forecast_quantiles(batch, query_times, ())[0]

    def _forecast_quantiles(self, batch: SeriesBatch, query_times: np.ndarray,
                            levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        b, _, t = batch.shape
        h = query_times.shape[1]
        self._compile(t, h, min(b, self._batch_size))
        context = np.where(batch.mask[:, 0], batch.values[:, 0], np.nan)
        point, quantiles = self._model.forecast(horizon=h, inputs=[row for row in context])
        # quantile head: [B, H, 10] = the mean, then the deciles 0.1 .. 0.9
        asked = quantile_indices([0.1 * k for k in range(1, 10)], levels, self.name)
        quant = np.asarray(quantiles, dtype=np.float64)[:, :h, 1:][:, None]  # [B, 1, H, 9]
        return np.asarray(point, dtype=np.float64)[:, None, :h], quant[..., asked]

register_card(Card(
    "timesfm-2.5", "TimesFM 2.5", "231.3M", "google/timesfm-2.5-200m-pytorch", source="Hugging Face",
    licence="Apache-2.0 (weights)", requires=("timesfm",), extra="timesfm",
    files=(("model.safetensors",),),
    capabilities=Capabilities(multivariate=False, min_context=PATCH, max_context=CONTEXT_LIMIT - OUTPUT_PATCH,
                              quantiles=True),
    native_horizon=OUTPUT_PATCH, notes="per channel; PyTorch build, no jax",
), TimesFM25)
