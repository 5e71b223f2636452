"""Registration of the paper's six evaluation datasets (read from --data-root; nothing is read here).

Each lives in its own folder under the data root (``ROOT/<name>/``), in its native layout; see
docs/paper-datasets.md for sources, licences and the choices we made where the paper is silent.
"""

from __future__ import annotations

from pathlib import Path

from protocols.data import DatasetError
from protocols.datasets import DatasetSpec, register

PAPER_DATASETS = ("heartrate", "mitbih", "scientisst-move", "ieee-ppg", "mmash", "wdd")  # the paper's table order

for _name, _module, _text in (
    ("heartrate", "heartrate", "HeartRate (Monash BIDMC32HR .ts, or raw PhysioNet bidmc): 1 PPG channel, 125 Hz"),
    ("mitbih", "mitbih", "MIT-BIH Arrhythmia (PhysioNet mitdb): 2 ECG leads, 360 Hz, LOSO by person"),
    ("scientisst-move", "scientisst_move",
     "ScientISST MOVE (PhysioNet): ECG, EDA, PPG, TEMP, EMG at 500 Hz with gaps; 7 activities"),
    ("ieee-ppg", "ieee_ppg", "IEEE SPC 2015 PPG (.mat or Monash IEEEPPG .ts): 2 PPG + 3 ACC, 125 Hz"),
    ("mmash", "mmash", "MMASH (PhysioNet): 6 Actigraph channels at 1 Hz, 24 h; 6 activity classes"),
    ("wdd", "wdd", "Wearable Device Dataset (PhysioNet, Empatica E4): 7 channels resampled to 64 Hz; "
                   "stress / aerobic / anaerobic"),
):
    register(DatasetSpec(_name, f"protocols.datasets.{_module}:load", _text, needs_root=True))


def dataset_dir(root: Path | str, name: str) -> Path:
    """``ROOT/<name>`` must exist; the message says how to get the data."""
    folder = Path(root) / name
    if not folder.is_dir():
        how = (f"`python -m harness data download {name} --root {root}` fetches it" if name != "ieee-ppg"
               else f"`python -m harness data download ieee-ppg --root {root}` says where to get it")
        raise DatasetError(f"{name}: folder {folder} does not exist; {how}")
    return folder


def find_dirs(folder: Path, predicate, max_depth: int = 3) -> list[Path]:
    """Directories under ``folder`` (itself included, at most ``max_depth`` levels down) that satisfy
    ``predicate``; archives unpack into one or two wrapper folders, so the data may sit a little deeper."""
    found, level = [], [folder]
    for _ in range(max_depth + 1):
        found += [d for d in level if predicate(d)]
        level = sorted(c for d in level for c in d.iterdir() if c.is_dir())
    return found
