"""Every paper baseline at its published size, with random weights: for speed, memory and shape only.

The official checkpoints cannot be downloaded here, so nobody knew whether a released model's real
size (its context limit, patching, horizon heads, memory) works through the harness on a laptop, nor
what it costs. :data:`PUBLISHED` gives, for each paper model, the hyperparameters of the checkpoint the
paper evaluates and where they come from; :func:`random_checkpoint` builds that architecture with
random weights from the model's own library or upstream code (``baselines/workers/build_random.py``, in
the model's environment) and saves it in the layout its adapter reads, with a ``RANDOM_WEIGHTS.json``
marker. The harness runs it like any checkpoint (``run forecasting --random-weights NAME``), and every
record says "random weights (speed and shape only)": such rows never reach a table, the leaderboard or
the paper comparison (``harness/records/store.py: read_records``). ``benchmarks/system_overhead.py`` measures
them (parameters, seconds per sample, peak memory).

The parameter count each build gives is compared with the paper's (its "Paras" column, the card's
``paper_params``) in ``docs/published-sizes.md``: an exact match is the check that the configuration is
the released one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from baselines.checkout import CodeSource, find_checkout
from baselines.isolated import ENVS, WORKERS_DIR, _clean_env, _tail, ensure_env
from models.random_weights import RANDOM_WEIGHTS_FILE, random_weights_marker
from models.registry import ModelUnavailableError
from protocols.cache import cache_dir

BUILDER = WORKERS_DIR / "build_random.py"


@dataclass(frozen=True)
class Published:
    """A released checkpoint's architecture: what to build, with which library, and on whose word."""

    model: str  # registry name
    family: str  # build_random.py family (the library and folder layout)
    config: dict[str, Any]
    source: str  # where these hyperparameters come from
    env: str | None = None  # isolated environment whose library builds it; None: this one
    code: CodeSource | None = None  # upstream code a remote-code model is built from
    code_files: tuple[str, ...] = ()  # its files, relative to the checkout
    code_classes: tuple[str, str] = ("", "")  # "module.ConfigClass", "module.ModelClass"
    top_k: int | None = None  # experts per token, for a mixture of experts' active parameters
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """Changes when what would be built changes (configuration, builder, environment pins)."""
        h = hashlib.sha256(json.dumps([self.model, self.family, self.config, self.code_files, self.code_classes],
                                      sort_keys=True, default=str).encode())
        h.update(BUILDER.read_bytes())
        if self.env:
            h.update(ENVS[self.env].key().encode())
        return h.hexdigest()[:12]


# -------------------------------------------------------------------------- upstream code of remote-code models
# Their checkpoints carry their own code; with random weights the code comes from a checkout of the upstream
# repository instead (the folder named by the variable; tests use ../shared/code, see ../shared/code/README.md).
TIME_MOE_CODE = CodeSource(model="timemoe", repo="https://github.com/Time-MoE/Time-MoE", env_var="SOTER_BENCH_TIMEMOE_CODE",
                           markers=("time_moe/models/modeling_time_moe.py",), licence="Apache-2.0")
MIRA_CODE = CodeSource(model="mira", repo="https://github.com/microsoft/MIRA", env_var="SOTER_BENCH_MIRA_CODE",
                       markers=("MIRA/models/modeling_mira.py",), licence="MIT")
TIMER_CODE = CodeSource(model="timer", repo="the Hugging Face repository thuml/timer-base-84m (or sktime's fork, "
                        "sktime/libs/timer in the sktime wheel)", env_var="SOTER_BENCH_TIMER_CODE",
                        markers=("modeling_timer.py",), licence="Apache-2.0")
SUNDIAL_CODE = CodeSource(model="sundial", repo="the Hugging Face repository thuml/sundial-base-128m (or sktime's "
                          "fork, sktime/libs/sundial in the sktime wheel)", env_var="SOTER_BENCH_SUNDIAL_CODE",
                          markers=("modeling_sundial.py",), licence="Apache-2.0")

_TIMEMOE_FILES = tuple(f"time_moe/models/{f}.py" for f in ("configuration_time_moe", "modeling_time_moe",
                                                            "ts_generation_mixin"))
_MIRA_FILES = tuple(f"MIRA/models/{f}.py" for f in ("configuration_mira", "modeling_mira", "ts_generation_mixin",
                                                     "utils_time_normalization"))
_TIMEMOE_SOURCE = ("the released config.json of Maple728/TimeMoE-50M (a copy in github.com/sravan-ankireddy/time_series, "
                   "model_weights/time-moe/TimeMoE-200M/config.json, whose _name_or_path is time_moe_50m) and the Time-MoE "
                   "paper's Table 1 (base: 12 layers, 12 heads, 8 experts, top-2, d_model 384; large: d_model 768, "
                   "d_ff 3072)")
_T5_LARGE = {"d_model": 1024, "d_kv": 64, "d_ff": 2816, "num_layers": 24, "num_heads": 16, "vocab_size": 32128,
             "feed_forward_proj": "gated-gelu", "dropout_rate": 0.1, "layer_norm_epsilon": 1e-6,
             "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
             "is_encoder_decoder": True, "model_type": "t5"}
_QUANTILES_21 = [0.01, 0.05, *[round(0.1 + 0.05 * i, 2) for i in range(17)], 0.95, 0.99]
_DECILES = [round(0.1 * i, 1) for i in range(1, 10)]


def _timemoe(model: str, hidden: int, intermediate: int) -> Published:
    return Published(
        model, "remote_code", {"hidden_size": hidden, "intermediate_size": intermediate, "horizon_lengths": [1, 8, 32, 64],
                               "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 12,
                               "num_experts": 8, "num_experts_per_tok": 2, "max_position_embeddings": 4096,
                               "rms_norm_eps": 1e-6, "rope_theta": 10000, "hidden_act": "silu", "use_dense": False,
                               "apply_aux_loss": True, "router_aux_loss_factor": 0.02, "input_size": 1},
        _TIMEMOE_SOURCE, env="transformers440", code=TIME_MOE_CODE, code_files=_TIMEMOE_FILES,
        code_classes=("configuration_time_moe.TimeMoeConfig", "modeling_time_moe.TimeMoeForPrediction"), top_k=2)


PUBLISHED: dict[str, Published] = {p.model: p for p in (
    Published("chronos-2-base", "chronos2",
              {"d_model": 768, "d_kv": 64, "d_ff": 3072, "num_layers": 12, "num_heads": 12, "dropout_rate": 0.1,
               "layer_norm_epsilon": 1e-6, "rope_theta": 10000.0, "vocab_size": 2, "reg_token_id": 1,
               "feed_forward_proj": "relu",
               "chronos_config": {"context_length": 8192, "input_patch_size": 16, "input_patch_stride": 16,
                                  "output_patch_size": 16, "max_output_patches": 64, "quantiles": _QUANTILES_21,
                                  "use_reg_token": True, "use_arcsinh": True, "time_encoding_scale": 8192}},
              "amazon/chronos-2's config.json as quoted by Hugging Face transformers' Chronos2Config "
              "(_default_chronos_config, checkpoint amazon/chronos-2) and by several ports of it (d_model 768, 12 layers, "
              "12 heads, d_ff 3072, 16-step patches, 64 output patches, 21 quantiles, context 8192)"),
    Published("timesfm-2.5", "timesfm25", {},
              "timesfm 3.x's TimesFM_2p5_200M_torch: the architecture is fixed in the class that loads "
              "google/timesfm-2.5-200m-pytorch (no configuration to choose)"),
    Published("tirex", "tirex",
              {"model_config": {"input_patch_size": 32, "output_patch_size": 32, "quantiles": _DECILES,
                                "input_ff_dim": 2048,
                                "block_kwargs": {"num_blocks": 12, "embedding_dim": 512, "num_heads": 4,
                                                 "all_slstm": True, "return_last_states": True, "vocab_size": 0}},
               "train_ctx_len": 2048},
              "the hyper_parameters stored in NX-AI/TiRex's model.ckpt as quoted in public write-ups (12 sLSTM blocks, "
              "width 512, 4 heads, input_ff_dim 2048, 32-step patches, nine quantiles; train_ctx_len 2048 as "
              "tirex-ts' loaders assume)"),
    Published("moment-large", "moment",
              {"task_name": "reconstruction", "model_name": "MOMENT", "transformer_type": "encoder_only",
               "d_model": None, "seq_len": 512, "patch_len": 8, "patch_stride_len": 8, "device": "cpu",
               "transformer_backbone": "google/flan-t5-large", "model_kwargs": {}, "t5_config": _T5_LARGE},
              "AutonLab/MOMENT-1-large's config (momentfm: seq_len 512, patches of 8, encoder of google/flan-t5-large); "
              "flan-t5-large's T5 configuration (d_model 1024, 24 layers, 16 heads, d_ff 2816, gated-gelu), written out "
              "because the hub is not reachable", env="moment"),
    Published("moirai-moe-base", "moirai_moe",
              {"d_model": 768, "d_ff": 1024, "num_layers": 12, "patch_sizes": [16], "max_seq_len": 512,
               "attn_dropout_p": 0.0, "dropout_p": 0.0},
              "uni2ts' MoiraiMoEModule (its encoder fixes 32 gated-linear-unit experts, top-2) with Moirai-base's width "
              "and depth (d_model 768, 12 layers) and Moirai-MoE's single 16-step patch size; expert width 1024 is the "
              "one that gives the uni2ts README's 935M total / 86M activated for Salesforce/moirai-moe-1.0-R-base "
              "(935,066,592 / 85,720,032 here; 3072, Moirai-base's dense width, gives 2.7B): derived from those two "
              "counts, not read from the released config.json",
              env="moirai", top_k=2),
    Published("moirai-2.0-small", "moirai2",
              {"d_model": 384, "d_ff": 1024, "num_layers": 6, "patch_size": 16, "max_seq_len": 1024,
               "attn_dropout_p": 0.0, "dropout_p": 0.0, "num_predict_token": 4,
               "quantile_levels": _DECILES},
              "uni2ts' Moirai2Module with Moirai-small's width and depth (d_model 384, 6 layers), 16-step patches and "
              "the nine decile heads of Salesforce/moirai-2.0-R-small", env="moirai"),
    Published("ttm", "ttm",
              {"context_length": 512, "prediction_length": 96, "patch_length": 64, "patch_stride": 64,
               "num_input_channels": 1, "d_model": 192, "decoder_d_model": 128, "adaptive_patching_levels": 3,
               "num_layers": 2, "decoder_num_layers": 2, "expansion_factor": 2, "mode": "common_channel",
               "decoder_mode": "common_channel", "scaling": "std", "gated_attn": True, "dropout": 0.2,
               "head_dropout": 0.2, "use_decoder": True, "decoder_adaptive_patching_levels": 0,
               "decoder_raw_residual": False},
              "granite-tsfm's TTM pre-training example (notebooks/hfdemo/tinytimemixer: context 512, forecast 96, "
              "patch 64, 3 adaptive-patching levels, d_model 3 x patch, decoder d_model 2 x patch) for "
              "ibm-granite/granite-timeseries-ttm-r1's 512-96 model", env="ttm"),
    Published("timesfm-1.0", "timesfm1",
              {"num_layers": 20, "num_heads": 16, "num_kv_heads": 16, "hidden_size": 1280, "intermediate_size": 1280,
               "head_dim": 80, "patch_len": 32, "horizon_len": 128, "use_positional_embedding": True},
              "timesfm 1.3.0's TimesFMConfig / TimesFmHparams for google/timesfm-1.0-200m-pytorch (20 layers, width "
              "1280, 16 heads, 32-step input and 128-step output patches, positional embedding)", env="timesfm1"),
    Published("timesfm-2.0", "timesfm1",
              {"num_layers": 50, "num_heads": 16, "num_kv_heads": 16, "hidden_size": 1280, "intermediate_size": 1280,
               "head_dim": 80, "patch_len": 32, "horizon_len": 128, "use_positional_embedding": False},
              "google/timesfm-2.0-500m-pytorch's model card and timesfm 1.3.0 (50 layers, width 1280, 16 heads, "
              "no positional embedding, context 2048)", env="timesfm1"),
    Published("lag-llama", "lag_llama",
              {"context_length": 32, "input_size": 1, "n_layer": 8, "n_embd_per_head": 16, "n_head": 9,
               "scaling": "robust", "time_feat": True},
              "configs/lag_llama.json of github.com/time-series-foundation-models/lag-llama (8 layers, 9 heads of 16, "
              "context 32, robust scaling, time features)", env="lag-llama"),
    Published("timer-base", "remote_code",
              {"input_token_len": 96, "hidden_size": 1024, "intermediate_size": 2048, "output_token_lens": [96],
               "num_hidden_layers": 8, "num_attention_heads": 8, "hidden_act": "silu", "use_cache": True,
               "rope_theta": 10000, "attention_dropout": 0.0, "initializer_range": 0.02,
               "max_position_embeddings": 10000},
              "thuml/timer-base-84m's configuration as Apache IoTDB's AINode declares it for its built-in Timer "
              "(iotdb-core/ainode/.../built_in_model_factory.py, timerxl_attribute_map: 96-step tokens, width 1024, "
              "8 layers, 8 heads, FFN 2048, one 96-step output head)", env="transformers440", code=TIMER_CODE,
              code_files=("configuration_timer.py", "modeling_timer.py", "ts_generation_mixin.py"),
              code_classes=("configuration_timer.TimerConfig", "modeling_timer.TimerForPrediction")),
    Published("sundial-base", "remote_code",
              {"input_token_len": 16, "hidden_size": 768, "intermediate_size": 3072, "output_token_lens": [720],
               "num_hidden_layers": 12, "num_attention_heads": 12, "hidden_act": "silu", "use_cache": True,
               "rope_theta": 10000, "dropout_rate": 0.1, "initializer_range": 0.02, "max_position_embeddings": 10000,
               "flow_loss_depth": 3, "num_sampling_steps": 50, "diffusion_batch_mul": 4},
              "thuml/sundial-base-128m's configuration as Apache IoTDB's AINode declares it for its built-in Sundial "
              "(built_in_model_factory.py, sundial_attribute_map: 16-step tokens, width 768, 12 layers, 12 heads, "
              "FFN 3072, 720-step output, flow-matching head of depth 3, 50 sampling steps)", env="transformers440",
              code=SUNDIAL_CODE, code_files=("configuration_sundial.py", "modeling_sundial.py", "flow_loss.py",
                                            "ts_generation_mixin.py"),
              code_classes=("configuration_sundial.SundialConfig", "modeling_sundial.SundialForPrediction")),
    _timemoe("timemoe-base", 384, 1536),
    _timemoe("timemoe-large", 768, 3072),
)}

# The paper models with no buildable published configuration here, and why (rows "not measured").
NOT_BUILDABLE: dict[str, str] = {
    "mira-large": "no published configuration found: github.com/microsoft/MIRA has no config file or size table and "
                  "its checkpoint (with its config.json) is not reachable here; its code is staged, so the tiny "
                  "contract test runs, but the 339.9M architecture would be a guess",
    "aurora": "its code is not staged: github.com/decisionintelligence/Aurora has no licence file, and the PyPI package "
              "aurora-model needs torchvision, whose PyPI wheels break this CPU torch (docs/research-code-baselines.md)",
}


def published(model: str) -> Published:
    if model not in PUBLISHED:
        why = NOT_BUILDABLE.get(model)
        known = ", ".join(sorted([*PUBLISHED, "soter"]))
        raise ModelUnavailableError(f"{model}: {why}" if why else
                                    f"{model} has no published-size configuration here; --random-weights knows {known}")
    return PUBLISHED[model]


def random_checkpoint(model: str, root: Path | None = None, log=None) -> Path:
    """The folder of ``model``'s published architecture with random weights, built once (cached by
    :meth:`Published.key`) under ``root`` (default ``$SOTER_BENCH_CACHE/random-weights``)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    root = Path(root) if root is not None else cache_dir() / "random-weights"
    if model in ("soter", "soter-autoregressive"):  # one checkpoint, two rollouts
        return _soter(root)
    spec = published(model)
    folder = root / f"{model}-{spec.key()}"
    if random_weights_marker(folder) is not None:
        return folder
    code = find_checkout(spec.code, None, None) if spec.code is not None else None
    if spec.family == "lag_llama":
        from baselines.isolated import lag_llama_code

        code = lag_llama_code(None)
    log(f"[{model}] building its published architecture with random weights in {folder} (once)")
    return _staged(folder, lambda staging: build_folder(
        spec.family, staging, spec.config, env=spec.env, code=code, code_files=spec.code_files,
        code_classes=spec.code_classes, top_k=spec.top_k, model=model, source=spec.source))


def build_folder(family: str, out: Path, config: dict[str, Any], env: str | None = None, code: Path | None = None,
                 code_files: tuple[str, ...] = (), code_classes: tuple[str, str] = ("", ""), top_k: int | None = None,
                 model: str | None = None, source: str | None = None, seed: int = 0) -> dict[str, Any]:
    """Build ``family`` with ``config`` and random weights into ``out`` by ``build_random.py`` under ``env``'s
    Python (created first if needed; None: this Python); returns the marker it wrote. Any configuration:
    the published ones (:func:`random_checkpoint`) and the tests' tiny ones."""
    python = sys.executable if env is None else str(ensure_env(ENVS[env]))
    request: dict[str, Any] = {"family": family, "out": str(out), "config": config, "seed": seed, "model": model,
                               "source": source, "top_k": top_k}
    if family == "remote_code":
        request["code"] = {"files": [str(Path(code) / f) for f in code_files], "config": code_classes[0],
                           "model": code_classes[1]}
    elif family == "lag_llama":
        request["code"] = {"folder": str(code)}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "build.json").write_text(json.dumps(request, default=str))
        done = subprocess.run([python, str(BUILDER), str(Path(tmp) / "build.json")], capture_output=True, text=True,
                              env=_builder_env(env), cwd=tmp)
    if done.returncode != 0:
        raise ModelUnavailableError(f"{model or family}: building it with random weights failed:\n"
                                    f"{_tail(done.stderr or done.stdout)}")
    return json.loads((Path(out) / RANDOM_WEIGHTS_FILE).read_text())


def _soter(root: Path) -> Path:
    """SOTER at the paper's size (the ``soter-paper`` preset), random weights, in the layout ``--weights soter=DIR`` reads."""
    from models.random_weights import RANDOM_WEIGHTS_NOTE
    from models.soter.config import preset
    from models.soter.io import save_pretrained
    from models.soter.model import SoterModel, count_parameters

    import torch

    config = preset("soter-paper")
    key = hashlib.sha256(json.dumps(config.to_dict(), sort_keys=True, default=str).encode()).hexdigest()[:12]
    folder = root / f"soter-{key}"
    if random_weights_marker(folder) is not None:
        return folder
    torch.manual_seed(0)
    model = SoterModel(config)

    def fill(staging: Path) -> None:
        save_pretrained(model, staging)
        total, active = count_parameters(model)
        (staging / RANDOM_WEIGHTS_FILE).write_text(json.dumps({
            "random_weights": RANDOM_WEIGHTS_NOTE, "model": "soter", "family": "soter", "seed": 0,
            "config": config.to_dict(), "source": "models/soter/config.py preset soter-paper (docs/soter.md)",
            "parameters": total, "active_parameters": active}, indent=2, default=str))

    return _staged(folder, fill)


def _staged(folder: Path, fill: Callable[[Path], object]) -> Path:
    """``folder`` written whole or not at all: filled in a hidden sibling, then renamed into place (a build
    cut short leaves no folder that looks finished)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        fill(staging)
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _builder_env(env: str | None) -> dict[str, str]:
    """The builder's environment: an isolated one's is clean; under this Python, one thread is enough."""
    base = _clean_env() if env else dict(os.environ)
    return {**base, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
