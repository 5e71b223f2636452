"""Why SOTER's causal imputation diverges inside contiguous gaps (issue #31): its spline control, extrapolated.

Usage: OMP_NUM_THREADS=1 python benchmarks/soter_gap_diagnosis.py [--subjects S01 S02] [--rate 25]
       [--burst-seconds 0.5] [--dataset synthetic-cohort] [--models soter soter-anchored]

For each subject (the LOSO fold that tests it) it draws exactly the segments, mask and queries of
``python -m harness run imputation --mask contiguous --burst-seconds B --segment-length 128 --seeds 0
--rates R --max-windows-per-subject 2`` (``protocols.imputation.build_task``, the same seeded draw) and
imputes them through the harness's own path (``impute_queries``: the causal prefix, its mask, the
zero fill, the adapter's CDE regime).  Each query is scored three ways, changing only the control z(t)
that the decoder reads for t beyond a channel's last observation in the prefix (the adapter's
``control_beyond``, docs/soter.md):

- ``extrapolate``: the model as shipped and as the authors' code does it: the natural cubic spline of the
  observed prefix, its last cubic piece extended (``models.soter.spline``);
- ``hold``: z held at the last observed value (the spline clamped to its last knot);
- ``zero``: z = 0 there (the paper's "no control beyond the observation span", read per channel).

Errors are grouped by how many samples the query lies after its channel's last observation, beside
the size of the extrapolated control at the query time and the error of carrying the last value
forward.  Nothing is assumed: every number is measured on the model's outputs.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from protocols.datasets import load_dataset
from protocols.imputation import build_task, impute_queries
from protocols.specs import ImputationSpec, MaskSpec
from protocols.splits import get_fold

BINS = ((1, 1), (2, 4), (5, 16), (17, 32), (33, 64), (65, 10_000))
VARIANTS = ("extrapolate", "hold", "zero")


def gaps_and_controls(task) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per scored (query, channel): samples since the channel's last observation, |z| of the extrapolated
    spline at the query time (data units), the truth, the last observed value, and the (query, channel) index."""
    from models.soter.spline import NaturalCubicSpline

    since, zabs, truth, last, index = [], [], [], [], []
    for q, (b, i) in enumerate(task.queries):
        for c in np.flatnonzero(~task.observed[b, :, i]):
            obs = task.observed[b, c, :i]
            k = np.flatnonzero(obs)[-1]
            spline = NaturalCubicSpline(torch.as_tensor(task.times[b, :i])[None],
                                        torch.as_tensor(task.values[b, c, :i] * obs)[None], torch.as_tensor(obs)[None])
            since.append(i - k)
            zabs.append(abs(float(spline.evaluate(torch.as_tensor(task.times[b, i:i + 1], dtype=torch.float64)))))
            truth.append(task.values[b, c, i])
            last.append(task.values[b, c, k])
            index.append((q, c))
    return np.array(since), np.array(zabs), np.array(truth), np.array(last), np.array(index).reshape(-1, 2)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", default="synthetic-cohort")
    p.add_argument("--data-root", default=None)
    p.add_argument("--subjects", nargs="*", default=None, help="default: every subject")
    p.add_argument("--rate", type=float, default=25.0, help="missing rate in percent")
    p.add_argument("--burst-seconds", type=float, default=0.5)
    p.add_argument("--mask", default="contiguous", choices=("contiguous", "points"))
    p.add_argument("--models", nargs="+", default=["soter", "soter-anchored"])
    args = p.parse_args()
    torch.set_num_threads(1)
    from models.registry import load_model

    dataset = load_dataset(args.dataset, data_root=args.data_root)
    mask = MaskSpec(kind=args.mask, burst_seconds=args.burst_seconds) if args.mask == "contiguous" else MaskSpec()
    spec = ImputationSpec(rates=(args.rate / 100,), length=128, max_windows_per_subject=2, mask=mask)
    subjects = args.subjects or list(dict.fromkeys(r.subject for r in dataset.recordings))
    models = {(name, variant): load_model(name, control_beyond=variant) for name in args.models for variant in VARIANTS}
    since, zabs, errors = [], [], {"locf": []}
    for subject in subjects:
        task, _ = build_task(dataset, get_fold(dataset, subject), spec, args.rate / 100, seed=0)
        s, z, truth, last, index = gaps_and_controls(task)
        since.append(s)
        zabs.append(z)
        errors["locf"].append(last - truth)
        for (name, variant), adapter in models.items():
            pred = impute_queries(adapter, task)
            errors.setdefault(f"{name} {variant}", []).append(pred[index[:, 0], index[:, 1]] - truth)
        print(f"{subject}: {len(s)} scored entries", flush=True)
    since, zabs = np.concatenate(since), np.concatenate(zabs)
    err = {k: np.concatenate(v) for k, v in errors.items()}
    print(f"\n{args.dataset}, {args.mask} mask, {args.rate:g} % missing"
          + (f", gaps {args.burst_seconds:g} s" if args.mask == "contiguous" else "")
          + f", subjects {' '.join(subjects)}: RMSE x100 of the scored entries by samples since the channel's "
            "last observation")
    names = list(err)
    print("| samples since last observation | entries | median abs(z) at the query | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for lo, hi in (*BINS, (1, 10_000)):
        sel = (since >= lo) & (since <= hi)
        if not sel.any():
            continue
        label = "all" if (lo, hi) == (1, 10_000) else (f"{lo}" if lo == hi else f"{lo}-{hi}" if hi < 10_000 else f">= {lo}")
        cells = [f"{100 * np.sqrt(np.mean(err[n][sel] ** 2)):.2f}" for n in names]
        print(f"| {label} | {int(sel.sum())} | {np.median(zabs[sel]):.3g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
