"""TF-C (Zhang et al., 2022): time-frequency consistency pre-training, embedding only.

TF-C is research code: its model comes from the user's checkout of
github.com/mims-harvard/TFC-pretraining (``code/TFC/model.py``, ``$SOTER_BENCH_TFC_CODE``), its
weights from a checkpoint that code saved (``{"model_state_dict": ...}``, such as the SleepEEG
one the repository ships under ``code/experiments_logs/.../saved_models/ckp_last.pt``), read with
``torch.load(weights_only=True)``. The input length L (``TSlength_aligned``) is read from the
checkpoint (178 for the released one).

Per window and channel (docs/research-code-baselines.md): the newest L samples, zero-padded on the
left when the window is shorter (as NormWear's TF-C benchmark code does); the frequency view is
``|FFT|`` of that input (as TF-C's loader computes it); the embedding is ``[z_time; z_freq]``, the
two 128-dimensional projector outputs that TF-C's fine-tuning classifier reads. Channels are
concatenated: [B, C * 256].

TF-C's encoders are ``nn.TransformerEncoder`` in sequence-first layout fed ``[N, 1, L]``, so
attention runs over the first axis. Its own loaders put the samples of a batch there (attention
across samples, so an embedding depends on the rest of the batch); NormWear's benchmark code puts
a window's channels there. We call the model one channel of one window at a time (``attention=
"none"``, the TF-C paper's per-sample encoder, independent of the batch); ``attention="channels"``
feeds a window's channels together, reproducing NormWear's benchmark call.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from baselines import checkout
from baselines.checkout import CodeSource, load_into, open_model_code
from baselines.foundation import Card, FoundationModel
from models.registry import ModelUnavailableError
from protocols.interface import SeriesBatch

SOURCE = CodeSource(model="tf-c", repo="https://github.com/mims-harvard/TFC-pretraining", env_var="SOTER_BENCH_TFC_CODE",
                    markers=("code/TFC/model.py", "code/TFC/main.py"), licence="MIT")
LENGTH_KEY = "projector_t.0.weight"  # [256, TSlength_aligned]
ATTENTION_MODES = ("none", "channels")


class TFC(FoundationModel):
    def __init__(self, card: str, weights: str | None = None, code: str | None = None, device: str = "cpu",
                 seed: int = 0, attention: str = "none") -> None:
        if attention not in ATTENTION_MODES:
            raise ValueError(f"tf-c: attention must be one of {ATTENTION_MODES}, got {attention!r}")
        super().__init__(card, weights, device, seed, code=code, attention=attention)

    def _weights(self, card: Card, weights: str | None) -> str:
        return str(checkpoint_file(card.name, weights))

    def _load(self, source: str, device: str, code: str | None, attention: str) -> dict[str, object]:
        file = Path(source)
        root, module, state = open_model_code(SOURCE, file, code, "code.TFC.model")
        import torch

        if LENGTH_KEY not in state or state[LENGTH_KEY].ndim != 2:
            raise ModelUnavailableError(f"tf-c: {file} has no {LENGTH_KEY}: not a TF-C checkpoint")
        self.length = int(state[LENGTH_KEY].shape[1])
        self._model = module.TFC(SimpleNamespace(TSlength_aligned=self.length))
        load_into(self.name, self._model, state, file)
        self._model.to(device).eval()
        self._torch, self._device, self._attention = torch, torch.device(device), attention
        return {"code": str(root), "input_length": self.length, "attention": attention,
                "checkpoint_loading": "torch.load(weights_only=True)",
                "embedding": "[z_time; z_freq] per channel, channels concatenated; newest samples, left zero-pad"}

    def aligned(self, values: np.ndarray) -> np.ndarray:
        """The newest ``length`` samples of every series, zero-padded on the left: [..., length]."""
        t = values.shape[-1]
        if t >= self.length:
            return values[..., t - self.length:]
        pad = np.zeros((*values.shape[:-1], self.length - t))
        return np.concatenate([pad, values], axis=-1)

    def _embed(self, batch: SeriesBatch) -> np.ndarray:
        torch = self._torch
        b, c, _ = batch.shape
        x = torch.as_tensor(self.aligned(batch.values), dtype=torch.float32, device=self._device)  # [B, C, L]
        freq = torch.fft.fft(x).abs()
        out = np.empty((b, c, 256))
        with torch.no_grad():
            for i in range(b):
                if self._attention == "channels":  # one call per window: its channels share the sequence axis
                    out[i] = self._z(x[i, :, None], freq[i, :, None])
                else:
                    for j in range(c):
                        out[i, j] = self._z(x[i, j, None, None], freq[i, j, None, None])[0]
        return out.reshape(b, c * 256)

    def _z(self, x_t, x_f) -> np.ndarray:
        """TF-C's forward on [N, 1, L] returns (h_time, z_time, h_freq, z_freq): ``[z_time; z_freq]`` as [N, 256]."""
        _, z_time, _, z_freq = self._model(x_t, x_f)
        return self._torch.cat((z_time, z_freq), dim=1).double().cpu().numpy()


def checkpoint_file(card: str, weights: str | None) -> Path:
    """A weights folder holds ``ckp_last.pt`` (the name TF-C's trainer saves) or exactly one ``*.pt``."""
    return checkout.checkpoint_file(card, weights, ("*.pt",), preferred="ckp_last.pt")


def check(card: str, weights: str | None = None, code: str | None = None, **_: object) -> str | None:
    return checkout.check(SOURCE, checkpoint_file, card, weights=weights, code=code)
