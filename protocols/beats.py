"""Beat-level fidelity of a forecast: does it hold the target's beats (ECG R peaks, PPG pulse peaks)?

Why: a point-by-point RMSE does not say whether a forecast keeps the beats, which is what a clinician reads
(peak timing, heart rate, heart-rate variability).  Each series is the window's context followed by the horizon
(the target's, or the forecast's), so that neurokit2's detectors (``protocols.physiology.detect_peaks``) see
enough signal and the beats just before the horizon anchor its first interval; only the beats that fall in the
horizon are compared:

- peak timing: for each target beat in the horizon, the distance (ms) to the forecast's nearest beat in the
  horizon; a window's value is their mean.
- heart rate: 60 / the mean interval (bpm) of the intervals that end in the horizon, target against forecast.
- HRV: RMSSD and SDNN (ms) of every interval of the series (context and horizon), target against forecast: the
  context's beats are shared, so a difference comes from the horizon.

A window whose target holds no beat in its horizon (or whose target the detector fails on) is not scored and
counted (``no beat in target``); a window whose target holds a beat but whose forecast has none in its horizon is
counted as ``no beat found`` (a flat forecast), never dropped silently.  Heart rate and HRV need intervals; a
window with too few has no value for them (NaN), and the tables count the windows each value is over.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols.physiology import MEASURES, RateMeasure, detect_peaks

BEAT_MEASURES: dict[str, RateMeasure] = {"ECG": MEASURES["hr-ecg"], "PPG": MEASURES["hr-ppg"]}  # modality -> detector

SCORED, NO_TARGET_BEAT, NO_BEAT_FOUND = "scored", "no beat in target", "no beat found"


@dataclass(frozen=True)
class BeatScore:
    """One (window, channel): the comparison of the forecast's beats with the target's (NaN: no value)."""

    status: str  # SCORED | NO_TARGET_BEAT | NO_BEAT_FOUND
    target_beats: int  # beats of the target in the horizon
    forecast_beats: int  # beats of the forecast in the horizon
    timing_ms: float = np.nan  # mean |distance| from each target beat to the forecast's nearest
    hr_error_bpm: float = np.nan  # |forecast's heart rate - target's| over the intervals ending in the horizon
    rmssd_error_ms: float = np.nan
    sdnn_error_ms: float = np.nan


def series_peaks(context: np.ndarray, horizon: np.ndarray, fs: float, measure: RateMeasure) -> np.ndarray | None:
    """Beat indices of context ⊕ horizon (in that series' samples), or None when the detector fails on it
    (it raises, or the series is flat or not finite)."""
    x = np.concatenate([np.asarray(context, dtype=np.float64), np.asarray(horizon, dtype=np.float64)])
    if x.size < 2 or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return None
    try:
        return np.unique(detect_peaks(x, fs, measure).astype(np.int64))
    except Exception:  # neurokit2 raises many kinds on short or beatless signals: the detector failed
        return None


def _rate(peaks: np.ndarray, start: int, fs: float) -> float:
    """Heart rate (bpm) of the intervals ending at or after ``start`` (the horizon's first sample); NaN if none."""
    ends = np.flatnonzero(peaks[1:] >= start) + 1
    if ends.size == 0:
        return np.nan
    return 60.0 * fs / float(np.mean(peaks[ends] - peaks[ends - 1]))


def _hrv(peaks: np.ndarray, fs: float) -> tuple[float, float]:
    """(RMSSD, SDNN) in ms of the series' beat intervals; NaN with fewer than two intervals."""
    rr = np.diff(peaks).astype(np.float64) * 1000.0 / fs
    if rr.size < 2:
        return np.nan, np.nan
    return float(np.sqrt(np.mean(np.diff(rr) ** 2))), float(np.std(rr, ddof=1))


def beat_score(context: np.ndarray, target: np.ndarray, forecast: np.ndarray, fs: float,
               measure: RateMeasure) -> BeatScore:
    """Compare the beats of context ⊕ forecast with those of context ⊕ target, in the horizon (1-D arrays)."""
    start = int(np.asarray(context).shape[-1])
    truth = series_peaks(context, target, fs, measure)
    true_h = truth[truth >= start] if truth is not None else np.zeros(0, dtype=np.int64)
    if true_h.size == 0:
        return BeatScore(NO_TARGET_BEAT, 0, 0)
    found = series_peaks(context, forecast, fs, measure)
    found_h = found[found >= start] if found is not None else np.zeros(0, dtype=np.int64)
    if found_h.size == 0:
        return BeatScore(NO_BEAT_FOUND, int(true_h.size), 0)
    nearest = np.min(np.abs(true_h[:, None] - found_h[None, :]), axis=1)
    rmssd_t, sdnn_t = _hrv(truth, fs)
    rmssd_f, sdnn_f = _hrv(found, fs)
    return BeatScore(SCORED, int(true_h.size), int(found_h.size),
                     timing_ms=float(np.mean(nearest)) * 1000.0 / fs,
                     hr_error_bpm=abs(_rate(found, start, fs) - _rate(truth, start, fs)),
                     rmssd_error_ms=abs(rmssd_f - rmssd_t), sdnn_error_ms=abs(sdnn_f - sdnn_t))


def beat_channels(modalities: list[str] | tuple[str, ...]) -> list[tuple[int, RateMeasure]]:
    """(channel index, detector) of the channels whose beats can be compared (ECG, PPG)."""
    return [(i, BEAT_MEASURES[m]) for i, m in enumerate(modalities) if m in BEAT_MEASURES]


def score_windows(context: np.ndarray, target: np.ndarray, forecast: np.ndarray, fs: float,
                  modalities: list[str] | tuple[str, ...]) -> list[tuple[int, int, BeatScore]]:
    """(window, channel, score) for every window [B, C, *] and every ECG or PPG channel."""
    if forecast.shape != target.shape:
        raise ValueError(f"forecast shape {forecast.shape} != target shape {target.shape}")
    return [(b, c, beat_score(context[b, c], target[b, c], forecast[b, c], fs, measure))
            for b in range(target.shape[0]) for c, measure in beat_channels(modalities)]
