"""The embedded default dataset: a synthetic wearable cohort built from neurokit2's simulators.

Every subject has one recording per state (rest, mental stress, exercise) of ECG (mV), PPG (a.u.),
respiration (RSP, a.u.) and EDA (µS), sampled at 64 Hz.  The channels are coupled beat by beat:
one instantaneous heart rate (the state's mean rate, modulated by breathing, i.e. respiratory sinus
arrhythmia, and by slow heart-rate variability) sets the beat phase that drives both the ECG and,
one pulse transit time later, the PPG; the breathing signal also adds baseline wander to the ECG and
modulates the PPG amplitude and baseline.  States move heart rate, breathing rate and depth, RSA,
pulse transit time, EDA's tonic level and phasic response (SCR) rate, and PPG motion artefacts;
subjects differ in baseline physiology, ECG morphology, amplitudes and noise.  Labels are the state.

Why this way: ``ecg_simulate(method="ecgsyn")`` gives a realistic PQRST beat but integrates an ODE
(about 1 s per minute of signal), so one short constant-rate ecgsyn run per recording yields a beat
template that is replayed along the shared beat phase; PPG is replayed the same way from a constant-
rate ``ppg_simulate`` run.  Generation is deterministic in the config and cached on disk (key =
generator version + every config value); see docs/datasets.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import tempfile
import warnings
import zipfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from protocols.cache import cache_dir
from protocols.data import Dataset, DatasetError, Recording

GENERATOR_VERSION = 3  # bump whenever the generated signals change: old cache files are then ignored
CHANNELS = ("ECG", "PPG", "RSP", "EDA")
UNITS = {"ECG": "mV", "PPG": "a.u.", "RSP": "a.u.", "EDA": "µS"}
TEMPLATE_RATE = 256  # Hz at which the ECG beat and the PPG pulse are simulated before replay


@dataclass(frozen=True)
class StateEffect:
    """How a state shifts a subject's physiology."""

    heart_rate: float  # beats/min added to the subject's resting rate
    breathing_rate: float  # breaths/min added
    breathing_depth: float  # factor on the respiratory amplitude
    rsa: float  # factor on the subject's respiratory sinus arrhythmia (vagal withdrawal lowers it)
    pulse_transit: float  # factor on the subject's pulse transit time (shorter when blood pressure rises)
    scr_per_minute: float  # mean rate of phasic skin conductance responses (Poisson)
    tonic_eda: float  # µS added to the subject's tonic level
    motion: float  # PPG motion-artefact amplitude, relative to the PPG's standard deviation


STATE_EFFECTS: dict[str, StateEffect] = {
    "rest": StateEffect(0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.02),
    "mental_stress": StateEffect(12.0, 5.0, 0.7, 0.6, 0.9, 8.0, 1.5, 0.05),
    "exercise": StateEffect(45.0, 10.0, 1.6, 0.3, 0.75, 4.0, 3.0, 0.25),
}


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_real(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))


@dataclass(frozen=True)
class SyntheticCohortConfig:
    """Options of the embedded cohort; invalid values raise ValueError naming the option."""

    n_subjects: int = 10
    sampling_rate: float = 64.0  # Hz, a whole number (neurokit2's simulators take integer rates)
    seconds_per_state: float = 60.0
    seed: int = 0
    states: tuple[str, ...] = ("rest", "mental_stress", "exercise")

    def __post_init__(self) -> None:
        if not _is_int(self.n_subjects) or not 2 <= self.n_subjects <= 99:
            raise ValueError(f"n_subjects must be an integer in [2, 99], got {self.n_subjects!r}")
        if (not _is_real(self.sampling_rate) or not 16 <= self.sampling_rate <= 1000
                or float(self.sampling_rate) != int(self.sampling_rate)):
            raise ValueError(f"sampling_rate must be a whole number of Hz in [16, 1000], got {self.sampling_rate!r}")
        if not _is_real(self.seconds_per_state) or not 5 <= self.seconds_per_state <= 3600:
            raise ValueError(f"seconds_per_state must be a number in [5, 3600], got {self.seconds_per_state!r}")
        if not _is_int(self.seed) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        states = self.states
        if (not isinstance(states, tuple) or not states or len(set(states)) != len(states)
                or any(s not in STATE_EFFECTS for s in states)):
            raise ValueError(f"states must be distinct names from {sorted(STATE_EFFECTS)}, got {states!r}")
        # canonical types, so that 64 and 64.0 give the same cache key
        object.__setattr__(self, "sampling_rate", float(self.sampling_rate))
        object.__setattr__(self, "seconds_per_state", float(self.seconds_per_state))
        object.__setattr__(self, "n_subjects", int(self.n_subjects))
        object.__setattr__(self, "seed", int(self.seed))

    @property
    def n_samples(self) -> int:
        return int(round(self.seconds_per_state * self.sampling_rate))

    def cache_key(self) -> str:
        return hashlib.sha256(_config_json(self).encode()).hexdigest()[:16]


def _config_json(cfg: SyntheticCohortConfig) -> str:
    return json.dumps({"generator_version": GENERATOR_VERSION, **asdict(cfg)}, sort_keys=True)


def config_from_options(options: dict[str, object]) -> SyntheticCohortConfig:
    """Keyword options (CLI / registry) to a validated config; unknown names are an error."""
    known = {f.name for f in fields(SyntheticCohortConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown synthetic-cohort option(s) {unknown}; known: {sorted(known)}")
    if isinstance(options.get("states"), (list, str)):
        states = options["states"]
        options = {**options, "states": tuple(states.split(",") if isinstance(states, str) else states)}
    return SyntheticCohortConfig(**options)  # type: ignore[arg-type]


# -- subjects and recordings: every random draw except neurokit2's own comes from here ---------------
@dataclass(frozen=True)
class SubjectPhysiology:
    heart_rate: float  # resting, beats/min
    breathing_rate: float  # resting, breaths/min
    ecg_waves: tuple[float, float, float, float, float]  # ecgsyn P, Q, R, S, T amplitudes (morphology)
    ecg_gain: float
    ppg_gain: float
    rsp_gain: float
    rsa: float  # relative heart-rate swing per unit (standardised) breathing signal
    pulse_transit: float  # s from R peak to pulse onset at rest
    tonic_eda: float  # µS
    scr_gain: float  # µS per skin conductance response
    noise: float  # sensor noise std, relative to each channel's typical swing


def subject_physiology(seed: int, subject: str) -> SubjectPhysiology:
    rng = np.random.default_rng(_seed(seed, subject, "physiology"))
    base_waves = np.array([1.2, -5.0, 30.0, -7.5, 0.75])  # ecgsyn's defaults
    waves = base_waves * rng.uniform([0.6, 0.7, 0.85, 0.7, 0.6], [1.5, 1.3, 1.15, 1.3, 1.6])
    return SubjectPhysiology(
        heart_rate=float(np.clip(rng.normal(68, 7), 52, 88)),
        breathing_rate=float(np.clip(rng.normal(14, 2), 9, 20)),
        ecg_waves=tuple(float(w) for w in waves),  # type: ignore[arg-type]
        ecg_gain=float(rng.uniform(0.7, 1.4)),
        ppg_gain=float(rng.uniform(0.6, 1.5)),
        rsp_gain=float(rng.uniform(0.6, 1.4)),
        rsa=float(rng.uniform(0.02, 0.06)),
        pulse_transit=float(rng.uniform(0.18, 0.30)),
        tonic_eda=float(rng.uniform(1.0, 6.0)),
        scr_gain=float(rng.uniform(0.2, 0.8)),
        noise=float(rng.uniform(0.005, 0.04)),
    )


@dataclass(frozen=True)
class RecordingPlan:
    """Everything random about one (subject, state) recording, drawn before any signal is made."""

    subject: str
    state: str
    heart_rate: float  # mean, beats/min
    breathing_rate: float  # breaths/min asked of rsp_simulate
    scr_count: int
    beat_phase0: float  # beat phase at t = 0, in beats
    hrv: tuple[tuple[float, float, float], ...]  # (frequency Hz, relative amplitude, phase) of slow HRV
    simulator_seeds: tuple[int, ...]  # rsp, ecg, ppg, eda, sensor noise, motion

    @property
    def name(self) -> str:
        return f"{self.subject}_{self.state}"


def recording_plans(cfg: SyntheticCohortConfig) -> list[RecordingPlan]:
    plans = []
    for s in range(cfg.n_subjects):
        subject = f"S{s + 1:02d}"
        p = subject_physiology(cfg.seed, subject)
        for state in cfg.states:
            effect = STATE_EFFECTS[state]
            rng = np.random.default_rng(_seed(cfg.seed, subject, state))
            hrv = tuple((float(rng.uniform(0.03, 0.15)), float(rng.uniform(0.005, 0.015)),
                         float(rng.uniform(0, 2 * np.pi))) for _ in range(3))
            plans.append(RecordingPlan(
                subject=subject, state=state, heart_rate=p.heart_rate + effect.heart_rate,
                breathing_rate=p.breathing_rate + effect.breathing_rate,
                scr_count=int(rng.poisson(effect.scr_per_minute * cfg.seconds_per_state / 60)),
                beat_phase0=float(rng.uniform(0, 1)), hrv=hrv,
                simulator_seeds=tuple(int(x) for x in rng.integers(0, 2**31 - 1, size=6)),
            ))
    return plans


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:4], "little")


# -- signals ----------------------------------------------------------------------------------------
def _ecg_beat(heart_rate: float, waves: tuple[float, ...], seed: int) -> np.ndarray:
    """One ecgsyn beat (R peak to next R peak) at TEMPLATE_RATE, for replay along a beat phase."""
    import neurokit2 as nk
    from scipy.signal import find_peaks

    period = TEMPLATE_RATE * 60 / heart_rate
    z = nk.ecg_simulate(duration=int(np.ceil(5 * 60 / heart_rate)) + 1, sampling_rate=TEMPLATE_RATE,
                        heart_rate=heart_rate, heart_rate_std=0, noise=0, method="ecgsyn",
                        random_state=seed, ai=np.asarray(waves))
    peaks, _ = find_peaks(z, distance=int(0.7 * period))
    if len(peaks) < 3:
        raise RuntimeError(f"ecgsyn produced {len(peaks)} R peaks at {heart_rate:.1f} bpm; expected >= 3")
    return np.asarray(z[peaks[1]:peaks[2]], dtype=np.float64)  # skip the first beat (ODE transient)


def simulate_recording(plan: RecordingPlan, p: SubjectPhysiology, cfg: SyntheticCohortConfig) -> np.ndarray:
    """[4, T] ECG (mV), PPG, RSP (a.u.), EDA (µS) of one subject in one state."""
    import neurokit2 as nk

    effect = STATE_EFFECTS[plan.state]
    fs = int(cfg.sampling_rate)
    n = cfg.n_samples
    t = np.arange(n) / fs
    seeds = plan.simulator_seeds
    noise_rng = np.random.default_rng(seeds[4])
    seconds = int(np.ceil(cfg.seconds_per_state))

    # breathing; breathmetrics builds whole breaths and fails below ~2 breaths: ask for more, then trim
    rsp = np.asarray(nk.rsp_simulate(duration=seconds + 20, sampling_rate=fs, respiratory_rate=plan.breathing_rate,
                                     noise=0, method="breathmetrics", random_state=seeds[0]), dtype=np.float64)
    if rsp.size < n:
        raise RuntimeError(f"rsp_simulate returned {rsp.size} samples, {n} needed")
    rsp = rsp[:n]
    breath = (rsp - rsp.mean()) / (rsp.std() + 1e-12)  # standardised: +1 = one std of inhalation

    # one instantaneous heart rate: mean rate x (1 + RSA x breathing + slow HRV); its integral is the beat phase
    hrv = sum(a * np.sin(2 * np.pi * f * t + ph) for f, a, ph in plan.hrv)
    rate = plan.heart_rate * (1 + p.rsa * effect.rsa * breath + hrv)
    phase = plan.beat_phase0 + np.concatenate([[0.0], np.cumsum(rate[:-1]) / (60 * fs)])

    beat = _ecg_beat(plan.heart_rate, p.ecg_waves, seeds[1])
    ecg = np.interp(phase * beat.size, np.arange(beat.size), beat, period=beat.size)
    ecg = p.ecg_gain * ecg + 0.04 * breath  # thoracic movement: respiratory baseline wander

    # PPG: a constant-rate pulse train replayed along the same phase, one pulse transit time later
    lag_beats = p.pulse_transit * effect.pulse_transit * plan.heart_rate / 60
    ppg_phase = phase - lag_beats + 1.0  # >= 0; onset of pulse k at phase k - 1 + lag
    period = 60 / plan.heart_rate
    pulse = np.asarray(nk.ppg_simulate(
        duration=int(np.ceil((ppg_phase[-1] + 2) * period)) + 1, sampling_rate=TEMPLATE_RATE,
        heart_rate=plan.heart_rate, frequency_modulation=0, ibi_randomness=0, drift=0, motion_amplitude=0,
        powerline_amplitude=0, burst_amplitude=0, random_state=seeds[2]), dtype=np.float64)
    ppg = np.interp(ppg_phase * period * TEMPLATE_RATE, np.arange(pulse.size), pulse)
    ppg = p.ppg_gain * (ppg * (1 - 0.08 * breath) + 0.1 * breath)  # respiratory amplitude and baseline changes
    if effect.motion > 0:
        ppg = nk.signal_distort(ppg, sampling_rate=fs, noise_amplitude=effect.motion, noise_frequency=0.5,
                                noise_shape="laplace", random_state=seeds[5], silent=True)

    # EDA: subject tonic level + state shift + Poisson-many SCRs of subject-specific size
    phasic = np.asarray(nk.eda_simulate(duration=seconds, sampling_rate=fs, scr_number=plan.scr_count, drift=0,
                                        noise=0, random_state=seeds[3]), dtype=np.float64)[:n] - 1.0
    eda = p.tonic_eda + effect.tonic_eda + p.scr_gain * phasic

    out = np.stack([ecg, ppg, p.rsp_gain * effect.breathing_depth * rsp, eda])
    # sensor noise relative to each channel's typical swing (not its std: a rest EDA without SCRs is flat)
    scale = np.array([p.ecg_gain, 0.4 * p.ppg_gain, 0.3 * p.rsp_gain, 0.5])[:, None]
    return out + p.noise * scale * noise_rng.standard_normal(out.shape)


def generate(cfg: SyntheticCohortConfig) -> Dataset:
    """Simulate the whole cohort (no cache)."""
    recordings = []
    times = np.arange(cfg.n_samples) / cfg.sampling_rate
    physiology: dict[str, SubjectPhysiology] = {}
    for plan in recording_plans(cfg):
        p = physiology.setdefault(plan.subject, subject_physiology(cfg.seed, plan.subject))
        values = simulate_recording(plan, p, cfg)
        recordings.append(Recording(plan.subject, plan.name, values, times.copy(),
                                    np.full(cfg.n_samples, cfg.states.index(plan.state), dtype=np.int64)))
    return _dataset(cfg, tuple(recordings))


def _dataset(cfg: SyntheticCohortConfig, recordings: tuple[Recording, ...]) -> Dataset:
    plans = {p.name: {"heart_rate_bpm": p.heart_rate, "breathing_rate_per_min": p.breathing_rate,
                      "scr_count": p.scr_count} for p in recording_plans(cfg)}
    return Dataset(
        name="synthetic-cohort", channels=CHANNELS, recordings=recordings, sampling_rate=cfg.sampling_rate,
        label_names=cfg.states,
        description=(f"neurokit2 cohort v{GENERATOR_VERSION}: {cfg.n_subjects} subjects x {len(cfg.states)} states "
                     f"({', '.join(cfg.states)}) x {cfg.seconds_per_state:g} s at {cfg.sampling_rate:g} Hz; "
                     "ECG (mV), PPG (a.u.), RSP (a.u.), EDA (µS); one recording per subject and state; "
                     "ECG and PPG share one beat phase (RSA-modulated heart rate); see docs/datasets.md"),
        metadata={"config": asdict(cfg), "generator_version": GENERATOR_VERSION, "units": dict(UNITS),
                  "recordings": plans},
    )


# -- cache ------------------------------------------------------------------------------------------
def cache_path(cfg: SyntheticCohortConfig) -> Path:
    return cache_dir() / f"synthetic-cohort-{cfg.cache_key()}.npz"


def _save(cfg: SyntheticCohortConfig, ds: Dataset, path: Path) -> None:
    arrays: dict[str, np.ndarray] = {
        "config": np.array(_config_json(cfg)),
        "subjects": np.array([r.subject for r in ds.recordings]),
        "names": np.array([r.name for r in ds.recordings]),
        "values": np.stack([r.values for r in ds.recordings]),
        "labels": np.stack([r.labels for r in ds.recordings if r.labels is not None]),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)  # atomic: readers see the old file or the whole new one, never half
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load(cfg: SyntheticCohortConfig, path: Path) -> Dataset:
    with np.load(path, allow_pickle=False) as z:
        if str(z["config"]) != _config_json(cfg):
            raise ValueError("the file was written for another config")
        values, labels = z["values"], z["labels"]
        subjects, names = z["subjects"], z["names"]
    expected = (len(recording_plans(cfg)), len(CHANNELS), cfg.n_samples)
    if values.shape != expected or values.dtype != np.float64 or labels.shape != (expected[0], expected[2]):
        raise ValueError(f"arrays of shape {values.shape}, expected {expected}")
    times = np.arange(cfg.n_samples) / cfg.sampling_rate
    recs = tuple(Recording(str(s), str(n), values[i], times.copy(), labels[i])
                 for i, (s, n) in enumerate(zip(subjects, names)))
    return _dataset(cfg, recs)


def load_synthetic_cohort(**options: object) -> Dataset:
    """The cohort for these options: read from the cache, else generated and cached."""
    cfg = config_from_options(dict(options))
    path = cache_path(cfg)
    if path.exists():
        try:
            return _load(cfg, path)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, DatasetError) as exc:
            warnings.warn(f"synthetic cohort cache {path} is unreadable ({type(exc).__name__}: {exc}); "
                          "regenerating it", stacklevel=2)
    ds = generate(cfg)
    _save(cfg, ds, path)
    return ds
