"""Remote-code worker: a transformers checkpoint that carries its own modelling code (``trust_remote_code``).

Runs under the Python of the ``transformers440`` environment (Time-MoE, MIRA, Timer, Sundial: their code
was written for transformers 4.40) or under the main environment's Python (Aurora, written for
transformers >= 4.50); never imports this project. The checkpoint folder (``config.json`` with an
``auto_map``, the ``*.py`` files it names, the weights) is loaded with
``AutoModelForCausalLM.from_pretrained(DIR, trust_remote_code=True)``; the harness starts this worker only
when the user passed ``--trust-remote-code NAME``.

Per row (the harness folds channels: one series per row). Each row is standardised by its context's mean
and std (``normalise``, as the model cards do) and de-standardised after. Unobserved context points are
carried forward (the first observation backwards) before the call. Three ways to forecast (``output``):

* ``append``: ``generate(x, max_new_tokens=n)`` returns context and forecast [N, T + n] (Time-MoE) or the
  forecast only [N, n] (Timer); the last n columns are the forecast. One deterministic path.
* ``samples``: ``generate(x, max_new_tokens=n, num_samples=S)`` returns [N, S, n] (Sundial, Aurora); the
  point forecast is the sample mean, quantiles (any level) the empirical quantiles of the same samples.
  Each row draws as if on its own after ``torch.manual_seed(seed)``, so its samples do not depend on which
  other windows share the batch. A model whose draws lay rows out sample-major (``sample_layout``
  ``"sample-major"``: Sundial repeats its rows ``num_samples`` times, ``z.repeat(S, 1)``) forecasts up to
  ``batch`` rows (default 32) per call, each row's draws from its own stream (``_protocol.row_streams``);
  any other (Aurora: its layout is not known here) one row per call.
* ``mira``: MIRA's own inference loop (``MIRA/models/mira_inference.py``): one forward pass per step on
  the values so far and their **timestamps** (CT-RoPE), the step's value appended with its query time.
  ``generate`` does not forecast with MIRA's released code (its cached attention fails on shapes).
  ``terminal_ode`` also passes the next query time as ``next_target_time_values`` (the Neural-ODE block);
  MIRA's helper does not, nor does the default here.

``append`` and ``samples`` always generate ``span`` steps (64, the paper's longest horizon; a multiple of
it beyond) and keep the first H: Time-MoE picks its output head by the number of steps asked for and
Sundial draws noise for every step, so asking for exactly H would make step k depend on H (the harness's
causal imputation forecasts one step and must agree with longer forecasts).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from _protocol import BATCHED_ROWS_TOLERANCE, asked_levels, carry_forward, row_streams, sample_quantiles, serve

OUTPUTS = ("append", "samples", "mira")


def load(weights: str | None, options: dict[str, Any]):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    output = options.get("output", "append")
    if output not in OUTPUTS:
        raise ValueError(f"unknown output {output!r} (one of {', '.join(OUTPUTS)})")
    if weights is None:
        raise ValueError("a remote-code model needs its checkpoint folder")
    device = options.get("device", "cpu")
    seed = int(options.get("seed", 0))
    normalise = bool(options.get("normalise", True))
    num_samples = int(options.get("num_samples", 20))
    span = int(options.get("span", 64))
    terminal_ode = bool(options.get("terminal_ode", False))
    layout = options.get("sample_layout")
    if layout not in (None, "sample-major"):
        raise ValueError(f"unknown sample_layout {layout!r} (sample-major, or none: one row per call)")
    batch = int(options.get("batch", 32)) if layout else 1
    if batch < 1:
        raise ValueError(f"batch must be a positive number of rows per call, got {batch}")
    kwargs = dict(options.get("generate_kwargs") or {})
    torch.manual_seed(seed)
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    model = AutoModelForCausalLM.from_pretrained(weights, trust_remote_code=True).to(device).eval()

    def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not normalise:
            return x, np.zeros((len(x), 1)), np.ones((len(x), 1))
        mean = x.mean(axis=1, keepdims=True)
        std = x.std(axis=1, keepdims=True)
        std = np.where(std > 1e-8, std, 1.0)
        return (x - mean) / std, mean, std

    def generate_append(x: torch.Tensor, n: int) -> np.ndarray:
        out = model.generate(x, max_new_tokens=n, **kwargs)
        return np.asarray(out.float()[:, -n:].cpu(), dtype=np.float64)  # [N, n]

    def generate_samples(x: torch.Tensor, n: int) -> np.ndarray:
        rows = []
        for i in range(0, len(x), batch):  # a row's draws do not depend on the rest of the batch
            group = x[i:i + batch]
            torch.manual_seed(seed)
            with row_streams(len(group), seed, outer=num_samples):
                out = model.generate(group, max_new_tokens=n, num_samples=num_samples, **kwargs)
            rows.extend(np.asarray(out.float()[:, :, -n:].cpu(), dtype=np.float64))
        return np.stack(rows)  # [N, S, n]

    def mira_loop(x: torch.Tensor, times: np.ndarray, query: np.ndarray) -> np.ndarray:
        values = x.clone()
        stamps = torch.as_tensor(times, dtype=torch.float32, device=device)
        future = torch.as_tensor(query, dtype=torch.float32, device=device)
        preds = []
        for i in range(future.shape[1]):  # MIRA's mira_predict_autoregressive_norm, all rows at once
            extra = {"next_target_time_values": future[:, i]} if terminal_ode else {}
            out = model(input_ids=values.unsqueeze(-1), time_values=stamps, return_dict=True, **extra)
            step = out.logits[:, -1, :1]  # [N, 1]
            preds.append(step)
            values = torch.cat([values, step], dim=1)
            stamps = torch.cat([stamps, future[:, i:i + 1]], dim=1)
        return np.asarray(torch.cat(preds, dim=1).float().cpu(), dtype=np.float64)

    def forecast(inputs: dict[str, np.ndarray], args: dict[str, Any]) -> dict[str, np.ndarray]:
        values = carry_forward(inputs["values"], inputs["mask"])
        b, c, t = values.shape
        h = int(args["horizon"])
        levels = asked_levels(args)
        if levels is not None and output != "samples":
            raise ValueError("this model gives one forecast path, not quantiles")
        rows, mean, std = standardise(values.reshape(b * c, t))
        x = torch.as_tensor(rows, dtype=torch.float32, device=device)
        n = span * math.ceil(h / span)
        torch.manual_seed(seed)
        with torch.no_grad():
            if output == "mira":
                times = np.repeat(inputs["timestamps"], c, axis=0)
                query = np.repeat(inputs["query_times"], c, axis=0)
                paths = mira_loop(x, times, query)[:, None, :h]
            elif output == "samples":
                paths = generate_samples(x, n)[:, :, :h]
            else:
                paths = generate_append(x, n)[:, None, :h]
        paths = paths * std[:, :, None] + mean[:, :, None]  # [N, S, H] in the data's units
        out = {"forecast": paths.mean(axis=1).reshape(b, c, h)}
        if levels is not None:
            out["quantiles"] = sample_quantiles(paths, levels, axis=1).reshape(b, c, h, len(levels))
        return out

    config = model.config
    info = {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
            "trust_remote_code": True, "model_type": getattr(config, "model_type", None), "output": output,
            "normalise": normalise, "num_samples": num_samples if output == "samples" else None,
            "span": span if output != "mira" else None, "uses_times": output == "mira"}
    if output == "samples":
        info["quantile_levels"] = "any"
    if output == "samples" and layout:  # named only where rows are batched, so the others' records stay as they were
        info["rows_per_call"] = batch
        if batch > 1:
            info["batch_tolerance"] = BATCHED_ROWS_TOLERANCE
    if output == "mira":
        info["terminal_ode"] = terminal_ode
    return {"forecast": forecast}, info


if __name__ == "__main__":
    serve(load)
