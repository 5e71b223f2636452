from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["SOTER_BENCH_PLUGINS"] = "tests.plugin_models"

from protocols.data import Dataset, Recording  # noqa: E402


def make_dataset(n_subjects: int = 4, n_samples: int = 400, channels: tuple[str, ...] = ("a", "b"),
                 rate: float = 10.0, seed: int = 0, name: str = "toy") -> Dataset:
    """Small deterministic multichannel dataset: per-subject offset and frequency."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_samples) / rate
    recs = []
    for s in range(n_subjects):
        freq = 0.5 + 0.1 * s
        vals = np.stack([np.sin(2 * np.pi * freq * t + k) * (1 + s) + s + 0.05 * rng.standard_normal(n_samples)
                         for k in range(len(channels))])
        labels = (np.arange(n_samples) * 2 // n_samples).astype(np.int64)
        recs.append(Recording(subject=f"S{s:02d}", name=f"S{s:02d}_r0", values=vals, timestamps=t.copy(),
                              labels=labels))
    return Dataset(name=name, channels=channels, recordings=tuple(recs), sampling_rate=rate,
                   label_names=("first", "second"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SOTER_BENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
