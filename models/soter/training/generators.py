"""Series generated on the fly for pre-training: physiological simulators and statistical processes.

Small forecasters catch up with large ones when they see many diverse series, most of them generated; a few
dozen recordings cannot give that. Each generator takes a seeded ``numpy`` Generator and a length ``n`` and returns
one channel of at least ``n`` samples together with the sampling rate (Hz) it drew, so a generated window carries
true timestamps at its own rate. Every draw (rate, morphology, noise, drift) comes from that Generator, and
neurokit2 gets its seed from it: a window is a pure function of its seed.

- ``ecg``: neurokit2's ``ecg_simulate(method="simple")``, heart rate 40-180 bpm; ``ecgsyn``: the dynamical model
  (McSharry et al.) with its P, Q, R, S, T wave amplitudes and widths each scaled by 0.6-1.4 (about 30x dearer);
- ``ppg``: ``ppg_simulate``, heart rate 40-180 bpm, its own drift, motion and powerline noise;
- ``rsp``: ``rsp_simulate`` (sinusoidal or breathmetrics), 6-40 breaths per minute;
- ``eda``: ``eda_simulate``, 0-1 skin conductance responses per 5 s;
- ``sarima``: a seasonal ARIMA(p<=3, d<=1, q<=2)(P<=1, D<=1, Q<=1)_s recursion, season 4-64 samples, stationary
  AR parts drawn through partial autocorrelations;
- ``gp``: a Gaussian-process mixture (KernelSynth-like): a sum or product of 1-4 kernels (RBF, periodic, linear,
  white) drawn at random, sampled by the Cholesky factor of its jittered covariance on at most ``GP_POINTS``
  points (linearly interpolated beyond), so it stays cheap.
The physiological ones draw their rate log-uniformly in 25-500 Hz and get baseline wander (and the ECG mains
interference where the rate can carry it) on top of the simulator's own noise; the statistical ones 1-250 Hz.

``generated_window`` cuts one training window from a longer generated span, MinMax-normalised over the span as the
corpus is over its dataset, so a window does not always fill [0, 1]. The sampler cuts ``WINDOWS_PER_SERIES``
windows from each span (one simulated subject or process per group of windows): a simulator's cost is mostly per
call (neurokit2's) or per simulated second (``ecgsyn``), so this divides a generated batch's cost by about as much.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable

import numpy as np

from models.soter.training.named_numbers import named_numbers

PHYSIOLOGICAL_RATES = (25.0, 500.0)
STATISTICAL_RATES = (1.0, 250.0)
GP_POINTS = 256
WINDOWS_PER_SERIES = 4  # windows the sampler cuts from one generated span
ATTEMPTS = 5  # draws of a generator's parameters before its error is raised
SPAN_FACTOR = (1.25, 3.0)  # the normalisation span, in windows: the window is a part of a longer series
DEFAULT_MIX = "ecg=0.25,ecgsyn=0.02,ppg=0.2,rsp=0.15,eda=0.1,sarima=0.13,gp=0.15"


def _neurokit():
    try:
        import neurokit2
    except ImportError as exc:  # a core dependency, but a trimmed environment may lack it
        raise ImportError("the physiological generators need neurokit2 (a soter-bench dependency: "
                          "pip install -e .)") from exc
    return neurokit2


def _quiet(call: Callable[[], object]) -> np.ndarray:
    """A neurokit2 simulation without its warnings and prints (it reports skipped modulations on stdout)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return np.asarray(call(), dtype=np.float64)


def _rate(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    """A whole rate (neurokit2's simulators take integer rates), log-uniform within ``bounds``."""
    return float(np.round(np.exp(rng.uniform(np.log(bounds[0]), np.log(bounds[1])))))


def _seconds(n: int, rate: float) -> int:
    """A simulated duration that covers ``n`` samples at ``rate`` with room to spare."""
    return int(np.ceil(n / rate)) + 2


def _wander(rng: np.random.Generator, x: np.ndarray, rate: float, mains: bool = False) -> np.ndarray:
    """Baseline wander (1-3 slow sinusoids, 0.05-0.5 Hz, up to half the signal's spread) with probability 0.7 and,
    with ``mains``, 50/60 Hz interference with probability 0.3 where the rate is above twice its frequency."""
    t = np.arange(x.size) / rate
    scale = float(np.std(x)) or 1.0
    out = x.copy()
    if rng.random() < 0.7:
        for _ in range(int(rng.integers(1, 4))):
            out += (rng.uniform(0.0, 0.5) * scale * np.sin(2 * np.pi * rng.uniform(0.05, 0.5) * t
                                                            + rng.uniform(0, 2 * np.pi)))
    line = float(rng.choice([50.0, 60.0]))
    if mains and rng.random() < 0.3 and rate > 2 * line:
        out += rng.uniform(0.0, 0.1) * scale * np.sin(2 * np.pi * line * t + rng.uniform(0, 2 * np.pi))
    return out


def _enough(x: np.ndarray, n: int, name: str) -> np.ndarray:
    if x.size < n or not np.isfinite(x[:n]).all():
        raise RuntimeError(f"generator {name}: {x.size} samples (finite: {np.isfinite(x).all()}) for {n} asked")
    return x


def ecg(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    nk, rate = _neurokit(), _rate(rng, PHYSIOLOGICAL_RATES)
    hr, noise, seed = rng.uniform(40, 180), rng.uniform(0.0, 0.1), int(rng.integers(2**31))
    x = _quiet(lambda: nk.ecg_simulate(duration=_seconds(n, rate), sampling_rate=int(rate), heart_rate=hr,
                                       noise=noise, method="simple", random_state=seed))
    return _wander(rng, _enough(x, n, "ecg"), rate, mains=True), rate


def ecgsyn(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    nk, rate = _neurokit(), _rate(rng, PHYSIOLOGICAL_RATES)
    hr, hr_std, noise = rng.uniform(40, 180), rng.uniform(0.0, 5.0), rng.uniform(0.0, 0.1)
    ai = tuple(np.array([1.2, -5.0, 30.0, -7.5, 0.75]) * rng.uniform(0.6, 1.4, 5))
    bi = tuple(np.array([0.25, 0.1, 0.1, 0.1, 0.4]) * rng.uniform(0.6, 1.4, 5))
    seed = int(rng.integers(2**31))
    _refuse_runaway_rr(nk, _seconds(n, rate), int(rate), hr, hr_std, seed)
    x = _quiet(lambda: nk.ecg_simulate(duration=_seconds(n, rate), sampling_rate=int(rate), heart_rate=hr,
                                       heart_rate_std=hr_std, noise=noise, method="ecgsyn", random_state=seed,
                                       ai=ai, bi=bi))
    return _wander(rng, _enough(x, n, "ecgsyn"), rate, mains=True), rate


MIN_RR_SECONDS = 0.2  # 300 beats per minute: an RR series below it is the degenerate case, not physiology


def _refuse_runaway_rr(nk, duration: float, rate: int, hr: float, hr_std: float, seed: int) -> None:
    """Raise (so that ``generated_span`` draws again) when ecgsyn would build an RR series that is not finite or falls
    under ``MIN_RR_SECONDS``. Why: on short spans at a high rate of beats its RR process has a handful of frequency
    bins, their spread is near zero and is scaled up to the requested std, so RR intervals go negative, and its beat
    loop then never ends (neurokit2's ``_ecg_simulate_ecgsyn``: ``i = round(tecg / dt)`` walks backwards). The check
    replays the RR process exactly as ecgsyn draws it first, from a generator of its own seed, so it changes nothing
    in any draw it lets through."""
    from neurokit2.ecg.ecg_simulate import _ecg_simulate_rrprocess
    from neurokit2.misc import check_random_state

    beats = int(np.round(duration * (hr / 60)))
    n = 2 ** (np.ceil(np.log2(beats * 60 / hr)))
    rr0 = _ecg_simulate_rrprocess(hrmean=hr, hrstd=hr_std, sfrr=1, n=n, rng=check_random_state(seed))  # ecgsyn's call
    rr = nk.signal_resample(rr0, sampling_rate=1, desired_sampling_rate=rate)
    if not np.all(np.isfinite(rr)) or float(np.min(rr)) < MIN_RR_SECONDS:
        raise ValueError(f"ecgsyn: RR process out of range (min {np.min(rr):.3g} s) at {hr:.0f} bpm over {duration} s")


def ppg(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    nk, rate = _neurokit(), _rate(rng, PHYSIOLOGICAL_RATES)
    kw = dict(heart_rate=rng.uniform(40, 180), frequency_modulation=rng.uniform(0.0, 0.4),
              ibi_randomness=rng.uniform(0.0, 0.3), drift=rng.uniform(0.0, 1.0), motion_amplitude=rng.uniform(0, 0.5),
              powerline_amplitude=rng.uniform(0.0, 0.05), burst_number=int(rng.poisson(0.5)),
              burst_amplitude=rng.uniform(0.5, 2.0), random_state=int(rng.integers(2**31)))
    x = _quiet(lambda: nk.ppg_simulate(duration=_seconds(n, rate), sampling_rate=int(rate), **kw))
    return _enough(x, n, "ppg"), rate


def rsp(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    nk, rate = _neurokit(), _rate(rng, PHYSIOLOGICAL_RATES)
    br, noise = rng.uniform(6, 40), rng.uniform(0.0, 0.2)
    method, seed = str(rng.choice(["sinusoidal", "breathmetrics"])), int(rng.integers(2**31))
    # breathmetrics needs a few breaths and may return half the duration asked: ask for twice, and 4 breaths more
    seconds = _seconds(n, rate) if method == "sinusoidal" else 2 * _seconds(n, rate) + int(np.ceil(240 / br))
    x = _quiet(lambda: nk.rsp_simulate(duration=seconds, sampling_rate=int(rate), respiratory_rate=br,
                                       noise=noise, method=method, random_state=seed))
    return _wander(rng, _enough(x, n, "rsp"), rate), rate


def eda(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    nk, rate = _neurokit(), _rate(rng, PHYSIOLOGICAL_RATES)
    seconds = _seconds(n, rate)
    scr = int(rng.poisson(rng.uniform(0.0, 0.2) * seconds))
    drift, noise, seed = rng.uniform(-0.05, 0.05), rng.uniform(0.0, 0.05), int(rng.integers(2**31))
    x = _quiet(lambda: nk.eda_simulate(duration=seconds, sampling_rate=int(rate), scr_number=scr, drift=drift,
                                       noise=noise, random_state=seed))
    return _wander(rng, _enough(x, n, "eda"), rate), rate


def _stationary_ar(rng: np.random.Generator, order: int) -> np.ndarray:
    """AR coefficients phi_1..phi_p of a stationary process: partial autocorrelations in (-0.9, 0.9) through
    the Durbin-Levinson recursion."""
    phi = np.zeros(0)
    for k in range(order):
        r = rng.uniform(-0.9, 0.9)
        phi = np.concatenate([phi - r * phi[::-1], [r]]) if k else np.array([r])
    return phi


def sarima(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    from scipy.signal import lfilter

    rate = _rate(rng, STATISTICAL_RATES)
    season = int(rng.integers(4, 65))
    ar = np.concatenate([[1.0], -_stationary_ar(rng, int(rng.integers(0, 4)))])
    sar = np.zeros(season + 1)
    sar[0], sar[season] = 1.0, -rng.uniform(-0.9, 0.9) if rng.random() < 0.6 else 0.0
    ma = np.concatenate([[1.0], rng.uniform(-0.8, 0.8, int(rng.integers(0, 3)))])
    sma = np.zeros(season + 1)
    sma[0], sma[season] = 1.0, rng.uniform(-0.8, 0.8) if rng.random() < 0.4 else 0.0
    burn = 4 * season + 100
    e = rng.standard_normal(n + burn)
    x = lfilter(np.convolve(ma, sma), np.convolve(ar, sar), e)[burn:]
    if rng.random() < 0.3:  # seasonal integration (D = 1): x_t += x_{t-s}
        x = lfilter([1.0], np.concatenate([[1.0], np.zeros(season - 1), [-1.0]]), x)
    if rng.random() < 0.3:  # d = 1
        x = np.cumsum(x)
    return x, rate


def _kernel(rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
    """One covariance of the bank over times in [0, 1]: RBF, periodic, linear or white."""
    d = t[:, None] - t[None, :]
    kind = rng.choice(["rbf", "periodic", "linear", "white"], p=[0.35, 0.35, 0.2, 0.1])
    if kind == "rbf":
        return np.exp(-0.5 * (d / np.exp(rng.uniform(np.log(0.01), np.log(1.0)))) ** 2)
    if kind == "periodic":
        period, length = np.exp(rng.uniform(np.log(0.01), np.log(0.5))), rng.uniform(0.3, 2.0)
        return np.exp(-2.0 * np.sin(np.pi * np.abs(d) / period) ** 2 / length**2)
    if kind == "linear":
        c = rng.uniform(-0.5, 1.5)
        return (t[:, None] - c) * (t[None, :] - c) + rng.uniform(0.0, 0.5)
    return np.eye(t.size) * rng.uniform(0.01, 0.2)


def gp(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    rate = _rate(rng, STATISTICAL_RATES)
    m = min(n, GP_POINTS)
    t = np.linspace(0.0, 1.0, m)
    cov = _kernel(rng, t)
    for _ in range(int(rng.integers(0, 4))):
        other = _kernel(rng, t)
        cov = cov + other if rng.random() < 0.5 else cov * other
    z = rng.standard_normal(m)
    jitter = 1e-6 * max(float(np.mean(np.diag(cov))), 1e-12)
    for _ in range(6):
        try:
            x = np.linalg.cholesky(cov + jitter * np.eye(m)) @ z
            break
        except np.linalg.LinAlgError:
            jitter *= 10.0
    else:
        x = z  # never reached with a jitter of 1e-0 x the mean variance; white noise rather than a crash
    if n > m:
        x = np.interp(np.linspace(0.0, 1.0, n), t, x)
    return x, rate


GENERATORS: dict[str, Callable[[np.random.Generator, int], tuple[np.ndarray, float]]] = {
    "ecg": ecg, "ecgsyn": ecgsyn, "ppg": ppg, "rsp": rsp, "eda": eda, "sarima": sarima, "gp": gp}
# the signal each generator simulates (for the flips augmentation may apply); the statistical ones are "generic"
SIGNAL_KIND = {"ecg": "ecg", "ecgsyn": "ecg", "ppg": "ppg", "rsp": "rsp", "eda": "eda", "sarima": "generic",
               "gp": "generic"}


def parse_mix(text: str) -> dict[str, float]:
    """``"ecg=0.3,gp=0.7"`` -> normalised weights; a name not in GENERATORS, a negative or unreadable weight, or no
    positive weight is a ValueError naming it."""
    weights = named_numbers(text, "generators", GENERATORS, "weight")
    bad = {k: v for k, v in weights.items() if not np.isfinite(v) or v < 0}
    if bad:
        raise ValueError(f"generators: weights must be finite numbers >= 0, got {bad}")
    total = sum(weights.values())
    if total <= 0:
        raise ValueError(f"generators: no positive weight in {text!r}")
    return {k: v / total for k, v in weights.items() if v > 0}


def minmax(x: np.ndarray) -> np.ndarray:
    """[0, 1] over ``x`` (a constant series -> 0, as the corpus writer maps a flat channel)."""
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo if hi > lo else 1.0)


def generated_span(kind: str, rng: np.random.Generator, length: int) -> tuple[np.ndarray, float]:
    """A MinMax-normalised generated span of ``SPAN_FACTOR`` x ``length`` samples (at least ``length``) and its
    rate."""
    n = max(length, int(np.ceil(length * rng.uniform(*SPAN_FACTOR))))
    for attempt in range(ATTEMPTS):
        try:
            x, rate = GENERATORS[kind](rng, n)
            break
        except Exception:  # neurokit2 refuses a few corners of the drawn ranges: draw again from the same stream
            if attempt == ATTEMPTS - 1:
                raise
    return minmax(np.asarray(x[:n], dtype=np.float64)), rate


def window_of(span: np.ndarray, rate: float, start: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """``length`` samples of a normalised span from ``start``: values float32 and timestamps (s) at its rate."""
    return (span[start:start + length].astype(np.float32),
            (start + np.arange(length, dtype=np.float64)) / rate)


def generated_window(kind: str, seed: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """One window of ``length`` samples: values [length] float32 in [0, 1] (normalised over a longer span) and
    its timestamps [length] float64 in seconds at the generator's rate."""
    rng = np.random.default_rng(seed)
    span, rate = generated_span(kind, rng, length)
    return window_of(span, rate, int(rng.integers(span.size - length + 1)), length)
