"""The anchor's mean reversion (`mean_reversion`, rule V11 in docs/soter-anchored-rules.md): a fresh head (gain 0)
is exactly the model without it in every path; with a zero readout change the forecast is the stated formula,
counted in sampling intervals so one head serves every rate; it is causal; a checkpoint without it starts a run
with it unchanged; the option round-trips through config.json; its head trains at its own rate."""

from __future__ import annotations

import math

import pytest
import torch

from models.soter.config import ConfigError, SoterConfig, preset
from models.soter.io import from_pretrained, save_pretrained
from models.soter.model import REVERSION_HEAD_INIT, SoterModel, mean_interval
from models.soter.training.config import TrainConfig
from models.soter.training.trainer import Trainer, extension_of
from tests.soter.test_cpu_training import _cfg
from tests.soter.test_field_dt import _paths, assert_a_fresh_head_is_the_parent, extended_pair
from tests.soter.test_recipe_options import _window, _zero_readout

BASE = dict(input_scaling="window", value_embedding=True, output_skip="damped-trend", field_dt=True)


def _pair() -> tuple[SoterModel, SoterModel]:
    return extended_pair(BASE, mean_reversion=True)


def _set_head(head: torch.nn.Linear, gain: float, log_tau: float) -> None:
    """An anchor head (reversion or short trend) set to the same (gain, log tau) for every row."""
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.tensor([gain, log_tau]))


def test_a_fresh_head_is_exactly_the_model_without_it():
    assert_a_fresh_head_is_the_parent(BASE, "reversion_head", REVERSION_HEAD_INIT, mean_reversion=True)


@pytest.mark.parametrize("rate", [64.0, 360.0])
def test_zero_readout_and_no_trend_forecast_is_the_stated_formula(rate):
    torch.manual_seed(0)
    model = SoterModel(preset("soter-tiny").replace(input_scaling="window", value_embedding=True,
                                                    output_skip="last-value", mean_reversion=True)).eval()
    _zero_readout(model)
    gain, tau = 0.7, 5.0
    _set_head(model.reversion_head, gain, math.log(tau))
    values, times, _ = _window()
    times = times * 64 / rate  # the same samples at another rate: the forecast per step must not change
    steps = torch.arange(1, 9, dtype=torch.float64)
    query = times[:, -1:] + steps / rate
    with torch.no_grad():
        got = model.forecast(values, times, query, "per-query")
    last, mean = values[..., -1:].double(), values.double().mean(-1, keepdim=True)
    expected = last + gain * (mean - last) * (1 - torch.exp(-steps / tau))
    assert torch.allclose(got.double(), expected, atol=1e-5)
    _set_head(model.reversion_head, 1.0, math.log(1.0))  # full gain, fastest reversion: the mean within a few steps
    with torch.no_grad():
        far = model.forecast(values, times, times[:, -1:] + torch.tensor([[40.0]], dtype=torch.float64) / rate,
                             "per-query")
    assert torch.allclose(far.double(), mean, atol=1e-5)


def test_interval_is_the_context_span_over_its_steps():
    times = torch.tensor([[0.0, 0.5, 1.0, 2.0], [10.0, 10.25, 10.5, 10.75]], dtype=torch.float64)
    got = mean_interval(times, channels=3)
    assert got.shape == (2, 3, 1) and got[0, 0, 0] == pytest.approx(2 / 3) and got[1, 2, 0] == pytest.approx(0.25)


def test_the_reversion_is_causal_and_uses_observed_points_only():
    _, model = _pair()
    _set_head(model.reversion_head, 0.5, math.log(4.0))
    values, times, query = _window()
    mask = torch.ones_like(values, dtype=torch.bool)
    mask[..., 10:20] = False
    hidden = values.clone()
    hidden[..., 10:20] += 50.0  # unobserved points: the mean and the anchor must not see them
    with torch.no_grad():
        a = model.predict(values, times, mask, query[:, :2], True, "hold")
        b = model.predict(hidden, times, mask, query[:, :2], True, "hold")
    assert torch.equal(a, b)


def test_config_round_trip_faithfulness_and_extension_rules(tmp_path):
    cfg = preset("soter-tiny").replace(**BASE, mean_reversion=True)
    assert SoterConfig.from_dict(cfg.to_dict()) == cfg and not cfg.is_faithful
    old = cfg.to_dict()
    old.pop("mean_reversion")
    assert SoterConfig.from_dict(old).mean_reversion is False  # checkpoints written before the option
    with pytest.raises(ConfigError, match="mean_reversion"):
        preset("soter-tiny").replace(mean_reversion=True)
    plain = cfg.replace(mean_reversion=False)
    assert extension_of(plain, cfg) and not extension_of(cfg, plain)
    assert extension_of(plain.replace(field_dt=False, output_skip="last-value"), cfg)
    _, extended = _pair()
    _set_head(extended.reversion_head, 0.3, math.log(6.0))
    save_pretrained(extended, tmp_path / "ckpt")
    back = from_pretrained(tmp_path / "ckpt").eval()
    assert back.config.mean_reversion
    for a, b in zip(_paths(extended), _paths(back)):
        assert torch.equal(a, b)


def test_a_run_starts_from_a_checkpoint_without_it_and_trains_the_head_at_its_own_rate(corpus, tmp_path):
    plain, _ = _pair()
    save_pretrained(plain, tmp_path / "parent")
    cfg = _cfg(corpus, tmp_path / "run", **BASE, mean_reversion=True, group_lr={"reversion_head": 0.05, "trend_head": 0.01},
               init_weights=str(tmp_path / "parent"))
    trainer = Trainer(cfg, device="cpu")
    assert trainer.model.config.mean_reversion
    for name, value in plain.state_dict().items():
        assert torch.equal(trainer.model.state_dict()[name], value)
    rates = sorted(g["initial_lr"] for g in trainer.opt.param_groups)  # before the schedule's warmup factor
    assert rates == pytest.approx(sorted([cfg.lr, 0.01, 0.05]))
    head = {id(p) for p in trainer.model.reversion_head.parameters()}
    (group,) = [g for g in trainer.opt.param_groups if {id(p) for p in g["params"]} == head]
    assert group["lr"] == pytest.approx(0.05 * trainer.opt.param_groups[0]["lr"] / cfg.lr)  # scaled alike
    before = trainer.model.reversion_head.bias.detach().clone()
    trainer.train_step()
    assert not torch.equal(before, trainer.model.reversion_head.bias.detach())  # the head gets a gradient
    with pytest.raises(ValueError, match="group_lr: this model has no submodule .reversion_head."):
        Trainer(_cfg(corpus, tmp_path / "x", **BASE, group_lr={"reversion_head": 0.05}), device="cpu")
    options = dict(mean_reversion="true", output_skip="last-value")  # as --model-option gives them
    assert TrainConfig(model_options=options).model_config().mean_reversion is True
