"""The exported windows on disk: a JSON manifest and one npz per unit (docs/external.md).

A *unit* is one cell without its model: (dataset, fold, setting, condition, seed), the set of windows a
model forecasts (or queries it imputes) in one record row. Everything is read with ``allow_pickle=False``
and plain JSON: nothing in an export or a predictions file can run code.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.external.npz_reader import NpzError, read_npz
from protocols.digests import file_digest

FORMAT = "soter-bench-windows"
VERSION = 1
MANIFEST = "manifest.json"
FINGERPRINT = "fingerprint"  # the predictions file's entry naming the export it answers
QUANTILES = ".quantiles"  # suffix of a unit's quantile forecasts in a predictions file
# what each task's unit holds per row, and what a prediction of one row is
KINDS = {"forecasting": "forecast", "noise": "forecast", "imputation": "impute"}
INPUT_ARRAYS = ("context", "mask", "context_times", "query_times")
MAX_MANIFEST_BYTES = 64 << 20  # a manifest is read whole (JSON): one larger is refused


class ExportFormatError(ValueError):
    """A folder or file is not an export (or predictions file) this version reads."""


@dataclass(frozen=True)
class Unit:
    """One unit of an export: the key fields of its record rows and where its inputs are."""

    id: str
    dataset: str  # the records' dataset label
    fold: str
    setting: str
    condition: str
    seed: int
    protocol: str  # the records' protocol column (sampling parameters and the data's content hash)
    level: float | None
    file: str
    rows: int  # windows (forecasting, noise) or queries (imputation)
    channels: tuple[str, ...]
    prediction_shape: tuple[int, ...]  # (rows, C, H) forecasts; (rows, C) imputations
    sha256: str  # of the unit's file

    def describe(self) -> str:
        return f"unit {self.id} ({self.dataset}, fold {self.fold}, {self.setting}, {self.condition}, seed {self.seed})"

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> "Unit":
        value = dict(value)
        value["channels"] = tuple(value["channels"])
        value["prediction_shape"] = tuple(int(v) for v in value["prediction_shape"])
        return cls(**value)


@dataclass(frozen=True)
class Manifest:
    """What an export holds, and the run configuration that reproduces its units."""

    task: str
    kind: str  # "forecast" or "impute": what a prediction is
    config: dict[str, Any]  # RunConfig fields (harness.external.units.config_fields)
    units: tuple[Unit, ...]
    quantile_levels: tuple[float, ...]
    fingerprint: str = ""
    format: str = FORMAT
    version: int = VERSION

    def to_json(self) -> str:
        value = asdict(self)
        return json.dumps(value, indent=1, sort_keys=True) + "\n"

    def with_fingerprint(self) -> "Manifest":
        return Manifest(self.task, self.kind, self.config, self.units, self.quantile_levels,
                        fingerprint(self), self.format, self.version)


def fingerprint(manifest: Manifest) -> str:
    """The digest tying predictions to an export: the task, the configuration, every unit's key fields
    (the protocol, and so the data's content hash, among them) and the digest of every unit's arrays."""
    value = {"format": manifest.format, "version": manifest.version, "task": manifest.task,
             "config": manifest.config, "units": [asdict(u) for u in manifest.units],
             "quantile_levels": list(manifest.quantile_levels)}
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def read_manifest(folder: Path) -> Manifest:
    """The manifest of an export folder, checked: this format and version, and its own fingerprint."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise ExportFormatError(f"{folder}: no {MANIFEST}; export the windows with "
                                "`python -m harness windows export TASK --out DIR` first")
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ExportFormatError(f"{path}: {path.stat().st_size} bytes, more than a manifest may hold "
                                f"({MAX_MANIFEST_BYTES >> 20} MiB)")
    try:
        value = json.loads(path.read_text(encoding="utf-8-sig"))  # a BOM an editor added is no reason to refuse
        if value.get("format") != FORMAT:
            raise ExportFormatError(f"{path}: not a soter-bench windows export (format {value.get('format')!r})")
        if value.get("version") != VERSION:
            raise ExportFormatError(f"{path}: export format version {value.get('version')!r}; this soter-bench reads "
                                    f"version {VERSION} (export again)")
        manifest = Manifest(value["task"], value["kind"], value["config"],
                            tuple(Unit.from_json(u) for u in value["units"]),
                            tuple(float(q) for q in value["quantile_levels"]), value["fingerprint"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, ExportFormatError):
            raise
        raise ExportFormatError(f"{path}: unreadable manifest ({type(exc).__name__}: {exc})") from None
    if fingerprint(manifest) != manifest.fingerprint:
        raise ExportFormatError(f"{path}: the manifest was edited (its fingerprint does not match its content)")
    for unit in manifest.units:
        unit_path(Path(folder), unit)  # every unit's file inside the export's folder
    return manifest


def unit_path(folder: Path, unit: Unit) -> Path:
    """Where a unit's file is: a plain file name inside the export's folder (a manifest naming
    ``../elsewhere/u.npz`` or an absolute path is refused, never read)."""
    name = str(unit.file)
    if not name or name in (".", "..") or Path(name).name != name or "\\" in name:
        raise ExportFormatError(f"{unit.describe()}: file {name[:80]!r} is not a file name inside the export's folder")
    return Path(folder) / name


def write_unit(folder: Path, name: str, arrays: dict[str, np.ndarray]) -> str:
    """Write one unit's arrays (uncompressed npz, no object arrays) and return the file's digest."""
    path = Path(folder) / name
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return file_digest(path)


def read_unit(folder: Path, unit: Unit) -> dict[str, np.ndarray]:
    """A unit's arrays, after checking the file is the one the manifest names (its digest)."""
    path = unit_path(Path(folder), unit)
    if not path.is_file() or file_digest(path) != unit.sha256:
        raise ExportFormatError(f"{path}: missing or changed since the export ({unit.describe()}); export again")
    return load_npz(path)


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an npz file, each checked from the zip directory and its ``.npy`` header before it is read
    (``harness.external.npz_reader``: sizes within the documented limit, no pickled objects)."""
    try:
        return read_npz(path)
    except NpzError as exc:
        raise ExportFormatError(str(exc)) from None
