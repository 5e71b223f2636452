"""TTM worker: runs in the ``ttm`` environment (granite-tsfm 0.3.2), never in the main one.

The checkpoint is loaded with granite-tsfm's ``TinyTimeMixerForPrediction.from_pretrained`` (the
root of ibm-granite/granite-timeseries-ttm-r1 is the 512-context, 96-step model). Per channel
([B, 1, T] in, as ``past_values`` [B, context_length, 1]); the point forecast is the model's
``prediction_outputs`` (TTM is a point forecaster trained with MSE; its own std scaling is undone
inside the model).

Context: TTM takes exactly ``context_length`` steps. A longer context keeps its latest steps; a
shorter one is left-padded with zeros (as granite-tsfm's own ``enable_padding`` does), and the padding
is marked unobserved in ``past_observed_mask`` so the scaler's mean and std are the context's own.
Unobserved context points are zero and unobserved in the same way.

Horizon: the model forecasts ``prediction_length`` steps (96) at once; longer horizons are rolled
out in blocks of that fixed length, each block appended to the context, and the result cut to H, so
step k's forecast does not depend on the horizon asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _protocol import serve


def load(weights: str | None, options: dict[str, Any]):
    from importlib.metadata import version as dist_version

    import torch
    from tsfm_public.models.tinytimemixer import TinyTimeMixerForPrediction

    if not weights:
        raise ValueError("TTM needs a local weights directory (config.json + model.safetensors)")
    torch.manual_seed(int(options.get("seed", 0)))
    device = options.get("device", "cpu")
    model = TinyTimeMixerForPrediction.from_pretrained(weights).to(device).eval()
    ctx, block = int(model.config.context_length), int(model.config.prediction_length)
    if getattr(model.config, "prediction_filter_length", None):
        block = int(model.config.prediction_filter_length)

    def window(values: np.ndarray, observed: np.ndarray):
        b, t = values.shape
        keep = min(t, ctx)
        x = np.zeros((b, ctx), np.float32)
        m = np.zeros((b, ctx), bool)
        x[:, ctx - keep:] = np.where(observed[:, t - keep:], values[:, t - keep:], 0.0)
        m[:, ctx - keep:] = observed[:, t - keep:]
        return (torch.as_tensor(x, device=device)[..., None], torch.as_tensor(m, device=device)[..., None])

    def forecast(inputs: dict[str, np.ndarray], args: dict[str, Any]) -> dict[str, np.ndarray]:
        if inputs["values"].shape[1] != 1:
            raise ValueError(f"TTM is per channel: expected [B, 1, T], got {inputs['values'].shape}")
        values = inputs["values"][:, 0].astype(np.float32)
        observed = inputs["mask"][:, 0].astype(bool)
        h, blocks = int(args["horizon"]), []
        while sum(b.shape[1] for b in blocks) < h:
            x, m = window(values, observed)
            with torch.no_grad():
                out = model(past_values=x, past_observed_mask=m, return_loss=False).prediction_outputs
            pred = out[:, :block, 0].float().cpu().numpy()
            blocks.append(pred)
            values = np.concatenate([values, pred], axis=1)
            observed = np.concatenate([observed, np.ones_like(pred, dtype=bool)], axis=1)
        return {"forecast": np.concatenate(blocks, axis=1)[:, None, :h]}

    info = {"granite-tsfm": dist_version("granite-tsfm"), "transformers": dist_version("transformers"),
            "torch": torch.__version__, "context_length": ctx, "prediction_length": block,
            "point": "prediction_outputs (TTM is a point forecaster)",
            "context": "latest context_length steps; shorter contexts left-padded with zeros marked unobserved",
            "rollout": f"fixed {block}-step blocks, each appended to the context"}
    return {"forecast": forecast}, info


if __name__ == "__main__":
    serve(load)
