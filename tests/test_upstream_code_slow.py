"""The REAL upstream code of Time-MoE, MIRA, Timer, Sundial and Lag-Llama, on tiny random-weight models.

Each tiny model is built from the upstream classes as published (``../shared/code``, or the
``SOTER_BENCH_*_CODE`` checkout; tests/upstream.py) inside the environment with the library versions that
code declares (``transformers440``: transformers 4.40.1; ``lag-llama``: gluonts 0.14.4, lightning 2.1.4),
saved as a checkpoint folder (for the remote-code models: their own ``*.py`` files and a ``config.json``
with an ``auto_map``, loaded with ``--trust-remote-code``), and run through the harness's adapter and
worker: the contract kit (shapes, batch and horizon invariance, no state between calls, determinism,
leakage probes, the too-short context error), quantiles where the model samples, and one ``harness run``.

Slow (the environments are created from the package index, minutes each; every contract check runs a
transformer on two CPU cores): skipped unless SOTER_BENCH_SLOW=1 (CI runs it beside the main suite).
``SOTER_BENCH_SLOW_CACHE=DIR`` keeps the environments in DIR between runs. Random weights exist only here.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from baselines.published import SUNDIAL_CODE, TIME_MOE_CODE, TIMER_CODE, MIRA_CODE, build_folder
from baselines.testing import check_forecast_contract, queries as _queries, series as _series
from models.random_weights import RANDOM_WEIGHTS_NOTE
from models.registry import READY, ModelSpec, get_spec
from protocols import interface
from tests.test_isolated_envs_slow import _reused_cache  # noqa: F401 (an autouse fixture)
from tests.upstream import require_code

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("SOTER_BENCH_SLOW") != "1",
                                 reason="creates real virtual environments (minutes, package index): SOTER_BENCH_SLOW=1")]

# (code variable, staged folder, files, config class, model class, tiny configuration, contract kwargs)
REMOTE = {
    "timemoe-base": (TIME_MOE_CODE.env_var, "time-moe",
                     tuple(f"time_moe/models/{f}.py" for f in ("configuration_time_moe", "modeling_time_moe",
                                                                "ts_generation_mixin")),
                     "configuration_time_moe.TimeMoeConfig", "modeling_time_moe.TimeMoeForPrediction",
                     dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                          num_experts=4, num_experts_per_tok=2, horizon_lengths=[1, 8, 32, 64],
                          max_position_embeddings=512), {}),
    "mira-large": (MIRA_CODE.env_var, "mira",
                   tuple(f"MIRA/models/{f}.py" for f in ("configuration_mira", "modeling_mira", "ts_generation_mixin",
                                                          "utils_time_normalization")),
                   "configuration_mira.MIRAConfig", "modeling_mira.MIRAForPrediction",
                   dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_experts=4,
                        num_experts_per_tok=2, horizon_lengths=[1], max_position_embeddings=512,
                        ode_func_hidden_dims=[16, 16]), {}),
    # the sktime forks: the only copies of Timer's and Sundial's code reachable without Hugging Face
    "timer-base": (TIMER_CODE.env_var, "timer-sktime-fork/sktime/libs/timer",
                   ("configuration_timer.py", "modeling_timer.py", "ts_generation_mixin.py"),
                   "configuration_timer.TimerConfig", "modeling_timer.TimerForPrediction",
                   dict(input_token_len=96, hidden_size=32, intermediate_size=64, output_token_lens=[96],
                        num_hidden_layers=2, num_attention_heads=2), dict(t=96, h=48, b=2, c=2)),  # 96-step tokens
    "sundial-base": (SUNDIAL_CODE.env_var, "sundial-sktime-fork/sktime/libs/sundial",
                     ("configuration_sundial.py", "modeling_sundial.py", "flow_loss.py", "ts_generation_mixin.py"),
                     "configuration_sundial.SundialConfig", "modeling_sundial.SundialForPrediction",
                     dict(input_token_len=16, hidden_size=32, intermediate_size=64, output_token_lens=[64],
                          num_hidden_layers=2, num_attention_heads=2, flow_loss_depth=1, num_sampling_steps=5,
                          diffusion_batch_mul=1), dict(b=2, c=2)),  # per-row sampling: fewer rows
}


def _tiny_remote(name: str, folder) -> ModelSpec:
    env_var, staged, files, config_class, model_class, config, _ = REMOTE[name]
    code = require_code(env_var, staged)
    marker = build_folder("remote_code", folder, config, env="transformers440", code=code, code_files=files,
                          code_classes=(config_class, model_class), top_k=2, model=name)
    assert marker["random_weights"] == RANDOM_WEIGHTS_NOTE and marker["parameters"] > 0
    saved = json.loads((folder / "config.json").read_text())
    assert saved["auto_map"]["AutoModelForCausalLM"] == model_class  # the checkpoint carries its own code
    assert all((folder / f.rsplit("/", 1)[-1]).is_file() for f in files)
    spec = get_spec(name)
    few = {"num_samples": 8} if name == "sundial-base" else {}  # the card's 20 samples, fewer: a tiny model
    return dataclasses.replace(spec, options={**spec.options, "weights": str(folder), "trust_remote_code": True, **few})


@pytest.mark.parametrize("name", list(REMOTE))
def test_upstream_remote_code_meets_the_contract(name, tmp_path):
    spec = _tiny_remote(name, tmp_path / f"tiny-{name}")
    assert spec.status() == (READY, None)
    check_forecast_contract(spec, atol=1e-5, **REMOTE[name][-1])
    model = spec.load()
    info = model.describe()
    assert info["transformers"] == "4.40.1" and "transformers440.txt" in info["environment"]
    assert info["model_type"] == {"timemoe-base": "time_moe", "mira-large": "mira", "timer-base": "timer",
                                  "sundial-base": "sundial"}[name]
    if name == "sundial-base":  # a sampling model: quantiles from the same seeded samples as the point
        batch = _series(2, 1, 48)
        q = _queries(batch, 24)
        point, quant = interface.forecast_quantiles(model, batch, q)
        np.testing.assert_array_equal(point, interface.forecast(model, batch, q))
        assert quant.shape == (2, 1, 24, 9) and (np.diff(quant, axis=-1) >= 0).all()
        assert (quant[..., -1] > quant[..., 0]).any()  # the samples spread
    if name == "mira-large":  # its positions are the timestamps (CT-RoPE): a gap in them changes the forecast
        batch = _series(1, 1, 48)
        gap = batch.timestamps.copy()
        gap[:, :24] -= 2.0  # the first half recorded earlier
        q = _queries(batch, 8)
        assert not np.allclose(interface.forecast(model, batch, q),
                               interface.forecast(model, interface.SeriesBatch(batch.values, gap), q))


def test_a_tiny_upstream_model_runs_through_the_harness_and_its_rows_stay_out_of_the_tables(tmp_path):
    import pandas as pd

    from harness.cli import main
    from harness.records.store import random_weight_rows, read_records

    folder = tmp_path / "tiny-timemoe"
    _tiny_remote("timemoe-base", folder)
    out = tmp_path / "run"
    assert main(["run", "forecasting", "--models", "timemoe-base", "last-value", "--settings", "48/24",
                 "--weights", f"timemoe-base={folder}", "--trust-remote-code", "timemoe-base",
                 "--max-windows-per-subject", "1", "--out", str(out), "--no-progress"]) == 0
    rows = pd.read_csv(out / "records.csv")
    mine = rows[rows.model == "timemoe-base"]
    assert len(mine) and (mine.status == "ok").all(), mine[["status", "error"]].to_string()
    assert all(json.loads(i)["random_weights"] == RANDOM_WEIGHTS_NOTE for i in mine.model_info)
    assert "timemoe-base" not in set(read_records(out / "records.csv").model)  # no table sees them
    assert set(random_weight_rows(out / "records.csv").model) == {"timemoe-base"}


def test_upstream_lag_llama_code_meets_the_contract(tmp_path):
    code = require_code("SOTER_BENCH_LAG_LLAMA_CODE", "lag-llama")
    folder = tmp_path / "tiny-lag-llama"
    marker = build_folder("lag_llama", folder, dict(context_length=32, input_size=1, n_layer=1, n_embd_per_head=4,
                                                    n_head=2, scaling="robust", time_feat=True),
                          env="lag-llama", code=code, model="lag-llama")
    assert (folder / "lag-llama.ckpt").is_file() and marker["parameters"] > 0
    spec = get_spec("lag-llama")
    spec = dataclasses.replace(spec, options={**spec.options, "weights": str(folder), "code": str(code),
                                              "worker_options": {"num_samples": 10}})
    assert spec.status() == (READY, None)
    check_forecast_contract(spec, t=32, h=16, b=2, c=2, atol=1e-5)  # each series is sampled on its own: few rows
    model = spec.load()
    info = model.describe()
    assert info["gluonts"] == "0.14.4" and info["unexpected_keys"] == 0 and info["lag_llama_code"] == str(code)
    batch = _series(2, 1, 48)
    q = _queries(batch, 24)
    point, quant = interface.forecast_quantiles(model, batch, q)
    np.testing.assert_array_equal(point, interface.forecast(model, batch, q))
    assert quant.shape == (2, 1, 24, 9) and (np.diff(quant, axis=-1) >= 0).all()
