"""`data check`: which expected files of a dataset are present, missing or corrupt.

Downloaded datasets are checked against the ``SHA256SUMS.txt`` that ``data download`` keeps beside
them.  Datasets placed by hand (IEEE PPG; the HeartRate ``.ts`` files) have no published sums: a file
is then present when it parses (``.mat`` with ``sig``; ``.ts`` with data), corrupt when it does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from protocols.data import DatasetError
from protocols.datasets.download import DownloadError, check as check_sums, source_name

IEEE_FILES = tuple(
    [f"DATA_{i:02d}_TYPE{1 if i == 1 else 2:02d}.mat" for i in range(1, 13)]
    + [f"TEST_S{s}.mat" for s in ("01_T01", "02_T01", "02_T02", "03_T02", "04_T02", "05_T02", "06_T01", "06_T02",
                                  "07_T02", "08_T01")]
)
IEEE_TS = ("IEEEPPG_TRAIN.ts", "IEEEPPG_TEST.ts")
HEARTRATE_TS = ("BIDMC32HR_TRAIN.ts", "BIDMC32HR_TEST.ts")


@dataclass
class CheckReport:
    dataset: str
    how: str  # what the files were checked against
    present: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)  # file -> why it is corrupt

    @property
    def ok(self) -> bool:
        return bool(self.present) and not (self.missing or self.corrupt)


def check_dataset(name: str, root: Path) -> CheckReport:
    name = source_name(name)
    folder = Path(root) / name
    if (folder / "SHA256SUMS.txt").is_file():
        sums = check_sums(name, root)
        return CheckReport(name, f"SHA-256 sums in {folder / 'SHA256SUMS.txt'}", **sums)
    if name == "ieee-ppg":
        if any(folder.rglob("*.ts")) and not any(folder.rglob("*.mat")):
            return _parse_check(name, folder, IEEE_TS, _read_ts)
        return _parse_check(name, folder, IEEE_FILES, _read_mat)
    if name == "heartrate" and any(folder.glob("*.ts")):
        return _parse_check(name, folder, HEARTRATE_TS, _read_ts)
    if folder.is_dir():
        return _load_check(name, folder)
    raise DownloadError(f"{folder}: not found; download {name} first "
                        f"(`python -m harness data download {name} --root {root}`)")


def _load_check(name: str, folder: Path) -> CheckReport:
    """Files placed by hand, without sums: the loader itself says whether they read."""
    from protocols.datasets import load_dataset

    report = CheckReport(name, f"the {name} loader (no SHA256SUMS.txt: not downloaded by the harness, "
                               "so missing files cannot be listed)")
    try:
        dataset = load_dataset(name, data_root=folder.parent)
    except DatasetError as exc:
        report.corrupt.append(folder.name)
        report.problems[folder.name] = str(exc)
    else:
        report.present.extend(r.name for r in dataset.recordings)
    return report


def _parse_check(name: str, folder: Path, expected: tuple[str, ...], read) -> CheckReport:
    report = CheckReport(name, f"readability of the expected files (no published checksums for {name})")
    found = {p.name: p for p in folder.rglob("*") if p.is_file()}
    for file in expected:
        if file not in found:
            report.missing.append(file)
            continue
        try:
            read(found[file])
        except DatasetError as exc:
            report.corrupt.append(file)
            report.problems[file] = str(exc)
        else:
            report.present.append(file)
    return report


def _read_mat(path: Path) -> None:
    from protocols.datasets.ieee_ppg import read_sig

    read_sig(path)


def _read_ts(path: Path) -> None:
    from protocols.datasets.heartrate import read_ts

    read_ts(path)
