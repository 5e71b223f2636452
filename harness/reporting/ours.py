"""What "ours" is, said beside every comparison with the paper: which checkpoint (its size and digest), on
which test subjects of each dataset, with how many windows, seeds and settings.

A comparison puts a number of this run beside the paper's; without this, a 0.56M-parameter CPU checkpoint
scored on 2 of MIT-BIH's 48 records with 2 windows per subject reads like a reproduction of the paper's
cell. Everything here is read from the records (the rows' ``model_info``, folds, protocol and window counts)
and from the checkpoint's own files; nothing is assumed.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from harness.records.configurations import (default_weights_folder, parse_info, records_name, row_identity,
                                            sampling_of)

REPO = Path(__file__).resolve().parents[2]
_DIGEST = re.compile(r"[0-9a-f]{12,64}")  # a weights digest in a row's identity (else a hub id)


def ours_lines(frame: pd.DataFrame, task: str, models: Iterable[str], datasets: Iterable[str]) -> list[str]:
    """One line per model (its weights) and per dataset (subjects, windows, seeds, settings) of ``task``'s rows
    behind a comparison: ``models`` are the records' table labels, ``datasets`` the records' dataset labels."""
    rows = frame[(frame["task"] == task) & (frame["status"] == "ok")] if len(frame) else frame
    lines = [f"{m}: {weights_of(rows[rows['model'] == m])}" for m in dict.fromkeys(models)
             if len(rows) and (rows["model"] == m).any()]
    lines += [f"{records_name(d)}{_sampling_label(d)}: {sampling_words(rows[rows['dataset'] == d])}"
              for d in dict.fromkeys(datasets) if len(rows) and (rows["dataset"] == d).any()]
    return lines


def _sampling_label(label: str) -> str:
    name = records_name(label)
    return label[len(name):] if label != name else ""


def weights_of(rows: pd.DataFrame) -> str:
    """A model's weights in words: the checkpoint's folder name, parameter count and digest; a hub id; or none."""
    infos = [parse_info(i) for i in rows.get("model_info", pd.Series(dtype=object))]
    identities = [row_identity(i) or {} for i in rows.get("model_info", pd.Series(dtype=object))]
    name = str(rows["model_name"].iloc[0]) if "model_name" in rows else str(rows["model"].iloc[0])
    checkpoints = sorted({str(i["checkpoint"]) for i in infos if i.get("checkpoint")})
    given = {str(i.get("weights")) for i in identities if i.get("weights")}
    digests = sorted({w for w in given if _DIGEST.fullmatch(w)}
                     | {str(i["checkpoint_sha256"]) for i in infos if i.get("checkpoint_sha256")})
    hub = sorted(given - set(digests))  # a hub id (ORG/REPO) the model's library resolves
    if not checkpoints and not digests:
        return f"weights {', '.join(hub)}" if hub else registered_weights(name, infos)
    folder = next((f for i in infos if (f := checkpoint_folder(name, i)) is not None), None)
    size = parameter_count(folder) if folder is not None else None
    parts = [f"checkpoint {', '.join(checkpoints) or 'given with --weights'}"]
    if size is not None:
        parts.append(f"{size / 1e6:.2f}M parameters")
    if digests:
        parts.append(f"weights sha256 {', '.join(d[:16] for d in digests)}")
    return ", ".join(parts)


def registered_weights(model: str, infos: list[dict]) -> str:
    """The weights of a row that names no checkpoint, digest or hub id, in words read from the model's
    registration and its pre-training entry (``models.pretraining``): a foundation model whose weights
    ship in its package is pre-trained, not a statistical baseline."""
    from models.pretraining import model_entry
    from models.registry import UnknownModelError, get_spec

    try:
        spec = get_spec(model)
    except UnknownModelError:
        return "weights not recorded (not a model registered here)"
    entry = model_entry(model)
    if entry is None:
        return f"{spec.family} model, weights not recorded (no pre-training entry)"
    if not entry.pretrained:
        return f"no pre-trained weights ({entry.data.removeprefix('none: ')})"
    shipped = sorted({str(i["weights"]) for i in infos if isinstance(i.get("weights"), str) and i["weights"]})
    return (f"pre-trained weights {', '.join(shipped) or 'as registered'} ({spec.family} model, licence "
            f"{spec.licence}); pre-trained on {entry.data}")


def checkpoint_folder(model: str, info: dict) -> Path | None:
    """The folder of the checkpoint a row names: its ``source`` when it is here (a path in this repository is
    stored relative to it), else the model's registered default checkpoint when the names agree."""
    source = info.get("source")
    if isinstance(source, str) and source:
        path = Path(source) if Path(source).is_absolute() else REPO / source
        if path.is_dir():
            return path
    folder = default_weights_folder(model)
    identity = info.get("identity") if isinstance(info.get("identity"), dict) else {}
    if folder is None or not folder.is_dir():
        return None
    return folder if folder.name == info.get("checkpoint") or identity.get("weights_default") else None


def parameter_count(folder: Path) -> int | None:
    """Parameters of the safetensors weights in ``folder``, from the files' headers (nothing is loaded)."""
    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for file in files:
        with open(file, "rb") as fh:
            length = int.from_bytes(fh.read(8), "little")
            if not 0 < length < 100 << 20:
                return None
            header = json.loads(fh.read(length))
        total += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    return total


def sampling_words(rows: pd.DataFrame) -> str:
    """A dataset's rows in words: its test subjects, the windows per subject (the cap and how many were scored),
    the seeds and the settings."""
    folds = sorted(set(map(str, rows["fold"])))
    shown = ", ".join(folds[:8]) + (f" and {len(folds) - 8} more" if len(folds) > 8 else "")
    caps = sorted({p.partition("=")[2] for s in rows["protocol"] for p in sampling_of(s) if p.startswith("maxw=")},
                  key=lambda v: (len(v), v))
    scored = pd.to_numeric(rows["n_windows"], errors="coerce").dropna() if "n_windows" in rows else pd.Series([])
    per = f", {np.mean(scored):.3g} scored per subject and setting on average" if len(scored) else ""
    seeds = sorted({str(s) for s in rows["seed"]}, key=lambda v: (len(v), v))
    settings = list(dict.fromkeys(map(str, rows["setting"])))
    return (f"{len(folds)} test subject{'s' * (len(folds) != 1)} ({shown}), "
            + (f"at most {' or '.join(caps)} windows per subject" if caps else "windows as the protocol draws them")
            + f"{per}; seed{'s' * (len(seeds) != 1)} {', '.join(seeds)}; "
            + f"setting{'s' * (len(settings) != 1)} {', '.join(settings)}")
