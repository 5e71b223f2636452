"""MIMIC-III Waveform Database (PhysioNet ``mimic3wdb`` 1.0, matched subset).

Layout: ``pXX/pXXXXXX/pXXXXXX-YYYY-MM-DD-hh-mm.hea`` multi-segment master headers naming their
segments (``NNNNNNN_0001.hea/.dat``; ``~`` marks a gap, ``*_layout`` a zero-length layout
header), plus single-segment numerics records (``...n.hea``, 1 Hz: not read).  Each
segment is read in chunks with ``wfdb.rdrecord(sampfrom, sampto)`` and becomes one recording;
the subject is the ``pXXXXXX`` folder.  Only the named signals are kept (default: ECG lead II,
PLETH, RESP, ABP, at 125 Hz; ``channels=None`` keeps every waveform signal), and segments are
grouped by which of them they carry.

Partial copies are common (a sample of a record, an interrupted download): a segment whose
signal file is missing is skipped and named on stderr, never a silent hole. ``exclude`` names
segments or whole subject folders to leave out (a held-out set). A segment whose signal data another segment of the
same master already read (same file, same byte offset: the "fixed layout" records that piece one
file together several times) is read once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from models.soter.training.corpus import CorpusError
from models.soter.training.sources import SourceRecording, pick_channels, regular_chunks

DEFAULT_CHANNELS = ("II", "PLETH", "RESP", "ABP")


def _is_master(hea: Path) -> bool:
    with open(hea, encoding="latin-1") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                return "/" in line.split()[0]
    return False


def _note(message: str) -> None:
    print(f"mimic3wdb: {message}", file=sys.stderr)


def read(root: Path, channels: tuple[str, ...] | None = DEFAULT_CHANNELS, chunk: int = 1 << 20,
         exclude: tuple[str, ...] = ()) -> Iterator[SourceRecording]:
    import wfdb

    masters = [h for h in sorted(root.rglob("*.hea")) if _is_master(h)]
    if not masters:
        raise CorpusError(f"mimic3wdb: no multi-segment master header (pXXXXXX-....hea) under {root}")
    for hea in masters:
        if hea.parent.name in exclude:
            _note(f"left out {hea.name} (subject {hea.parent.name} excluded)")
            continue
        try:
            header = wfdb.rdheader(str(hea.with_suffix("")))
        except Exception as exc:  # wfdb raises bare ValueErrors etc. on damaged headers
            raise CorpusError(f"{hea}: unreadable WFDB header ({exc})") from exc
        offset = 0
        seen: dict[tuple[tuple[str, int], ...], str] = {}
        for seg, length in zip(header.seg_name, header.seg_len):
            start, offset = offset, offset + int(length)
            if seg == "~" or not length or seg.endswith("_layout"):
                continue
            if seg in exclude:
                _note(f"left out segment {seg} of {hea.name} (excluded)")
                continue
            path = hea.parent / seg
            try:
                seg_header = wfdb.rdheader(str(path))
            except Exception as exc:
                raise CorpusError(f"{path}.hea: unreadable segment header of {hea.name} ({exc})") from exc
            files = sorted(set(seg_header.file_name))
            missing = [f for f in files if not (hea.parent / f).is_file()]
            if missing:
                _note(f"skipped segment {seg} of {hea.name}: signal file {', '.join(missing)} missing")
                continue
            data_key = tuple(sorted(zip(seg_header.file_name, [int(b or 0) for b in seg_header.byte_offset])))
            if data_key in seen:
                _note(f"skipped segment {seg} of {hea.name}: the same signal data as segment {seen[data_key]}")
                continue
            seen[data_key] = seg
            keep = pick_channels(list(seg_header.sig_name), channels)
            if not keep:
                continue
            names = tuple(seg_header.sig_name[i] for i in keep)
            fs = float(seg_header.fs)

            def read_part(a: int, b: int, path: Path = path, keep: list[int] = keep):
                try:
                    return wfdb.rdrecord(str(path), sampfrom=a, sampto=b, channels=keep).p_signal.T
                except Exception as exc:
                    raise CorpusError(f"{path}: unreadable WFDB signal ({exc})") from exc

            yield SourceRecording(f"mimic3wdb[{','.join(names)}@{fs:g}Hz]", names, hea.parent.name, seg,
                                  regular_chunks(read_part, int(seg_header.sig_len), fs, start / fs, chunk),
                                  "MIMIC-III Waveform Database 1.0 (PhysioNet, ODC-By)")
