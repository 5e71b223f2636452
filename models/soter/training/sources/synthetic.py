"""The offline synthetic stream: the embedded cohort's simulators with other seeds, made varied.

Every (rate, seed) group is its own corpus dataset: the cohort generator at that rate (seeds from
1000 on, so no subject coincides with the evaluation cohort's seed-0 subjects), then per recording
a random gain and offset per channel, extra sensor noise, artefacts (spikes and baseline steps)
and, in every second group, irregular sampling (a share of samples dropped, the remaining
timestamps jittered by up to 30 % of the sampling period, so time stays strictly increasing).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from models.soter.training.corpus import synthetic_stream
from models.soter.training.sources import SourceRecording
from protocols.windows import stable_seed

DEFAULT_RATES = (32.0, 64.0, 128.0, 250.0)


def vary(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Gain, offset, noise and artefacts, channel by channel."""
    c, n = values.shape
    scale = np.nanstd(values, axis=1, keepdims=True) + 1e-9
    out = values * rng.uniform(0.5, 2.0, (c, 1)) + rng.normal(0.0, 1.0, (c, 1)) * scale
    out = out + rng.normal(0.0, 1.0, (c, n)) * rng.uniform(0.0, 0.1, (c, 1)) * scale
    for ch in range(c):
        for _ in range(rng.poisson(n / 2000)):  # spikes: a few samples far off
            a = int(rng.integers(n))
            out[ch, a:a + int(rng.integers(1, 4))] += rng.choice([-1, 1]) * rng.uniform(3, 8) * scale[ch, 0]
        for _ in range(rng.poisson(n / 8000)):  # baseline steps (electrode movement)
            out[ch, int(rng.integers(n)):] += rng.normal(0.0, 1.0) * scale[ch, 0]
    return out


def irregular(times: np.ndarray, values: np.ndarray, rng: np.random.Generator,
              drop: float) -> tuple[np.ndarray, np.ndarray]:
    keep = np.flatnonzero(rng.random(times.size) >= drop)
    period = float(np.median(np.diff(times)))
    jitter = rng.uniform(-0.3, 0.3, keep.size) * period
    return times[keep] + jitter, values[:, keep]


def read(n_subjects: int = 20, seconds_per_state: float = 60.0, seed: int = 1000,
         rates: tuple[float, ...] = DEFAULT_RATES) -> Iterator[SourceRecording]:
    per_group = max(2, n_subjects // len(rates))
    for k, rate in enumerate(rates):
        group_seed = seed + k
        ds = synthetic_stream(per_group, seconds_per_state, group_seed, rate)
        rng = np.random.default_rng(stable_seed(group_seed, "vary"))
        drop = 0.2 if k % 2 else 0.0
        kind = "irregular" if drop else "regular"
        for r in ds.recordings:
            values = vary(r.values, rng)
            times = r.timestamps
            if drop:
                times, values = irregular(times, values, rng, drop)
            yield SourceRecording(f"synthetic-stream-{group_seed}[{','.join(ds.channels)}@{rate:g}Hz,{kind}]",
                                  ds.channels, f"seed{group_seed}-{r.subject}", r.name, [(values, times)],
                                  "neurokit2 simulators, seeds >= 1000 (this repository)")
