"""Resumable, verified downloads of the open PhysioNet datasets.

A dataset is fetched from ``<base>/files/<slug>/<version>/`` into ``ROOT/<name>/``, keeping
PhysioNet's relative paths: first the published ``SHA256SUMS.txt``, then every listed file the
loader reads (``Source.patterns``); when none is listed loose, the archives (``Source.archives``)
are fetched and unpacked.  Each file is written to ``<file>.part`` and, after an interruption,
continued with an HTTP ``Range`` request; it is renamed into place only once its SHA-256 matches, so
a corrupt download never looks complete (a mismatch deletes the part file and names the file).
Files already present with the right checksum are skipped, so rerunning the command resumes.
``base`` defaults to https://physionet.org (tests point it at a local server).
"""

from __future__ import annotations

import fnmatch
import http.client
import os
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from protocols.digests import file_digest

PHYSIONET = "https://physionet.org"
CHUNK = 1 << 16
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Source:
    slug: str
    version: str
    patterns: tuple[str, ...]  # fnmatch patterns (``*`` spans folders) of the files the loader reads
    archives: tuple[str, ...] = ()  # fetched and unpacked when no file matches ``patterns``


SOURCES: dict[str, Source] = {
    "mitbih": Source("mitdb", "1.0.0", ("[0-9][0-9][0-9].hea", "[0-9][0-9][0-9].dat", "[0-9][0-9][0-9].atr")),
    "heartrate": Source("bidmc", "1.0.0", ("bidmc[0-9][0-9].hea", "bidmc[0-9][0-9].dat")),
    "scientisst-move": Source("scientisst-move-biosignals", "1.0.1", ("csv/*.csv",), ("*csv*.zip",)),
    "mmash": Source("mmash", "1.0.0", ("*user_*/Actigraph.csv", "*user_*/Activity.csv"), ("*.zip",)),
    "wdd": Source("wearable-device-dataset", "1.0.1",
                  tuple(f"*{s}/*/{f}.csv" for s in ("STRESS", "AEROBIC") for f in ("ACC", "BVP", "EDA", "HR", "TEMP")),
                  ("*.zip",)),
}
ALIASES = {"heartrate-bidmc": "heartrate", "bidmc": "heartrate"}
MANUAL = {
    "ieee-ppg": (
        "IEEE PPG is not on PhysioNet; nothing was downloaded.  Get either form into ROOT/ieee-ppg/:\n"
        "  (a) the IEEE Signal Processing Cup 2015 files: training set DATA_01_TYPE01.mat .. DATA_12_TYPE02.mat "
        "(with *_BPMtrace.mat), test set TEST_S01_T01.mat .. TEST_S08_T01.mat (with TrueBPM/True_*.mat) and, "
        "if you have it, Extra_TrainingData/DATA_S04_T01.mat (with BPM_S04_T01.mat), from the "
        "competition page https://sites.google.com/site/researchbyzhang/ieeespcup2015 ;\n"
        "  (b) the Monash time-series extrinsic regression archive's IEEEPPG_TRAIN.ts and IEEEPPG_TEST.ts "
        "(http://tseregression.org).\n"
        "Then `python -m harness data check ieee-ppg --root ROOT`."
    ),
}
HEARTRATE_TS_NOTE = ("The paper's HeartRate is the Monash archive's .ts form (our guess: BIDMC32HR, "
                     "http://tseregression.org); put BIDMC32HR_TRAIN.ts / BIDMC32HR_TEST.ts into ROOT/heartrate/ to "
                     "use it instead of the raw bidmc records fetched here.")


class DownloadError(RuntimeError):
    pass


def source_name(name: str) -> str:
    return ALIASES.get(name, name)


def _url(base: str, source: Source, path: str) -> str:
    return f"{base.rstrip('/')}/files/{source.slug}/{source.version}/{path}"


def fetch(url: str, dest: Path, expected: str | None, progress: Callable[[int, int | None], None] | None = None
          ) -> None:
    """Download ``url`` to ``dest`` through ``dest.part`` (resumed with Range), checking ``expected``."""
    part = dest.with_name(dest.name + ".part")
    start = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    declared, received = -1, 0
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
            if start and resp.status != 206:  # the server ignored the range: start over
                start = 0
            declared = int(resp.headers.get("Content-Length", -1))
            if progress:
                progress(start, start + declared if declared >= 0 else None)
            with open(part, "ab" if start else "wb") as fh:
                while chunk := resp.read(CHUNK):
                    fh.write(chunk)
                    received += len(chunk)
                    if progress:
                        progress(len(chunk), None)
    except urllib.error.HTTPError as exc:
        if exc.code != 416 or not start:  # 416 with a part file: it is already complete
            raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise DownloadError(f"{url}: transfer interrupted after {received} bytes ({exc}); run the same command "
                            "again to resume") from exc
    if 0 <= declared != received:  # the connection dropped mid-body: keep the part for a resume
        raise DownloadError(f"{url}: transfer interrupted after {received} of {declared} bytes; run the same "
                            "command again to resume")
    if expected is not None:
        digest = file_digest(part)
        if digest != expected:
            part.unlink()
            raise DownloadError(f"{dest.name}: SHA-256 mismatch (expected {expected[:12]}..., got {digest[:12]}...); "
                                "the file was removed, run the command again")
    os.replace(part, dest)


def parse_sums(text: str) -> dict[str, str]:
    """``{relative path: sha256}`` from a ``sha256sum``-style listing."""
    sums = {}
    for line in text.splitlines():
        parts = line.strip().split(maxsplit=1)
        if len(parts) == 2 and len(parts[0]) == 64:
            sums[parts[1].lstrip("*").removeprefix("./")] = parts[0].lower()
    return sums


def check_inside(folder: Path, relative: str, what: str) -> None:
    """Refuse ``relative`` unless ``folder / relative`` stays inside ``folder``: listings and archives are untrusted.

    Absolute paths and ``..`` components are refused outright, and so is a path that leaves ``folder`` through a
    symlink already there (the resolved target must lie inside the resolved folder).
    """
    path = Path(relative)
    if path.is_absolute() or ".." in path.parts or not (folder / path).resolve().is_relative_to(folder.resolve()):
        raise DownloadError(f"{what} leads outside {folder}; refused")


def checked_sums(folder: Path, sums_file: Path) -> dict[str, str]:
    """The entries of ``sums_file`` (in ``folder``), every path refused unless it stays inside ``folder``."""
    sums = parse_sums(sums_file.read_text())
    for path in sums:
        check_inside(folder, path, f"{sums_file}: entry {path!r}")
    return sums


def selected(source: Source, sums: dict[str, str]) -> tuple[dict[str, str], bool]:
    """The listed files to fetch, and whether they are archives to unpack."""
    loose = {p: h for p, h in sums.items() if any(fnmatch.fnmatch(p, pat) for pat in source.patterns)}
    if loose or not source.archives:
        return loose, False
    return {p: h for p, h in sums.items() if any(fnmatch.fnmatch(p, pat) for pat in source.archives)}, True


def download(name: str, root: Path, base: str = PHYSIONET, show_progress: bool = True) -> list[Path]:
    """Fetch dataset ``name`` into ``root/name``; returns the verified files (archives included)."""
    name = source_name(name)
    if name in MANUAL:
        raise DownloadError(MANUAL[name].replace("ROOT", str(root)))
    if name not in SOURCES:
        raise DownloadError(f"no download for {name!r}; downloadable: {sorted(SOURCES)}")
    source = SOURCES[name]
    folder = Path(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    sums_file = folder / "SHA256SUMS.txt"
    fetch(_url(base, source, "SHA256SUMS.txt"), sums_file, None)
    files, archives = selected(source, checked_sums(folder, sums_file))  # before any file is fetched
    if not files:
        raise DownloadError(f"{_url(base, source, 'SHA256SUMS.txt')} lists no file the {name} loader reads "
                            f"(patterns {list(source.patterns + source.archives)})")
    todo = [p for p, h in files.items() if not (folder / p).is_file() or file_digest(folder / p) != h]
    with tqdm(total=len(todo), unit="file", desc=f"{name}", disable=not show_progress, position=0) as files_bar:
        for path in todo:
            dest = folder / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            with tqdm(unit="B", unit_scale=True, desc=path, leave=False, disable=not show_progress,
                      position=1) as bytes_bar:
                def progress(n: int, total: int | None, bar=bytes_bar) -> None:
                    if total is not None:
                        bar.total = total
                        bar.refresh()
                    bar.update(n)

                fetch(_url(base, source, path), dest, files[path], progress)
            files_bar.update(1)
    if archives:
        for path in files:
            unpack(folder / path, folder)
    return [folder / p for p in files]


def unpack(archive: Path, folder: Path) -> None:
    """Extract a verified zip once (a ``.<name>.unpacked`` marker records it), refusing unsafe paths."""
    marker = folder / f".{archive.name}.unpacked"
    if marker.is_file() and marker.read_text() == file_digest(archive):
        return
    try:
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                check_inside(folder, member, f"{archive.name}: member {member!r}")
            zf.extractall(folder)
    except zipfile.BadZipFile as exc:
        raise DownloadError(f"{archive}: not a valid zip archive ({exc})") from exc
    marker.write_text(file_digest(archive))


def check(name: str, root: Path) -> dict[str, list[str]]:
    """Files present, missing or corrupt against the SHA256SUMS.txt kept beside them."""
    name = source_name(name)
    folder = Path(root) / name
    sums_file = folder / "SHA256SUMS.txt"
    if not sums_file.is_file():
        raise DownloadError(f"{sums_file}: not found; download {name} first (`python -m harness data download "
                            f"{name} --root {root}`)")
    sums = checked_sums(folder, sums_file)
    files = selected(SOURCES[name], sums)[0] if name in SOURCES else sums
    report: dict[str, list[str]] = {"present": [], "missing": [], "corrupt": []}
    for path, digest in files.items():
        file = folder / path
        key = "missing" if not file.is_file() else "present" if file_digest(file) == digest else "corrupt"
        report[key].append(path)
    return report
