"""Statistical features as an embedding: an honest non-neural classification baseline.

Per channel: mean, standard deviation, and the share of spectral power in four bands of the
normalised frequency axis (Welch periodogram over the window), so the probe sees level,
variability and rhythm without any learned representation.
"""

from __future__ import annotations

import numpy as np

from models.registry import register_model
from protocols.interface import Capabilities, Model, SeriesBatch

BANDS = ((0.0, 0.05), (0.05, 0.15), (0.15, 0.3), (0.3, 0.5))  # cycles per sample


@register_model(description="Per-channel mean, std and spectral band-power shares (embedding only)",
                family="statistical", tasks=("classification",))
class StatisticalFeatures(Model):
    name = "stat-features"
    capabilities = Capabilities(forecast=False, embed=True, multivariate=True, min_context=8)

    def __init__(self, seed: int = 0) -> None:
        """``seed``: passed by the harness to every model; unused, this model is deterministic."""
        pass

    def _embed(self, batch: SeriesBatch) -> np.ndarray:
        from scipy.signal import welch  # imported on use: `harness list` reads this module's capabilities

        x = batch.values  # [B, C, T]
        freqs, power = welch(x, fs=1.0, nperseg=min(64, x.shape[-1]), axis=-1)
        total = power.sum(axis=-1, keepdims=True) + 1e-12
        shares = [power[..., (freqs >= lo) & (freqs < hi)].sum(axis=-1) / total[..., 0] for lo, hi in BANDS]
        feats = np.stack([x.mean(axis=-1), x.std(axis=-1), *shares], axis=-1)  # [B, C, 6]
        return feats.reshape(x.shape[0], -1)

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "features": "mean, std, band power shares " + str(BANDS)}
