"""NormWear (Luo et al., 2024): a multichannel wearable-signal encoder, embedding only.

NormWear is not a package: its code comes from the user's checkout of the official repository
(:mod:`baselines.checkout`, ``$SOTER_BENCH_NORMWEAR_CODE``) and its checkpoint from the repository's
v1.0.0-alpha release, read with ``torch.load(weights_only=True)``.

Its patch embedding imports one helper from ``timm``, ``to_2tuple`` (a number to a pair). timm
imports torchvision, and PyPI's torchvision (a CUDA build) fails to import beside the CPU torch,
taking transformers' adapters down with it; so timm is not a dependency. When timm imports, its
helper is used; otherwise, for the duration of that import only, ``timm.models.layers`` is a
stand-in holding ``to_2tuple`` alone, and ``describe()`` says which was used.

The embedding follows NormWear's own downstream code (``downstream_pipeline/model_apis.py``,
``NormWear_API.get_embedding``), with two documented differences (docs/research-code-baselines.md):

* the wavelet transform is the checkout's PyTorch ``cwt_wrap`` (the ``optimized_cwt=True`` path of
  its ``main_model.NormWearModel``) rather than ``scipy.signal.cwt``, which SciPy 1.15 removed;
* signals above 256 Hz are resampled to 65 Hz, NormWear's rate, with ``scipy.signal.resample_poly``
  instead of ``torchaudio`` (not installed here); at or below 256 Hz the window is used as it is,
  as theirs does. ``resample="always"`` resamples every rate, ``"never"`` none.

Each channel's tokens ([CLS] and patches) are averaged and the channel vectors concatenated:
[B, C * 768]. The channels interact inside the model (its [CLS] fusion blocks).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from fractions import Fraction
from pathlib import Path
from collections.abc import Iterable, Iterator
from types import ModuleType

import numpy as np

from baselines import checkout
from baselines.checkout import CodeSource, load_into, open_model_code
from baselines.foundation import Card, FoundationModel
from protocols.interface import ModelInputError, SeriesBatch

SOURCE = CodeSource(
    model="normwear", repo="https://github.com/Mobile-Sensing-and-UbiComp-Laboratory/NormWear",
    env_var="SOTER_BENCH_NORMWEAR_CODE", markers=("main_model.py", "modules/normwear.py", "modules/patch_embed.py"),
    licence="Apache-2.0")
CHECKPOINT_PATTERNS = ("*.pth", "*.pt")
MODEL_RATE = 65.0  # Hz: NormWear's pre-training rate (its NormWearModel.sampling_rate)
RESAMPLE_ABOVE = 256.0  # Hz: its downstream code resamples only faster signals
# NormWear's constructor arguments, as its main_model.NormWearModel and NormWear_API build it
ARCHITECTURE = dict(img_size=(387, 65), patch_size=(9, 5), mask_scheme="random", mask_prob=0.8, use_cwt=True, nvar=4,
                    comb_freq=False)
CWT_SCALES = (0.1, 64)  # lowest and largest Ricker scale of its cwt_wrap call
MIN_LENGTH = 11  # samples at the model's input: two derivatives plus one 9-step time patch
RESAMPLE_MODES = ("authors", "always", "never")


def to_2tuple(x: object) -> tuple:
    """timm's ``to_2tuple``: an iterable (not a string) as a tuple, anything else repeated twice."""
    if isinstance(x, Iterable) and not isinstance(x, str):
        return tuple(x)
    return (x, x)


def _timm_failure() -> str | None:
    """None when ``timm.models.layers`` imports, else why not (not installed, or its torchvision fails)."""
    try:
        importlib.import_module("timm.models.layers")
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


@contextlib.contextmanager
def timm_helper() -> Iterator[str]:
    """timm if it imports; else a stand-in ``timm.models.layers`` (``to_2tuple`` only) while NormWear's code
    is imported, removed afterwards. Yields what was used, for ``describe()``."""
    reason = _timm_failure()
    if reason is None:
        from importlib.metadata import version

        yield f"timm {version('timm')}"
        return
    names = ("timm", "timm.models", "timm.models.layers")
    saved = {name: sys.modules.get(name) for name in names}
    stand_in = {name: ModuleType(name) for name in names}
    stand_in["timm"].models = stand_in["timm.models"]
    stand_in["timm.models"].layers = stand_in["timm.models.layers"]
    stand_in["timm.models.layers"].to_2tuple = to_2tuple
    sys.modules.update(stand_in)
    try:
        yield f"stand-in for timm.models.layers.to_2tuple (timm did not import: {reason})"
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def sampling_rate(timestamps: np.ndarray) -> np.ndarray:
    """Per-row sampling rate (Hz) from the median timestamp step (seconds)."""
    if timestamps.shape[1] < 2:
        raise ModelInputError("normwear needs at least two timestamps per window to know the sampling rate")
    return 1.0 / np.median(np.diff(timestamps, axis=1), axis=1)


def resample_to(x: np.ndarray, rate: float, target: float) -> np.ndarray:
    """Polyphase resampling along the last axis (rate ratio approximated to a fraction of denominator <= 1000)."""
    from scipy.signal import resample_poly

    ratio = Fraction(target / rate).limit_denominator(1000)
    return resample_poly(x, ratio.numerator, ratio.denominator, axis=-1)


class NormWear(FoundationModel):
    def __init__(self, card: str, weights: str | None = None, code: str | None = None, device: str = "cpu",
                 seed: int = 0, resample: str = "authors") -> None:
        if resample not in RESAMPLE_MODES:
            raise ValueError(f"normwear: resample must be one of {RESAMPLE_MODES}, got {resample!r}")
        super().__init__(card, weights, device, seed, code=code, resample=resample)

    def _weights(self, card: Card, weights: str | None) -> str:
        return str(checkpoint_file(card.name, weights))

    def _load(self, source: str, device: str, code: str | None, resample: str) -> dict[str, object]:
        file = Path(source)
        with timm_helper() as timm_used:
            root, module, state = open_model_code(SOURCE, file, code, "modules.normwear")
        import torch

        # the released checkpoint carries the pre-training decoder; an encoder-only one loads without it
        pretrain = any(k.startswith("decoder_") for k in state)
        self._model = module.NormWear(**ARCHITECTURE, is_pretrain=pretrain)
        load_into(self.name, self._model, state, file)
        self._model.to(device).eval()
        self._cwt, self._torch, self._device, self._resample = module.cwt_wrap, torch, torch.device(device), resample
        return {"code": str(root), "resample": resample, "timm": timm_used,
                "checkpoint_loading": "torch.load(weights_only=True)",
                "embedding": "mean over [CLS] and patch tokens per channel, channels concatenated"}

    def _rate_for(self, rate: float) -> float:
        if self._resample == "always" or (self._resample == "authors" and rate > RESAMPLE_ABOVE):
            return MODEL_RATE
        return rate

    def consumed(self, samples: int, rate: float | None) -> tuple[int, float | None]:
        """What ``_embed`` feeds the encoder: the window resampled to :meth:`_rate_for` (``resample_poly``'s
        length, ``ceil(samples * up / down)``)."""
        if rate is None:
            return samples, rate
        target = self._rate_for(float(rate))
        if target == rate:
            return samples, rate
        ratio = Fraction(target / rate).limit_denominator(1000)
        return -(-samples * ratio.numerator // ratio.denominator), target

    def _embed(self, batch: SeriesBatch) -> np.ndarray:
        rates = np.round(sampling_rate(batch.timestamps), 6)
        out: np.ndarray | None = None
        for rate in np.unique(rates):
            rows = np.flatnonzero(rates == rate)
            x = batch.values[rows]
            target = self._rate_for(float(rate))
            if target != rate:
                x = resample_to(x, float(rate), target)
            if x.shape[-1] < MIN_LENGTH:
                raise ModelInputError(
                    f"normwear needs at least {MIN_LENGTH} samples at {target:g} Hz after resampling, got {x.shape[-1]} "
                    f"(a window of {batch.shape[2]} samples at {rate:g} Hz)")
            emb = self._encode(x)
            if out is None:
                out = np.empty((batch.shape[0], emb.shape[1]))
            out[rows] = emb
        assert out is not None
        return out

    def _encode(self, x: np.ndarray) -> np.ndarray:
        torch = self._torch
        b, c, t = x.shape
        with torch.no_grad():
            series = torch.as_tensor(x, dtype=torch.float32, device=self._device).reshape(b * c, t)
            spec = self._cwt(series, *CWT_SCALES)  # [B*C, 3, L, n_scales]
            spec = spec.reshape(b, c, *spec.shape[1:]).float()
            tokens = self._model.get_signal_embedding(spec, hidden_out=False, device=self._device)  # [B, C, P, E]
            return tokens.mean(dim=2).reshape(b, -1).double().cpu().numpy()


def checkpoint_file(card: str, weights: str | None) -> Path:
    return checkout.checkpoint_file(card, weights, CHECKPOINT_PATTERNS)


def check(card: str, weights: str | None = None, code: str | None = None, **_: object) -> str | None:
    return checkout.check(SOURCE, checkpoint_file, card, weights=weights, code=code)
