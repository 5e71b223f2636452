"""Settings in time: each context/horizon setting in seconds at its dataset's sampling rate, and in beats at the
dataset's median heart rate where the dataset has a cardiac channel.

Why: settings are in samples, and one setting is 2 s at the cohort's 64 Hz but 0.36 s, less than a beat, at
MIT-BIH's 360 Hz; a physiologist reads seconds and beats.

- **Rate**: the records' own (``sampling_rate`` of the rows that consumed the setting's context unchanged,
  ``harness.run.provenance``); for rows that predate those columns, and only where the caller allows it
  (``load=True``: the report, ``table --by horizon-seconds``), the dataset's nominal rate, read by loading it
  under its recorded name (``--data-root`` or ``$SOTER_BENCH_DATA``). A rate found nowhere leaves the seconds out.
- **Heart rate** (``load=True`` only): the median of neurokit2's heart rate (``protocols.physiology.mean_rate``) over
  30 s spans of the first minutes of the first ECG channel (else the first PPG channel) of up to
  :data:`HR_RECORDINGS` recordings; cached under the cache folder by the data's content fingerprint, so each
  dataset's content is estimated once. A cheap estimate, stated as such wherever it is shown.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

HR_SPAN_SECONDS = 30.0  # each span's rate is one estimate; the median over spans is the dataset's
HR_SPANS = 6  # spans per recording: its first three minutes
HR_RECORDINGS = 3  # recordings read (the first ones)
HR_METHOD = (f"median of neurokit2's heart rate over {HR_SPAN_SECONDS:g} s spans of the first "
             f"{HR_SPANS * HR_SPAN_SECONDS / 60:g} min of up to {HR_RECORDINGS} recordings, first ECG channel "
             "(else PPG)")


@dataclass(frozen=True)
class DatasetTime:
    """What turns a dataset's settings into time: its rate (Hz) and median heart rate (bpm), None where unknown."""

    rate: float | None
    heart_rate: float | None = None
    heart_channel: str | None = None  # the channel the heart rate was estimated on


def parse_setting_name(setting: str) -> tuple[int, int] | None:
    """(context, horizon) of a record's ``setting`` ``C/H``; None for another kind (a segment length)."""
    parts = str(setting).split("/")
    return (int(parts[0]), int(parts[1])) if len(parts) == 2 and all(p.isdigit() for p in parts) else None


def recorded_rate(rows: pd.DataFrame) -> float | None:
    """The dataset's rate from its rows: the ``sampling_rate`` of rows whose ``context_samples`` is their
    setting's context (a model that resamples records its own rate and lengths)."""
    if rows.empty or not {"sampling_rate", "context_samples", "setting"} <= set(rows.columns):
        return None
    for setting, rate, context in zip(rows["setting"], rows["sampling_rate"], rows["context_samples"]):
        lengths = parse_setting_name(setting)
        if lengths and _number(rate) and _number(context) and int(float(context)) == lengths[0]:
            return float(rate)
    return None


def _number(value) -> bool:
    try:
        return math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        return False


@lru_cache(maxsize=32)
def loaded_time(name: str) -> DatasetTime:
    """The nominal rate and median heart rate of the dataset recorded as ``name``, by loading it here; an
    unknown rate where it does not load (another machine's folder, no data root)."""
    from protocols.data import nominal_sampling_rate
    from protocols.datasets import load_dataset

    try:
        dataset = load_dataset(name)
        rate = nominal_sampling_rate(dataset)
    except Exception:  # noqa: BLE001 - a dataset that does not load here has no time; the notes say so
        return DatasetTime(None)
    heart, channel = heart_rate(dataset)
    return DatasetTime(rate, heart, channel)


def heart_rate(dataset) -> tuple[float | None, str | None]:
    """(median heart rate in bpm, its channel) of ``dataset`` (:data:`HR_METHOD`), cached by content fingerprint."""
    from protocols.cache import cache_dir
    from protocols.data import content_fingerprint

    path = cache_dir() / "heart_rate" / f"{content_fingerprint(dataset)}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        return saved["bpm"], saved["channel"]
    bpm, channel = estimate_heart_rate(dataset)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"bpm": bpm, "channel": channel, "method": HR_METHOD}))
    return bpm, channel


def estimate_heart_rate(dataset) -> tuple[float | None, str | None]:
    """The estimate itself, uncached (:data:`HR_METHOD`); (None, None) without a usable cardiac channel."""
    from protocols.data import nominal_sampling_rate
    from protocols.physiology import MEASURES, mean_rate, measure_unavailable
    from protocols.modality import channel_modalities

    for key in ("hr-ecg", "hr-ppg"):
        measure = MEASURES[key]
        if measure_unavailable(dataset, measure) is not None:
            continue
        fs = nominal_sampling_rate(dataset)
        c = channel_modalities(dataset).index(measure.modality)
        span = int(round(HR_SPAN_SECONDS * fs))
        rates = [mean_rate(r.values[c, s:s + span], fs, measure) for r in dataset.recordings[:HR_RECORDINGS]
                 for s in range(0, min(r.n_samples, HR_SPANS * span) - span + 1, span)]
        found = [r for r in rates if r is not None]
        if found:
            return float(np.median(found)), dataset.channels[c]
    return None, None


def dataset_times(rows: pd.DataFrame, load: bool = False) -> dict[str, DatasetTime]:
    """Each dataset of ``rows``: its rate from the records, else (``load``) from the dataset loaded here, with
    its heart rate (``load`` only)."""
    out: dict[str, DatasetTime] = {}
    for name, g in rows.groupby("dataset", sort=False):
        rate = recorded_rate(g)
        loaded = loaded_time(str(name)) if load else DatasetTime(None)
        out[str(name)] = DatasetTime(rate if rate is not None else loaded.rate, loaded.heart_rate, loaded.heart_channel)
    return out


def settings_in_time(rows: pd.DataFrame, load: bool = False) -> pd.DataFrame:
    """One row per (dataset, setting) of ``rows`` whose settings are C/H: the samples, the rate, the seconds and
    (where a heart rate is known) the beats of context and horizon."""
    columns = ["dataset", "setting", "context_samples", "horizon_samples", "sampling_rate", "context_seconds",
               "horizon_seconds", "heart_rate", "context_beats", "horizon_beats"]
    if rows.empty or "setting" not in rows:
        return pd.DataFrame(columns=columns)
    times = dataset_times(rows, load)
    out = []
    for (dataset, setting), _ in rows.groupby(["dataset", "setting"], sort=False):
        lengths = parse_setting_name(setting)
        if lengths is None:
            continue
        t = times[str(dataset)]
        seconds = [n / t.rate if t.rate else np.nan for n in lengths]
        beats = [s * t.heart_rate / 60.0 if t.heart_rate else np.nan for s in seconds]
        out.append([dataset, setting, *lengths, t.rate if t.rate else np.nan, *seconds,
                    t.heart_rate if t.heart_rate else np.nan, *beats])
    return pd.DataFrame(out, columns=columns)


def seconds_text(seconds: float) -> str:
    """A duration as a table shows it: three significant digits (0.133 s, 2 s, 12.5 s)."""
    return f"{seconds:.3g} s" if np.isfinite(seconds) else "-"


def settings_note(rows: pd.DataFrame, load: bool = False) -> tuple[str, ...]:
    """The note a table of settings carries: each dataset's rate and each setting's context/horizon in seconds
    (and beats where known); none when no setting is C/H or no rate is known."""
    times = settings_in_time(rows, load)
    parts = []
    for dataset, g in times.groupby("dataset", sort=False):
        if not np.isfinite(g["sampling_rate"].iloc[0]):
            continue
        heart = g["heart_rate"].iloc[0]
        each = ", ".join(
            f"{r.setting} = {seconds_text(r.context_seconds)}/{seconds_text(r.horizon_seconds)}"
            + (f" ({r.context_beats:.2g}/{r.horizon_beats:.2g} beats)" if np.isfinite(heart) else "")
            for r in g.sort_values(["horizon_samples", "context_samples"]).itertuples())
        head = f"{dataset} at {g['sampling_rate'].iloc[0]:g} Hz" + (f", {heart:.0f} bpm" if np.isfinite(heart) else "")
        parts.append(f"{head}: {each}")
    return (f"settings in time (context/horizon): {'; '.join(parts)}",) if parts else ()
