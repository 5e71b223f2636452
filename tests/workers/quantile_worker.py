"""A fake sample-path worker for the quantile round trip, run by the main environment's Python (no venv).

Forecast: ``num_samples`` random paths around the last observed value, drawn per row after seeding
(as the Moirai-MoE and Lag-Llama workers do), step by step (step k does not depend on H); the point
is their median and, when the request asks for ``levels``, the quantiles are the empirical
quantiles of the same paths (``_protocol``'s helpers, as the real workers use). Option ``native`` (a list of levels) makes it a model with fixed
quantile levels instead (Moirai 2.0, TimesFM). Option ``bad`` makes it misbehave on purpose:
``shape`` (one level too many), ``nan`` (a NaN quantile), ``missing`` (ignores ``levels``),
``undeclared`` (says nothing of quantiles at load).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "baselines" / "workers"))

import numpy as np  # noqa: E402

from _protocol import asked_levels, native_indices, sample_quantiles, serve  # noqa: E402


def load(weights, options):
    num_samples = int(options.get("num_samples", 50))
    native = options.get("native")
    bad = options.get("bad")

    def forecast(inputs, args):
        values = inputs["values"]
        b, c, _ = values.shape
        h = int(args["horizon"])
        levels = asked_levels(args)
        if levels is not None and native is not None:
            picked = native_indices(native, levels, "the fake")
        point = np.empty((b, c, h), np.float32)
        quant = None if levels is None else np.empty((b, c, h, len(levels)))
        for i in range(b):
            rng = np.random.default_rng(int(args.get("seed", 0)))  # per row: draws independent of the batch
            steps = rng.normal(size=(h, num_samples, c)).transpose(1, 2, 0)  # drawn step by step: [S, C, H]
            paths = values[i, :, -1][None, :, None] + np.cumsum(steps, axis=2)
            point[i] = np.median(paths, axis=0)
            if quant is not None:
                own = native if native is not None else levels
                q = sample_quantiles(paths, own, axis=0)  # [C, H, Q]
                quant[i] = q[..., picked] if native is not None else q
        out = {"forecast": point}
        if quant is not None and bad != "missing":
            if bad == "shape":
                quant = np.concatenate([quant, quant[..., :1]], axis=-1)
            elif bad == "nan":
                quant[0, 0, 0, 0] = np.nan
            out["quantiles"] = quant
        return out

    info = {"num_samples": num_samples}
    if bad != "undeclared":
        info["quantile_levels"] = "any" if native is None else [float(q) for q in native]
    return {"forecast": forecast}, info


if __name__ == "__main__":
    serve(load)
