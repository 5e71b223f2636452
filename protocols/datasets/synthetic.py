"""The embedded default dataset: a synthetic wearable cohort from neurokit2's simulators.

Every subject has one recording per state (rest, mental stress, exercise) of ECG (mV), PPG
(a.u.), respiration (RSP, a.u.) and EDA (µS), sampled at 64 Hz.  The channels are coupled:
one heart rate drives both ECG (ecgsyn) and PPG, and the breathing signal modulates the ECG
baseline and the PPG amplitude (respiratory coupling).  States move heart rate, breathing
rate and depth, and EDA's tonic level and phasic response (SCR) rate; subjects differ in
baseline physiology, amplitudes and noise.  Labels are the state.  Generation is
deterministic in the config and cached on disk (key = generator version + config).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from protocols.data import Dataset, Recording

GENERATOR_VERSION = 2
CHANNELS = ("ECG", "PPG", "RSP", "EDA")


@dataclass(frozen=True)
class StateEffect:
    """How a state shifts a subject's physiology."""

    heart_rate: float  # beats/min added to the subject's resting rate
    breathing_rate: float  # breaths/min added
    breathing_depth: float  # factor on the respiratory amplitude
    scr_per_minute: float  # phasic skin conductance responses
    tonic_eda: float  # µS added to the subject's tonic level
    motion: float  # PPG motion-artefact amplitude


STATE_EFFECTS: dict[str, StateEffect] = {
    "rest": StateEffect(0.0, 0.0, 1.0, 1.0, 0.0, 0.02),
    "mental_stress": StateEffect(12.0, 5.0, 0.7, 8.0, 1.5, 0.05),
    "exercise": StateEffect(45.0, 10.0, 1.6, 4.0, 3.0, 0.2),
}


@dataclass(frozen=True)
class SyntheticCohortConfig:
    n_subjects: int = 10
    sampling_rate: float = 64.0
    seconds_per_state: float = 60.0
    seed: int = 0
    states: tuple[str, ...] = ("rest", "mental_stress", "exercise")

    def __post_init__(self) -> None:
        if not 2 <= self.n_subjects <= 200:
            raise ValueError(f"n_subjects must be in [2, 200], got {self.n_subjects}")
        if not 16 <= self.sampling_rate <= 1000:
            raise ValueError(f"sampling_rate must be in [16, 1000] Hz, got {self.sampling_rate}")
        if not 5 <= self.seconds_per_state <= 3600:
            raise ValueError(f"seconds_per_state must be in [5, 3600], got {self.seconds_per_state}")
        if self.seed < 0:
            raise ValueError("seed must be >= 0")
        unknown = [s for s in self.states if s not in STATE_EFFECTS]
        if unknown or not self.states or len(set(self.states)) != len(self.states):
            raise ValueError(f"states must be distinct names from {sorted(STATE_EFFECTS)}, got {self.states}")

    def cache_key(self) -> str:
        text = json.dumps({"version": GENERATOR_VERSION, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _config(options: dict[str, object]) -> SyntheticCohortConfig:
    known = {f.name for f in fields(SyntheticCohortConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown synthetic-cohort option(s) {unknown}; known: {sorted(known)}")
    if "states" in options:
        options = {**options, "states": tuple(options["states"])}  # type: ignore[arg-type]
    return SyntheticCohortConfig(**options)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SubjectPhysiology:
    heart_rate: float
    breathing_rate: float
    ecg_gain: float
    ppg_gain: float
    rsp_gain: float
    tonic_eda: float
    noise: float


def _subject(rng: np.random.Generator) -> SubjectPhysiology:
    return SubjectPhysiology(
        heart_rate=float(np.clip(rng.normal(68, 7), 52, 88)),
        breathing_rate=float(np.clip(rng.normal(14, 2), 9, 20)),
        ecg_gain=float(rng.uniform(0.7, 1.4)),
        ppg_gain=float(rng.uniform(0.6, 1.5)),
        rsp_gain=float(rng.uniform(0.6, 1.4)),
        tonic_eda=float(rng.uniform(1.0, 6.0)),
        noise=float(rng.uniform(0.005, 0.04)),
    )


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:4], "little")


def simulate_recording(p: SubjectPhysiology, effect: StateEffect, cfg: SyntheticCohortConfig,
                       seed: int) -> np.ndarray:
    """[4, T] ECG, PPG, RSP, EDA of one subject in one state."""
    import neurokit2 as nk

    sr = int(cfg.sampling_rate)
    n = int(round(cfg.seconds_per_state * cfg.sampling_rate))
    hr = p.heart_rate + effect.heart_rate
    br = p.breathing_rate + effect.breathing_rate
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # neurokit2's length= argument is unreliable (0.2.13): ask for the duration and trim
        dur = int(np.ceil(cfg.seconds_per_state)) + 1
        # breathmetrics builds whole breaths and can fall short of the duration: ask for more
        rsp = nk.rsp_simulate(duration=2 * dur + 10, sampling_rate=sr, respiratory_rate=br, noise=0.0,
                              method="breathmetrics", random_state=seed)
        ecg = nk.ecg_simulate(duration=dur, sampling_rate=sr, heart_rate=hr, heart_rate_std=1.0 + hr / 40,
                              noise=0.0, method="ecgsyn", random_state=seed + 1)
        ppg = nk.ppg_simulate(duration=dur, sampling_rate=sr, heart_rate=hr,
                              motion_amplitude=effect.motion, powerline_amplitude=0.0, drift=0.0,
                              ibi_randomness=0.05, random_state=seed + 2)
        eda = nk.eda_simulate(duration=dur, sampling_rate=sr, noise=0.0,
                              scr_number=max(1, int(round(effect.scr_per_minute * cfg.seconds_per_state / 60))),
                              drift=0.002, random_state=seed + 3)
    rsp, ecg, ppg, eda = (np.asarray(x, dtype=np.float64)[:n] for x in (rsp, ecg, ppg, eda))
    if not all(x.size == n for x in (rsp, ecg, ppg, eda)):
        raise RuntimeError("neurokit2 returned a signal shorter than requested")
    rsp_unit = rsp / (np.std(rsp) + 1e-9)
    breath = effect.breathing_depth * p.rsp_gain * rsp
    ecg = p.ecg_gain * ecg + 0.05 * rsp_unit  # respiratory baseline wander
    ppg = p.ppg_gain * ppg * (1.0 + 0.08 * rsp_unit)  # respiratory amplitude modulation
    eda = p.tonic_eda + effect.tonic_eda + eda
    out = np.stack([ecg, ppg, breath, eda])
    scale = out.std(axis=1, keepdims=True)
    return out + p.noise * scale * rng.standard_normal(out.shape)


def generate(cfg: SyntheticCohortConfig) -> Dataset:
    recordings = []
    n = int(round(cfg.seconds_per_state * cfg.sampling_rate))
    times = np.arange(n) / cfg.sampling_rate
    for s in range(cfg.n_subjects):
        subject = f"S{s + 1:02d}"
        physiology = _subject(np.random.default_rng(_seed(cfg.seed, subject, "physiology")))
        for code, state in enumerate(cfg.states):
            values = simulate_recording(physiology, STATE_EFFECTS[state], cfg, _seed(cfg.seed, subject, state))
            recordings.append(Recording(subject, f"{subject}_{state}", values, times.copy(),
                                        np.full(n, code, dtype=np.int64)))
    return _dataset(cfg, tuple(recordings))


def _dataset(cfg: SyntheticCohortConfig, recordings: tuple[Recording, ...]) -> Dataset:
    return Dataset(
        name="synthetic-cohort", channels=CHANNELS, recordings=recordings, sampling_rate=cfg.sampling_rate,
        label_names=cfg.states,
        description=(f"neurokit2 cohort v{GENERATOR_VERSION}: {cfg.n_subjects} subjects x {len(cfg.states)} states "
                     f"x {cfg.seconds_per_state:g} s at {cfg.sampling_rate:g} Hz; ECG, PPG, RSP, EDA"),
        metadata={"config": asdict(cfg), "generator_version": GENERATOR_VERSION},
    )


def cache_dir() -> Path:
    return Path(os.environ.get("SOTER_BENCH_CACHE") or Path.home() / ".cache" / "soter-bench")


def _save(ds: Dataset, path: Path) -> None:
    arrays = {"subjects": np.array([r.subject for r in ds.recordings]),
              "names": np.array([r.name for r in ds.recordings]),
              "times": ds.recordings[0].timestamps}
    for i, r in enumerate(ds.recordings):
        arrays[f"values_{i}"] = r.values
        arrays[f"labels_{i}"] = r.labels
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    with os.fdopen(fd, "wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written cache file


def _load(cfg: SyntheticCohortConfig, path: Path) -> Dataset:
    with np.load(path, allow_pickle=False) as z:
        times = z["times"]
        recs = tuple(Recording(str(s), str(n), z[f"values_{i}"], times.copy(), z[f"labels_{i}"])
                     for i, (s, n) in enumerate(zip(z["subjects"], z["names"])))
    return _dataset(cfg, recs)


def load_synthetic_cohort(**options: object) -> Dataset:
    cfg = _config(dict(options))
    path = cache_dir() / f"synthetic-cohort-{cfg.cache_key()}.npz"
    if path.exists():
        try:
            return _load(cfg, path)
        except Exception as exc:  # a corrupt or truncated cache file: rebuild it
            warnings.warn(f"synthetic cohort cache {path} is unreadable ({exc}); regenerating", stacklevel=2)
    ds = generate(cfg)
    _save(ds, path)
    return ds
