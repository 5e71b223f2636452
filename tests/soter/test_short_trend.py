"""The anchor's short trend (`short_trend_points`, rule V12 in docs/soter-anchored-rules.md): a fresh head (gain 0)
is exactly the model without it in every path; with a zero readout change the forecast is the stated formula, the
same per step at any sampling rate; it uses observed points only; a checkpoint without it starts a run with it
unchanged; the option round-trips through config.json; its head trains at its own rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from models.soter.config import ConfigError, SoterConfig, preset
from models.soter.io import from_pretrained, save_pretrained
from models.soter.model import SHORT_TREND_HEAD_INIT, SoterModel
from models.soter.training.config import TrainConfig
from models.soter.training.trainer import Trainer, extension_of
from tests.soter.test_cpu_training import _cfg
from tests.soter.test_field_dt import _paths, assert_a_fresh_head_is_the_parent, extended_pair
from tests.soter.test_mean_reversion import _set_head
from tests.soter.test_recipe_options import _window, _zero_readout

BASE = dict(input_scaling="window", value_embedding=True, output_skip="damped-trend", field_dt=True,
            mean_reversion=True)


def _pair() -> tuple[SoterModel, SoterModel]:
    return extended_pair(BASE, short_trend_points=3)


def test_a_fresh_head_is_exactly_the_model_without_it():
    assert_a_fresh_head_is_the_parent(BASE, "short_trend_head", SHORT_TREND_HEAD_INIT, short_trend_points=3)


@pytest.mark.parametrize("rate", [64.0, 360.0])
def test_zero_readout_forecast_is_the_stated_formula_per_step_at_any_rate(rate):
    torch.manual_seed(0)
    model = SoterModel(preset("soter-tiny").replace(input_scaling="window", value_embedding=True,
                                                    output_skip="last-value", short_trend_points=3)).eval()
    _zero_readout(model)
    gain, tau = 0.6, 3.0
    _set_head(model.short_trend_head, gain, math.log(tau))
    values, times, _ = _window()
    times = times * 64 / rate
    steps = torch.arange(1, 9, dtype=torch.float64)
    with torch.no_grad():
        got = model.forecast(values, times, times[:, -1:] + steps / rate, "per-query").double()
    last = values[..., -1:].double()
    per_step = torch.tensor([[np.polyfit(np.arange(3.0), row[-3:].double().numpy(), 1)[0] for row in sample]
                             for sample in values], dtype=torch.float64)[..., None]  # slope per sample
    expected = last + gain * per_step * tau * (1 - torch.exp(-steps / tau))
    assert torch.allclose(got, expected, atol=1e-5)


def test_only_observed_points_make_the_short_slope():
    _, model = _pair()
    _set_head(model.short_trend_head, 0.8, math.log(2.0))
    values, times, query = _window()
    mask = torch.ones_like(values, dtype=torch.bool)
    mask[..., -4:-1] = False  # the short slope must skip the three hidden points
    hidden = values.clone()
    hidden[..., -4:-1] -= 30.0
    with torch.no_grad():
        a = model.predict(values, times, mask, query[:, :2], True, "hold")
        b = model.predict(hidden, times, mask, query[:, :2], True, "hold")
    assert torch.equal(a, b)


def test_config_round_trip_faithfulness_and_extension_rules(tmp_path):
    cfg = preset("soter-tiny").replace(**BASE, short_trend_points=3)
    assert SoterConfig.from_dict(cfg.to_dict()) == cfg and not cfg.is_faithful
    old = cfg.to_dict()
    old.pop("short_trend_points")
    assert SoterConfig.from_dict(old).short_trend_points == 0  # checkpoints written before the option
    with pytest.raises(ConfigError, match="short_trend_points"):
        preset("soter-tiny").replace(short_trend_points=3)
    with pytest.raises(ConfigError, match=">= 2"):
        cfg.replace(short_trend_points=1)
    plain = cfg.replace(short_trend_points=0)
    assert extension_of(plain, cfg) and not extension_of(cfg, plain)
    assert extension_of(plain.replace(mean_reversion=False), cfg)
    _, extended = _pair()
    _set_head(extended.short_trend_head, 0.4, math.log(5.0))
    save_pretrained(extended, tmp_path / "ckpt")
    back = from_pretrained(tmp_path / "ckpt").eval()
    assert back.config.short_trend_points == 3
    for a, b in zip(_paths(extended), _paths(back)):
        assert torch.equal(a, b)


def test_a_run_starts_from_a_checkpoint_without_it_and_trains_the_head_at_its_own_rate(corpus, tmp_path):
    plain, _ = _pair()
    save_pretrained(plain, tmp_path / "parent")
    cfg = _cfg(corpus, tmp_path / "run", **BASE, short_trend_points=3, group_lr={"short_trend_head": 0.05},
               init_weights=str(tmp_path / "parent"))
    trainer = Trainer(cfg, device="cpu")
    for name, value in plain.state_dict().items():
        assert torch.equal(trainer.model.state_dict()[name], value)
    head = {id(p) for p in trainer.model.short_trend_head.parameters()}
    (group,) = [g for g in trainer.opt.param_groups if {id(p) for p in g["params"]} == head]
    assert group["initial_lr"] == 0.05
    before = trainer.model.short_trend_head.bias.detach().clone()
    trainer.train_step()
    assert not torch.equal(before, trainer.model.short_trend_head.bias.detach())
    with pytest.raises(ValueError, match="group_lr: this model has no submodule 'short_trend_head'"):
        Trainer(_cfg(corpus, tmp_path / "x", **BASE, group_lr={"short_trend_head": 0.05}), device="cpu")
    options = dict(short_trend_points="2", output_skip="last-value")  # as --model-option gives them
    assert TrainConfig(model_options=options).model_config().short_trend_points == 2
