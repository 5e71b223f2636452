"""A user's own dataset: a folder of CSV/Parquet recordings plus a manifest (docs/datasets.md)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from protocols.data import Dataset, DatasetError, Recording

MANIFESTS = ("dataset.toml", "dataset.json")
TOP_FIELDS = {"name", "channels", "sampling_rate", "labels", "allow_missing", "description", "recordings"}
RECORDING_FIELDS = {"file", "subject", "name"}


def _read_manifest(path: Path) -> tuple[Path, dict[str, Any]]:
    if not path.exists():
        raise DatasetError(f"dataset folder {path} does not exist")
    if not path.is_dir():
        raise DatasetError(f"{path} is not a folder; a dataset is a folder with a dataset.toml manifest")
    for name in MANIFESTS:
        manifest = path / name
        if manifest.exists():
            try:
                text = manifest.read_text(encoding="utf-8")
                data = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
            except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise DatasetError(f"{manifest}: malformed manifest: {exc}") from exc
            if not isinstance(data, dict):
                raise DatasetError(f"{manifest}: the manifest must be a table/object")
            return manifest, data
    raise DatasetError(f"{path}: no manifest ({' or '.join(MANIFESTS)}); see docs/datasets.md")


def _check_manifest(manifest: Path, data: dict[str, Any]) -> None:
    unknown = sorted(set(data) - TOP_FIELDS)
    if unknown:
        raise DatasetError(f"{manifest}: unknown field(s) {unknown}; allowed: {sorted(TOP_FIELDS)}")
    for required in ("name", "channels", "recordings"):
        if required not in data:
            raise DatasetError(f"{manifest}: missing required field {required!r}")
    if not isinstance(data["name"], str) or not data["name"]:
        raise DatasetError(f"{manifest}: 'name' must be a non-empty string")
    channels = data["channels"]
    if not isinstance(channels, list) or not channels or not all(isinstance(c, str) for c in channels):
        raise DatasetError(f"{manifest}: 'channels' must be a non-empty list of column names")
    if {"time", "label"} & set(channels):
        raise DatasetError(f"{manifest}: 'time' and 'label' are reserved column names, not channels")
    recs = data["recordings"]
    if not isinstance(recs, list) or not recs:
        raise DatasetError(f"{manifest}: 'recordings' must list at least one recording")
    for i, rec in enumerate(recs):
        if not isinstance(rec, dict):
            raise DatasetError(f"{manifest}: recordings[{i}] must be a table with 'file' and 'subject'")
        extra = sorted(set(rec) - RECORDING_FIELDS)
        if extra:
            raise DatasetError(f"{manifest}: recordings[{i}] has unknown field(s) {extra}")
        for key in ("file", "subject"):
            if not isinstance(rec.get(key), str) or not rec.get(key):
                raise DatasetError(f"{manifest}: recordings[{i}] needs a non-empty string {key!r}")
    labels = data.get("labels")
    if labels is not None and (not isinstance(labels, list) or not all(isinstance(x, str) for x in labels)):
        raise DatasetError(f"{manifest}: 'labels' must be a list of label names")


def _read_table(file: Path) -> pd.DataFrame:
    if not file.exists():
        raise DatasetError(f"{file}: listed in the manifest but missing")
    try:
        if file.suffix.lower() == ".parquet":
            return pd.read_parquet(file)
        if file.suffix.lower() == ".csv":
            return pd.read_csv(file, float_precision="round_trip")
    except Exception as exc:  # pandas/pyarrow raise many types for corrupt files
        raise DatasetError(f"{file}: cannot be read ({type(exc).__name__}: {exc})") from exc
    raise DatasetError(f"{file}: unsupported file type {file.suffix!r}; use .csv or .parquet")


def _numeric(frame: pd.DataFrame, column: str, file: Path) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(values) & frame[column].notna().to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        raise DatasetError(f"{file}: non-numeric value {frame[column].iloc[row]!r} in column {column!r} "
                           f"at data row {row + 1}")
    return values


def load_folder_dataset(path: Path, **options: Any) -> Dataset:
    if options:
        raise DatasetError(f"folder datasets take no options, got {sorted(options)}")
    path = Path(path)
    manifest, data = _read_manifest(path)
    _check_manifest(manifest, data)
    channels = tuple(data["channels"])
    labels = tuple(data["labels"]) if data.get("labels") is not None else None
    allow_missing = bool(data.get("allow_missing", False))
    recordings = []
    for entry in data["recordings"]:
        file = path / entry["file"]
        frame = _read_table(file)
        for column in ("time", *channels):
            if column not in frame.columns:
                raise DatasetError(f"{file}: missing column {column!r} (columns: {list(frame.columns)})")
        if frame.empty:
            raise DatasetError(f"{file}: no rows")
        times = _numeric(frame, "time", file)
        if np.isnan(times).any():
            raise DatasetError(f"{file}: empty 'time' cell at data row {int(np.argmax(np.isnan(times))) + 1}")
        values = np.stack([_numeric(frame, c, file) for c in channels])
        if np.isinf(values).any():
            ch, row = np.argwhere(np.isinf(values))[0]
            raise DatasetError(f"{file}: infinite value in column {channels[ch]!r} at data row {row + 1}")
        if not allow_missing and np.isnan(values).any():
            ch, row = np.argwhere(np.isnan(values))[0]
            raise DatasetError(f"{file}: missing value in column {channels[ch]!r} at data row {row + 1} "
                               "(set allow_missing = true in the manifest to keep gaps as missing)")
        if times.size > 1 and not np.all(np.diff(times) > 0):
            row = int(np.argmin(np.diff(times) > 0)) + 2
            raise DatasetError(f"{file}: 'time' is not strictly increasing at data row {row}")
        codes = None
        if labels is not None:
            if "label" not in frame.columns:
                raise DatasetError(f"{file}: the manifest names labels but the file has no 'label' column")
            text = frame["label"].astype("string")
            lookup = {name: i for i, name in enumerate(labels)}
            codes = np.array([lookup.get(v, -2) if v is not pd.NA else -1 for v in text], dtype=np.int64)
            if (codes == -2).any():
                row = int(np.argmax(codes == -2))
                raise DatasetError(f"{file}: label {text.iloc[row]!r} at data row {row + 1} is not one of "
                                   f"{list(labels)}")
        recordings.append(Recording(subject=entry["subject"], name=entry.get("name", Path(entry["file"]).stem),
                                    values=values, timestamps=times, labels=codes))
    rate = data.get("sampling_rate")
    return Dataset(name=data["name"], channels=channels, recordings=tuple(recordings),
                   sampling_rate=float(rate) if rate is not None else None, label_names=labels,
                   description=str(data.get("description", f"user dataset from {path}")),
                   metadata={"path": str(path)})


def write_folder_dataset(dataset: Dataset, path: Path, format: str = "csv") -> Path:
    """Write a Dataset in the folder format (for conversions and tests); returns the manifest."""
    if format not in ("csv", "parquet"):
        raise ValueError("format must be 'csv' or 'parquet'")
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    entries = []
    for i, rec in enumerate(dataset.recordings):
        frame = pd.DataFrame({"time": rec.timestamps, **{c: rec.values[k] for k, c in enumerate(dataset.channels)}})
        if rec.labels is not None and dataset.label_names is not None:
            names = np.array([*dataset.label_names, ""], dtype=object)
            frame["label"] = pd.array(np.where(rec.labels >= 0, names[rec.labels], None), dtype="string")
        file = f"{i:04d}_{_safe(rec.name)}.{format}"
        if format == "csv":
            frame.to_csv(path / file, index=False, float_format="%.17g")
        else:
            frame.to_parquet(path / file, index=False)
        entries.append({"file": file, "subject": rec.subject, "name": rec.name})
    manifest = {"name": dataset.name, "channels": list(dataset.channels), "recordings": entries,
                "allow_missing": bool(any(np.isnan(r.values).any() for r in dataset.recordings))}
    if dataset.sampling_rate is not None:
        manifest["sampling_rate"] = dataset.sampling_rate
    if dataset.label_names is not None:
        manifest["labels"] = list(dataset.label_names)
    (path / "dataset.json").write_text(json.dumps(manifest, indent=2))
    (path / "dataset.toml").unlink(missing_ok=True)
    return path / "dataset.json"


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
