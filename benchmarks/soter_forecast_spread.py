"""What SOTER's 30 s -> 20 s forecasts look like (docs/stress-tests.md, "Heart and breathing rate"): their spread
per channel over spans of the horizon, beside the truth's.

Usage: OMP_NUM_THREADS=1 python benchmarks/soter_forecast_spread.py FOLDER [--subject S03] [--models soter soter-anchored]

FOLDER: a user dataset folder at 64 Hz (the docs' three-subject cohort). The subject's first recording is scaled
by its LOSO fold's MinMax scaler (``protocols.scaling.fit_fold_scaler``, as the protocols scale it); the first
30 s are the context, the next 20 s the horizon, forecast through the harness's interface. A rate detector
needs beats of a sane size: a forecast whose spread collapses or explodes has none.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from models.registry import load_model
from protocols import interface
from protocols.datasets import load_dataset
from protocols.interface import SeriesBatch
from protocols.scaling import fit_fold_scaler
from protocols.splits import get_fold

SPANS = {"0-0.5 s": (0.0, 0.5), "0.5-1 s": (0.5, 1.0), "1-5 s": (1.0, 5.0), "5-20 s": (5.0, 20.0)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--subject", default="S03")
    p.add_argument("--models", nargs="+", default=["soter", "soter-anchored"])
    p.add_argument("--context", type=float, default=30.0)
    p.add_argument("--horizon", type=float, default=20.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    ds = load_dataset(args.folder)
    rec = next(r for r in ds.recordings if r.subject == args.subject)
    x = fit_fold_scaler(ds, get_fold(ds, args.subject)).transform(rec.values[None])[0]
    fs = ds.sampling_rate
    ctx, hor = int(round(args.context * fs)), int(round(args.horizon * fs))
    batch = SeriesBatch(x[None, :, :ctx], rec.timestamps[None, :ctx])
    rows = {"truth": x[:, ctx:ctx + hor]}
    for name in args.models:
        rows[name] = interface.forecast(load_model(name, seed=0), batch, rec.timestamps[None, ctx:ctx + hor])[0]
    print(f"{ds.name}, {args.subject} ({rec.timestamps[0]:g} s ...), {args.context:g} s -> {args.horizon:g} s: "
          "standard deviation over each span of the horizon (normalised units)")
    print("| series | channel | " + " | ".join(SPANS) + " |")
    print("|---|---|" + "---|" * len(SPANS))
    for name, values in rows.items():
        for c, channel in enumerate(ds.channels):
            cells = [f"{np.std(values[c, int(a * fs):int(b * fs)]):.3g}" for a, b in SPANS.values()]
            print(f"| {name} | {channel} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
