"""WESAD (UCI / Universitaet Siegen; licence: non-commercial academic use, see its readme).

Layout: ``SX/SX.pkl`` for subjects S2..S17 (no S1, S12): a latin-1 pickle of a dict with
``signal.chest`` (RespiBAN at 700 Hz: ``ACC`` [N, 3], ``ECG``, ``EMG``, ``EDA``, ``Temp``, ``Resp``
[N, 1]), ``signal.wrist`` (Empatica E4 at several rates), ``label`` and ``subject``.

Pickles can execute code when loaded.  They are read only from a folder the user named, and
through an unpickler that admits numpy arrays and plain containers only: any other class in the
file is refused.  The chest signals are kept (one dataset, 8 channels at 700 Hz); the wrist
signals are multi-rate and left out.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from models.soter.training.corpus import CorpusError
from models.soter.training.sources import SourceRecording, regular_chunks

CHEST_RATE = 700.0
CHEST = (("ACC", 0, "ACC_x"), ("ACC", 1, "ACC_y"), ("ACC", 2, "ACC_z"), ("ECG", 0, "ECG"), ("EMG", 0, "EMG"),
         ("EDA", 0, "EDA"), ("Temp", 0, "Temp"), ("Resp", 0, "Resp"))
_ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
            ("numpy", "ndarray"), ("numpy", "dtype"), ("collections", "OrderedDict")}


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: D102 - the allow-list is the point
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise CorpusError(f"refusing to unpickle {module}.{name}: WESAD files hold numpy arrays only")


def load_pickle(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            data = _ArraysOnly(f, encoding="latin1").load()
    except CorpusError as exc:
        raise CorpusError(f"{path}: {exc}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise CorpusError(f"{path}: truncated or corrupt pickle ({exc})") from exc
    if not isinstance(data, dict) or "signal" not in data or "chest" not in data.get("signal", {}):
        raise CorpusError(f"{path}: not a WESAD subject file (no signal.chest)")
    return data


def read(root: Path) -> Iterator[SourceRecording]:
    files = sorted(root.glob("S*/S*.pkl"))
    if not files:
        raise CorpusError(f"wesad: no SX/SX.pkl file under {root}")
    names = tuple(c[2] for c in CHEST)
    for path in files:
        chest = load_pickle(path)["signal"]["chest"]
        try:
            signal = np.stack([np.asarray(chest[key], dtype=np.float64).reshape(len(chest[key]), -1)[:, col]
                               for key, col, _ in CHEST])
        except (KeyError, IndexError) as exc:
            raise CorpusError(f"{path}: chest signal {exc} missing") from exc
        yield SourceRecording(f"wesad-chest[{','.join(names)}@{CHEST_RATE:g}Hz]", names, path.stem, path.stem,
                              regular_chunks(lambda a, b, s=signal: s[:, a:b], signal.shape[1], CHEST_RATE),
                              "WESAD (UCI; non-commercial academic use)")
