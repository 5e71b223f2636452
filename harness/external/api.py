"""The Python API of :mod:`harness.external` (re-exported there): export, read, write predictions, score."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from harness.external.export import export_windows
from harness.external.layout import FINGERPRINT, QUANTILES, ExportFormatError, Manifest, Unit, read_manifest, read_unit
from harness.external.score import PredictionsError, ScoreSummary, score_predictions


@dataclass(frozen=True)
class Windows:
    """An export, read: its manifest and each unit's arrays (``context``, ``mask``, ``context_times``,
    ``query_times``, ``recording``, ``start``, ``scaler_minimum`` ...; docs/external.md)."""

    folder: Path
    manifest: Manifest

    @property
    def units(self) -> tuple[Unit, ...]:
        return self.manifest.units

    def arrays(self, unit: Unit) -> dict[str, np.ndarray]:
        return read_unit(self.folder, unit)

    def __iter__(self) -> Iterator[tuple[Unit, dict[str, np.ndarray]]]:
        for unit in self.units:
            yield unit, self.arrays(unit)


def load_windows(folder: Path) -> Windows:
    """An export folder, checked (format, version, fingerprint); each unit's file is checked when read."""
    return Windows(Path(folder), read_manifest(Path(folder)))


def save_predictions(path: Path, windows: Windows, point: dict[str, np.ndarray],
                     quantiles: dict[str, np.ndarray] | None = None) -> Path:
    """Write a predictions file for ``windows``: ``point[unit.id]`` is [windows, channels, horizon] (forecasts)
    or [queries, channels] (imputation); ``quantiles[unit.id]`` adds [..., levels] at the manifest's
    ``quantile_levels``. The export's fingerprint goes with them; :func:`score_predictions` checks the rest."""
    arrays = {FINGERPRINT: np.array(windows.manifest.fingerprint)}
    arrays.update({k: np.asarray(v, dtype=np.float64) for k, v in point.items()})
    arrays.update({k + QUANTILES: np.asarray(v, dtype=np.float64) for k, v in (quantiles or {}).items()})
    path = Path(path)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


__all__ = ["ExportFormatError", "PredictionsError", "ScoreSummary", "Windows", "export_windows", "load_windows",
           "save_predictions", "score_predictions"]
