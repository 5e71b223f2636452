"""The damped-trend anchor (issue #26, rule V5 in docs/soter-anchored-rules.md): its slope is the exact
least-squares slope of the last observed points, a zero readout change with no gain is last value, the trend
term is the stated formula in every decoding path, it is causal, it round-trips through config.json, and a
last-value checkpoint starts a damped-trend run with every shared weight kept."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from models.soter.config import ConfigError, SoterConfig, preset
from models.soter.io import CheckpointError, from_pretrained, save_pretrained, write_checksums
from models.soter.model import TREND_HEAD_INIT, SoterModel, local_slope
from tests.soter.test_cpu_training import _cfg
from tests.soter.test_recipe_options import _window, _zero_readout

TREND = dict(input_scaling="window", value_embedding=True, output_skip="damped-trend")


def _model(**options) -> SoterModel:
    torch.manual_seed(0)
    return SoterModel(preset("soter-tiny").replace(**{**TREND, **options})).eval()


def _set_head(model: SoterModel, logit_gain: float, log_tau: float) -> None:
    with torch.no_grad():
        model.trend_head.weight.zero_()
        model.trend_head.bias.copy_(torch.tensor([logit_gain, log_tau]))


def test_slope_is_the_least_squares_slope_of_the_last_observed_points():
    g = torch.Generator().manual_seed(3)
    times = torch.sort(torch.rand(2, 30, generator=g, dtype=torch.float64) * 5, dim=1).values  # irregular
    values = torch.randn(2, 3, 30, generator=g)
    mask = torch.rand(2, 3, 30, generator=g) > 0.3
    mask[1, 2] = False
    mask[1, 2, 4] = True  # one observed point: no slope
    slope, t_last = local_slope(values, times, mask, points=5)
    for b in range(2):
        for c in range(3):
            idx = torch.nonzero(mask[b, c]).flatten()
            if len(idx) < 2:
                assert slope[b, c, 0] == 0.0
                continue
            last = idx[-5:]
            expected = np.polyfit(times[b, last].numpy(), values[b, c, last].double().numpy(), 1)[0]
            assert slope[b, c, 0].item() == pytest.approx(expected, rel=1e-9, abs=1e-9)
            assert t_last[b, c, 0] == times[b, idx[-1]]
    # points before the last five observed ones do not matter
    changed = values.clone()
    changed[..., :5] += 100.0
    mask_late = mask.clone()
    mask_late[..., -10:] = True  # the last five observed points are the last five samples
    a, _ = local_slope(values, times, mask_late, 5)
    b_, _ = local_slope(changed, times, mask_late, 5)
    assert torch.equal(a, b_)


def test_no_gain_and_zero_readout_change_is_last_value_in_every_path():
    model = _model()
    _zero_readout(model)
    _set_head(model, -80.0, math.log(0.1))  # sigmoid(-80) ~ 1e-35: no trend
    values, times, query = _window()
    last = values[..., -1:].expand(-1, -1, query.shape[1])
    with torch.no_grad():
        for rollout in ("per-query", "direct", "autoregressive"):
            np.testing.assert_allclose(model.forecast(values, times, query, rollout).numpy(), last.numpy(),
                                       rtol=0, atol=1e-6)


def test_trend_term_is_the_stated_formula():
    """g = 1, zero readout change: prediction - last value = slope * tau * (1 - exp(-dt / tau)), for a
    straight line (slope known exactly) and per query; tau -> large gives the linear extrapolation."""
    model = _model(trend_points=6)
    _zero_readout(model)
    tau = math.exp(1.0)
    _set_head(model, 80.0, 1.0)
    values, times, query = _window()
    line = (0.3 + 0.7 * times)[:, None, :].expand_as(values).float().contiguous()
    with torch.no_grad():
        pred = model.forecast(line, times, query, "per-query")
    dt = (query - times[:, -1:])[:, None, :]
    expected = line[..., -1:].double() + 0.7 * tau * (1 - torch.exp(-dt / tau))
    np.testing.assert_allclose(pred.double().numpy(), expected.expand_as(pred).numpy(), rtol=0, atol=2e-6)
    _set_head(model, 80.0, 3.0)  # tau = 20 s against dt <= 1/8 s: within 0.4 % of the straight line
    with torch.no_grad():
        pred = model.forecast(line, times, query, "direct")
    straight = (0.3 + 0.7 * query)[:, None, :].expand_as(pred)
    np.testing.assert_allclose(pred.double().numpy(), straight.numpy(), rtol=0, atol=0.7 * 0.125 * 0.004)


def test_imputation_takes_the_trend_from_the_last_observation():
    """In the controlled (imputation) path the slope and dt start at each row's last observed point."""
    model = _model()
    _zero_readout(model)
    _set_head(model, 80.0, 3.0)
    values, times, _ = _window(t=40)
    line = (0.2 + 0.5 * times)[:, None, :].expand_as(values).float().contiguous()
    mask = torch.ones_like(line, dtype=torch.bool)
    mask[:, 0, -4:] = False  # channel 0's last four points missing
    query = times[:, -1:] + 1 / 64
    with torch.no_grad():
        pred = model.predict(line, times, mask, query, controlled=True, control_beyond="hold")
    tau = math.exp(3.0)
    for c, t_obs in ((0, times[:, -5:-4]), (1, times[:, -1:])):
        dt = query - t_obs
        expected = 0.2 + 0.5 * t_obs + 0.5 * tau * (1 - torch.exp(-dt / tau))
        np.testing.assert_allclose(pred[:, c].double().numpy(), expected.numpy(), rtol=0, atol=2e-6)


def test_forecast_is_causal():
    """A forecast uses the context only: values after t_T cannot reach it, and it does not depend on the
    query values (there are none to give); changing the context's last point changes it."""
    model = _model()
    values, times, query = _window()
    with torch.no_grad():
        base = model.forecast(values, times, query, "per-query")
        longer = torch.cat([values, values[..., -1:] + 5.0], dim=-1)
        longer_t = torch.cat([times, query[:, :1]], dim=1)
        # the prefix forecast of the longer window is the same as the original one's
        again = model.forecast(longer[..., :-1], longer_t[:, :-1], query, "per-query")
        moved = values.clone()
        moved[..., -1] += 0.5
        other = model.forecast(moved, times, query, "per-query")
    assert torch.equal(base, again) and not torch.allclose(base, other)


def test_config_round_trip_and_old_configs(tmp_path):
    cfg = preset("soter-tiny").replace(**TREND, trend_points=5)
    assert SoterConfig.from_dict(cfg.to_dict()) == cfg and not cfg.is_faithful
    with pytest.raises(ConfigError, match="trend_points"):
        cfg.replace(trend_points=1)
    with pytest.raises(ConfigError, match="output_skip"):
        cfg.replace(output_skip="trend")
    old = cfg.to_dict()
    for key in ("trend_points", "output_skip", "input_scaling", "value_embedding"):
        old.pop(key)  # a checkpoint written before these options existed
    loaded = SoterConfig.from_dict(old)
    assert loaded.is_faithful and loaded.trend_points == 8 and SoterModel(loaded).trend_head is None
    model = _model(trend_points=5)
    _set_head(model, 0.3, -1.0)
    save_pretrained(model, tmp_path / "ckpt")
    back = from_pretrained(tmp_path / "ckpt").eval()
    assert back.config == model.config
    values, times, query = _window()
    mask = torch.rand(values.shape, generator=torch.Generator().manual_seed(1)) > 0.3
    with torch.no_grad():
        for rollout in ("per-query", "direct", "autoregressive"):
            assert torch.equal(back.forecast(values, times, query[:, :3], rollout),
                               model.forecast(values, times, query[:, :3], rollout))
        assert torch.equal(back.predict(values, times, mask, query[:, :1], True, "hold"),
                           model.predict(values, times, mask, query[:, :1], True, "hold"))
        assert torch.equal(back.embed_batch(values, times, mask), model.embed_batch(values, times, mask))


def test_head_starts_at_its_stated_init():
    model = _model()
    assert torch.equal(model.trend_head.weight, torch.zeros_like(model.trend_head.weight))
    assert model.trend_head.bias.tolist() == pytest.approx(list(TREND_HEAD_INIT))
    assert _model(output_skip="last-value").trend_head is None


def test_a_last_value_checkpoint_starts_a_damped_trend_run(corpus, tmp_path):
    from models.soter.training.trainer import Trainer

    source = SoterModel(preset("soter-tiny").replace(input_scaling="window", value_embedding=True,
                                                     output_skip="last-value"))
    save_pretrained(source, tmp_path / "ckpt")
    write_checksums(tmp_path / "ckpt")
    run = _cfg(corpus, tmp_path / "run", init_weights=str(tmp_path / "ckpt"), input_scaling="window",
               value_embedding=True, output_skip="damped-trend", aux_absolute_weight=0.5)
    trainer = Trainer(run)
    state = trainer.model.state_dict()
    for name, value in source.state_dict().items():
        assert torch.equal(state[name], value), name
    assert trainer.model.trend_head.bias.tolist() == pytest.approx(list(TREND_HEAD_INIT))
    trainer.fit(log=lambda m: None)
    saved = from_pretrained(tmp_path / "run" / "checkpoint-00000004")
    assert saved.config.output_skip == "damped-trend" and saved.trend_head is not None
    # any other difference is still refused
    save_pretrained(SoterModel(preset("soter-tiny").replace(output_skip="last-value")), tmp_path / "plain")
    with pytest.raises(CheckpointError, match="input_scaling"):
        Trainer(_cfg(corpus, tmp_path / "run2", init_weights=str(tmp_path / "plain"), input_scaling="window",
                     value_embedding=True, output_skip="damped-trend"))


def test_trend_head_lr_gives_the_head_its_own_rate(corpus, tmp_path):
    from models.soter.training.trainer import Trainer

    options = dict(input_scaling="window", value_embedding=True, output_skip="damped-trend")
    trainer = Trainer(_cfg(corpus, tmp_path / "run", group_lr={"trend_head": 3e-2}, lr=1e-3, **options))
    rest, head = trainer.opt.param_groups
    assert [p is q for p, q in zip(head["params"], trainer.model.trend_head.parameters())] == [True, True]
    assert len(rest["params"]) + 2 == len(list(trainer.model.parameters()))
    assert head["initial_lr"] == 3e-2 and rest["initial_lr"] == 1e-3
    before = trainer.model.trend_head.bias.detach().clone()
    trainer.fit(log=lambda m: None)
    assert not torch.equal(trainer.model.trend_head.bias, before)
    assert len(Trainer(_cfg(corpus, tmp_path / "plain", **options)).opt.param_groups) == 1  # 0: one group
    with pytest.raises(ValueError, match="no submodule .trend_head."):
        Trainer(_cfg(corpus, tmp_path / "nohead", group_lr={"trend_head": 3e-2}))
