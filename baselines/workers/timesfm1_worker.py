"""TimesFM 1.0 / 2.0 worker: runs in the ``timesfm1`` environment (timesfm 1.3.0), never in the main one.

The checkpoint is the released ``torch_model.ckpt`` (a state dict of
``timesfm.pytorch_patched_decoder.PatchedTimeSeriesDecoder``), loaded by timesfm's own
``TimesFmTorch`` from a local file (``TimesFmCheckpoint(path=...)``; a hub id is first fetched with
``huggingface_hub.snapshot_download``, which the harness allows only when the user asked for it). Option ``version``
("1.0" or "2.0") gives what the state dict cannot tell: the context length (512 / 2048) and whether
the model adds positional embeddings (1.0 yes, 2.0 no), as on the model cards. The layer count, the
model width and the number of heads are read from the state dict's shapes.

Per channel ([B, 1, T] in). The point forecast is the model's **mean head** (``point_forecast_mode=
"mean"``; timesfm 1.3's default would be the 0.5-quantile head), in frequency class 0 (high), with
timesfm's defaults otherwise (``normalize=False``: the model normalises each context itself).
Quantiles (request arg ``levels``): the model's quantile head, timesfm 1.3's ``DEFAULT_QUANTILES``
(the deciles 0.1 .. 0.9; ``forecast`` returns [mean, q0.1, ..., q0.9] per step), from the same call as
the mean; other levels are an error. Beyond the first block they are conditional on the mean
appended to the context (as timesfm's own decoding beyond one patch).
Forecasts are made in fixed blocks of one output patch (128 steps): each call asks timesfm for
exactly 128 steps and longer horizons are rolled out block by block, each block's mean appended to
the context -- what timesfm's own decoding does beyond one patch, but with the block fixed, so step
k's forecast never depends on the horizon asked for. A context longer than ``context_len`` keeps its
latest steps; a shorter one is left-padded by timesfm (padding marked, never attended). Unobserved
context points are passed as NaN, which timesfm fills by linear interpolation (leading ones dropped).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from _protocol import asked_levels, native_indices, serve

VERSIONS = {"1.0": {"context_len": 512, "use_positional_embedding": True},
            "2.0": {"context_len": 2048, "use_positional_embedding": False}}
OUTPUT_PATCH = 128


def load(weights: str | None, options: dict[str, Any]):
    import os
    from importlib.metadata import version as dist_version

    import torch
    import timesfm

    if not weights:
        raise ValueError("TimesFM needs a weights directory holding torch_model.ckpt (or a hub id)")
    if not os.path.exists(weights):  # a hub id (the harness passes one only when downloads are allowed)
        from huggingface_hub import snapshot_download

        weights = snapshot_download(weights)
    ckpt = weights if weights.endswith(".ckpt") else os.path.join(weights, "torch_model.ckpt")
    if not os.path.isfile(ckpt):
        raise FileNotFoundError(f"no torch_model.ckpt in {weights}")
    name = str(options.get("version", "1.0"))
    if name not in VERSIONS:
        raise ValueError(f"unknown TimesFM version {name!r} (1.0 or 2.0)")
    torch.manual_seed(int(options.get("seed", 0)))
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    layers = {int(m.group(1)) for k in state if (m := re.match(r"stacked_transformer\.layers\.(\d+)\.", k))}
    model_dims = int(state["input_ff_layer.output_layer.weight"].shape[0])
    head_dim = int(state["stacked_transformer.layers.0.self_attn.scaling"].shape[0])
    input_patch = int(state["input_ff_layer.hidden_layer.0.weight"].shape[1]) // 2  # values and padding
    context_len = int(options.get("context_len", VERSIONS[name]["context_len"]))
    hparams = timesfm.TimesFmHparams(
        context_len=context_len, horizon_len=OUTPUT_PATCH, input_patch_len=input_patch, output_patch_len=OUTPUT_PATCH,
        num_layers=len(layers), num_heads=model_dims // head_dim, model_dims=model_dims,
        per_core_batch_size=int(options.get("batch_size", 32)),
        backend="gpu" if str(options.get("device", "cpu")).startswith("cuda") else "cpu",
        use_positional_embedding=VERSIONS[name]["use_positional_embedding"], point_forecast_mode="mean")
    model = timesfm.TimesFm(hparams=hparams, checkpoint=timesfm.TimesFmCheckpoint(path=ckpt))
    if not type(model).__name__ == "TimesFmTorch":
        raise RuntimeError(f"expected timesfm's PyTorch class, got {type(model).__name__}")

    def forecast(inputs: dict[str, np.ndarray], args: dict[str, Any]) -> dict[str, np.ndarray]:
        if inputs["values"].shape[1] != 1:
            raise ValueError(f"TimesFM is per channel: expected [B, 1, T], got {inputs['values'].shape}")
        values = np.where(inputs["mask"][:, 0], inputs["values"][:, 0], np.nan).astype(np.float64)
        if not np.isfinite(values).any(axis=1).all():
            raise ValueError("a context with no observed value cannot be forecast")
        levels = asked_levels(args)
        picked = None if levels is None else native_indices(list(model.quantiles), levels, "TimesFM")
        h, blocks, quantile_blocks = int(args["horizon"]), [], []
        while sum(b.shape[1] for b in blocks) < h:
            mean, full = model.forecast(list(values), freq=[0] * len(values))
            block = np.asarray(mean, dtype=np.float64)[:, :OUTPUT_PATCH]
            blocks.append(block)
            if picked is not None:  # full: [B, horizon, 1 + Q] = the mean, then the model's quantiles
                full = np.asarray(full, dtype=np.float64)[:, :OUTPUT_PATCH, 1:]
                if full.shape[2] != len(model.quantiles):
                    raise ValueError(f"timesfm returned {full.shape[2]} quantiles, expected {len(model.quantiles)}")
                quantile_blocks.append(full[:, :, picked])
            values = np.concatenate([values, block], axis=1)
        result = {"forecast": np.concatenate(blocks, axis=1)[:, None, :h].astype(np.float32)}
        if picked is not None:
            result["quantiles"] = np.concatenate(quantile_blocks, axis=1)[:, None, :h]  # [B, 1, H, Q]
        return result

    info = {"timesfm": dist_version("timesfm"), "torch": torch.__version__, "version": name,
            "context_len": context_len, "num_layers": len(layers), "model_dims": model_dims,
            "point": "mean head (point_forecast_mode='mean'), frequency class 0",
            "rollout": f"fixed {OUTPUT_PATCH}-step blocks, each appended to the context",
            "quantile_levels": [float(q) for q in model.quantiles], "quantiles": "the quantile head (same call)"}
    return {"forecast": forecast}, info


if __name__ == "__main__":
    serve(load)
