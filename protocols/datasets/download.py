"""Resumable, verified downloads of open PhysioNet datasets.

A dataset is fetched from ``<base>/files/<slug>/<version>/``: first PhysioNet's published
``SHA256SUMS.txt``, then every listed file the loader needs.  Each file is written to
``<name>.part`` and continued with an HTTP Range request after an interruption; it is renamed into
place only after its SHA-256 matches, so a corrupt download never looks complete.  A mismatch
deletes the partial file and is reported by name.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tqdm import tqdm

PHYSIONET = "https://physionet.org"
CHUNK = 1 << 16


@dataclass(frozen=True)
class Source:
    slug: str
    version: str
    suffixes: tuple[str, ...]  # files the loader reads


SOURCES: dict[str, Source] = {
    "mitbih": Source("mitdb", "1.0.0", (".hea", ".dat", ".atr")),
    "scientisst-move": Source("scientisst-move-biosignals", "1.0.1", (".csv",)),
    "mmash": Source("mmash", "1.0.0", (".csv", ".zip")),
    "wdd": Source("wearable-device-dataset", "1.0.1", (".csv", ".zip")),
    "heartrate-bidmc": Source("bidmc", "1.0.0", (".csv", ".hea", ".dat")),
}
MANUAL = {
    "ieee-ppg": "IEEE Signal Processing Cup 2015 data is not on PhysioNet: download the training and test .mat "
                "files from the competition site (or the Monash regression archive's IEEEPPG .ts files) into "
                "ROOT/ieee-ppg/.",
}


class DownloadError(RuntimeError):
    pass


def _url(base: str, source: Source, path: str) -> str:
    return f"{base.rstrip('/')}/files/{source.slug}/{source.version}/{path}"


def _fetch(url: str, dest: Path, expected: str | None, progress: Callable[[int], None]) -> None:
    part = dest.with_name(dest.name + ".part")
    start = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            if start and resp.status != 206:  # the server ignored the range: start over
                start = 0
            declared = int(resp.headers.get("Content-Length", -1))
            received = 0
            with open(part, "ab" if start else "wb") as fh:
                while True:
                    chunk = resp.read(CHUNK)
                    if not chunk:
                        break
                    fh.write(chunk)
                    received += len(chunk)
                    progress(len(chunk))
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise DownloadError(f"{url}: transfer interrupted ({exc}); run the same command again to resume") from exc
    if 0 <= declared != received:  # the connection dropped mid-body: keep the part for a resume
        raise DownloadError(f"{url}: transfer interrupted after {received} of {declared} bytes; run the same "
                            "command again to resume")
    if expected is not None:
        digest = hashlib.sha256(part.read_bytes()).hexdigest()
        if digest != expected:
            part.unlink()
            raise DownloadError(f"{dest.name}: SHA-256 mismatch (expected {expected[:12]}..., got {digest[:12]}...);"
                                " the file was removed, run the command again")
    os.replace(part, dest)


def parse_sums(text: str) -> dict[str, str]:
    sums = {}
    for line in text.splitlines():
        parts = line.strip().split(maxsplit=1)
        if len(parts) == 2:
            sums[parts[1].lstrip("*")] = parts[0].lower()
    return sums


def download(name: str, root: Path, base: str = PHYSIONET, show_progress: bool = True) -> list[Path]:
    if name in MANUAL:
        raise DownloadError(MANUAL[name].replace("ROOT", str(root)))
    if name not in SOURCES:
        raise DownloadError(f"no download for {name!r}; downloadable: {sorted(SOURCES)}")
    source = SOURCES[name]
    folder = Path(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    sums_file = folder / "SHA256SUMS.txt"
    _fetch(_url(base, source, "SHA256SUMS.txt"), sums_file, None, lambda n: None)
    sums = {p: h for p, h in parse_sums(sums_file.read_text()).items() if p.endswith(source.suffixes)}
    todo = [p for p, h in sums.items() if not _verified(folder / p, h)]
    with tqdm(total=len(todo), unit="file", desc=f"download {name}", disable=not show_progress) as bar:
        for path in todo:
            dest = folder / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            _fetch(_url(base, source, path), dest, sums[path], lambda n: None)
            bar.update(1)
    return [folder / p for p in sums]


def _verified(path: Path, expected: str) -> bool:
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == expected


def check(name: str, root: Path) -> dict[str, list[str]]:
    """Files present, missing or corrupt against the SHA256SUMS.txt kept beside them."""
    folder = Path(root) / name
    sums_file = folder / "SHA256SUMS.txt"
    if not sums_file.is_file():
        raise DownloadError(f"{sums_file}: not found; download {name} first (`python -m harness data download "
                            f"{name} --root {root}`)")
    suffixes = SOURCES[name].suffixes if name in SOURCES else ("",)
    report: dict[str, list[str]] = {"present": [], "missing": [], "corrupt": []}
    for path, digest in parse_sums(sums_file.read_text()).items():
        if not path.endswith(suffixes):
            continue
        file = folder / path
        key = "missing" if not file.is_file() else "present" if _verified(file, digest) else "corrupt"
        report[key].append(path)
    return report
