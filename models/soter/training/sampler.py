"""A stateless, seeded window sampler: the batch of step s is a pure function of (seed, s).

Resuming at step s therefore continues exactly.  Each step picks one dataset (a seeded
schedule shared by all ranks; by default with probability proportional to its number of window
start positions, so every window of the corpus is equally likely and a 20-second clip is not
drawn as often as a day of MIMIC; ``dataset_weighting="uniform"`` gives every dataset one share), draws the global batch of ``batch_size * world_size`` windows
of ``max_length + 1`` samples (context + next-timestamp target), and gives rank r its slice,
so the ranks together see exactly the batch that one process with the combined batch size sees.
Gap filter: a window touching a missing sample is redrawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.soter.training.corpus import CorpusDataset, CorpusError
from protocols.windows import stable_seed

MAX_REDRAWS = 50


@dataclass(frozen=True)
class Batch:
    values: np.ndarray  # [B, C, L + 1] float32
    times: np.ndarray  # [B, L + 1] float64
    observed: np.ndarray  # [B, C, L] bool: the context mask of the regime
    missing_regime: bool
    dataset: str


class WindowSampler:
    def __init__(self, datasets: list[CorpusDataset], max_length: int, batch_size: int, seed: int,
                 missing_prob: float = 0.5, missing_rate: float = 0.15, rank: int = 0, world_size: int = 1,
                 dataset_weighting: str = "size") -> None:
        self.window = max_length + 1
        self.datasets = [d for d in datasets if (d.lengths >= self.window).any()]
        if not self.datasets:
            raise CorpusError(f"no corpus dataset has a recording of {self.window} samples")
        if dataset_weighting == "size":
            sizes = np.array([np.maximum(d.lengths - self.window + 1, 0).sum() for d in self.datasets], dtype=float)
            self.dataset_p = sizes / sizes.sum()
        elif dataset_weighting == "uniform":
            self.dataset_p = np.full(len(self.datasets), 1.0 / len(self.datasets))
        else:
            raise ValueError(f"dataset_weighting must be 'size' or 'uniform', got {dataset_weighting!r}")
        self.batch_size, self.seed = batch_size, seed
        self.missing_prob, self.missing_rate = missing_prob, missing_rate
        self.rank, self.world_size = rank, world_size

    def batch(self, step: int, micro: int = 0) -> Batch:
        rng = np.random.default_rng(stable_seed(self.seed, "batch", step, micro))
        ds = self.datasets[int(rng.choice(len(self.datasets), p=self.dataset_p))]
        missing = bool(np.random.default_rng(stable_seed(self.seed, "regime", step)).random() < self.missing_prob)
        total = self.batch_size * self.world_size
        usable = np.maximum(ds.lengths - self.window + 1, 0)
        weights = usable / usable.sum()
        values, times = [], []
        for _ in range(total):
            for _ in range(MAX_REDRAWS):
                r = int(rng.choice(len(ds.lengths), p=weights))
                a = int(ds.starts[r] + rng.integers(usable[r]))
                v = np.asarray(ds.values[:, a:a + self.window], dtype=np.float32)
                if np.isfinite(v).all():
                    break
            else:
                raise CorpusError(f"{ds.name}: no gap-free window of {self.window} samples after {MAX_REDRAWS} draws")
            values.append(v)
            times.append(np.asarray(ds.times[a:a + self.window], dtype=np.float64))
        values_arr, times_arr = np.stack(values), np.stack(times)
        observed = np.ones(values_arr[..., :-1].shape, dtype=bool)
        if missing:
            observed = rng.random(observed.shape) >= self.missing_rate
        sl = slice(self.rank * self.batch_size, (self.rank + 1) * self.batch_size)
        return Batch(values_arr[sl], times_arr[sl], observed[sl], missing, ds.name)
