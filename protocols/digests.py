"""A file's SHA-256, read in blocks: one helper for everything that checks files against a published digest
(dataset downloads, checkpoint checksums, exported windows), kept apart from the downloader so that checking a
checkpoint or an export does not import it."""

from __future__ import annotations

import hashlib
from pathlib import Path

BLOCK = 1 << 20  # bytes read at a time: a multi-gigabyte file never sits in memory whole


def file_digest(path: Path) -> str:
    """The hex SHA-256 of the file's whole content."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            h.update(block)
    return h.hexdigest()
