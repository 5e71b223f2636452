"""Loading the authors' checkpoint format: config conversion (their 12-layer release included),
the parameter-name map, weights-only PyTorch files, and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from models.registry import get_spec
from models.soter.authors import convert_config, from_authors, to_authors
from models.soter.config import ConfigError, preset
from models.soter.io import CheckpointError
from models.soter.model import SoterModel
from protocols.interface import SeriesBatch, forecast

# the shape of their released config.json (fields of their SoterConfig)
RELEASE = {"model_type": "soter", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 12,
           "num_attention_heads": 2, "ci_layers": [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11], "cd_layers": [5],
           "num_experts": 4, "num_experts_per_tok": 2, "dft_router_impl": "prefix_parallel",
           "ode_func_hidden_dims": [16, 16], "ode_solver_method": "dopri5", "ode_solver_atol": 1e-6,
           "ode_solver_rtol": 1e-6, "cde_control_dim": 1, "time_aware_rotary": True, "rope_theta": 10000,
           "rms_norm_eps": 1e-6, "hidden_act": "silu", "input_size": 1, "use_dense": False}


def _checkpoint(folder, cfg_json, fmt="safetensors", seed=0):
    cfg = convert_config(cfg_json)
    torch.manual_seed(seed)
    model = SoterModel(cfg)
    with torch.no_grad():
        model.decoder.readout.bias.zero_()  # their readout has no bias
    theirs = to_authors(model.state_dict(), cfg)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg_json))
    if fmt == "safetensors":
        save_file({k: v.contiguous() for k, v in theirs.items()}, str(folder / "model.safetensors"))
    else:
        torch.save(theirs, folder / "pytorch_model.bin")
    return model


def test_their_release_config_is_expressible():
    cfg = convert_config(RELEASE)
    assert cfg.num_layers == 12 and cfg.cd_layer == 5 and cfg.control and cfg.dft_impl == "fast"
    assert (cfg.rtol, cfg.atol) == (1e-6, 1e-6) and cfg.decoder_hidden == (16, 16) and cfg.top_k == 2
    with pytest.raises(ConfigError, match="cd_layers \\[3, 5\\]"):
        convert_config({**RELEASE, "cd_layers": [3, 5], "ci_layers": [0, 1, 2, 4, 6, 7, 8, 9, 10, 11]})
    with pytest.raises(ConfigError, match="time_scale"):
        convert_config({**RELEASE, "time_scale": 2.0})


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
def test_their_weights_load_and_forecast_identically(tmp_path, fmt):
    original = _checkpoint(tmp_path / "ckpt", RELEASE, fmt)
    loaded = from_authors(tmp_path / "ckpt")
    for k, v in original.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k]), k
    spec = get_spec("soter-authors")
    assert spec.unavailable_reason() and "hf download SII-fkchen/SOTER" in spec.unavailable_reason()
    assert spec.unavailable_reason(weights=str(tmp_path / "ckpt")) is None
    model = spec.load(weights=str(tmp_path / "ckpt"), rollout="direct")
    rng = np.random.default_rng(0)
    batch = SeriesBatch(values=rng.random((2, 3, 24)), timestamps=np.tile(np.arange(24.0) / 8, (2, 1)))
    pred = forecast(model, batch, np.tile(3.0 + np.arange(1, 5) / 8, (2, 1)))
    with torch.no_grad():
        ref = original.eval().forecast(torch.as_tensor(batch.values, dtype=torch.float32),
                                       torch.as_tensor(batch.timestamps), torch.as_tensor(3.0 + np.arange(1, 5)[None].repeat(2, 0) / 8),
                                       rollout="direct")
    np.testing.assert_allclose(pred, ref.numpy(), rtol=1e-6, atol=1e-7)


def test_bad_checkpoints_are_named(tmp_path):
    _checkpoint(tmp_path / "a", RELEASE)
    (tmp_path / "a" / "model.safetensors").write_bytes((tmp_path / "a" / "model.safetensors").read_bytes()[:100])
    with pytest.raises(CheckpointError, match="unreadable weights"):
        from_authors(tmp_path / "a")
    _checkpoint(tmp_path / "b", RELEASE)
    (tmp_path / "b" / "config.json").write_text(json.dumps({**RELEASE, "num_experts": 6}))
    with pytest.raises(CheckpointError, match="the config needs at least [\\d,]+ parameters, the weights hold"):
        from_authors(tmp_path / "b")  # two experts more than the weights hold: refused before the model is built
    (tmp_path / "b" / "config.json").write_text(json.dumps({**RELEASE, "ode_func_hidden_dims": [16, 8]}))
    with pytest.raises(CheckpointError, match="wrong shape"):  # as many parameters or fewer: the shapes tell
        from_authors(tmp_path / "b")
    with pytest.raises(CheckpointError, match="config.json: missing"):
        from_authors(tmp_path / "nowhere")

    class Evil:
        def __reduce__(self):
            return (print, ("code ran",))

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text(json.dumps(RELEASE))
    torch.save({"x": Evil()}, tmp_path / "c" / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="unreadable weights"):  # weights_only refuses the object
        from_authors(tmp_path / "c")


def test_an_oversized_authors_config_is_refused_before_the_model_is_built(tmp_path, monkeypatch):
    from models.soter import authors

    _checkpoint(tmp_path / "big", RELEASE)
    (tmp_path / "big" / "config.json").write_text(json.dumps({**RELEASE, "hidden_size": 8192,
                                                               "intermediate_size": 32768}))

    def never(*_, **__):
        raise AssertionError("the model was built before the config's size was checked")

    monkeypatch.setattr(authors, "SoterModel", never, raising=False)
    import models.soter.model

    monkeypatch.setattr(models.soter.model, "SoterModel", never)
    with pytest.raises(CheckpointError, match="the config needs at least"):
        from_authors(tmp_path / "big")


def test_our_readout_bias_must_be_zero_to_export():
    cfg = preset("soter-tiny")
    state = SoterModel(cfg).state_dict()
    state["decoder.readout.bias"] = torch.ones(1)
    with pytest.raises(CheckpointError, match="no bias"):
        to_authors(state, cfg)
