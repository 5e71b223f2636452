"""PTB-XL (PhysioNet ``ptb-xl`` 1.0.3, CC BY 4.0).

Layout: ``ptbxl_database.csv`` (``ecg_id``, ``patient_id``, ``filename_lr``, ``filename_hr``) beside
``records100/`` and ``records500/`` (WFDB, 12 leads, 10 s).  The subject is ``patient_id``;
``rate=500`` (default) reads ``filename_hr``, ``rate=100`` the 100 Hz copies.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from models.soter.training.corpus import CorpusError
from models.soter.training.sources import SourceRecording, regular_chunks


def read(root: Path, rate: int = 500) -> Iterator[SourceRecording]:
    import wfdb

    table = root / "ptbxl_database.csv"
    if not table.is_file():
        raise CorpusError(f"ptb-xl: {table} not found")
    column = {500: "filename_hr", 100: "filename_lr"}.get(rate)
    if column is None:
        raise CorpusError(f"ptb-xl: rate must be 500 or 100, got {rate}")
    db = pd.read_csv(table)
    missing = {"patient_id", column} - set(db.columns)
    if missing:
        raise CorpusError(f"{table}: missing column(s) {sorted(missing)}")
    for row in db.itertuples(index=False):
        path = root / getattr(row, column)
        try:
            rec = wfdb.rdrecord(str(path))
        except Exception as exc:
            raise CorpusError(f"{path}: unreadable WFDB record ({exc})") from exc
        names = tuple(rec.sig_name)
        signal = rec.p_signal.T
        yield SourceRecording(f"ptb-xl[{len(names)}leads@{rec.fs:g}Hz]", names, str(int(row.patient_id)), path.name,
                              regular_chunks(lambda a, b, s=signal: s[:, a:b], signal.shape[1], float(rec.fs)),
                              "PTB-XL 1.0.3 (PhysioNet, CC BY 4.0)")
