"""A signal-quality index per window, for breaking errors down by how clean the window was.

Why one spectral index and not neurokit2's ``ecg_quality``/``ppg_quality``: those build a beat template
(``averageQRS``) or read several beats (``zhao2018``), and a window of the paper's settings on MIT-BIH
(0.13-0.53 s at 360 Hz) holds less than one beat; other modalities have no neurokit2 index at all.  The index
here is the same for every channel and every window length: the spectral signal-to-noise ratio in dB,
10 log10(power inside the modality's physiological band / power outside it) of the window (context and target,
its linear trend removed), from a periodogram (``scipy.signal.periodogram``).  Broadband noise (muscle,
electrode motion, mains) adds power outside the band, so it lowers the index; a window's index is the mean over
its channels whose index is finite.  The band's upper edge is capped below Nyquist (``NYQUIST_SHARE``) so that
every rate keeps an out-of-band part.
"""

from __future__ import annotations

import numpy as np

# (low, high) Hz of each modality's physiological content (ECG: QRS and T waves; PPG: the pulse and its
# harmonics; RESP: breathing); a modality not named keeps its lowest quarter of the spectrum.
BANDS: dict[str, tuple[float, float]] = {"ECG": (0.5, 40.0), "PPG": (0.5, 8.0), "RESP": (0.05, 1.0),
                                         "ABP": (0.5, 10.0)}
NYQUIST_SHARE = 0.8  # the band ends at most at this share of Nyquist: the rest is the noise's reference


def band_of(modality: str, fs: float) -> tuple[float, float]:
    nyquist = fs / 2.0
    low, high = BANDS.get(modality, (0.0, nyquist / 4.0))
    return low, min(high, NYQUIST_SHARE * nyquist)


def channel_snr(signal: np.ndarray, fs: float, modality: str) -> float:
    """Spectral SNR (dB) of one channel; NaN for a flat, non-finite or too short signal."""
    from scipy.signal import periodogram

    x = np.asarray(signal, dtype=np.float64)
    if x.size < 8 or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return np.nan
    freqs, power = periodogram(x, fs=fs, detrend="linear")
    low, high = band_of(modality, fs)
    inside = (freqs >= low) & (freqs <= high)
    signal_power, noise_power = float(power[inside].sum()), float(power[~inside & (freqs > 0)].sum())
    if signal_power <= 0:
        return np.nan
    return 10.0 * np.log10(signal_power / max(noise_power, 1e-300))


def window_quality(values: np.ndarray, fs: float, modalities: list[str] | tuple[str, ...]) -> np.ndarray:
    """[B] the quality index of each window [B, C, L]: the mean of its channels' finite SNRs (NaN when none)."""
    b, c, _ = values.shape
    if len(modalities) != c:
        raise ValueError(f"{len(modalities)} modalities for {c} channels")
    snr = np.array([[channel_snr(values[i, j], fs, modalities[j]) for j in range(c)] for i in range(b)]).reshape(b, c)
    out = np.full(b, np.nan)
    has = np.isfinite(snr).any(axis=1)
    out[has] = np.nanmean(snr[has], axis=1)
    return out


BAND_NAMES = ("low", "mid", "high")  # tertiles of the index: low quality first


def quality_bands(index: np.ndarray) -> np.ndarray:
    """The band (``BAND_NAMES``) of each window: tertiles of the finite indices (the windows of one dataset and
    setting, shared by every model); a window without an index is in band ``none``."""
    index = np.asarray(index, dtype=np.float64)
    out = np.full(index.shape, "none", dtype=object)
    finite = np.isfinite(index)
    if not finite.any():
        return out
    edges = np.quantile(index[finite], [1 / 3, 2 / 3])
    out[finite] = np.array(BAND_NAMES, dtype=object)[np.searchsorted(edges, index[finite], side="right")]
    return out
