"""Moirai worker: runs in the ``moirai`` environment (uni2ts 2.0.0 beside torch 2.13), never in the main one.

Two families (option ``family``):

* ``moirai-moe`` (Moirai-MoE): ``MoiraiMoEForecast`` with patch size 16 (as in uni2ts' examples),
  autoregressive over patches with sampled continuations; the point forecast is the median of
  ``num_samples`` (100) sample paths. Each sample (row) draws as if forecast on its own after
  ``torch.manual_seed(seed)``, so its draws do not depend on which other windows share the batch
  and a rerun gives the same numbers: up to ``batch`` rows (option, default 32) go through one call,
  each row's draws from its own stream (``_protocol.row_streams``; uni2ts lays the rows out behind the
  sample dimension, and its mixture's first component choice draws all samples per distribution);
  ``batch`` 1 forecasts one row per call under the global seed. Paths are always drawn for ``span``
  steps (64; a multiple of it for longer horizons) and cut to H: the random draws' shape, hence step k's forecast, does not
  depend on the horizon asked for (the harness's causal imputation relies on that).
* ``moirai2`` (Moirai 2.0): ``Moirai2Forecast`` predicts quantiles directly (no sampling); the
  point forecast is the 0.5 quantile. Rows are forecast together. Per channel (C = 1): uni2ts
  2.0.0 supports one target here (its ``predict`` says so, and its recursive path, for horizons
  beyond one pass, fails on shapes with several).

Quantiles (request arg ``levels``), from the same pass as the point: Moirai-MoE gives any level, the
empirical quantiles (numpy's linear interpolation) of the same sample paths whose median is the
point; Moirai 2.0 gives its own levels (``module.quantile_levels``, the deciles 0.1 .. 0.9), as they
come out of its quantile head (no re-sorting), and nothing else.

Moirai-MoE forecasts a sample's channels jointly (``target_dim`` = C). Unobserved context points are
passed as unobserved (``past_observed_target`` False); their values are zero and never read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _protocol import BATCHED_ROWS_TOLERANCE, asked_levels, native_indices, row_streams, sample_quantiles, serve


def load(weights: str | None, options: dict[str, Any]):
    import torch
    import uni2ts

    family = options.get("family", "moirai-moe")
    device = options.get("device", "cpu")
    seed = int(options.get("seed", 0))
    torch.manual_seed(seed)
    if family == "moirai-moe":
        from uni2ts.model.moirai_moe import MoiraiMoEForecast, MoiraiMoEModule

        module = MoiraiMoEModule.from_pretrained(weights).to(device).eval()
    elif family == "moirai2":
        from uni2ts.model.moirai2 import Moirai2Forecast, Moirai2Module

        module = Moirai2Module.from_pretrained(weights).to(device).eval()
    else:
        raise ValueError(f"unknown Moirai family {family!r} (moirai-moe or moirai2)")
    patch_size = int(options.get("patch_size", 16))
    num_samples = int(options.get("num_samples", 100))
    span = int(options.get("span", 64))
    batch = int(options.get("batch", 32))
    if batch < 1:
        raise ValueError(f"batch must be a positive number of rows per call, got {batch}")

    def layout(op: str, draws: int | None) -> int:
        """Draws lead with the sample dimension ([S, rows, ...], later [1, S, rows, ...]); the mixture's first
        component choice draws S per distribution, the distributions in row blocks."""
        return 1 if op == "multinomial" and draws is not None and draws > 1 else num_samples

    def tensors(values: np.ndarray, observed: np.ndarray):
        """[B, C, T] -> past_target, past_observed_target [B, T, C], past_is_pad [B, T]."""
        target = torch.as_tensor(np.ascontiguousarray(values.transpose(0, 2, 1)), dtype=torch.float32, device=device)
        seen = torch.as_tensor(np.ascontiguousarray(observed.transpose(0, 2, 1)), dtype=torch.bool, device=device)
        return target, seen, torch.zeros(target.shape[:2], dtype=torch.bool, device=device)

    def forecast(inputs: dict[str, np.ndarray], args: dict[str, Any]) -> dict[str, np.ndarray]:
        values, observed = inputs["values"], inputs["mask"]
        b, c, t = values.shape
        h = int(args["horizon"])
        levels = asked_levels(args)
        common = dict(prediction_length=h, target_dim=c, feat_dynamic_real_dim=0, past_feat_dynamic_real_dim=0,
                      context_length=t, module=module)
        if family == "moirai2":
            if c != 1:
                raise ValueError(f"Moirai 2.0 is run per channel: expected [B, 1, T], got {values.shape}")
            model = Moirai2Forecast(**common).to(device).eval()
            median = list(module.quantile_levels).index(0.5)
            picked = None if levels is None else native_indices(list(module.quantile_levels), levels, "Moirai 2.0")
            with torch.no_grad():
                full = model(*tensors(values, observed))  # [B, Q, H] (one target)
            out = full[:, median]
            out = out[..., None] if c == 1 else out  # [B, H, C]
            result = {"forecast": out.permute(0, 2, 1).float().cpu().numpy()}
            if picked is not None:  # [B, Q', H] -> [B, 1, H, Q']
                result["quantiles"] = full[:, picked].permute(0, 2, 1)[:, None].float().cpu().numpy()
            return result
        drawn = -(-h // span) * span
        model = MoiraiMoEForecast(**{**common, "prediction_length": drawn}, patch_size=patch_size,
                                  num_samples=num_samples).to(device).eval()
        result = np.empty((b, c, h), np.float32)
        quantiles = None if levels is None else np.empty((b, c, h, len(levels)), np.float64)
        row_seed = int(args.get("seed", seed))
        for a in range(0, b, batch):  # a row's sample draws never depend on the other rows
            g = slice(a, min(a + batch, b))
            torch.manual_seed(row_seed)
            with torch.no_grad(), row_streams(g.stop - a, row_seed, outer=layout):
                group = model(*tensors(values[g], observed[g]))  # [G, S, H] or [G, S, H, C]
            for i, samples in zip(range(a, g.stop), group):
                point = samples.median(dim=0).values
                result[i] = (point[None, :h] if c == 1 else point[:h].T).float().cpu().numpy()
                if quantiles is not None:  # the same paths: [S, H] or [S, H, C] -> [C, H, Q]
                    paths = samples.float().cpu().numpy()
                    paths = paths[:, None, :h] if c == 1 else paths[:, :h].transpose(0, 2, 1)  # [S, C, H]
                    quantiles[i] = sample_quantiles(paths, levels, axis=0)
        return {"forecast": result} if quantiles is None else {"forecast": result, "quantiles": quantiles}

    info = {"uni2ts": uni2ts.__version__, "torch": torch.__version__, "family": family,
            "point": ("median of %d sample paths (per-row seeded)" % num_samples) if family == "moirai-moe"
            else "0.5 quantile",
            "patch_size": patch_size if family == "moirai-moe" else int(module.patch_size),
            "span": span if family == "moirai-moe" else None,
            "quantile_levels": "any" if family == "moirai-moe" else [float(q) for q in module.quantile_levels],
            "quantiles": ("empirical quantiles of the same %d sample paths" % num_samples) if family == "moirai-moe"
            else "the quantile head's own levels",
            "uni2ts_install": "--no-deps beside torch 2.13 (uni2ts pins torch<2.5); see baselines/envs/moirai.txt"}
    if family == "moirai-moe":
        info["rows_per_call"] = batch
        if batch > 1:
            info["batch_tolerance"] = BATCHED_ROWS_TOLERANCE
    return {"forecast": forecast}, info


if __name__ == "__main__":
    serve(load)
