"""MIT-BIH Arrhythmia Database (PhysioNet `mitdb` 1.0.0, ODC-By): 48 half-hour two-lead ECG
records at 360 Hz, read with `wfdb` in physical units (mV).

Subjects: one per record, except records 201 and 202, which come from one person (subject
"201"), so they always fall in the same LOSO fold.  Channels: the first lead is MLII in 45
records, the second varies (V1, V2, V4, V5); the default exposes them as ``lead1``/``lead2``
(the paper's two channels) and keeps each record's lead names in ``metadata["leads"]``
(records 102 and 104 have V5/V2 and 114 has V5/MLII, so ``lead1`` is not MLII everywhere).
Each subject's age and sex, from the first comment line of its header (``# 69 M ...``), are in
``metadata["subjects"]`` (``protocols.subjects``: breakdowns by subject field).
``channels=("lead1",)`` keeps one lead.  Our reading of the paper (all 48 records, both leads, no
resampling, no annotations used) is a guess where the paper is silent.

Layout: ``ROOT/mitbih/NNN.{hea,dat,atr}`` as PhysioNet publishes it (``ROOT`` itself may hold the
files too).  A folder holding one record loads as a one-subject dataset; leave-one-subject-out then
refuses it (``protocols.splits.loso_folds``: at least two subjects).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from protocols.data import Dataset, DatasetError, Recording
from protocols.subjects import SUBJECTS, wfdb_patient_fields

if TYPE_CHECKING:
    import wfdb

SAME_PERSON = {"202": "201"}
RECORDS = tuple(str(r) for r in [*range(100, 110), *range(111, 120), 121, 122, 123, 124, 200, 201, 202, 203,
                                 205, 207, 208, 209, 210, 212, 213, 214, 215, 217, 219, 220, 221, 222, 223, 228,
                                 230, 231, 232, 233, 234])


CHANNELS = ("lead1", "lead2")
PACKED = {"212": (2, 3), "310": (3, 4), "311": (3, 4)}  # (samples, bytes) of one block of the packed formats


def read_header(base: Path) -> wfdb.Record | wfdb.MultiRecord:
    """The WFDB header ``base.hea``, any wfdb failure a DatasetError naming it."""
    import wfdb

    try:
        return wfdb.rdheader(str(base))
    except Exception as exc:  # wfdb raises many types for malformed headers
        raise DatasetError(f"{base}.hea: unreadable WFDB header ({type(exc).__name__}: {exc})") from exc


def check_signal_files(base: Path, header: wfdb.Record | wfdb.MultiRecord) -> None:
    """Refuse a signal file whose size is not what the header's length says it must be.

    wfdb turns a short file into a numpy broadcasting error and ignores bytes past the end.  The size of a
    file is its byte offset + ``sig_len`` x samples per frame of its signals x bytes per sample of its
    format (a packed format's last block may be written in part or whole).  A multi-segment header has no
    signal file (its segments are records of their own), and neither compressed (FLAC) files nor headers
    without ``sig_len`` fix a size.
    """
    import wfdb
    from wfdb.io._signal import BYTES_PER_SAMPLE, COMPRESSED_FMTS  # wfdb's own table of the formats

    if not isinstance(header, wfdb.Record) or header.sig_len is None or not header.file_name:
        return
    files: dict[str, tuple[str, int, int]] = {}  # file -> (format, byte offset, samples per frame)
    for name, fmt, spf, offset in zip(header.file_name, header.fmt, header.samps_per_frame, header.byte_offset):
        files[name] = (fmt, offset or 0, files.get(name, (fmt, 0, 0))[2] + spf)
    for name, (fmt, offset, spf) in files.items():
        if fmt in COMPRESSED_FMTS:
            continue
        path = base.parent / name
        if not path.is_file():
            raise DatasetError(f"{path}: signal file of record {base.name} is missing")
        samples, size = PACKED.get(fmt, (1, BYTES_PER_SAMPLE[fmt]))
        n = header.sig_len * spf
        fewest, most = offset + math.ceil(n * size / samples), offset + math.ceil(n / samples) * size
        found = path.stat().st_size
        if found < fewest:
            raise DatasetError(f"{path}: truncated: expected {fewest} bytes, found {found} "
                               f"(header {base.name}.hea: sig_len {header.sig_len}, format {fmt})")
        if found > most:
            raise DatasetError(f"{path}: longer than its header says: expected {most} bytes, found {found} "
                               f"(header {base.name}.hea: sig_len {header.sig_len}, format {fmt})")


def holds_records(root: Path | str) -> bool:
    """True when ``root`` itself holds MIT-BIH records (the loader accepts that as well as ROOT/mitbih)."""
    return any((Path(root) / f"{r}.hea").is_file() for r in RECORDS)


def load(root: Path, records: tuple[str, ...] | None = None, channels: tuple[str, ...] = CHANNELS) -> Dataset:
    """Records under ``root/mitbih`` (or ``root`` itself when it holds the .hea files)."""
    import wfdb

    channels = tuple(channels)
    bad = [c for c in channels if c not in CHANNELS] or ([] if channels else ["(none)"])
    if bad:
        raise DatasetError(f"mitbih: unknown channel(s) {bad}; channels: {list(CHANNELS)}")
    rows = [CHANNELS.index(c) for c in channels]
    root = Path(root)
    folder = root / "mitbih" if (root / "mitbih").is_dir() else root
    if not folder.is_dir():
        raise DatasetError(f"MIT-BIH folder {folder} does not exist; `python -m harness data download mitbih "
                           f"--root {root}` fetches it")
    names = records or tuple(r for r in RECORDS if (folder / f"{r}.hea").is_file())
    if not names:
        raise DatasetError(f"{folder}: no MIT-BIH record (.hea/.dat) found")
    recs, leads, people = [], {}, {}
    for name in names:
        base = folder / name
        if not (folder / f"{name}.hea").is_file():
            raise DatasetError(f"{base}.hea: missing MIT-BIH record header")
        header = read_header(base)
        try:
            check_signal_files(base, header)
        except DatasetError as exc:  # names the file and its expected and actual size, not a numpy shape error
            raise DatasetError(f"{base}: unreadable WFDB record: {exc}") from exc
        try:
            rec = wfdb.rdrecord(str(base))
        except Exception as exc:  # wfdb raises many types for truncated or corrupt files
            raise DatasetError(f"{base}: unreadable WFDB record ({type(exc).__name__}: {exc})") from exc
        if rec.p_signal is None or rec.p_signal.shape[1] != 2:
            raise DatasetError(f"{base}: expected 2 ECG leads, found {rec.n_sig}")
        if rec.fs != 360:
            raise DatasetError(f"{base}: sampled at {rec.fs} Hz, MIT-BIH records are 360 Hz")
        values = np.asarray(rec.p_signal, dtype=np.float64).T[rows]
        leads[name] = list(rec.sig_name)
        subject = SAME_PERSON.get(name, name)
        fields = wfdb_patient_fields(list(header.comments or []))
        if fields:
            people.setdefault(subject, fields)  # 201 and 202: one person, the first record's header
        recs.append(Recording(subject, name, values, np.arange(values.shape[1]) / rec.fs))
    return Dataset("mitbih", channels, tuple(recs), 360.0, None,
                   "MIT-BIH Arrhythmia Database, two ECG leads at 360 Hz",
                   {"leads": leads, "folder": str(folder), **({SUBJECTS: people} if people else {})})
