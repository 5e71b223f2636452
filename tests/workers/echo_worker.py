"""A trivial worker for the protocol tests, run by the main environment's Python (no venv).

Forecast: the last observed value repeated (a valid, deterministic model). Load options make it
misbehave on purpose: ``crash`` (exits mid-request), ``bad_shape`` (one step too many), ``fail``
(raises in the named operation).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "baselines" / "workers"))

import numpy as np  # noqa: E402

from _protocol import serve  # noqa: E402


def load(weights, options):
    if options.get("fail") == "load":
        raise ValueError("cannot read the checkpoint")
    print("this print must not break the protocol")  # libraries do print

    def forecast(inputs, args):
        if options.get("crash"):
            print("worker: about to die", file=sys.stderr, flush=True)
            os._exit(3)
        if options.get("fail") == "forecast":
            raise RuntimeError("out of memory (pretend)")
        values = inputs["values"]
        h = int(args["horizon"]) + (1 if options.get("bad_shape") else 0)
        return {"forecast": np.repeat(values[:, :, -1:], h, axis=2)}

    def embed(inputs, args):
        return {"embedding": inputs["values"].mean(axis=2)}

    return {"forecast": forecast, "embed": embed}, {"echo": True, "weights": weights}


if __name__ == "__main__":
    serve(load)
