"""A checkpoint's corpus manifest (``CORPUS.json``): the exact sources it was pre-trained on.

Why: ``TRAINING.json`` names only the corpus *folder* a run read, and that folder is not shipped, so
nothing beside the weights said which recordings the model saw.  The manifest lists every corpus
dataset (key, channels, recordings, samples, the source string the corpus writer recorded) from the
corpus's own ``index.json`` files; the pre-training overlap registry (``models.pretraining``) builds
each checkpoint's entry from it, so no SOTER entry is written by hand.

``classify`` maps a corpus dataset to the source database it came from, by the dataset keys the
corpus readers write (``models/soter/training/sources``) and, for WFDB records, by record name.
A dataset it cannot place (a ``--folder`` dataset of unknown provenance) is ``unidentified``: the
checkpoint's corpus then counts as not fully documented.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "CORPUS.json"
SIMULATOR = "soter-bench:simulator"  # this project's neurokit2 cohort simulators (seeds >= 1000 in a corpus)
UNIDENTIFIED = "unidentified"

# corpus dataset key prefix (before "[") -> source database; the keys the readers in sources/ write
PREFIX_SOURCES = (
    ("synthetic-stream-", SIMULATOR),
    ("mimic3wdb", "physionet:mimic3wdb"),
    ("ptb-xl", "physionet:ptb-xl"),
    ("chapman-ecg", "physionet:ecg-arrhythmia"),
    ("wesad", "uni-siegen:wesad"),
    ("sleep-edf", "physionet:sleep-edfx"),
    ("biosppy", "biosppy:examples"),
    ("opensignals-", "biosignalsnotebooks"),
)
MITDB_RECORDS = frozenset(str(r) for r in [*range(100, 125), *range(200, 235)])  # as the corpus builder's


@dataclass(frozen=True)
class CorpusSource:
    dataset: str  # the corpus dataset key
    source: str  # source database id ("physionet:mitdb", "wfdb-record:a103l", "unidentified", ...)
    recordings: tuple[str, ...]
    role: str  # "training" or "validation" (held-out loss only)


def portable_path(path: str | Path) -> str:
    """A path as a shipped file records it: relative to the working directory when inside it, else the folder's own
    name, so that no path of the machine that trained a checkpoint ends up in the project (issue #44)."""
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name


def manifest_from_corpus(corpus: Path, val_corpus: Path | None = None) -> dict[str, Any]:
    """The manifest of a corpus folder (and of the validation corpus): what ``ship`` writes."""
    from datetime import datetime, timezone

    out: dict[str, Any] = {"corpus": portable_path(corpus), "written": datetime.now(timezone.utc).date().isoformat(),
                           "datasets": _datasets(Path(corpus))}
    if val_corpus:
        out["val_corpus"] = portable_path(val_corpus)
        out["val_datasets"] = _datasets(Path(val_corpus))
    return out


def _datasets(corpus: Path) -> list[dict[str, Any]]:
    folders = sorted(p for p in corpus.iterdir() if (p / "index.json").is_file()) if corpus.is_dir() else []
    if not folders:
        raise FileNotFoundError(f"{corpus}: no corpus datasets (index.json) to describe")
    rows = []
    for folder in folders:
        index = json.loads((folder / "index.json").read_text())
        rows.append({"name": index["name"], "channels": index["channels"], "recordings": index["recordings"],
                     "subjects": index["subjects"], "samples": int(sum(index["lengths"])),
                     "source": index.get("source", "")})
    return rows


def write_manifest(dest: Path, corpus: Path, val_corpus: Path | None = None) -> Path:
    path = Path(dest) / MANIFEST
    path.write_text(json.dumps(manifest_from_corpus(corpus, val_corpus), indent=1) + "\n")
    return path


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else None


def classify(name: str) -> str:
    """The source database of one corpus dataset key."""
    for prefix, source in PREFIX_SOURCES:
        if name.startswith(prefix):
            return source
    match = re.match(r"wfdb-([^@\[]+)", name)
    if match:
        record = match.group(1)
        if record in MITDB_RECORDS:
            return "physionet:mitdb"
        if re.fullmatch(r"bidmc\d+", record):
            return "physionet:bidmc"
        return f"wfdb-record:{record}"
    return UNIDENTIFIED


def sources(manifest: dict[str, Any]) -> list[CorpusSource]:
    """Every corpus dataset of a manifest with its source database, training datasets first."""
    return [CorpusSource(d["name"], classify(d["name"]), tuple(d.get("recordings", ())), role)
            for key, role in (("datasets", "training"), ("val_datasets", "validation"))
            for d in manifest.get(key, [])]
