"""Artefacts of wearable signals, to corrupt a forecasting context beside the paper's Gaussian noise.

Why: real corruption is baseline wander, motion, mains interference, electrode pops and clipping, not white
noise.  Each kind works in the fold's normalised space on a [B, C, L] context sampled at ``fs`` Hz and has one
severity scale (docs/protocols.md, "Artefacts"; ``python -m harness artefacts`` draws one window at each level):

- additive kinds (``wander``, ``motion``, ``mains``, ``pops``): severity s = the artefact's RMS where it is
  present, in units of the channel's training-split standard deviation sigma_c (as the Gaussian noise's
  beta, whose RMS is beta * sigma_c everywhere);
- ``clip``: severity s = the share of the context's samples held at the rails (the s/2 and 1 - s/2 quantiles
  of each window's channel).

Shapes (all seeded; the draw is the same at every severity, common random numbers):
- ``wander``: three sinusoids per channel at frequencies uniform in 0.05-0.5 Hz (respiration and electrode
  drift), random phases, equal power;
- ``motion``: bursts of band-limited noise (1-10 Hz, capped below Nyquist) under a Hann window, lasting
  0.3-1 s (at most a quarter of the context), one per started 5 s of context, at the same moments on every
  channel of a window (one movement shakes every sensor), with independent content per channel; where the
  bursts fall is the placement (below);
- ``mains``: a sinusoid at 50 or 60 Hz with a random phase per channel; only where the sampling rate exceeds
  twice that frequency (a rate that cannot hold it has no such artefact: the cell is ``unavailable``);
- ``pops``: electrode pops, a jump that decays exponentially (time constant 0.1 s; a one-sample spike where
  the rate is below 10 Hz), random sign, one per started 5 s of context per channel, "present" over three
  time constants;
- ``clip``: saturation, each channel clipped to the quantiles above.

Placement of the events (``motion`` and ``pops``; wander, mains and clip cover the whole context), issue #51:
a stress test whose artefact cannot reach the context's last sample cannot touch a forecaster that reads only
that sample (last value), so the default lets every event reach the forecast origin:

- ``uniform`` (default): each event's onset is uniform over the context's samples, the last included; an event
  that runs past the last sample is cut there, and a cut motion burst is held at its peak after its rise (the
  movement is still under way at the forecast origin: its envelope does not vanish at the cut);
- ``origin``: as ``uniform``, but each window's last motion burst ends on the last sample (held at its peak
  there), and each channel's last pop jumps on it: the worst case, an artefact under way at the origin;
- ``context-interior``: each event wholly inside the context (issue #31's motion draw, byte for byte): a motion
  burst's Hann envelope is ~0 at the last sample, so last value is immune by construction.
"""

from __future__ import annotations

import numpy as np

from protocols.specs import ARTEFACT_PLACEMENTS, EVENT_ARTEFACTS

WANDER_BAND = (0.05, 0.5)  # Hz
WANDER_COMPONENTS = 3
MOTION_BAND = (1.0, 10.0)  # Hz
MOTION_SECONDS = (0.3, 1.0)
EVENT_EVERY_SECONDS = 5.0  # one motion burst or pop per started 5 s of context
POP_DECAY_SECONDS = 0.1
POP_SPAN = 3.0  # a pop is "present" over this many time constants
ADDITIVE = ("wander", "motion", "mains", "pops")
EVENTS = EVENT_ARTEFACTS  # the kinds made of events in time, which a placement places
PLACEMENTS = ARTEFACT_PLACEMENTS  # uniform (the default), origin, context-interior


class ArtefactUnavailable(ValueError):
    """The artefact cannot exist at this sampling rate (mains above Nyquist)."""


def mains_unavailable(fs: float, mains_hz: float) -> str | None:
    """Why mains interference cannot be simulated at ``fs`` Hz, or None."""
    if fs <= 2 * mains_hz:
        return (f"mains interference at {mains_hz:g} Hz needs a sampling rate above {2 * mains_hz:g} Hz "
                f"(Nyquist); this dataset is sampled at {fs:g} Hz")
    return None


def _events(duration: float) -> int:
    return max(1, int(np.ceil(duration / EVENT_EVERY_SECONDS - 1e-9)))


def wander(shape: tuple[int, int, int], fs: float, rng: np.random.Generator) -> np.ndarray:
    """Unit-RMS baseline wander [B, C, L]."""
    b, c, length = shape
    t = np.arange(length) / fs
    f = rng.uniform(*WANDER_BAND, size=(b, c, WANDER_COMPONENTS, 1))
    phase = rng.uniform(0, 2 * np.pi, size=(b, c, WANDER_COMPONENTS, 1))
    amplitude = np.sqrt(2.0 / WANDER_COMPONENTS)  # K sinusoids of power 1/K each
    return amplitude * np.sin(2 * np.pi * f * t + phase).sum(axis=2)


def mains(shape: tuple[int, int, int], fs: float, rng: np.random.Generator, mains_hz: float) -> np.ndarray:
    """Unit-RMS mains interference [B, C, L]."""
    reason = mains_unavailable(fs, mains_hz)
    if reason:
        raise ArtefactUnavailable(reason)
    b, c, length = shape
    t = np.arange(length) / fs
    phase = rng.uniform(0, 2 * np.pi, size=(b, c, 1))
    return np.sqrt(2.0) * np.sin(2 * np.pi * mains_hz * t + phase)


def _band_noise(n: int, fs: float, rng: np.random.Generator) -> np.ndarray:
    from scipy.signal import butter, sosfiltfilt

    high = min(MOTION_BAND[1], 0.45 * fs)
    low = min(MOTION_BAND[0], 0.5 * high)
    pad = 3 * int(np.ceil(fs / low))  # filter transients stay outside the burst
    noise = rng.standard_normal(n + 2 * pad)
    sos = butter(4, [low, high], btype="bandpass", fs=fs, output="sos")
    return sosfiltfilt(sos, noise)[pad:pad + n]


def _burst_envelope(n: int, held: bool) -> np.ndarray:
    """A Hann window of n samples (zero just outside); ``held``: held at its peak after it (a burst cut at the
    forecast origin keeps its amplitude there)."""
    envelope = np.hanning(n + 2)[1:-1] if n > 1 else np.ones(1)
    if held:
        peak = int(np.argmax(envelope))
        envelope[peak:] = envelope[peak]
    return envelope


def _onset(placement: str, length: int, n: int, last: bool, rng: np.random.Generator) -> int:
    """Where an event of n samples starts: see the module's placements."""
    if placement == "context-interior":
        return int(rng.integers(0, max(1, length - n + 1)))
    if placement == "origin" and last:
        return max(0, length - n)
    return int(rng.integers(0, length))


def _check_placement(placement: str) -> None:
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown artefact placement {placement!r}; known: {', '.join(PLACEMENTS)}")


def motion(shape: tuple[int, int, int], fs: float, rng: np.random.Generator,
           placement: str = "uniform") -> np.ndarray:
    """Motion bursts [B, C, L], unit RMS over each burst's whole duration (a cut burst: the duration it would
    have had), zero elsewhere; ``placement``: where the bursts fall (the module's docstring)."""
    _check_placement(placement)
    b, c, length = shape
    out = np.zeros(shape)
    longest = max(1, length // 4)
    events = _events(length / fs)
    for i in range(b):
        for e in range(events):
            n = int(np.clip(round(rng.uniform(*MOTION_SECONDS) * fs), 1, longest))
            last = e == events - 1
            start = _onset(placement, length, n, last, rng)
            shown = min(n, length - start)
            envelope = _burst_envelope(n, held=placement != "context-interior"
                                       and (shown < n or (placement == "origin" and last)))
            for j in range(c):
                burst = envelope * _band_noise(n, fs, rng)
                rms = np.sqrt(np.mean(burst ** 2))
                out[i, j, start:start + shown] += (burst / rms)[:shown] if rms > 0 else 0.0
    return out


def pops(shape: tuple[int, int, int], fs: float, rng: np.random.Generator,
         placement: str = "uniform") -> np.ndarray:
    """Electrode pops [B, C, L]: jumps decaying with POP_DECAY_SECONDS, unit RMS over POP_SPAN time constants;
    ``placement``: where they fall (``uniform`` is issue #31's draw: a pop jumps at full height wherever it
    starts, so a pop on the last sample reaches the forecast origin)."""
    _check_placement(placement)
    b, c, length = shape
    out = np.zeros(shape)
    tau = POP_DECAY_SECONDS * fs  # samples
    span = max(1, int(np.ceil(POP_SPAN * tau)))
    k = np.arange(span)
    shape_ = np.exp(-k / tau) if tau >= 1 else (k == 0).astype(float)
    shape_ = shape_ / np.sqrt(np.mean(shape_ ** 2))  # unit RMS over the pop's span
    events = _events(length / fs)
    for i in range(b):
        for j in range(c):
            for e in range(events):
                start = (length - 1 if placement == "origin" and e == events - 1
                         else _onset(placement, length, span, False, rng))
                sign = 1.0 if rng.random() < 0.5 else -1.0
                end = min(length, start + span)
                out[i, j, start:end] += sign * shape_[:end - start]
    return out


def unit_artefact(kind: str, shape: tuple[int, int, int], fs: float, rng: np.random.Generator,
                  mains_hz: float = 50.0, placement: str = "uniform") -> np.ndarray | None:
    """The level-free draw of an additive kind (scaled by severity * sigma_c); None for ``clip``.
    ``placement`` places the events of ``motion`` and ``pops`` (the other kinds cover the whole context)."""
    if kind == "wander":
        return wander(shape, fs, rng)
    if kind == "motion":
        return motion(shape, fs, rng, placement)
    if kind == "mains":
        return mains(shape, fs, rng, mains_hz)
    if kind == "pops":
        return pops(shape, fs, rng, placement)
    if kind == "clip":
        return None
    raise ValueError(f"unknown artefact kind {kind!r}")


def clip(context: np.ndarray, level: float) -> np.ndarray:
    """Each window's channels held at their level/2 and 1 - level/2 quantiles (saturation)."""
    if not 0 <= level < 1:
        raise ValueError(f"clip level must be in [0, 1), got {level}")
    lo = np.quantile(context, level / 2, axis=-1, keepdims=True)
    hi = np.quantile(context, 1 - level / 2, axis=-1, keepdims=True)
    return np.clip(context, lo, hi)


def apply_artefact(kind: str, context: np.ndarray, sigma: np.ndarray, level: float,
                   unit: np.ndarray | None) -> np.ndarray:
    """The context [B, C, L] with the artefact at ``level`` (``unit`` from :func:`unit_artefact`)."""
    if kind == "clip":
        return clip(context, level)
    if unit is None or unit.shape != context.shape:
        raise ValueError(f"an additive artefact needs its unit draw of shape {context.shape}")
    return context + level * np.asarray(sigma)[None, :, None] * unit
