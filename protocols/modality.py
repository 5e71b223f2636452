"""Signal modality of a channel: from its name, or from the dataset's manifest where the name says nothing.

Why: one score per dataset averages ECG with EDA; breakdowns (``harness.reporting.breakdown``) and the physiological
measures (``protocols.physiology``) need to know which channel is which.  Names are matched case-insensitively
against the patterns below (first match wins), after the dataset's own mapping
(``Dataset.metadata["modality"]``: channel -> modality, from a user folder's manifest ``modality`` table);
a name matching nothing is ``other``.
"""

from __future__ import annotations

import re

from protocols.data import Dataset, DatasetError

MODALITIES: tuple[str, ...] = ("ECG", "PPG", "RESP", "EDA", "EMG", "TEMP", "ACC", "HR", "ABP", "SPO2", "EEG", "EOG",
                               "other")

# (modality, pattern on the lower-cased name); the ECG leads cover WFDB and 12-lead spellings
PATTERNS: tuple[tuple[str, str], ...] = (
    ("PPG", r"ppg|pleth|bvp|pulse"),
    ("ECG", r"ecg|ekg|lead|^(ml)?(i{1,3}|v[1-6]?|a?v[rlf])$|^mcl\d?$|^ml\d$"),
    ("RESP", r"resp|rsp|breath|thor|abdo|airflow"),
    ("EDA", r"eda|gsr|skin.?cond|electrodermal"),
    ("EMG", r"emg"),
    ("TEMP", r"temp"),
    ("ACC", r"acc|axis|gyro|vector.?magnitude|steps|motion"),
    ("SPO2", r"spo2|sao2|oxygen"),
    ("HR", r"^hr$|heart.?rate|bpm|^ibi|^rr$"),
    ("ABP", r"abp|^art|^n?bp$|pressure"),
    ("EEG", r"eeg|^f[pz]|^c[z34]|^o[z12]"),
    ("EOG", r"eog"),
)


def modality_of(name: str) -> str:
    """The modality a channel name says, or ``other``."""
    text = name.strip().lower()
    for modality, pattern in PATTERNS:
        if re.search(pattern, text):
            return modality
    return "other"


def check_modality_map(mapping: object, channels: tuple[str, ...], where: str) -> dict[str, str]:
    """A manifest's ``modality`` table: known channels, known modalities (any case); one clear error otherwise."""
    if not isinstance(mapping, dict):
        raise DatasetError(f"{where}: 'modality' must be a table of channel = modality, got {mapping!r}")
    out: dict[str, str] = {}
    known = {m.lower(): m for m in MODALITIES}
    for channel, modality in mapping.items():
        if channel not in channels:
            raise DatasetError(f"{where}: 'modality' names {channel!r}, which is not among the channels {list(channels)}")
        if not isinstance(modality, str) or modality.lower() not in known:
            raise DatasetError(f"{where}: modality {modality!r} of channel {channel!r} is not one of "
                               f"{', '.join(MODALITIES)}")
        out[channel] = known[modality.lower()]
    return out


def channel_modalities(dataset: Dataset) -> tuple[str, ...]:
    """The modality of each channel of ``dataset``: its manifest's mapping first, then the name."""
    mapping = dataset.metadata.get("modality") or {}
    return tuple(mapping.get(c) or modality_of(c) for c in dataset.channels)
