"""Physiological fidelity: heart rate and breathing rate of a forecast or an imputed segment against the truth's.

Why: a forecast with a better RMSE can still move every R-peak; the wearable field reports heart-rate error
in beats per minute.  Rates come from neurokit2's peak detectors (``ecg_clean`` + ``ecg_peaks``;
``ppg_clean`` + ``ppg_findpeaks``; ``rsp_clean`` + ``rsp_peaks``) run on the same span of the true and the
predicted signal (a forecast's horizon, or a whole segment whose missing points were imputed one by one
from their causal prefixes).  A span's rate is 60 / the mean interval between its detected peaks, leaving
out intervals more than 30 % away from their median (``OUTLIER_SHARE``: neurokit2's detectors may add a
peak at a span's edge; a mean, unlike the median, is not quantised to whole samples).

A detector *fails* on a span when it raises, finds fewer than the measure's ``min_peaks``, or gives a rate
outside the plausible range.  Spans where it fails on the truth are skipped and counted (``truth_failed``),
never scored; where it fails on the prediction only, the pair is counted (``prediction_failed``, a flat
forecast has no beats) and not scored either, so a table shows the error over the pairs with two rates
beside the share of pairs without a predicted rate.  Errors are kept as sums (bpm or breaths/min) so folds
pool exactly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from protocols.data import Dataset, nominal_sampling_rate
from protocols.forecasting import fit_for_fold, fold_windows, predict_windows, window_labels
from protocols.imputation import build_task, impute_queries
from protocols.interface import Model
from protocols.modality import channel_modalities
from protocols.specs import ForecastingSpec, ImputationSpec, PhysiologySpec, Setting, samples
from protocols.splits import Fold
from protocols.windows import WindowSelection


OUTLIER_SHARE = 0.3  # intervals further than this from the span's median interval are left out of its rate


@dataclass(frozen=True)
class RateMeasure:
    name: str  # "hr-ecg"
    modality: str  # the channels it reads (protocols.modality)
    quantity: str
    unit: str
    min_peaks: int  # a span with fewer detected peaks has no rate
    plausible: tuple[float, float]  # a rate outside is a detector failure
    min_sampling_rate: float  # Hz below which the detector is not run (the cell is unavailable)


MEASURES: dict[str, RateMeasure] = {
    "hr-ecg": RateMeasure("hr-ecg", "ECG", "heart rate", "bpm", 3, (25.0, 250.0), 50.0),
    "hr-ppg": RateMeasure("hr-ppg", "PPG", "heart rate", "bpm", 3, (25.0, 250.0), 20.0),
    "br-resp": RateMeasure("br-resp", "RESP", "breathing rate", "breaths/min", 2, (3.0, 60.0), 4.0),
}


def detect_peaks(signal: np.ndarray, fs: float, measure: RateMeasure) -> np.ndarray:
    """Sample indices of the beats or breaths neurokit2 finds in ``signal`` (it may raise)."""
    import neurokit2 as nk

    x = np.asarray(signal, dtype=np.float64)
    rate = int(round(fs))  # neurokit2's filters take whole-number rates
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if measure.modality == "ECG":
            return np.asarray(nk.ecg_peaks(nk.ecg_clean(x, sampling_rate=rate), sampling_rate=rate)[1]["ECG_R_Peaks"])
        if measure.modality == "PPG":
            return np.asarray(nk.ppg_findpeaks(nk.ppg_clean(x, sampling_rate=rate), sampling_rate=rate)["PPG_Peaks"])
        if measure.modality == "RESP":
            return np.asarray(nk.rsp_peaks(nk.rsp_clean(x, sampling_rate=rate), sampling_rate=rate)[1]["RSP_Peaks"])
    raise ValueError(f"no detector for modality {measure.modality!r}")


def mean_rate(signal: np.ndarray, fs: float, measure: RateMeasure) -> float | None:
    """Events per minute over ``signal`` (60 / mean regular peak interval), or None when the detector fails."""
    x = np.asarray(signal, dtype=np.float64)
    if x.size < 2 or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return None
    try:
        peaks = np.unique(detect_peaks(x, fs, measure).astype(np.int64))
    except Exception:  # neurokit2 raises many kinds on signals without beats: that is a failure
        return None
    if peaks.size < measure.min_peaks:
        return None
    intervals = np.diff(peaks).astype(np.float64)
    median = np.median(intervals)
    regular = intervals[np.abs(intervals - median) <= OUTLIER_SHARE * median]  # drop spurious or missed peaks
    if regular.size == 0:  # no interval near the median (two very different ones): no rate, and no numpy warning
        return None
    rate = 60.0 * fs / float(np.mean(regular))
    low, high = measure.plausible
    return rate if low <= rate <= high else None


@dataclass(frozen=True)
class RateScores:
    """One (cell, measure): the rates of every (window, channel) pair and their error sums."""

    measure: str
    truth: np.ndarray  # [K] NaN where the detector failed on the truth
    prediction: np.ndarray  # [K] NaN where it failed on the prediction
    window: np.ndarray  # [K] window (segment) index
    channel: np.ndarray  # [K] channel index

    @property
    def scored(self) -> np.ndarray:
        return np.isfinite(self.truth) & np.isfinite(self.prediction)

    @property
    def sse(self) -> float:
        return float(np.sum((self.prediction - self.truth)[self.scored] ** 2))

    @property
    def sae(self) -> float:
        return float(np.sum(np.abs(self.prediction - self.truth)[self.scored]))

    @property
    def n(self) -> int:
        return int(self.scored.sum())

    @property
    def truth_failed(self) -> int:
        return int((~np.isfinite(self.truth)).sum())

    @property
    def prediction_failed(self) -> int:
        return int((np.isfinite(self.truth) & ~np.isfinite(self.prediction)).sum())

    def arrays(self) -> dict[str, np.ndarray]:
        return {"truth": self.truth, "prediction": self.prediction, "window": self.window, "channel": self.channel}


def score_rates(prediction: np.ndarray, truth: np.ndarray, fs: float, measure: RateMeasure,
                channels: list[int]) -> RateScores:
    """Rates of truth and prediction [B, C, L] on every window of the given channels."""
    if prediction.shape != truth.shape:
        raise ValueError(f"prediction shape {prediction.shape} != truth shape {truth.shape}")
    rows = [(b, c) for b in range(truth.shape[0]) for c in channels]
    t = np.array([np.nan if (r := mean_rate(truth[b, c], fs, measure)) is None else r for b, c in rows])
    p = np.array([np.nan if np.isnan(t[k]) or (r := mean_rate(prediction[b, c], fs, measure)) is None else r
                  for k, (b, c) in enumerate(rows)])
    return RateScores(measure.name, t.astype(np.float64), p.astype(np.float64),
                      np.array([b for b, _ in rows], dtype=np.int64), np.array([c for _, c in rows], dtype=np.int64))


def measure_unavailable(dataset: Dataset, measure: RateMeasure) -> str | None:
    """Why ``measure`` cannot be taken on ``dataset`` (no such channel, rate too low), or None."""
    if measure.modality not in channel_modalities(dataset):
        return (f"dataset {dataset.name!r} has no {measure.modality} channel (channels: {', '.join(dataset.channels)}; "
                "a user folder names unknown ones in its manifest's modality table)")
    fs = nominal_sampling_rate(dataset)
    if fs < measure.min_sampling_rate:
        return (f"{measure.quantity} from {measure.modality} needs at least {measure.min_sampling_rate:g} Hz; "
                f"dataset {dataset.name!r} is sampled at {fs:g} Hz")
    return None


@dataclass(frozen=True)
class Reconstruction:
    """A source's predicted spans beside the true ones, [B, C, L] in normalised space."""

    prediction: np.ndarray
    truth: np.ndarray
    selection: WindowSelection
    missing_share: float = float("nan")  # imputation: realised missing share after the warm-up


def forecast_spans(model: Model, dataset: Dataset, fold: Fold, spec: PhysiologySpec) -> Reconstruction:
    """Each window's forecast horizon and its truth."""
    fs = nominal_sampling_rate(dataset)
    setting = Setting(samples(spec.context_seconds, fs), samples(spec.horizon_seconds, fs))
    fit_for_fold(model, dataset, fold, setting, ForecastingSpec((setting,), spec.sampling))
    arrays, selection = fold_windows(dataset, fold, setting, ForecastingSpec((setting,), spec.sampling))
    prediction = predict_windows(model, arrays, spec.batch_size, window_labels(dataset, selection))
    return Reconstruction(np.asarray(prediction, dtype=np.float64), arrays.target, selection)


def imputed_segments(model: Model, dataset: Dataset, fold: Fold, spec: PhysiologySpec, rate: float,
                     seed: int) -> Reconstruction:
    """Whole segments with every missing point imputed from its causal prefix (no write-back), the observed
    points kept: the mask and segments of the imputation protocol at this length and rate."""
    fs = nominal_sampling_rate(dataset)
    length = samples(spec.segment_seconds, fs)
    ispec = ImputationSpec(rates=(rate,), length=length, warmup=min(samples(spec.warmup_seconds, fs), length - 1),
                           points_per_segment=length, max_windows_per_subject=spec.sampling.max_windows_per_subject,
                           mask=spec.mask)
    task, selection = build_task(dataset, fold, ispec, rate, seed)
    filled = task.values.copy()
    if task.queries:
        predicted = impute_queries(model, task)
        rows = np.array([b for b, _ in task.queries])
        cols = np.array([i for _, i in task.queries])
        missing = ~task.observed[rows, :, cols]  # [Q, C]
        current = filled[rows, :, cols]
        filled[rows, :, cols] = np.where(missing, predicted, current)
    after = task.observed[:, :, ispec.warmup:]
    return Reconstruction(filled, task.values, selection, float(1.0 - after.mean()) if after.size else float("nan"))


def physiology_scores(recon: Reconstruction, dataset: Dataset, measures: tuple[str, ...]) -> dict[str, RateScores]:
    """Every measure's rate scores on the channels of its modality (measures the dataset cannot take: left out)."""
    fs = nominal_sampling_rate(dataset)
    modalities = channel_modalities(dataset)
    out = {}
    for name in measures:
        measure = MEASURES[name]
        if measure_unavailable(dataset, measure):
            continue
        channels = [j for j, m in enumerate(modalities) if m == measure.modality]
        out[name] = score_rates(recon.prediction, recon.truth, fs, measure, channels)
    return out
