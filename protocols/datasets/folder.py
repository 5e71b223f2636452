"""A user's own dataset: a folder of CSV/Parquet recordings plus a manifest (docs/datasets.md).

Every problem is a DatasetError naming the file, the column and the data row (1 = the first row
after the header), so that a user can fix the file without reading this code.
"""

from __future__ import annotations

import csv
import json
import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from protocols.data import FLOAT32_MAX, Dataset, DatasetError, Recording, beyond_float32
from protocols.modality import check_modality_map
from protocols.subjects import SUBJECTS, check_subject_table
from protocols.words import did_you_mean

MANIFESTS = ("dataset.toml", "dataset.json")
TOP_FIELDS = {"name", "channels", "sampling_rate", "labels", "allow_missing", "description", "recordings",
              "source_database", "modality", "subjects"}
RECORDING_FIELDS = {"file", "subject", "name"}
RESERVED_COLUMNS = ("time", "label")
NUMERIC_NA = ["", "nan", "NaN", "NA"]  # spellings of an empty numeric cell
RATE_TOLERANCE = 0.01  # a declared sampling_rate may differ from 1 / (median time step) by 1 % (docs/datasets.md)


# -- manifest ---------------------------------------------------------------------------------------
def check_folder_dataset(path: Path) -> None:
    """A folder that is no dataset (missing, a file, no manifest) is refused before any recording is read."""
    _read_manifest(path)


def _read_manifest(path: Path) -> tuple[Path, dict[str, Any]]:
    if not path.exists():
        raise DatasetError(f"dataset folder {path} does not exist")
    if not path.is_dir():
        raise DatasetError(f"{path} is not a folder; a dataset is a folder with a dataset.toml manifest")
    present = [path / m for m in MANIFESTS if (path / m).exists()]
    if not present:
        raise DatasetError(f"{path}: no manifest ({' or '.join(MANIFESTS)}); see docs/datasets.md")
    if len(present) > 1:
        raise DatasetError(f"{path}: both {' and '.join(MANIFESTS)} exist; keep one manifest")
    manifest = present[0]
    try:
        text = manifest.read_text(encoding="utf-8-sig")  # a byte-order mark some editors write: not part of it
        data = tomllib.loads(text) if manifest.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{manifest}: malformed manifest: {exc}") from exc
    except OSError as exc:
        raise DatasetError(f"{manifest}: cannot be read: {exc}") from exc
    if not isinstance(data, dict):
        raise DatasetError(f"{manifest}: the manifest must be a table/object of fields")
    return manifest, data


def _declared(data: dict[str, Any]) -> dict[str, Any]:
    """The source databases the manifest declares (the pre-training overlap registry matches them)."""
    source = data.get("source_database", [])
    source = [source] if isinstance(source, str) else source
    return {"source_database": tuple(source)} if source else {}


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
    if not isinstance(channels, list) or not channels or not all(isinstance(c, str) and c for c in channels):
        raise DatasetError(f"{manifest}: 'channels' must be a non-empty list of column names")
    if len(set(channels)) != len(channels):
        raise DatasetError(f"{manifest}: 'channels' lists a column twice: {channels}")
    if set(RESERVED_COLUMNS) & set(channels):
        raise DatasetError(f"{manifest}: 'time' and 'label' are reserved column names, not channels")
    rate = data.get("sampling_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float))
                             or not math.isfinite(rate) or rate <= 0):
        raise DatasetError(f"{manifest}: 'sampling_rate' must be a positive number of Hz, got {rate!r}")
    labels = data.get("labels")
    if labels is not None and (not isinstance(labels, list) or not labels
                               or not all(isinstance(x, str) and x for x in labels)
                               or len(set(labels)) != len(labels)):
        raise DatasetError(f"{manifest}: 'labels' must be a list of distinct non-empty label names, got {labels!r}")
    source = data.get("source_database", [])
    if not (isinstance(source, str) and source) and not (
            isinstance(source, list) and all(isinstance(s, str) and s for s in source)):
        raise DatasetError(f"{manifest}: 'source_database' must be a database id such as \"physionet:mitdb\" "
                           f"or a list of them, got {source!r}")
    if not isinstance(data.get("allow_missing", False), bool):
        raise DatasetError(f"{manifest}: 'allow_missing' must be true or false")
    if not isinstance(data.get("description", ""), str):
        raise DatasetError(f"{manifest}: 'description' must be a string")
    if "modality" in data:  # what a channel is, where its name does not say (breakdowns, physiology)
        check_modality_map(data["modality"], tuple(channels), str(manifest))
    recs = data["recordings"]
    if not isinstance(recs, list) or not recs:
        raise DatasetError(f"{manifest}: 'recordings' must list at least one recording ([[recordings]] entries)")
    names: dict[str, int] = {}
    for i, rec in enumerate(recs):
        if not isinstance(rec, dict):
            raise DatasetError(f"{manifest}: recordings[{i}] must be a table with 'file' and 'subject'")
        extra = sorted(set(rec) - RECORDING_FIELDS)
        if extra:
            raise DatasetError(f"{manifest}: recordings[{i}] has unknown field(s) {extra}; "
                               f"allowed: {sorted(RECORDING_FIELDS)}")
        for key in ("file", "subject", "name"):
            if (key != "name" or key in rec) and (not isinstance(rec.get(key), str) or not rec.get(key)):
                raise DatasetError(f"{manifest}: recordings[{i}] needs a non-empty string {key!r}")
        _check_inside(manifest, i, rec["file"])
        name = _recording_name(rec)
        if name in names:
            raise DatasetError(f"{manifest}: recordings[{names[name]}] and recordings[{i}] are both named "
                               f"{name!r}; give them distinct 'name's")
        names[name] = i
    _subjects(manifest, data)


def _subjects(manifest: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The manifest's per-subject fields (``[subjects.NAME]``: age, sex, ...), as the dataset's metadata holds them."""
    if SUBJECTS not in data:
        return {}
    subjects = tuple(dict.fromkeys(r["subject"] for r in data["recordings"]))
    return {SUBJECTS: check_subject_table(data[SUBJECTS], subjects, str(manifest))}


def _check_inside(manifest: Path, index: int, file: str) -> None:
    """Refuse a recording file that resolves outside the dataset folder (``..``, an absolute path, a symlink):
    a manifest must not make the harness read, score or quote files it was not given."""
    folder = manifest.parent.resolve()
    target = (manifest.parent / file).resolve()
    if not target.is_relative_to(folder):
        raise DatasetError(f"{manifest}: recordings[{index}] file {file!r} resolves to {target}, outside the "
                           f"dataset folder {folder}; refused (list files inside the folder)")


def _recording_name(entry: dict[str, str]) -> str:
    return entry.get("name") or Path(entry["file"]).stem


# -- one file ---------------------------------------------------------------------------------------
def _read_table(file: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    if not file.exists():
        raise DatasetError(f"{file}: listed in the manifest but missing")
    suffix = file.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise DatasetError(f"{file}: unsupported file type {file.suffix!r}; use .csv or .parquet")
    try:
        if suffix == ".parquet":
            return pd.read_parquet(file)
        # exact float parsing; label cells stay text ("1" is a name, "NA" too); only empty label cells are missing
        frame = pd.read_csv(file, float_precision="round_trip", keep_default_na=False,
                            na_values={c: NUMERIC_NA for c in columns} | {"label": [""]}, dtype={"label": "string"})
    except Exception as exc:  # pandas/pyarrow raise many types for corrupt files
        raise DatasetError(f"{file}: cannot be read ({type(exc).__name__}: {exc})") from exc
    if suffix == ".csv" and frame[[c for c in columns if c in frame.columns]].isna().to_numpy().any():
        _check_row_lengths(file)  # pandas pads a short (e.g. truncated) row with empty cells: name it instead
    return frame


def _delimiter_hint(frame: pd.DataFrame) -> str:
    """A file read as one column whose header holds ``;`` or a tab was written with another delimiter
    (a spreadsheet in a comma-decimal locale writes ``;``)."""
    if len(frame.columns) != 1:
        return ""
    header = str(frame.columns[0])
    for sep, word in ((";", "semicolon"), ("\t", "tab")):
        if sep in header:
            return f"; wrong delimiter? the header looks {word}-separated, and the files must be comma-separated"
    return ""


def _check_row_lengths(file: Path) -> None:
    with file.open(newline="", encoding="utf-8", errors="replace") as fh:
        rows = csv.reader(fh)
        width = len(next(rows, []))
        for row in rows:
            if row and len(row) < width:
                raise DatasetError(f"{file}: line {rows.line_num} has {len(row)} of {width} fields "
                                   "(truncated or malformed file)")


def _numeric(frame: pd.DataFrame, column: str, file: Path) -> np.ndarray:
    series = frame[column]
    if pd.api.types.is_datetime64_any_dtype(series) or pd.api.types.is_timedelta64_dtype(series):
        raise DatasetError(f"{file}: column {column!r} holds dates/durations; give seconds as numbers")
    if pd.api.types.is_bool_dtype(series):
        raise DatasetError(f"{file}: column {column!r} holds true/false values, not numbers")
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(values) & series.notna().to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        raise DatasetError(f"{file}: non-numeric value {series.iloc[row]!r} in column {column!r} "
                           f"at data row {row + 1}")
    return values


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _check_value_range(file: Path, values: np.ndarray, channels: tuple[str, ...]) -> None:
    """Refuse +-inf and values beyond float32: in a model they become inf, in a training subject they squash
    the channel's MinMax for every other fold (NaN is a missing value, checked separately)."""
    huge = beyond_float32(values)
    if huge.any():
        ch, row = _first(huge)
        what = "infinite value" if np.isinf(values[ch, row]) else \
            f"value {float(values[ch, row])!r} beyond the float32 range (|x| > {FLOAT32_MAX:.7g})"
        raise DatasetError(f"{file}: {what} in column {channels[ch]!r} at data row {row + 1}")


def _check_sampling_rate(file: Path, times: np.ndarray, rate: float | None) -> None:
    """A declared rate must match the timestamps (median step, RATE_TOLERANCE), else windows of the same
    sample count would cover different durations in different files."""
    if rate is None or times.size < 2:
        return
    shown = 1.0 / float(np.median(np.diff(times)))
    if abs(shown / rate - 1.0) > RATE_TOLERANCE:
        raise DatasetError(f"{file}: the manifest declares sampling_rate = {rate:g} Hz but the 'time' column "
                           f"shows {shown:.6g} Hz (1 / median time step); they must agree within "
                           f"{RATE_TOLERANCE:.0%}")


def _read_recording(file: Path, entry: dict[str, str], channels: tuple[str, ...],
                    labels: tuple[str, ...] | None, allow_missing: bool, rate: float | None) -> Recording:
    frame = _read_table(file, ("time", *channels))
    for column in ("time", *channels):
        if column not in frame.columns:
            raise DatasetError(f"{file}: missing column {column!r}{did_you_mean(column, map(str, frame.columns))} "
                               f"(columns: {list(map(str, frame.columns))}){_delimiter_hint(frame)}")
    if frame.empty:
        raise DatasetError(f"{file}: no rows")
    times = _numeric(frame, "time", file)
    if not np.isfinite(times).all():
        (row,) = _first(~np.isfinite(times))
        raise DatasetError(f"{file}: empty or infinite 'time' at data row {row + 1}")
    if times.size > 1 and not np.all(np.diff(times) > 0):
        (row,) = _first(~(np.diff(times) > 0))
        raise DatasetError(f"{file}: 'time' is not strictly increasing at data row {row + 2} "
                           f"({float(times[row])!r} then {float(times[row + 1])!r})")
    values = np.stack([_numeric(frame, c, file) for c in channels])
    _check_value_range(file, values, channels)
    if not allow_missing and np.isnan(values).any():
        ch, row = _first(np.isnan(values))
        raise DatasetError(f"{file}: missing value in column {channels[ch]!r} at data row {row + 1} "
                           "(set allow_missing = true in the manifest to keep gaps as missing)")
    codes = None
    if labels is not None:
        if "label" not in frame.columns:
            raise DatasetError(f"{file}: the manifest names labels but the file has no 'label' column")
        text = frame["label"].astype("string")
        lookup = {name: i for i, name in enumerate(labels)}
        codes = np.array([-1 if v is pd.NA else lookup.get(v, -2) for v in text], dtype=np.int64)
        if (codes == -2).any():
            (row,) = _first(codes == -2)
            raise DatasetError(f"{file}: label {text.iloc[row]!r} at data row {row + 1} (column 'label') "
                               f"is not one of {list(labels)}")
    _check_sampling_rate(file, times, rate)  # after the per-cell checks, which name a row
    return Recording(subject=entry["subject"], name=_recording_name(entry), values=values, timestamps=times,
                     labels=codes)


def load_folder_dataset(path: Path, **options: Any) -> Dataset:
    """Load a dataset folder in the documented format (docs/datasets.md)."""
    if options:
        raise DatasetError(f"folder datasets take no options, got {sorted(options)}")
    path = Path(path)
    manifest, data = _read_manifest(path)
    _check_manifest(manifest, data)
    channels = tuple(data["channels"])
    labels = tuple(data["labels"]) if data.get("labels") is not None else None
    rate = float(data["sampling_rate"]) if data.get("sampling_rate") is not None else None
    recordings = tuple(_read_recording(path / entry["file"], entry, channels, labels,
                                       data.get("allow_missing", False), rate) for entry in data["recordings"])
    try:
        return Dataset(name=data["name"], channels=channels, recordings=recordings,
                       sampling_rate=rate, label_names=labels,
                       description=data.get("description", f"user dataset from {path}"),
                       metadata={"path": str(path), **_declared(data),
                                 **({"modality": check_modality_map(data["modality"], channels, str(manifest))}
                                    if "modality" in data else {}),
                                 **_subjects(manifest, data)})
    except DatasetError as exc:
        raise DatasetError(f"{manifest}: {exc}") from exc


# -- writing --------------------------------------------------------------------------------------------
def write_folder_dataset(dataset: Dataset, path: Path, format: str = "csv") -> Path:
    """Write a Dataset in the folder format (conversions, tests); loading it gives the same arrays.

    Floats are written in Python's shortest round-trip form (CSV) or as float64 (Parquet), so values and
    timestamps come back bit for bit.  Returns the manifest's path (dataset.json: TOML has no stdlib writer).
    """
    if format not in ("csv", "parquet"):
        raise ValueError(f"format must be 'csv' or 'parquet', got {format!r}")
    clash = set(RESERVED_COLUMNS) & set(dataset.channels)
    if clash:
        raise DatasetError(f"dataset {dataset.name!r}: channel(s) {sorted(clash)} clash with reserved column names")
    if dataset.label_names is not None and "" in dataset.label_names:
        raise DatasetError(f"dataset {dataset.name!r}: an empty label name cannot be written (it means unlabelled)")
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    entries = []
    for i, rec in enumerate(dataset.recordings):
        frame = pd.DataFrame({"time": rec.timestamps, **{c: rec.values[k] for k, c in enumerate(dataset.channels)}})
        if rec.labels is not None and dataset.label_names is not None:
            names = np.array(dataset.label_names, dtype=object)
            frame["label"] = pd.array([names[c] if c >= 0 else None for c in rec.labels], dtype="string")
        file = f"{i:04d}_{_safe(rec.name)}.{format}"
        if format == "csv":
            frame.to_csv(path / file, index=False, lineterminator="\n")  # repr floats: exact round trip
        else:
            frame.to_parquet(path / file, index=False)
        entries.append({"file": file, "subject": rec.subject, "name": rec.name})
    manifest: dict[str, Any] = {"name": dataset.name, "channels": list(dataset.channels)}
    if dataset.sampling_rate is not None:
        manifest["sampling_rate"] = dataset.sampling_rate
    if dataset.label_names is not None:
        manifest["labels"] = list(dataset.label_names)
    manifest["allow_missing"] = bool(any(np.isnan(r.values).any() for r in dataset.recordings))
    if dataset.description:
        manifest["description"] = dataset.description
    if dataset.metadata.get("modality"):
        manifest["modality"] = dict(dataset.metadata["modality"])
    if dataset.metadata.get(SUBJECTS):
        manifest[SUBJECTS] = {s: dict(f) for s, f in dataset.metadata[SUBJECTS].items()}
    manifest["recordings"] = entries
    (path / "dataset.toml").unlink(missing_ok=True)
    (path / "dataset.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path / "dataset.json"


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
