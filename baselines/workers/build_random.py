"""Build a RANDOMLY INITIALISED model at a released checkpoint's size, saved as that checkpoint's folder.

For speed, memory and shape measurements only (``--random-weights``, ``benchmarks/system_overhead.py``),
never for accuracy: the folder gets a ``RANDOM_WEIGHTS.json`` marker that the harness reads, and every
record made with it says "random weights (speed and shape only)".

Runs under the Python of the environment whose library builds the model (the isolated environments of
``baselines/envs``, or the main one), so it imports only that library, torch, numpy and the standard
library, never this project (like the workers beside it)::

    python build_random.py SPEC.json

SPEC: ``{"family": ..., "out": DIR, "config": {...}, "seed": 0, "code": {...}, "model": NAME,
"source": "where the configuration comes from", "top_k": k}``. ``family`` picks the library and the folder
layout the model's adapter reads (``FAMILIES``). The marker records the parameters counted on the built
module: ``parameters`` (all), ``active_parameters`` (a mixture of experts counts ``top_k`` of its routed
experts per token; others: all).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

MARKER = "RANDOM_WEIGHTS.json"  # models/random_weights.py: RANDOM_WEIGHTS_FILE (tested equal)
NOTE = "random weights (speed and shape only)"


def count(module: Any, top_k: int | None) -> tuple[int, int]:
    """(total, active) parameters; routed experts are the parameters under a ``ModuleList`` named ``experts``."""
    import torch

    total = sum(p.numel() for p in module.parameters())
    if not top_k:
        return total, total
    routed = 0
    for mod in module.modules():
        experts = getattr(mod, "experts", None)
        if isinstance(experts, torch.nn.ModuleList) and len(experts) > top_k:
            size = sum(p.numel() for p in experts.parameters())
            routed += size - size * top_k // len(experts)
    return total, total - routed


def init_empty(module: Any, seed: int, names: tuple[str, ...] = ()) -> None:
    """Deterministic values for parameters the library leaves uninitialised (``torch.empty``): norms 1,
    biases 0, the rest N(0, 0.02). Only those whose name contains one of ``names``, or that are not finite."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if not (any(n in name for n in names) or not torch.isfinite(p).all()):
                continue
            if "norm" in name and p.ndim == 1:
                p.fill_(1.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)


# ----------------------------------------------------------------------------- the families

def remote_code(spec: dict[str, Any], out: Path) -> Any:
    """A transformers checkpoint with its own code: the upstream ``*.py`` files, ``config.json`` with an
    ``auto_map``, ``model.safetensors``. The files are imported as a package (they import each other
    relatively), as Hugging Face's remote-code loader does."""
    code = spec["code"]
    files = [Path(f) for f in code["files"]]
    with tempfile.TemporaryDirectory() as stage:
        package = Path(stage) / "soter_bench_remote_code"
        package.mkdir()
        (package / "__init__.py").write_text("")
        for f in files:
            shutil.copy2(f, package / f.name)
        sys.path.insert(0, stage)
        try:
            config_module, config_class = code["config"].rsplit(".", 1)
            model_module, model_class = code["model"].rsplit(".", 1)
            Config = getattr(importlib.import_module(f"soter_bench_remote_code.{config_module}"), config_class)
            Model = getattr(importlib.import_module(f"soter_bench_remote_code.{model_module}"), model_class)
            config = Config(**spec["config"])
            config.auto_map = {"AutoConfig": code["config"], "AutoModelForCausalLM": code["model"]}
            import torch

            torch.manual_seed(int(spec.get("seed", 0)))
            model = Model(config)
            init_empty(model, int(spec.get("seed", 0)))
            model.save_pretrained(out, safe_serialization=True)
        finally:
            sys.path.remove(stage)
    for f in files:
        shutil.copy2(f, out / f.name)
    config = json.loads((out / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": code["config"], "AutoModelForCausalLM": code["model"]}
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return model


def chronos2(spec: dict[str, Any], out: Path) -> Any:
    import torch
    from chronos.chronos2 import Chronos2Model
    from chronos.chronos2.config import Chronos2CoreConfig

    cfg = dict(spec["config"])
    config = Chronos2CoreConfig(**cfg)
    config.architectures = ["Chronos2Model"]
    config.chronos_pipeline_class = "Chronos2Pipeline"
    torch.manual_seed(int(spec.get("seed", 0)))
    model = Chronos2Model(config)
    model.save_pretrained(out)
    return model


def timesfm25(spec: dict[str, Any], out: Path) -> Any:
    import timesfm
    import torch

    torch.manual_seed(int(spec.get("seed", 0)))
    wrapper = timesfm.TimesFM_2p5_200M_torch(torch_compile=False)  # the architecture is the class's own
    init_empty(wrapper.model, int(spec.get("seed", 0)))
    wrapper.save_pretrained(out)
    return wrapper.model


def tirex(spec: dict[str, Any], out: Path) -> Any:
    import torch
    from tirex.models.tirex import TiRexZero

    cfg = spec["config"]
    torch.manual_seed(int(spec.get("seed", 0)))
    model = TiRexZero(backend="torch", model_config=cfg["model_config"], train_ctx_len=cfg["train_ctx_len"])
    init_empty(model, int(spec.get("seed", 0)), names=("slstm",))  # its sLSTM kernels start as torch.empty
    torch.save({"hyper_parameters": {"model_config": cfg["model_config"], "train_ctx_len": cfg["train_ctx_len"]},
                "state_dict": model.state_dict()}, out / "model.ckpt")
    return model


def moment(spec: dict[str, Any], out: Path) -> Any:
    import torch
    from momentfm import MOMENTPipeline

    torch.manual_seed(int(spec.get("seed", 0)))
    model = MOMENTPipeline(dict(spec["config"]), model_kwargs={"task_name": "reconstruction"})
    model.init()
    model.save_pretrained(out)
    return model


def moirai_moe(spec: dict[str, Any], out: Path) -> Any:
    import torch
    from uni2ts.distribution import (LogNormalOutput, MixtureOutput, NegativeBinomialOutput, NormalFixedScaleOutput,
                                     StudentTOutput)
    from uni2ts.model.moirai_moe import MoiraiMoEModule

    torch.manual_seed(int(spec.get("seed", 0)))
    distr = MixtureOutput([StudentTOutput(), NormalFixedScaleOutput(), NegativeBinomialOutput(), LogNormalOutput()])
    cfg = dict(spec["config"])
    cfg["patch_sizes"] = tuple(cfg["patch_sizes"])
    module = MoiraiMoEModule(distr_output=distr, **cfg)
    for m in module.modules():  # the router centroids start as torch.empty
        if isinstance(getattr(m, "centroid", None), torch.Tensor):
            torch.nn.init.normal_(m.centroid)
    module.save_pretrained(out)
    return module


def moirai2(spec: dict[str, Any], out: Path) -> Any:
    import torch
    from uni2ts.model.moirai2 import Moirai2Module

    torch.manual_seed(int(spec.get("seed", 0)))
    module = Moirai2Module(**spec["config"])
    module.save_pretrained(out)
    return module


def ttm(spec: dict[str, Any], out: Path) -> Any:
    import torch
    from tsfm_public.models.tinytimemixer import TinyTimeMixerConfig, TinyTimeMixerForPrediction

    torch.manual_seed(int(spec.get("seed", 0)))
    model = TinyTimeMixerForPrediction(TinyTimeMixerConfig(**spec["config"]))
    model.save_pretrained(out)
    return model


def timesfm1(spec: dict[str, Any], out: Path) -> Any:
    import torch
    from timesfm import pytorch_patched_decoder as ppd

    torch.manual_seed(int(spec.get("seed", 0)))
    model = ppd.PatchedTimeSeriesDecoder(ppd.TimesFMConfig(**spec["config"]))
    neutral_attention_scaling(model)
    torch.save(model.state_dict(), out / "torch_model.ckpt")
    return model


def neutral_attention_scaling(model: Any) -> None:
    """timesfm creates each attention's per-dimension query scaling with ``torch.empty`` (its checkpoints
    overwrite it), so a random build saved whatever memory held: TimesFM 2.0's 50 layers once held an
    infinite one and forecast NaN. 0 is its neutral value: softplus(0) / ln 2 = 1, the plain 1/sqrt(head_dim)."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("self_attn.scaling"):
                p.zero_()


def lag_llama(spec: dict[str, Any], out: Path) -> Any:
    """A Lightning-style checkpoint as the released ``lag-llama.ckpt``: hyper-parameters (with the two
    gluonts objects the worker's allow-list names) and the module's state dict."""
    sys.path.insert(0, str(Path(spec["code"]["folder"]).resolve()))
    import torch
    from gluonts.torch.distributions.studentT import StudentTOutput
    from gluonts.torch.modules.loss import NegativeLogLikelihood
    from lag_llama.gluon.estimator import LagLlamaEstimator

    cfg = dict(spec["config"])
    torch.manual_seed(int(spec.get("seed", 0)))
    estimator = LagLlamaEstimator(prediction_length=64, **cfg)
    module = estimator.create_lightning_module()
    kwargs = {**cfg, "lags_seq": [int(v) for v in estimator.lags_seq], "distr_output": StudentTOutput()}
    torch.save({"hyper_parameters": {"context_length": cfg["context_length"], "loss": NegativeLogLikelihood(),
                                     "model_kwargs": kwargs},
                "state_dict": module.state_dict()}, out / "lag-llama.ckpt")
    return module


FAMILIES: dict[str, Callable[[dict[str, Any], Path], Any]] = {
    "remote_code": remote_code, "chronos2": chronos2, "timesfm25": timesfm25, "tirex": tirex, "moment": moment,
    "moirai_moe": moirai_moe, "moirai2": moirai2, "ttm": ttm, "timesfm1": timesfm1, "lag_llama": lag_llama,
}


def build(spec: dict[str, Any]) -> dict[str, Any]:
    """Build, save, count and mark; returns the marker's content."""
    family = spec["family"]
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(sorted(FAMILIES))}")
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    module = FAMILIES[family](spec, out)
    import torch

    bad = [name for name, p in module.named_parameters() if not torch.isfinite(p).all()]
    if bad:  # a library left memory uninitialised (torch.empty): speed rows would come from NaN forecasts
        raise ValueError(f"{family}: {len(bad)} parameter(s) not finite after building, e.g. {', '.join(bad[:3])}; "
                         "initialise them in this family's builder")
    total, active = count(module, spec.get("top_k"))

    marker = {"random_weights": NOTE, "model": spec.get("model"), "family": family, "seed": int(spec.get("seed", 0)),
              "config": spec["config"], "source": spec.get("source"), "parameters": total,
              "active_parameters": active, "torch": torch.__version__.split("+")[0]}
    (out / MARKER).write_text(json.dumps(marker, indent=2, default=str))
    return marker


if __name__ == "__main__":
    print(json.dumps(build(json.loads(Path(sys.argv[1]).read_text())), default=str))
