"""Per-window augmentation of training windows: sampling rate, amplitude and offset, and the flips a signal allows.

A model asked to forecast a signal at any rate and level learns that from windows that show it; the corpus holds a
few rates and the MinMax levels of its datasets. Each window draws its own plan from its own seeded stream
(``AugmentPlan``), so a batch stays a pure function of (seed, step, micro-batch):

- ``decimate`` (probability p): the rate divided by q, uniform in 2..4, anti-aliased (``scipy.signal.decimate``, a
  zero-phase FIR) from q times as many raw samples; the timestamps are the kept samples' own;
- ``resample`` (probability p, exclusive with ``decimate``, so their sum is at most 1): FFT resampling
  (``scipy.signal.resample``) by a factor log-uniform in 0.5-2 (new rate / old rate) of a raw stretch with its
  endpoint line removed (so the periodic extension has no jump) and a margin cut from both ends; timestamps
  interpolated from the raw ones at the new samples' positions;
- ``scale``: each channel's window scaled about its mid-range by a factor log-uniform in 0.5-2, capped where it
  would leave [0, 1];
- ``offset``: each channel's window shifted by a uniform amount that keeps it inside [0, 1];
- ``flip``: a flip the signal allows: ECG and respiration change sign (1 - x in the corpus's MinMax units: lead
  polarity and belt or thermistor conventions differ between devices), generic statistical series (SARIMA, GP)
  change sign and reverse in time; PPG, EDA and unknown channels never flip (the pulse's upstroke and the skin
  conductance response's fast rise and slow decay, and the ECG's P-QRS-T order, have a direction in time).
Values in [0, 1] stay in [0, 1] but for the filters' few-percent ringing at sharp edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.soter.training.named_numbers import named_numbers

AUGMENTATIONS = ("decimate", "resample", "scale", "offset", "flip")
DECIMATION = (2, 4)  # q uniform in 2..4
RESAMPLE = (0.5, 2.0)  # new rate / old rate, log-uniform
SCALE = (0.5, 2.0)
MARGIN = 8  # output samples cut from each end of a resampled stretch (the FFT's and the filter's edges)
SIGN_FLIP = frozenset({"ecg", "rsp", "generic"})
TIME_REVERSAL = frozenset({"generic"})
_ECG_NAMES = frozenset({"ecg", "ekg", "i", "ii", "iii", "avr", "avl", "avf", "mlii", "mli", "mliii", "v", "v1",
                        "v2", "v3", "v4", "v5", "v6", "ml2", "ecg1", "ecg2", "lead", "vx", "vy", "vz", "mcl1"})


def signal_kind(channel: str) -> str:
    """A corpus channel's kind for the flips: "ecg", "ppg", "rsp", "eda" or "other" (never flipped)."""
    name = channel.strip().lower()
    if name in _ECG_NAMES or name.startswith(("ecg", "ekg", "lead ")):
        return "ecg"
    if name.startswith(("ppg", "pleth", "bvp")):
        return "ppg"
    if name.startswith(("rsp", "resp")):
        return "rsp"
    if name.startswith(("eda", "gsr")):
        return "eda"
    return "other"


def parse_augment(text: str) -> dict[str, float]:
    """``"decimate=0.2,scale=0.5"`` -> probabilities; "" = none. An unknown name, a probability outside [0, 1] or
    decimate + resample above 1 is a ValueError naming it."""
    return checked(named_numbers(text, "augment", AUGMENTATIONS, "probability"))


def checked(probs: dict[str, float]) -> dict[str, float]:
    """The probabilities above 0 of a mapping of augmentations (as ``parse_augment`` reads them), or a ValueError."""
    unknown = sorted(set(probs) - set(AUGMENTATIONS))
    if unknown:
        raise ValueError(f"augment: unknown augmentation(s) {unknown}, known: {list(AUGMENTATIONS)}")
    bad = {k: v for k, v in probs.items() if not 0 <= v <= 1}
    if bad:
        raise ValueError(f"augment: probabilities must be in [0, 1], got {bad}")
    if probs.get("decimate", 0.0) + probs.get("resample", 0.0) > 1:
        raise ValueError("augment: decimate and resample are exclusive per window, their probabilities must sum to "
                         f"at most 1, got {probs['decimate']} + {probs['resample']}")
    return {k: float(v) for k, v in probs.items() if v > 0}


@dataclass(frozen=True)
class AugmentPlan:
    """One window's draws: the rate change, then per channel scale and offset draws, and the flip coin."""
    decimate: int = 1  # q > 1: decimation by q
    factor: float = 1.0  # != 1: FFT resampling to factor x the rate
    scale: bool = False
    offset: bool = False
    flip: bool = False
    seed: int = 0  # the per-channel draws of scale and offset

    def raw_length(self, length: int) -> int:
        """Raw samples needed for ``length`` output samples."""
        if self.decimate > 1:
            return (length + 2 * MARGIN) * self.decimate
        if self.factor != 1.0:
            return int(np.ceil((length + 2 * MARGIN) / self.factor)) + 1
        return length

    def without_rate_change(self) -> "AugmentPlan":
        return AugmentPlan(1, 1.0, self.scale, self.offset, self.flip, self.seed)


def draw_plan(probs: dict[str, float], rng: np.random.Generator) -> AugmentPlan:
    """A window's plan; every coin is drawn whatever the probabilities, so each stays where it is in the stream."""
    u, q, log_f = rng.random(), int(rng.integers(DECIMATION[0], DECIMATION[1] + 1)), rng.uniform(*np.log(RESAMPLE))
    p_dec, p_res = probs.get("decimate", 0.0), probs.get("resample", 0.0)
    coins = rng.random(3)
    return AugmentPlan(decimate=q if u < p_dec else 1,
                       factor=float(np.exp(log_f)) if p_dec <= u < p_dec + p_res else 1.0,
                       scale=bool(coins[0] < probs.get("scale", 0.0)), offset=bool(coins[1] < probs.get("offset", 0.0)),
                       flip=bool(coins[2] < probs.get("flip", 0.0)), seed=int(rng.integers(2**31)))


def _change_rate(plan: AugmentPlan, values: np.ndarray, times: np.ndarray,
                 length: int) -> tuple[np.ndarray, np.ndarray]:
    from scipy.signal import decimate, resample

    if plan.decimate > 1:
        q = plan.decimate
        out = decimate(values.astype(np.float64), q, ftype="fir", zero_phase=True, axis=-1)
        kept = times[::q]
    else:
        m = values.shape[-1]
        n = int(round(m * plan.factor))
        ramp = np.linspace(0.0, 1.0, m)
        line = values[:, :1] + (values[:, -1:] - values[:, :1]) * ramp  # endpoints joined: no wrap-around jump
        out = resample(values.astype(np.float64) - line, n, axis=-1)
        positions = np.arange(n) * (m / n)  # output sample j sits at raw position j m / n
        out += values[:, :1] + (values[:, -1:] - values[:, :1]) * (positions / (m - 1))
        kept = np.interp(positions, np.arange(m), times)
    return out[:, MARGIN:MARGIN + length], kept[MARGIN:MARGIN + length]


def apply_plan(plan: AugmentPlan, values: np.ndarray, times: np.ndarray, length: int,
               kinds: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """values [C, plan.raw_length(length)], times [same] -> [C, length] float32 and times [length] float64;
    ``kinds`` per channel ("ecg", "generic", ...) decide the flips."""
    if plan.decimate > 1 or plan.factor != 1.0:
        values, times = _change_rate(plan, values, times, length)
    values = np.array(values[:, :length], dtype=np.float64)
    times = np.array(times[:length], dtype=np.float64)
    rng = np.random.default_rng(plan.seed)
    scales, shifts = np.exp(rng.uniform(*np.log(SCALE), len(kinds))), rng.random(len(kinds))
    for c, kind in enumerate(kinds):
        x = values[c]
        if plan.flip and kind in SIGN_FLIP:
            x = 1.0 - x
        if plan.flip and kind in TIME_REVERSAL:
            x = x[::-1]
        lo, hi = float(x.min()), float(x.max())
        if plan.scale:
            s = min(scales[c], 1.0 / (hi - lo)) if hi > lo else 1.0
            mid = 0.5 * (lo + hi)
            x = mid + s * (x - mid)
            lo, hi = mid + s * (lo - mid), mid + s * (hi - mid)
            shift = max(0.0, -lo) - max(0.0, hi - 1.0)  # back inside [0, 1] where the span fits
            x, lo, hi = x + shift, lo + shift, hi + shift
        if plan.offset and hi - lo <= 1.0:
            x = x + (-lo + shifts[c] * (1.0 - (hi - lo)))  # lo moves uniformly in [0, 1 - span]
        values[c] = x
    return values.astype(np.float32), times
