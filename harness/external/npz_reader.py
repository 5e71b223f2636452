"""Reading an npz file that came from elsewhere (an export's unit, a predictions file) without trusting it.

``np.load`` of an npz allocates each array from its ``.npy`` header before reading a byte of it, and
decompresses whatever a member holds: a 4 MB compressed file can ask for gigabytes. Here nothing is read
before it is checked from the file's own directories and headers (docs/external.md, "Limits"):

* the zip's end-of-central-directory record: at most :data:`MAX_ENTRIES` members and a central directory of at
  most :data:`MAX_DIRECTORY_BYTES`, before ``zipfile`` parses the directory;
* every member: a flat ``NAME.npy`` (no folder, no duplicate), declaring at most :data:`MAX_NPZ_BYTES`
  uncompressed, all members together too;
* every ``.npy`` header (a few hundred bytes decompressed): version 1 or 2, no object dtype (a pickle), and a
  shape whose bytes are exactly what the member declares.

:func:`npz_headers` gives the names, shapes and dtypes so that a caller checks them against what it expects;
:func:`read_array` then reads one array, which the member's declared size bounds (``zipfile`` never inflates a
member past it). Every problem is an :class:`NpzError` of one line.
"""

from __future__ import annotations

import math
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_NPZ_BYTES = 2 << 30  # the most an npz read here may hold, uncompressed, all its arrays together (2 GiB)
MAX_ENTRIES = 100_000  # members of one npz (a predictions file: two per unit and its fingerprint)
MAX_DIRECTORY_BYTES = 64 << 20  # the zip's central directory
MAX_HEADER_BYTES = 10_000  # a .npy header (numpy's own default limit)
_EOCD = b"PK\x05\x06"  # end of central directory
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"


class NpzError(ValueError):
    """An npz file that is refused before any of its arrays is read (one line: the file and why)."""


@dataclass(frozen=True)
class ArrayHeader:
    """One member of an npz as its headers declare it."""

    name: str  # the array's name (the member without ``.npy``)
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    member: str  # the zip member's name


def npz_headers(path: Path, limit: int = MAX_NPZ_BYTES) -> dict[str, ArrayHeader]:
    """The arrays of the npz at ``path`` by name, from its zip directory and ``.npy`` headers only."""
    path = Path(path)
    entries, directory = _directory_size(path)
    if entries > MAX_ENTRIES or directory > MAX_DIRECTORY_BYTES:
        raise NpzError(f"{path}: {entries} zip members in a {directory}-byte directory: more than an npz read here "
                       f"may hold ({MAX_ENTRIES} members, {MAX_DIRECTORY_BYTES >> 20} MiB)")
    out: dict[str, ArrayHeader] = {}
    total = 0
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = _array_name(path, info, out)
                total += info.file_size
                if info.file_size > limit or total > limit:
                    raise NpzError(f"{path}: {name!r} and the arrays before it declare {total} bytes uncompressed, "
                                   f"more than the {limit >> 20} MiB an npz read here may hold")
                out[name] = _header(path, archive, info, name)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError) as exc:
        raise NpzError(f"{path}: not a readable npz file (a zip of .npy arrays): {_first_line(exc)}") from None
    return out


def read_array(path: Path, header: ArrayHeader) -> np.ndarray:
    """One array of a checked npz (:func:`npz_headers`): no pickle, at most the bytes its member declares."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(header.member) as member:
            return np.lib.format.read_array(member, allow_pickle=False, max_header_size=MAX_HEADER_BYTES)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise NpzError(f"{path}: array {header.name!r} cannot be read: {_first_line(exc)}") from None


def read_npz(path: Path, limit: int = MAX_NPZ_BYTES) -> dict[str, np.ndarray]:
    """Every array of the npz at ``path``, each checked from its headers before it is read."""
    return {name: read_array(path, header) for name, header in npz_headers(path, limit).items()}


def _array_name(path: Path, info: zipfile.ZipInfo, seen: dict[str, ArrayHeader]) -> str:
    member = info.filename
    if not member.endswith(".npy") or "/" in member or "\\" in member or member.startswith("."):
        raise NpzError(f"{path}: zip member {member[:80]!r} is no array of an npz file (NAME.npy)")
    name = member[: -len(".npy")]
    if name in seen:
        raise NpzError(f"{path}: the array {name!r} is stored twice")
    return name


def _header(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> ArrayHeader:
    """The ``.npy`` header of one member (only its first bytes are inflated), checked against its declared size."""
    with archive.open(info) as member:
        try:
            version = np.lib.format.read_magic(member)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f".npy format version {version}")
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran_order, dtype = read(member, max_header_size=MAX_HEADER_BYTES)
        except (ValueError, EOFError) as exc:
            raise NpzError(f"{path}: array {name!r} has no valid .npy header ({_first_line(exc)})") from None
        offset = member.tell()
    if dtype.hasobject:
        raise NpzError(f"{path}: array {name!r} holds Python objects (a pickle); only arrays without pickled "
                       "objects are read")
    size = math.prod(shape) * dtype.itemsize
    if offset + size != info.file_size:
        raise NpzError(f"{path}: array {name!r} declares shape {shape} of {dtype} ({size} bytes) in a member of "
                       f"{info.file_size - offset} bytes")
    return ArrayHeader(name, tuple(int(n) for n in shape), dtype, bool(fortran_order), info.filename)


def _directory_size(path: Path) -> tuple[int, int]:
    """(members, bytes of the central directory) from the zip's end records, before ``zipfile`` parses it."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            end = fh.tell()
            fh.seek(max(0, end - (1 << 16) - 22))
            tail = fh.read()
            at = tail.rfind(_EOCD)
            if at < 0 or len(tail) - at < 22:
                raise NpzError(f"{path}: not an npz file (a zip of .npy arrays): no zip directory")
            entries, size = struct.unpack("<4s4H2LH", tail[at:at + 22])[4:6]
            if entries == 0xFFFF or size == 0xFFFFFFFF:  # zip64: the counts are in the zip64 end record
                locator = tail[at - 20:at] if at >= 20 else b""
                if not locator.startswith(_EOCD64_LOCATOR):
                    raise NpzError(f"{path}: a zip64 directory without its locator")
                fh.seek(struct.unpack("<4sLQL", locator)[2])
                record = fh.read(56)
                if not record.startswith(_EOCD64):
                    raise NpzError(f"{path}: a zip64 directory that cannot be read")
                entries, size = struct.unpack("<4sQ2H2L4Q", record)[7:9]
    except OSError as exc:
        raise NpzError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return int(entries), int(size)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
