"""The decoder field's log-dt input (`field_dt`, rule V7 in docs/soter-anchored-rules.md): its column starts at
zero, so the model is exactly the one without it in every path; it does reach the field; a checkpoint without it
starts a run with it unchanged; the option round-trips through config.json."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from models.soter.config import SoterConfig, preset
from models.soter.io import CheckpointError, from_pretrained, save_pretrained, write_checksums
from models.soter.model import SoterModel
from models.soter.training.trainer import extension_of, load_extended
from tests.soter.test_cpu_training import _cfg
from tests.soter.test_recipe_options import _window

BASE = dict(input_scaling="window", value_embedding=True, output_skip="damped-trend")


def extended_pair(base: dict, **added) -> tuple[SoterModel, SoterModel]:
    """A seeded soter-tiny with the ``base`` options, and the same weights loaded into the model with ``added``
    options (``load_extended``): the pair every option that only adds parameters is tested on."""
    torch.manual_seed(0)
    plain = SoterModel(preset("soter-tiny").replace(**base)).eval()
    extended = SoterModel(plain.config.replace(**added)).eval()
    load_extended(extended, plain, "test")
    return plain, extended


def assert_a_fresh_head_is_the_parent(base: dict, head: str, init: tuple[float, ...], **added) -> None:
    """An anchor head that ``added`` brings in starts at weight 0 and bias ``init`` (gain ``init[0]`` = 0), so
    the extended model equals its parent in every decoding path."""
    plain, extended = extended_pair(base, **added)
    fresh = getattr(SoterModel(plain.config.replace(**added)), head)
    assert torch.equal(fresh.weight, torch.zeros_like(fresh.weight))
    assert init[0] == 0 and fresh.bias.tolist() == pytest.approx(list(init))
    for a, b in zip(_paths(plain), _paths(extended)):
        assert torch.equal(a, b)


def _pair() -> tuple[SoterModel, SoterModel]:
    return extended_pair(BASE, field_dt=True)


def _paths(model: SoterModel) -> list[torch.Tensor]:
    values, times, query = _window()
    mask = torch.rand(values.shape, generator=torch.Generator().manual_seed(2)) > 0.3
    with torch.no_grad():
        return [model.forecast(values, times, query[:, :3], r) for r in ("per-query", "direct", "autoregressive")] + [
            model.predict(values, times, mask, query[:, :1], True, "hold"), model.embed_batch(values, times, mask)]


def test_zero_column_is_exactly_the_model_without_it():
    plain, extended = _pair()
    fresh = SoterModel(plain.config.replace(field_dt=True))
    assert torch.equal(fresh.decoder.field.layers[0].weight[:, -1], torch.zeros(fresh.config.decoder_hidden[0]))
    assert extended.decoder.field.layers[0].weight.shape[1] == plain.decoder.field.layers[0].weight.shape[1] + 1
    for a, b in zip(_paths(plain), _paths(extended)):
        assert torch.equal(a, b)


def test_log_dt_reaches_the_field():
    _, extended = _pair()
    before = _paths(extended)[0]
    with torch.no_grad():
        extended.decoder.field.layers[0].weight[:, -1].normal_(std=0.5)
    after = _paths(extended)[0]
    assert not torch.allclose(before, after)
    field = extended.decoder.field
    h = torch.randn(3, field.layers[0].in_features - 3)
    s = torch.tensor(0.5)
    with torch.no_grad():
        near, far = field(s, h, None, torch.full((3,), -4.0)), field(s, h, None, torch.zeros(3))
    assert not torch.allclose(near, far)
    with pytest.raises(ValueError, match="log dt"):
        field(s, h, None)


def test_config_round_trip_and_extension_rules(tmp_path):
    cfg = preset("soter-tiny").replace(**BASE, field_dt=True)
    assert SoterConfig.from_dict(cfg.to_dict()) == cfg and not cfg.is_faithful
    assert not preset("soter-tiny").replace(field_dt=True).is_faithful
    old = cfg.to_dict()
    old.pop("field_dt")
    assert SoterConfig.from_dict(old).field_dt is False
    plain = cfg.replace(field_dt=False)
    assert extension_of(plain, cfg) and not extension_of(cfg, plain) and not extension_of(cfg, cfg)
    assert extension_of(plain.replace(output_skip="last-value"), cfg)  # both extensions at once
    assert not extension_of(plain.replace(hidden_size=64, num_heads=2), cfg)
    _, extended = _pair()
    save_pretrained(extended, tmp_path / "ckpt")
    back = from_pretrained(tmp_path / "ckpt").eval()
    for a, b in zip(_paths(extended), _paths(back)):
        assert torch.equal(a, b)


def test_a_checkpoint_without_it_starts_a_run_with_it(corpus, tmp_path):
    from models.soter.training.trainer import Trainer

    torch.manual_seed(3)
    source = SoterModel(preset("soter-tiny").replace(**BASE))
    save_pretrained(source, tmp_path / "ckpt")
    write_checksums(tmp_path / "ckpt")
    trainer = Trainer(_cfg(corpus, tmp_path / "run", init_weights=str(tmp_path / "ckpt"), field_dt=True,
                           aux_absolute_weight=0.5, **BASE))
    source.eval()
    trainer.model.eval()
    for a, b in zip(_paths(source), _paths(trainer.model)):
        assert torch.equal(a, b)
    trainer.fit(log=lambda m: None)
    assert from_pretrained(tmp_path / "run" / "checkpoint-00000004").config.field_dt
    other = dataclasses.replace(source.config, value_embedding_init=0.5)
    save_pretrained(SoterModel(other), tmp_path / "other")
    with pytest.raises(CheckpointError, match="value_embedding_init"):
        Trainer(_cfg(corpus, tmp_path / "run2", init_weights=str(tmp_path / "other"), field_dt=True, **BASE))
