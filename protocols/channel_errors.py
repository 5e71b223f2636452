"""Error sums per channel: what a breakdown by signal modality pools (``harness.reporting.breakdown``).

A cell's pooled ``ErrorSums`` is the sum of these over its channels, so the modalities of a table sum back
to its pooled score.  Forecasting and noise cells keep them inside their per-window errors (``channel_sse``,
``channel_mae``, ``channels``, ``modalities`` of :class:`protocols.metrics.WindowErrors`, one record of each
channel's errors for the statistics and the breakdowns alike: :func:`from_window_arrays` sums them); imputation,
which scores queries and not windows, keeps the sums themselves (:func:`channel_errors`).
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


def from_window_arrays(arrays: dict[str, np.ndarray]) -> ChannelErrors | None:
    """A cell's sums per channel from its per-window errors (``WindowErrors.arrays()``, or the file the runner
    keeps of them); None when they predate per-channel errors (no ``channel_sse`` or ``modalities``)."""
    if not all(k in arrays for k in ("channel_sse", "channel_mae", "channels", "modalities", "n")):
        return None
    sse = np.asarray(arrays["channel_sse"], dtype=np.float64)
    c = sse.shape[1]
    steps = np.asarray(arrays["n"], dtype=np.int64) // c  # each window scores its horizon in every channel
    return ChannelErrors(sse=sse.sum(axis=0), sae=(np.asarray(arrays["channel_mae"]) * steps[:, None]).sum(axis=0),
                         n=np.full(c, int(steps.sum()), dtype=np.int64),
                         channels=tuple(str(x) for x in arrays["channels"]),
                         modalities=tuple(str(x) for x in arrays["modalities"]))
