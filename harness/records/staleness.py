"""Which results folders hold rows of versions that have changed since (``harness stale``).

A row is out of date when its task's declared version or its model's revision differs from the current one
(``harness.registry.versions``): a version bump makes exactly the folders that hold rows of that task (or model) out
of date, and no other. Reads records only: no torch, no model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.records.configurations import old_version_counts, out_of_date

RECORDS_FILE = "records.csv"


@dataclass
class FolderStaleness:
    """One folder's rows, and those of older versions grouped by what changed."""

    folder: Path
    rows: int = 0
    old: dict[str, int] = field(default_factory=dict)  # "forecasting-v1 (now v2)" -> rows

    @property
    def stale(self) -> bool:
        return bool(self.old)

    def line(self) -> str:
        if not self.old:
            return f"{self.folder}: current ({self.rows} rows)"
        parts = "; ".join(f"{n} rows of {what}" for what, n in self.old.items())
        return f"{self.folder}: OUT OF DATE: {parts} (of {self.rows} rows)"


def folder_staleness(folder: Path) -> FolderStaleness:
    """What of ``folder``'s records (the latest row of each key) is of an older version."""
    from harness.records.store import RecordStore

    frame = RecordStore(Path(folder) / RECORDS_FILE, readonly=True).frame()
    found = FolderStaleness(Path(folder), rows=len(frame))
    if len(frame):
        found.old = old_version_counts(frame[out_of_date(frame)])
    return found


def results_folders(roots: list[Path]) -> list[Path]:
    """Every folder under ``roots`` (a folder itself included) that holds a records file, sorted."""
    found: set[Path] = set()
    for root in roots:
        root = Path(root)
        if (root / RECORDS_FILE).is_file():
            found.add(root)
        if root.is_dir():
            found.update(p.parent for p in root.glob(f"*/{RECORDS_FILE}"))
    return sorted(found)
