"""Checkpoints: round trip, sharding, and clear errors."""

from __future__ import annotations

import json

import pytest
import torch

from models.registry import all_specs
from models.soter.config import preset
from models.soter.io import CheckpointError, from_pretrained, save_pretrained
from models.soter.model import SoterModel


@pytest.fixture()
def model():
    torch.manual_seed(0)
    return SoterModel(preset("soter-tiny")).eval()


def _same(a: SoterModel, b: SoterModel) -> None:
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)


def test_round_trip_single_and_sharded(tmp_path, model):
    _same(model, from_pretrained(save_pretrained(model, tmp_path / "one")))
    save_pretrained(model, tmp_path / "many", max_shard_bytes=40_000)
    shards = sorted((tmp_path / "many").glob("model-*.safetensors"))
    assert len(shards) > 2 and (tmp_path / "many" / "model.safetensors.index.json").is_file()
    _same(model, from_pretrained(tmp_path / "many"))


def test_truncated_shard_is_named(tmp_path, model):
    save_pretrained(model, tmp_path / "m", max_shard_bytes=40_000)
    victim = sorted((tmp_path / "m").glob("model-*.safetensors"))[1]
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(CheckpointError, match=victim.name):
        from_pretrained(tmp_path / "m")


def test_missing_files_are_named(tmp_path, model):
    save_pretrained(model, tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors: missing weight file"):
        from_pretrained(tmp_path / "m")
    with pytest.raises(CheckpointError, match="config.json"):
        from_pretrained(tmp_path / "nowhere")


def test_config_weight_mismatch_is_named(tmp_path, model):
    save_pretrained(model, tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["hidden_size"] = 64
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="do not match .*config.json"):
        from_pretrained(tmp_path / "m")


def test_registry_soter_is_unavailable_without_checkpoint_and_loads_with_one(tmp_path, model):
    spec = all_specs()["soter"]
    assert "no trained SOTER checkpoint" in spec.unavailable_reason(weights=str(tmp_path / "empty"))
    save_pretrained(model, tmp_path / "ckpt")
    assert spec.unavailable_reason(weights=str(tmp_path / "ckpt")) is None
    adapter = spec.load(weights=str(tmp_path / "ckpt"))
    assert adapter.name == "soter" and adapter.describe()["source"].endswith("ckpt")
    assert "RANDOM WEIGHTS" in all_specs()["soter-tiny-random"].description
