"""Does a SOTER checkpoint know where its signal is?  Held-out corpus windows, no evaluation data.

    python -m models.soter.training.diagnose --checkpoint DIR --corpus valcorpus [--context 128]

Prints, in normalised units x100: how far the readout at the last observed timestamp (a query at
``t_T``, where the decoder starts from h_T) lies from the last observed value, and the MAE of the
model's forecast k samples ahead next to last value's, for k = 1, 2-4, 5-16 and 17-64.  A model
whose readout at ``t_T`` misses ``x_T`` by more than last value misses ``x_{T+1}`` cannot beat last
value at short horizons, whatever it knows about the future (docs/soter-training.md).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from models.soter.model import SoterModel
from models.soter.training.corpus import open_corpus
from models.soter.training.sampler import WindowSampler

BUCKETS = ((1, 1), (2, 4), (5, 16), (17, 64))
QUERY_AT_LAST = 1e-6  # seconds after t_T: the decoder's dt floor (min_dt) makes this the readout of h_T


@dataclass(frozen=True)
class LevelDiagnostics:
    readout_at_last: float  # mean |readout(h_T) - x_T|
    model: dict[str, float]  # bucket "a-b" -> mean |forecast - x_{T+k}|
    last_value: dict[str, float]  # bucket -> mean |x_T - x_{T+k}|
    windows: int


def _bucket(k: int) -> str | None:
    for lo, hi in BUCKETS:
        if lo <= k <= hi:
            return f"{lo}" if lo == hi else f"{lo}-{hi}"
    return None


def level_diagnostics(model: SoterModel, corpus: Path, context: int = 128, batches: int = 24, batch_size: int = 8,
                      targets: int = 8, seed: int = 7) -> LevelDiagnostics:
    """Full-history windows of ``context`` samples, ``targets`` offsets each, uniform in 1..64."""
    k_max = BUCKETS[-1][1]
    sampler = WindowSampler(open_corpus(Path(corpus)), context, batch_size, seed, missing_prob=0.0,
                            max_target_offset=k_max, next_step_prob=1.0 / k_max, targets_per_window=targets)
    readout, errors, naive = [], {}, {}
    model = model.eval()
    with torch.no_grad():
        for i in range(batches):
            batch = sampler.batch(i)
            values = torch.as_tensor(batch.values, dtype=torch.float32)
            times = torch.as_tensor(batch.times)
            ctx, ctx_times = values[..., :-targets], times[:, :-targets]
            query = torch.cat([ctx_times[:, -1:] + QUERY_AT_LAST, times[:, -targets:]], dim=1)
            pred = model.predict_each(ctx, ctx_times, query).double()
            last = ctx[..., -1:].double()
            readout.append((pred[..., 0] - last[..., 0]).abs().mean(dim=1).numpy())
            future = values[..., -targets:].double()
            model_err = (pred[..., 1:] - future).abs().mean(dim=1).numpy()  # [B, M]: mean over channels
            naive_err = (last - future).abs().mean(dim=1).numpy()
            for k, m_err, n_err in zip(sampler.target_offsets(i, 0, False).ravel(), model_err.ravel(), naive_err.ravel()):
                name = _bucket(int(k))
                errors.setdefault(name, []).append(m_err)
                naive.setdefault(name, []).append(n_err)
    order = [_bucket(lo) for lo, _ in BUCKETS if _bucket(lo) in errors]
    return LevelDiagnostics(float(np.mean(np.concatenate(readout))),
                            {b: float(np.mean(errors[b])) for b in order},
                            {b: float(np.mean(naive[b])) for b in order},
                            batches * batch_size)


def main(argv: list[str] | None = None) -> int:
    from models.soter.io import from_pretrained

    p = argparse.ArgumentParser(prog="python -m models.soter.training.diagnose", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, nargs="+", required=True, help="SOTER checkpoint folder(s)")
    p.add_argument("--corpus", type=Path, required=True, help="a held-out corpus (build-corpus output)")
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--batches", type=int, default=24)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    for path in args.checkpoint:
        d = level_diagnostics(from_pretrained(path), args.corpus, args.context, args.batches, seed=args.seed)
        cells = "  ".join(f"k {b}: {100 * d.model[b]:.2f} vs {100 * d.last_value[b]:.2f}" for b in d.model)
        print(f"{path}: |readout(h_T) - x_T| {100 * d.readout_at_last:.2f}; MAE model vs last value (x100, "
              f"{d.windows} windows of {args.context}): {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
