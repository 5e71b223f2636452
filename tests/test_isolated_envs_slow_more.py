"""End to end: the real TTM and TimesFM 1.0/2.0 environments, created from baselines/envs/{ttm,timesfm1}.txt,
and their workers forecasting with TINY RANDOMLY INITIALISED models built from the libraries' own classes.

Slow (minutes: each environment is installed from the package index) and skipped unless
SOTER_BENCH_SLOW_MORE=1 (not SOTER_BENCH_SLOW: CI runs only tests/test_isolated_envs_slow.py).
Environments go to this session's temporary cache ($SOTER_BENCH_CACHE from tests/conftest.py), so
every run really creates them. Random weights exist only here.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from baselines.testing import check_forecast_contract, queries as _queries, series as _series
from models.registry import READY
from protocols import interface
from tests.test_isolated_envs_slow import _env, _reused_cache, _tiny, _with  # noqa: F401 (an autouse fixture)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("SOTER_BENCH_SLOW_MORE") != "1",
                                 reason="creates real virtual environments (minutes, package index): "
                                        "SOTER_BENCH_SLOW_MORE=1")]

TINY_TTM = """
import sys, torch
from tsfm_public.models.tinytimemixer import TinyTimeMixerConfig, TinyTimeMixerForPrediction
torch.manual_seed(0)
config = TinyTimeMixerConfig(context_length=64, prediction_length=16, patch_length=8, patch_stride=8,
                             num_input_channels=1, d_model=16, num_layers=2, decoder_num_layers=1, decoder_d_model=16,
                             scaling="std", adaptive_patching_levels=0, dropout=0.0, head_dropout=0.0)
TinyTimeMixerForPrediction(config).save_pretrained(sys.argv[1])  # config.json + model.safetensors, as ibm-granite/*
"""

TINY_TIMESFM = """
import os, sys, torch
from timesfm import pytorch_patched_decoder as ppd
version, out = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
# 16 heads: TimesFmTorch builds its decoder with the default 16 key-value heads
cfg = ppd.TimesFMConfig(num_layers=2, num_heads=16, num_kv_heads=16, hidden_size=32, intermediate_size=32, head_dim=2,
                        patch_len=32, horizon_len=128, use_positional_embedding=version == "1.0")
os.makedirs(out, exist_ok=True)
model = ppd.PatchedTimeSeriesDecoder(cfg)
with torch.no_grad():  # timesfm leaves it torch.empty (uninitialised memory; could be NaN): its neutral value
    for name, p in model.named_parameters():
        if name.endswith("self_attn.scaling"):
            p.zero_()
torch.save(model.state_dict(), os.path.join(out, "torch_model.ckpt"))  # as google/*-pytorch
"""


def test_ttm_end_to_end(tmp_path):
    python = _env("ttm")
    folder = tmp_path / "tiny-ttm"
    _tiny(python, TINY_TTM, str(folder))
    spec = _with("ttm", folder)
    assert spec.status() == (READY, None)
    # context 48 < the tiny model's 64 (left padding), horizon 24 > its 16 (rolled out in fixed blocks)
    check_forecast_contract(spec, atol=1e-5)
    model = spec.load()
    info = model.describe()
    assert info["granite-tsfm"] == "0.3.2" and info["transformers"] == "4.56.0" and info["torch"].startswith("2.13")
    assert info["context_length"] == 64 and info["prediction_length"] == 16 and "ttm.txt" in info["environment"]
    long = _series(2, 1, 100)  # longer than the context: the latest 64 steps are used
    cut = interface.SeriesBatch(long.values[:, :, -64:], long.timestamps[:, -64:])
    np.testing.assert_allclose(interface.forecast(model, long, _queries(long, 20)),
                               interface.forecast(model, cut, _queries(cut, 20)), atol=1e-5)


@pytest.mark.parametrize("name,version", [("timesfm-1.0", "1.0"), ("timesfm-2.0", "2.0")])
def test_timesfm_end_to_end(name, version, tmp_path):
    python = _env("timesfm1")
    folder = tmp_path / f"tiny-timesfm-{version}"
    _tiny(python, TINY_TIMESFM, version, str(folder))
    spec = _with(name, folder)
    assert spec.status() == (READY, None)
    check_forecast_contract(spec, atol=1e-5)
    model = spec.load()
    info = model.describe()
    assert info["timesfm"] == "1.3.0" and info["version"] == version and info["num_layers"] == 2
    assert info["context_len"] == (512 if version == "1.0" else 2048) and "timesfm1.txt" in info["environment"]
    batch = _series(2, 1, 64)
    long_h = interface.forecast(model, batch, _queries(batch, 150))  # beyond one 128-step output patch
    assert np.isfinite(long_h).all()
    np.testing.assert_allclose(long_h[:, :, :24], interface.forecast(model, batch, _queries(batch, 24)), atol=1e-5)
    # quantiles: the quantile head's deciles from the same calls as the mean, which stays bit-identical
    assert model.capabilities.quantiles and info["quantile_levels"] == list(interface.QUANTILE_LEVELS)
    point, quant = interface.forecast_quantiles(model, batch, _queries(batch, 150))
    np.testing.assert_array_equal(point, long_h)
    assert quant.shape == (2, 1, 150, 9) and np.isfinite(quant).all()
    with pytest.raises(ValueError, match=rf"{name} forecasts the quantiles .*, not \[0.25\]"):
        interface.forecast_quantiles(model, batch, _queries(batch, 24), levels=(0.25,))
