"""End to end: the real MOMENT and Moirai environments, created from baselines/envs/*.txt, and their
workers forecasting with TINY RANDOMLY INITIALISED models built from the libraries' own classes.

Slow (minutes: each environment is installed from the package index) and skipped unless
SOTER_BENCH_SLOW=1. Environments go to this session's temporary cache ($SOTER_BENCH_CACHE from
tests/conftest.py), so every run really creates them; SOTER_BENCH_SLOW_CACHE=DIR puts them in DIR
instead (kept between runs: for re-running these tests after a change to a worker, not to its pins).
Random weights exist only here.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time

import numpy as np
import pytest

from baselines import isolated
from baselines.testing import check_forecast_contract, queries as _queries, series as _series
from models.registry import READY, get_spec
from protocols import interface

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("SOTER_BENCH_SLOW") != "1",
                                 reason="creates real virtual environments (minutes, package index): SOTER_BENCH_SLOW=1")]

@pytest.fixture(autouse=True)
def _reused_cache(monkeypatch):
    if os.environ.get("SOTER_BENCH_SLOW_CACHE"):  # after conftest's autouse fixture: this one wins
        monkeypatch.setenv("SOTER_BENCH_CACHE", os.environ["SOTER_BENCH_SLOW_CACHE"])


TINY_MOMENT = """
import sys, torch
from momentfm import MOMENTPipeline
torch.manual_seed(0)
t5 = {"d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2, "num_heads": 4, "vocab_size": 32,
      "feed_forward_proj": "gated-gelu", "dropout_rate": 0.1, "layer_norm_epsilon": 1e-6,
      "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128, "is_encoder_decoder": True,
      "model_type": "t5"}
config = {"task_name": "reconstruction", "model_name": "MOMENT", "transformer_type": "encoder_only", "d_model": None,
          "seq_len": 512, "patch_len": 8, "patch_stride_len": 8, "device": "cpu",
          "transformer_backbone": "google/flan-t5-small", "model_kwargs": {}, "t5_config": t5}
model = MOMENTPipeline(config, model_kwargs={"task_name": "reconstruction"})
model.init()
model.save_pretrained(sys.argv[1])  # config.json + model.safetensors, as AutonLab/MOMENT-1-*
"""

TINY_MOIRAI = """
import sys, torch
family, out = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
if family == "moirai-moe":
    from uni2ts.distribution import (LogNormalOutput, MixtureOutput, NegativeBinomialOutput, NormalFixedScaleOutput,
                                     StudentTOutput)
    from uni2ts.model.moirai_moe import MoiraiMoEModule
    distr = MixtureOutput([StudentTOutput(), NormalFixedScaleOutput(), NegativeBinomialOutput(), LogNormalOutput()])
    module = MoiraiMoEModule(distr_output=distr, d_model=64, d_ff=64, num_layers=2, patch_sizes=(8, 16, 32, 64, 128),
                             max_seq_len=512, attn_dropout_p=0.0, dropout_p=0.0)
    for m in module.modules():  # the router centroids start as torch.empty: initialise them by hand
        if isinstance(getattr(m, "centroid", None), torch.Tensor):
            torch.nn.init.normal_(m.centroid)
else:
    from uni2ts.model.moirai2 import Moirai2Module
    module = Moirai2Module(d_model=64, d_ff=64, num_layers=2, patch_size=16, max_seq_len=512, attn_dropout_p=0.0,
                           dropout_p=0.0, num_predict_token=2)
module.save_pretrained(out)  # config.json + model.safetensors, as Salesforce/moirai-*
"""


def _env(name: str) -> str:
    started = time.perf_counter()
    python = isolated.ensure_env(isolated.ENVS[name])
    print(f"\n[{name}] environment: {time.perf_counter() - started:.0f} s")
    assert isolated.env_ready(isolated.ENVS[name])
    return str(python)


def _tiny(python: str, code: str, *args: str) -> None:
    subprocess.run([python, "-c", code, *args], check=True, env=isolated._clean_env())


def _with(name: str, folder, **options) -> object:
    spec = get_spec(name)
    return dataclasses.replace(spec, options={**spec.options, "weights": str(folder), **options})


def test_moment_end_to_end(tmp_path, capsys):
    python = _env("moment")
    assert _env("moment") == python  # cached: returns at once
    _tiny(python, TINY_MOMENT, str(tmp_path / "tiny-moment"))
    spec = _with("moment-small", tmp_path / "tiny-moment")
    assert spec.status() == (READY, None)
    check_forecast_contract(spec, atol=1e-5)

    model = spec.load()
    batch = _series(3, 2, 64)
    assert interface.embed(model, batch).shape == (3, 32)
    info = model.describe()
    assert "masked reconstruction" in info["forecast"] and info["momentfm"] == "0.1.4"
    assert "moment.txt" in info["environment"]

    # the runner treats it like any other model
    from harness.cli import main

    out = tmp_path / "run"
    assert main(["run", "forecasting", "--models", "moment-small", "last-value", "--settings", "48/24",
                 "--weights", f"moment-small={tmp_path / 'tiny-moment'}", "--max-windows-per-subject", "2",
                 "--out", str(out), "--no-progress"]) == 0
    import pandas as pd

    records = pd.read_csv(out / "records.csv")
    rows = records[records.model == "moment-small"]
    assert len(rows) and (rows.status == "ok").all(), rows[["status", "error"]].to_string()
    assert "masked reconstruction" in rows.model_info.iloc[0]


@pytest.mark.parametrize("name,family", [("moirai-moe-small", "moirai-moe"), ("moirai-2.0-small", "moirai2")])
def test_moirai_end_to_end(name, family, tmp_path):
    python = _env("moirai")
    folder = tmp_path / f"tiny-{family}"
    _tiny(python, TINY_MOIRAI, family, str(folder))
    # small sample count and span: the tiny MoE still takes seconds per forward pass on two CPU cores
    spec = _with(name, folder, worker_options={"family": family, "num_samples": 10, "span": 16})
    assert spec.status() == (READY, None)
    check_forecast_contract(spec, t=32, h=16, b=2, c=2, atol=1e-5)
    info = spec.load().describe()
    assert info["uni2ts"] == "2.0.0" and info["torch"].startswith("2.13") and info["family"] == family
    batch = _series(2, 3, 32)
    model = spec.load()
    q = _queries(batch, 40)  # 3 patches ahead
    out = interface.forecast(model, batch, q)
    assert np.isfinite(out).all()

    # quantiles: from the same pass (the same sample paths for Moirai-MoE), the point bit-identical
    assert model.capabilities.quantiles
    point, quant = interface.forecast_quantiles(model, batch, q)
    np.testing.assert_array_equal(point, out)
    assert quant.shape == (2, 3, 40, 9) and np.isfinite(quant).all()
    if family == "moirai-moe":  # empirical quantiles of the paths: monotone in level, any level
        assert info["quantile_levels"] == "any"
        assert (np.diff(quant, axis=-1) >= 0).all()
        _, tails = interface.forecast_quantiles(model, batch, q, levels=(0.025, 0.975))
        assert (tails[..., 0] <= quant[..., 0]).all() and (tails[..., 1] >= quant[..., -1]).all()
    else:  # its quantile head's own levels (the deciles), the point being its 0.5 quantile
        assert info["quantile_levels"] == list(interface.QUANTILE_LEVELS)
        np.testing.assert_array_equal(quant[..., 4], point)
        with pytest.raises(ValueError, match=r"moirai-2.0-small forecasts the quantiles .*, not \[0.25\]"):
            interface.forecast_quantiles(model, batch, q, levels=(0.25,))
