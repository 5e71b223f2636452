"""A stateless, seeded window sampler: the batch of step s is a pure function of (seed, s).

Resuming at step s therefore continues exactly.  Each step picks one dataset (a seeded
schedule shared by all ranks; by default with probability proportional to its number of window
start positions, so every window of the corpus is equally likely and a 20-second clip is not
drawn as often as a day of MIMIC; ``dataset_weighting="uniform"`` gives every dataset one share), draws the global batch of ``batch_size * world_size`` windows
of ``max_length + 1`` samples (context + next-timestamp target), and gives rank r its slice,
so the ranks together see exactly the batch that one process with the combined batch size sees.
Gap filter: a window touching a missing sample is redrawn.

Two options beyond the paper (both off by default, where the batch is exactly the paper's):
``max_target_offset`` K > 1 draws, in the full-history regime, each window's target k samples
after its context (k = 1, the paper's next timestamp, with probability ``next_step_prob``, else
uniform in 2..K), so that the decoder learns to reach any queried timestamp within K samples;
the missingness regime keeps k = 1 (its spline control would be extrapolated over k samples).
``targets_per_window`` M > 1 (with K > 1) gives each window of the full-history regime M targets,
each offset drawn as above (i.i.d.), all from the same context: the model decodes each by its own
solve from the one h_T, so one backbone pass is supervised at M timestamps instead of one.
``min_context`` > 0 draws the step's context length uniformly in [min_context, max_length] (the
paper's windows are "at most" max_length long); the context is the newest part of the window.
``max_stride`` S > 1 (issue #45) reads each step's windows at every s-th sample, s uniform in 1..S (the
largest the step's dataset allows when its recordings are short), so one recording is seen at several sampling
rates: the timestamps stay the true ones, the model sees the rate in them.
All are drawn from their own seeded streams: the dataset and regime of every step stay those of
the paper's schedule (windows are K - 1 samples longer, so their starts are drawn from a slightly
shorter range).

``generated_share`` p > 0 makes each (step, micro-batch), with probability p on its own seeded stream, a generated
step: one generator drawn from the ``generators`` mix (models/soter/training/generators.py) gives every window of
the batch, one channel each, with its own rate and true timestamps (dataset ``generated:<name>``), through the same
regime coin, context length, target offsets and missingness mask as a corpus step. Windows 4g..4g+3 of the global
batch are cut from series g (``WINDOWS_PER_SERIES``), a pure function of (seed, step, micro, g), each at its own
seeded place, so a rank generates only the series of its own slice. With p = 0 no draw is made and
every batch is the corpus's, bit for bit; with p = 1 the corpus is still opened (and needs one dataset), never read.
``augment`` (probabilities per augmentation, models/soter/training/augment.py) gives window i of the global batch
its own plan, drawn from a stream of (seed, step, micro, i): a rate change reads the raw stretch it needs (q times
the window for decimation by q; none where no recording of the step's dataset is that long), then the rate change,
scale, offset and flips the plan says, before the context and target are cut. Without it no draw is made.
A held-out sampler (``from_config(held_out=True)``, the validation batches) never generates nor augments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.soter.training.augment import AugmentPlan, apply_plan, draw_plan, parse_augment, signal_kind
from models.soter.training.augment import checked as checked_augment
from models.soter.training.config import TrainConfig
from models.soter.training.corpus import CorpusDataset, CorpusError
from models.soter.training.generators import (GENERATORS, SIGNAL_KIND, WINDOWS_PER_SERIES, generated_span, parse_mix,
                                              window_of)
from protocols.windows import stable_seed

MAX_REDRAWS = 50


@dataclass(frozen=True)
class Batch:
    values: np.ndarray  # [B, C, L + M] float32: the context, then the M targets (k samples after it each)
    times: np.ndarray  # [B, L + M] float64
    observed: np.ndarray  # [B, C, L] bool: the context mask of the regime
    missing_regime: bool
    dataset: str
    n_targets: int = 1  # M: 1 unless targets_per_window > 1 (full-history regime only)


class WindowSampler:
    def __init__(self, datasets: list[CorpusDataset], max_length: int, batch_size: int, seed: int,
                 missing_prob: float = 0.5, missing_rate: float = 0.15, rank: int = 0, world_size: int = 1,
                 dataset_weighting: str = "size", max_target_offset: int = 1, next_step_prob: float = 1.0,
                 min_context: int = 0, targets_per_window: int = 1, max_stride: int = 1,
                 generated_share: float = 0.0, generators: dict[str, float] | None = None,
                 augment: dict[str, float] | None = None) -> None:
        if max_target_offset < 1 or not 0 <= next_step_prob <= 1:
            raise ValueError("max_target_offset must be >= 1 and next_step_prob in [0, 1]")
        if targets_per_window < 1 or (targets_per_window > 1 and max_target_offset == 1):
            raise ValueError(f"targets_per_window must be >= 1, and > 1 only with max_target_offset > 1 "
                             f"(got {targets_per_window} with max_target_offset {max_target_offset})")
        if max_stride < 1:
            raise ValueError(f"max_stride must be >= 1, got {max_stride}")
        self.max_stride = max_stride
        if not 0 <= generated_share <= 1:
            raise ValueError(f"generated_share must be in [0, 1], got {generated_share}")
        mix = generators or {}
        if generated_share and (not mix or set(mix) - set(GENERATORS) or min(mix.values()) <= 0):
            raise ValueError(f"generators: positive weights of generators among {sorted(GENERATORS)} are needed with "
                             f"generated_share > 0, got {mix}")
        self.generated_share = generated_share
        self.augment = checked_augment(augment or {})
        self.generator_names = sorted(mix)
        weights = np.array([mix[k] for k in self.generator_names], dtype=float)
        self.generator_p = weights / weights.sum() if weights.size else weights
        if not 0 <= min_context <= max_length:
            raise ValueError(f"min_context must be in [0, max_length={max_length}], got {min_context}")
        self.max_length, self.max_target_offset = max_length, max_target_offset
        self.next_step_prob, self.min_context = next_step_prob, min_context
        self.targets_per_window = targets_per_window
        self.window = max_length + max_target_offset
        self.datasets = [d for d in datasets if (d.lengths >= self.window).any()]
        if not self.datasets:
            raise CorpusError(f"no corpus dataset has a recording of {self.window} samples")
        if dataset_weighting == "size":
            sizes = np.array([np.maximum(d.lengths - self.window + 1, 0).sum() for d in self.datasets], dtype=float)
            self.dataset_p = sizes / sizes.sum()
        elif dataset_weighting == "sqrt":
            sizes = np.sqrt([np.maximum(d.lengths - self.window + 1, 0).sum() for d in self.datasets])
            self.dataset_p = sizes / sizes.sum()
        elif dataset_weighting == "uniform":
            self.dataset_p = np.full(len(self.datasets), 1.0 / len(self.datasets))
        else:
            raise ValueError(f"dataset_weighting must be 'size', 'sqrt' or 'uniform', got {dataset_weighting!r}")
        self.batch_size, self.seed = batch_size, seed
        self.missing_prob, self.missing_rate = missing_prob, missing_rate
        self.rank, self.world_size = rank, world_size

    @classmethod
    def from_config(cls, datasets: list[CorpusDataset], cfg: TrainConfig, seed: int | None = None, rank: int = 0,
                    world_size: int = 1, held_out: bool = False) -> "WindowSampler":
        """The sampler a training config describes (``seed`` overrides its seed; ``held_out``: the corpus's windows
        only, never generated ones: the validation batches measure the real data)."""
        return cls(datasets, cfg.max_length, cfg.batch_size, cfg.seed if seed is None else seed, cfg.missing_prob,
                   cfg.missing_rate, rank, world_size, cfg.dataset_weighting, cfg.max_target_offset,
                   cfg.next_step_prob, cfg.min_context, cfg.targets_per_window, cfg.max_stride,
                   0.0 if held_out else cfg.generated_share, parse_mix(cfg.generators),
                   None if held_out else parse_augment(cfg.augment))

    def generator(self, step: int, micro: int = 0) -> str | None:
        """The generator of a generated step, None for a corpus step (always None with ``generated_share`` 0)."""
        if not self.generated_share:
            return None
        rng = np.random.default_rng(stable_seed(self.seed, "generated", step, micro))
        if rng.random() >= self.generated_share:
            return None
        return self.generator_names[int(rng.choice(len(self.generator_names), p=self.generator_p))]

    def missing_regime(self, step: int) -> bool:
        """The step's regime coin (the same for every micro-batch and rank, corpus or generated): missingness or not."""
        return bool(np.random.default_rng(stable_seed(self.seed, "regime", step)).random() < self.missing_prob)

    def rank_rows(self) -> slice:
        """This rank's rows of a global batch."""
        return slice(self.rank * self.batch_size, (self.rank + 1) * self.batch_size)

    def batch(self, step: int, micro: int = 0) -> Batch:
        kind = self.generator(step, micro)
        if kind is not None:
            return self._generated(kind, step, micro)
        rng = np.random.default_rng(stable_seed(self.seed, "batch", step, micro))
        ds = self.datasets[int(rng.choice(len(self.datasets), p=self.dataset_p))]
        missing = self.missing_regime(step)
        total = self.batch_size * self.world_size
        stride = self.stride(step, micro, ds)
        span = (self.window - 1) * stride + 1  # raw samples a window covers
        usable = np.maximum(ds.lengths - span + 1, 0)
        weights = usable / usable.sum()
        kinds = tuple(signal_kind(c) for c in ds.channels) or ("other",) * ds.values.shape[0]
        values, times = [], []
        for i in range(total):
            plan = self.augment_plan(step, micro, i)
            if plan is None:
                v, t = self._read(rng, ds, span, stride, usable, weights)
            else:  # the raw stretch the plan's rate change needs (none where no recording is long enough)
                if (plan.raw_length(self.window) - 1) * stride + 1 > ds.lengths.max():
                    plan = plan.without_rate_change()
                raw = (plan.raw_length(self.window) - 1) * stride + 1
                fits = np.maximum(ds.lengths - raw + 1, 0)
                v, t = self._read(rng, ds, raw, stride, fits, fits / fits.sum())
                v, t = apply_plan(plan, v, t, self.window, kinds)
            values.append(v)
            times.append(t)
        values_arr, times_arr = np.stack(values), np.stack(times)
        if self.max_target_offset > 1 or self.min_context:
            values_arr, times_arr = self._context_and_target(values_arr, times_arr, step, micro, missing)
        n_targets = 1 if missing else self.targets_per_window
        observed = np.ones(values_arr[..., :-n_targets].shape, dtype=bool)
        if missing:
            observed = rng.random(observed.shape) >= self.missing_rate
        sl = self.rank_rows()
        return Batch(values_arr[sl], times_arr[sl], observed[sl], missing, ds.name, n_targets)

    def _read(self, rng: np.random.Generator, ds: CorpusDataset, span: int, stride: int, usable: np.ndarray,
              weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One gap-free stretch of ``span`` raw samples read at ``stride``: values [C, n] float32, times [n]."""
        for _ in range(MAX_REDRAWS):
            r = int(rng.choice(len(ds.lengths), p=weights))
            a = int(ds.starts[r] + rng.integers(usable[r]))
            v = np.asarray(ds.values[:, a:a + span:stride], dtype=np.float32)
            if np.isfinite(v).all():
                return v, np.asarray(ds.times[a:a + span:stride], dtype=np.float64)
        raise CorpusError(f"{ds.name}: no gap-free window of {self.window} samples after {MAX_REDRAWS} draws")

    def augment_plan(self, step: int, micro: int, i: int) -> AugmentPlan | None:
        """Window i's augmentation (of the global batch), None without ``augment``."""
        if not self.augment:
            return None
        return draw_plan(self.augment, np.random.default_rng(stable_seed(self.seed, "augment", step, micro, i)))

    def _generated(self, kind: str, step: int, micro: int) -> Batch:
        """This rank's slice of a generated step's global batch (only its own windows are generated)."""
        missing = self.missing_regime(step)
        total = self.batch_size * self.world_size
        sl = self.rank_rows()
        per = WINDOWS_PER_SERIES
        first, last = sl.start // per * per, min(total, ((sl.stop - 1) // per + 1) * per)  # the slice's groups
        plans = {i: self.augment_plan(step, micro, i) for i in range(first, last)}
        needs = {i: self.window if plan is None else plan.raw_length(self.window) for i, plan in plans.items()}
        series: dict[int, tuple[np.ndarray, float]] = {}
        values, times = [], []
        for i in range(sl.start, sl.stop):
            g = i // per  # window i is cut from series g, long enough for every window of its group
            if g not in series:
                group = range(g * per, min(total, (g + 1) * per))
                rng = np.random.default_rng(stable_seed(self.seed, "generated-series", step, micro, g))
                series[g] = generated_span(kind, rng, max(needs[j] for j in group))
            span, rate = series[g]
            start = np.random.default_rng(stable_seed(self.seed, "generated-window", step, micro, i))
            v, t = window_of(span, rate, int(start.integers(span.size - needs[i] + 1)), needs[i])
            if plans[i] is not None:
                v, t = apply_plan(plans[i], v[None], t, self.window, (SIGNAL_KIND[kind],))
            values.append(v.reshape(1, -1))
            times.append(t)
        values, times = np.stack(values), np.stack(times)  # [B, 1, window], [B, window]
        if self.max_target_offset > 1 or self.min_context:
            values, times = self._context_and_target(values, times, step, micro, missing, sl)
        n_targets = 1 if missing else self.targets_per_window
        observed = np.ones((self.batch_size, 1, values.shape[2] - n_targets), dtype=bool)
        if missing:
            mask_rng = np.random.default_rng(stable_seed(self.seed, "generated-observed", step, micro))
            observed = mask_rng.random((total, *observed.shape[1:])) >= self.missing_rate
            observed = observed[sl]
        return Batch(values, times, observed, missing, f"generated:{kind}", n_targets)

    def stride(self, step: int, micro: int, ds: CorpusDataset) -> int:
        """The step's stride: 1 unless ``max_stride`` > 1, then uniform in 1..S, capped at what the longest
        recording of the step's dataset allows."""
        if self.max_stride == 1:
            return 1
        drawn = int(np.random.default_rng(stable_seed(self.seed, "stride", step, micro)).integers(1, self.max_stride + 1))
        longest = int(ds.lengths.max())
        return max(1, min(drawn, (longest - 1) // (self.window - 1)))

    def tokens(self, step: int, micro: int = 0) -> int:
        """B x C x L of this rank's batch at ``step``, without drawing its windows (tokens seen)."""
        if self.generator(step, micro) is not None:
            return self.batch_size * self.context_length(step, micro)  # one channel
        rng = np.random.default_rng(stable_seed(self.seed, "batch", step, micro))
        ds = self.datasets[int(rng.choice(len(self.datasets), p=self.dataset_p))]
        return self.batch_size * ds.values.shape[0] * self.context_length(step, micro)

    def context_length(self, step: int, micro: int = 0) -> int:
        """The step's context length (the same on every rank)."""
        if not self.min_context:
            return self.max_length
        rng = np.random.default_rng(stable_seed(self.seed, "context-length", step, micro))
        return int(rng.integers(self.min_context, self.max_length + 1))

    def target_offsets(self, step: int, micro: int, missing: bool) -> np.ndarray:
        """k per window of the global batch, [B] (or [B, M] with ``targets_per_window`` M > 1 in the
        full-history regime): 1 in the missingness regime, else 1 with probability ``next_step_prob``
        and uniform in 2..K otherwise."""
        total = self.batch_size * self.world_size
        if missing or self.max_target_offset == 1:
            return np.ones(total, dtype=np.int64)
        rng = np.random.default_rng(stable_seed(self.seed, "target-offset", step, micro))
        shape = total if self.targets_per_window == 1 else (total, self.targets_per_window)
        far = rng.integers(2, self.max_target_offset + 1, size=shape)
        return np.where(rng.random(shape) < self.next_step_prob, 1, far)

    def _context_and_target(self, values: np.ndarray, times: np.ndarray, step: int, micro: int,
                            missing: bool, rows: slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """[B, C, max_length + K] windows -> [B, C, L + M]: the newest L context samples, then the
        samples k after the context's last one (M = 1 but with ``targets_per_window``). ``rows``: the part of the
        global batch the windows are (a generated step's rank slice)."""
        length, top = self.context_length(step, micro), self.max_length
        k = self.target_offsets(step, micro, missing)[rows]
        k = k[:, None] if k.ndim == 1 else k  # [B, M]
        rows = np.arange(len(values))[:, None]
        target = values[rows, :, top - 1 + k].transpose(0, 2, 1)  # [B, M, C] -> [B, C, M]
        ctx = values[:, :, top - length:top]
        return (np.concatenate([ctx, target], axis=2),
                np.concatenate([times[:, top - length:top], times[rows, top - 1 + k]], axis=1))
