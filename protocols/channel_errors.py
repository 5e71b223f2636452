"""Error sums per channel: what a breakdown by signal modality pools (``harness.breakdown``).

A cell's pooled ``ErrorSums`` is the sum of these over its channels, so the modalities of a table sum back
to its pooled score exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ChannelErrors:
    sse: np.ndarray  # [C] sum of squared errors of each channel
    sae: np.ndarray  # [C] sum of absolute errors
    n: np.ndarray  # [C] scored points
    channels: tuple[str, ...]
    modalities: tuple[str, ...]

    def arrays(self) -> dict[str, np.ndarray]:
        return {"sse": self.sse, "sae": self.sae, "n": self.n, "channels": np.asarray(self.channels, dtype=str),
                "modalities": np.asarray(self.modalities, dtype=str)}


def channel_errors(prediction: np.ndarray, target: np.ndarray, channels: tuple[str, ...],
                   modalities: tuple[str, ...], mask: np.ndarray | None = None) -> ChannelErrors:
    """Sums per channel of [B, C, ...] (or [Q, C]) errors; ``mask`` (same shape) keeps the scored entries."""
    err = np.asarray(prediction, dtype=np.float64) - np.asarray(target, dtype=np.float64)
    if err.ndim < 2 or err.shape[1] != len(channels) or len(modalities) != len(channels):
        raise ValueError(f"errors of shape {err.shape} do not have {len(channels)} channels on axis 1")
    keep = np.ones(err.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    err = np.where(keep, err, 0.0)
    axes = tuple(a for a in range(err.ndim) if a != 1)
    with np.errstate(over="ignore"):
        return ChannelErrors(sse=(err ** 2).sum(axis=axes), sae=np.abs(err).sum(axis=axes),
                             n=keep.sum(axis=axes).astype(np.int64), channels=tuple(channels),
                             modalities=tuple(modalities))
