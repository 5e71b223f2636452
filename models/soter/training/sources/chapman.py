"""Chapman-Shaoxing / Ningbo 12-lead ECG (PhysioNet ``ecg-arrhythmia`` 1.0.0, CC BY 4.0).

Layout: ``WFDBRecords/NN/NNN/JSxxxxx.hea`` with a MATLAB ``.mat`` signal file (WFDB reads both);
12 leads, 500 Hz, 10 s; one record per patient, so the record is the subject.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from models.soter.training.corpus import CorpusError
from models.soter.training.sources import SourceRecording, regular_chunks


def read(root: Path) -> Iterator[SourceRecording]:
    import wfdb

    headers = sorted(root.rglob("*.hea"))
    if not headers:
        raise CorpusError(f"chapman-ecg: no WFDB header (.hea) under {root}")
    for hea in headers:
        try:
            rec = wfdb.rdrecord(str(hea.with_suffix("")))
        except Exception as exc:
            raise CorpusError(f"{hea}: unreadable WFDB record ({exc})") from exc
        names = tuple(rec.sig_name)
        signal = rec.p_signal.T
        yield SourceRecording(f"chapman-ecg[{','.join(names)}@{rec.fs:g}Hz]", names, hea.stem, hea.stem,
                              regular_chunks(lambda a, b, s=signal: s[:, a:b], signal.shape[1], float(rec.fs)),
                              "Chapman-Shaoxing/Ningbo ECG 1.0.0 (PhysioNet, CC BY 4.0)")
