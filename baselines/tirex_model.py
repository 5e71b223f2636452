"""TiRex (`tirex-ts`, NX-AI/TiRex, 35.29M in the paper), extra ``tirex``.

Weights: NXAI Community License (read it before use: it restricts commercial use above a revenue
threshold). Per channel, the PyTorch sLSTM backend (the CUDA kernels need the optional ``xlstm``
package and a GPU). The point forecast is the median of its nine quantiles; unobserved context
points are passed as NaN, which the model masks; longer horizons are rolled out 32 steps at a
time by the library. Query times are taken as successive steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from baselines.foundation import Card, FoundationModel, register_card
from protocols.interface import Capabilities, SeriesBatch, quantile_indices

CHECKPOINT = "model.ckpt"


class TiRex(FoundationModel):
    library, library_module = "tirex-ts", "tirex"  # importing tirex registers the model class

    def __init__(self, card: str, weights: str | None = None, device: str = "cpu", seed: int = 0,
                 batch_size: int = 512) -> None:
        super().__init__(card, weights, device, seed, batch_size=batch_size)

    def _load(self, source: str, device: str, batch_size: int) -> dict[str, object]:
        from tirex.models.tirex import TiRexZero

        if Path(source).is_dir():
            self._model = TiRexZero.from_pretrained(str(Path(source) / CHECKPOINT), backend="torch", device=device)
        else:  # a hub id: the library downloads model.ckpt
            from tirex import load_model

            self._model = load_model(source, device=device, backend="torch")
        self._model.eval()
        self._batch_size = batch_size
        return {"point": "median", "backend": "torch"}

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self._forecast_quantiles(batch, query_times, (0.5,))[0]

    def _forecast_quantiles(self, batch: SeriesBatch, query_times: np.ndarray,
                            levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        context = np.where(batch.mask[:, 0], batch.values[:, 0], np.nan).astype(np.float32)
        quantiles, _ = self._model.forecast(context, output_type="numpy", batch_size=self._batch_size,
                                            prediction_length=query_times.shape[1])  # [B, H, native Q]
        *asked, median = quantile_indices(self._model.config.quantiles, (*levels, 0.5), self.name)
        out = np.asarray(quantiles, dtype=np.float64)[:, None]  # [B, 1, H, native Q]
        return out[..., median], out[..., asked]

register_card(Card(
    "tirex", "TiRex", "35.29M", "NX-AI/TiRex", source="Hugging Face",
    licence="NXAI Community License (weights; commercial use restricted)", requires=("tirex",), extra="tirex",
    files=((CHECKPOINT,),), capabilities=Capabilities(multivariate=False, min_context=32, quantiles=True),
    native_horizon=32, notes="per channel, sLSTM (PyTorch backend); reads the latest 2016 steps",
), TiRex)
