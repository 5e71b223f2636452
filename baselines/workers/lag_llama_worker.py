"""Lag-Llama worker: runs in the ``lag-llama`` environment (gluonts 0.14.4, lightning 2.1 beside torch 2.13).

Lag-Llama is not on PyPI. Its code (packages ``lag_llama``, ``gluon_utils`` and ``data``) comes from
the user's checkout of github.com/time-series-foundation-models/lag-llama, whose folder (option
``code``) is put first on ``sys.path``; nothing of it is part of this project.

The checkpoint ``lag-llama.ckpt`` is a Lightning checkpoint, i.e. a pickle. It is read with
``torch.load(weights_only=True)``, allowing beyond torch's own tensor types only the classes named in
:data:`SAFE_GLOBALS` (the distribution head and loss objects Lightning stored among the
hyper-parameters); a checkpoint naming anything else is refused with an error, never loaded with
``weights_only=False``. The Lightning module is then built by Lag-Llama's own ``LagLlamaEstimator``
from the checkpoint's hyper-parameters (without ``ckpt_path``, so Lightning never unpickles the file
itself) and its ``state_dict`` is loaded into it; missing parameters are an error.

Forecast: per channel (``input_size`` 1). Each series (row, channel) draws its sample paths as if predicted
on its own after ``torch.manual_seed(seed)``: its draws do not depend on which other windows share the batch,
and a rerun gives the same numbers. Up to ``batch`` series (option, default 32) go through one predictor call,
their draws split by series (``_protocol.row_streams``: Lag-Llama lays a series' paths out as one block of
``num_samples`` rows); ``batch`` 1 predicts one series at a time under the global seed. Sample paths are
always drawn for ``span`` steps (64; a multiple of it beyond) and cut to H, so step k's forecast does not depend on the horizon asked for. The point
forecast is the median of ``num_samples`` (100) paths; asked quantiles (request arg ``levels``, any
level) are the empirical quantiles (numpy's linear interpolation) of the same paths. Unobserved
context points are passed as NaN (gluonts marks them unobserved). The context length is the checkpoint's (32 for the released model)
unless option ``context_length`` says otherwise (then RoPE is scaled linearly, as Lag-Llama's README
does); Lag-Llama's lag features read up to ~1,100 steps further back, so the whole window is used.
"""

from __future__ import annotations

import importlib
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np

from _protocol import BATCHED_ROWS_TOLERANCE, asked_levels, row_streams, sample_quantiles, serve

CHECKPOINT = "lag-llama.ckpt"
# the only globals the checkpoint's pickle may name beyond torch's weights-only defaults
SAFE_GLOBALS = ("gluonts.torch.distributions.studentT.StudentTOutput",
                "gluonts.torch.modules.loss.NegativeLogLikelihood")


class CheckpointRefused(RuntimeError):
    """The checkpoint names a global outside the allow-list: it is not unpickled."""


def add_code(code: str | None) -> Path:
    if not code:
        raise ValueError("no Lag-Llama code folder given (option 'code'): clone "
                         "github.com/time-series-foundation-models/lag-llama and name that folder")
    path = Path(code).expanduser().resolve()
    if not (path / "lag_llama" / "gluon" / "estimator.py").is_file():
        raise ValueError(f"{path} is not a Lag-Llama checkout (no lag_llama/gluon/estimator.py)")
    sys.path.insert(0, str(path))
    return path


def load_checkpoint(path: Path) -> dict[str, Any]:
    """``torch.load(weights_only=True)`` with only :data:`SAFE_GLOBALS` allowed; anything else is refused."""
    import torch

    allowed = []
    for dotted in SAFE_GLOBALS:
        module, _, name = dotted.rpartition(".")
        allowed.append(getattr(importlib.import_module(module), name))
    try:
        with torch.serialization.safe_globals(allowed):
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        detail = [line.strip() for line in str(exc).splitlines() if "Unsupported" in line or "WeightsUnpickler" in line]
        raise CheckpointRefused(
            f"refused to load {path}: it is a pickle, read only with torch.load(weights_only=True) and the "
            f"allow-list {', '.join(SAFE_GLOBALS)}, and it names something else ({'; '.join(detail)[:400] or exc}). "
            "It is never loaded with weights_only=False; use the official lag-llama.ckpt from "
            "huggingface.co/time-series-foundation-models/Lag-Llama") from None
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt or "hyper_parameters" not in ckpt:
        raise ValueError(f"{path} is not a Lightning checkpoint (no state_dict / hyper_parameters)")
    return ckpt


def _commit(code: Path) -> str | None:
    head = code / ".git" / "HEAD"
    try:
        text = head.read_text().strip()
        if text.startswith("ref: "):
            return (code / ".git" / text[5:]).read_text().strip()
        return text
    except OSError:
        return None


def load(weights: str | None, options: dict[str, Any]):
    code = add_code(options.get("code"))
    import pandas as pd
    import torch

    folder = Path(weights or "").expanduser()
    path = folder if folder.is_file() else folder / CHECKPOINT
    if not path.is_file():
        raise FileNotFoundError(f"no {CHECKPOINT} at {folder}")
    ckpt = load_checkpoint(path)
    from lag_llama.gluon.estimator import LagLlamaEstimator

    hp = ckpt["hyper_parameters"]
    kw = dict(hp.get("model_kwargs") or {})
    trained = int(kw.get("context_length") or hp.get("context_length"))
    context = int(options.get("context_length") or trained)
    seed = int(options.get("seed", 0))
    num_samples = int(options.get("num_samples", 100))
    span = int(options.get("span", 64))
    batch = int(options.get("batch", 32))
    if batch < 1:
        raise ValueError(f"batch must be a positive number of series per call, got {batch}")
    freq = str(options.get("freq", "H"))
    anchor = pd.Period("2020-01-01 00:00", freq=freq)  # every window's forecast starts here
    state = ckpt["state_dict"]
    built: dict[tuple[int, int], Any] = {}
    report: dict[str, Any] = {}

    def predictor(length: int, series: int = 1):
        if (length, series) in built:
            return built[(length, series)]
        rope = ({"type": "linear", "factor": max(1.0, (context + length) / trained)} if context > trained else None)
        estimator = LagLlamaEstimator(
            prediction_length=length, context_length=context, input_size=int(kw["input_size"]),
            n_layer=int(kw["n_layer"]), n_embd_per_head=int(kw["n_embd_per_head"]), n_head=int(kw["n_head"]),
            scaling=kw["scaling"], time_feat=bool(kw["time_feat"]), rope_scaling=rope, batch_size=series,
            num_parallel_samples=num_samples, device=torch.device("cpu"))
        if "lags_seq" in kw and list(estimator.lags_seq) != [int(v) for v in kw["lags_seq"]]:
            raise ValueError("this Lag-Llama code computes other lags than the checkpoint was trained with")
        module = estimator.create_lightning_module()
        missing, unexpected = module.load_state_dict(state, strict=False)
        if missing:
            raise ValueError(f"{CHECKPOINT} lacks {len(missing)} parameters of this code's model, e.g. {missing[:3]}")
        report["unexpected_keys"] = len(unexpected)
        module.eval()
        built[(length, series)] = estimator.create_predictor(estimator.create_transformation(), module)
        return built[(length, series)]

    def forecast(inputs: dict[str, np.ndarray], args: dict[str, Any]) -> dict[str, np.ndarray]:
        values, observed = inputs["values"], inputs["mask"].astype(bool)
        b, c, t = values.shape
        h = int(args["horizon"])
        row_seed = int(args.get("seed", seed))
        levels = asked_levels(args)
        drawn = -(-h // span) * span
        start = anchor - t
        targets = np.where(observed, values, np.nan).astype(np.float32).reshape(b * c, t)  # series (row, channel)
        paths = np.empty((b * c, num_samples, drawn), np.float64)
        for a in range(0, b * c, batch):  # draws never depend on the batch: each series has its own stream
            group = targets[a:a + batch]
            entries = [{"start": start, "target": target} for target in group]
            torch.manual_seed(row_seed)
            with torch.no_grad(), row_streams(len(group), row_seed):
                results = list(predictor(drawn, batch).predict(entries))
            for k, result in enumerate(results):
                samples = np.asarray(result.samples, dtype=np.float64)  # [S, drawn]
                if samples.shape != (num_samples, drawn):
                    raise ValueError(f"Lag-Llama returned samples of shape {samples.shape}, "
                                     f"expected {(num_samples, drawn)}")
                paths[a + k] = samples
        out = np.median(paths[:, :, :h], axis=1).astype(np.float32).reshape(b, c, h)
        if levels is None:
            return {"forecast": out}
        quantiles = sample_quantiles(paths[:, :, :h], levels, axis=1).reshape(b, c, h, len(levels))
        return {"forecast": out, "quantiles": quantiles}  # from the same paths as the point

    predictor(span, batch)  # build once now: a wrong checkpoint fails at load, not at the first forecast
    gluonts = importlib.import_module("gluonts")
    info = {"torch": torch.__version__, "gluonts": getattr(gluonts, "__version__", None),
            "lag_llama_code": str(code), "lag_llama_commit": _commit(code), "checkpoint": str(path),
            "context_length": context, "trained_context_length": trained, "num_samples": num_samples, "span": span,
            "series_per_call": batch,
            "point": f"median of {num_samples} sample paths (per-series seeded)", "freq": freq,
            "quantile_levels": "any", "quantiles": f"empirical quantiles of the same {num_samples} sample paths",
            "checkpoint_loading": "torch.load(weights_only=True), allow-list: " + ", ".join(SAFE_GLOBALS),
            "unexpected_keys": report.get("unexpected_keys")}
    if batch > 1:
        info["batch_tolerance"] = BATCHED_ROWS_TOLERANCE
    return {"forecast": forecast}, info


if __name__ == "__main__":
    serve(load)
