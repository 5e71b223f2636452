"""`data check`: which expected files of a dataset are present, missing or corrupt.

Downloaded datasets are checked against the ``SHA256SUMS.txt`` that ``data download`` keeps beside
them.  Datasets placed by hand (IEEE PPG; the HeartRate ``.ts`` files) have no published sums: a file
is then present when it parses (``.mat`` with ``sig``; ``.ts`` with data), corrupt when it does not.
Other datasets without sums are read by their loader, and WFDB records (``.hea`` headers: MIT-BIH, the
raw BIDMC records) are first held to their headers' own integrity fields: each signal file's size must
match ``sig_len``, and each signal's sum must match the header's checksum.
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
    """Files placed by hand, without sums: WFDB records against their headers, then the loader itself."""
    from protocols.datasets import load_dataset

    records = sorted(h.with_suffix("") for h in folder.glob("*.hea"))
    headers = "WFDB header lengths and checksums, then " if records else ""
    report = CheckReport(name, f"{headers}the {name} loader (no SHA256SUMS.txt: not downloaded by the harness, "
                               "so missing files cannot be listed)")
    for base in records:
        try:
            check_wfdb_record(base)
        except DatasetError as exc:
            report.corrupt.append(base.name)
            report.problems[base.name] = str(exc)
    if report.corrupt:  # the loader would read damaged samples, or fail on them again
        report.present.extend(b.name for b in records if b.name not in report.problems)
        return report
    try:
        dataset = load_dataset(name, data_root=folder.parent)
    except DatasetError as exc:
        report.corrupt.append(folder.name)
        report.problems[folder.name] = str(exc)
    else:
        report.present.extend(r.name for r in dataset.recordings)
    return report


def check_wfdb_record(base: Path) -> None:
    """Hold a WFDB record to its header: signal file sizes (``sig_len``), then every signal's checksum.

    The header stores, per signal, the 16-bit sum of its samples; a flipped byte changes it, without
    making the record unreadable (a change by a multiple of 65536, as in the top byte of a 24- or 32-bit
    sample, goes unseen).  Signals without a checksum in the header are not checked.
    """
    import wfdb

    from protocols.datasets.mitbih import check_signal_files, read_header

    header = read_header(base)
    check_signal_files(base, header)
    if not isinstance(header, wfdb.Record) or all(c is None for c in header.checksum or ()):
        return
    try:  # the samples as stored: digital, every sample of a frame, no skew applied
        record = wfdb.rdrecord(str(base), physical=False, smooth_frames=False, ignore_skew=True)
    except Exception as exc:  # wfdb raises many types for corrupt files
        raise DatasetError(f"{base}: unreadable WFDB record ({type(exc).__name__}: {exc})") from exc
    sums = [(got + 32768) % 65536 - 32768 for got in record.calc_checksum(expanded=True)]  # signed, as in .hea
    wrong = [f"signal {i} ({name}) in {file}: header checksum {want}, the samples give {got}"
             for i, (name, file, want, got) in enumerate(zip(record.sig_name, record.file_name, header.checksum, sums))
             if want is not None and (got - want) % 65536]
    if wrong:
        raise DatasetError(f"{base}: checksum mismatch: " + "; ".join(wrong))


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
