"""SOTER options beyond the paper (issue #26): their math, their storage in config.json, and that a
checkpoint without them is the paper's model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from models.soter.config import ConfigError, SoterConfig, preset
from models.soter.io import from_pretrained, save_pretrained
from models.soter.model import SoterModel, last_observed
from models.soter.training.config import TrainConfig
from models.soter.training.sampler import WindowSampler

OPTIONS = dict(input_scaling="window", value_embedding=True, output_skip="last-value")


def _model(**options) -> SoterModel:
    torch.manual_seed(0)
    return SoterModel(preset("soter-tiny").replace(**options)).eval()


def _window(b=3, c=2, t=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(b, c, t, generator=g).cumsum(-1) * 0.1 + 0.5
    times = torch.arange(t, dtype=torch.float64).repeat(b, 1) / 64
    query = times[:, -1:] + torch.arange(1, 9, dtype=torch.float64) / 64
    return values, times, query


def _zero_readout(model: SoterModel) -> None:
    torch.nn.init.zeros_(model.decoder.readout.weight)
    torch.nn.init.zeros_(model.decoder.readout.bias)


def test_default_config_is_the_papers_model():
    cfg = SoterConfig()
    assert cfg.is_faithful and not preset("soter-cpu-64").replace(output_skip="last-value").is_faithful
    model = _model()
    assert model.value_path is None  # no parameter beyond the paper's
    names = {n for n, _ in model.named_parameters()}
    assert not any(n.startswith("value_path") for n in names)


def test_faithful_forecast_is_readout_of_the_decoded_state():
    """With no option on, a forecast is exactly readout(ODE(h_T)) of the raw values (the paper's model)."""
    model = _model()
    values, times, query = _window()
    with torch.no_grad():
        h = model.encode(values, times).hidden[:, -1]
        c = values.shape[1]
        expected = model.decoder(h, times[:, -1].repeat_interleave(c), query.repeat_interleave(c, dim=0))
        np.testing.assert_array_equal(model.forecast(values, times, query, "direct").reshape(-1, 8).numpy(),
                                      expected.numpy())


def test_skip_with_zero_readout_is_last_value_and_locf():
    model = _model(**OPTIONS)
    _zero_readout(model)
    values, times, query = _window()
    with torch.no_grad():
        for rollout in ("per-query", "direct", "autoregressive"):
            out = model.forecast(values, times, query, rollout)
            np.testing.assert_array_equal(out.numpy(), values[..., -1:].expand_as(out).numpy())
        mask = torch.rand(values.shape, generator=torch.Generator().manual_seed(3)) > 0.4
        mask[..., 0] = True
        imputed = model.predict(values, times, mask, query[:, :1], controlled=True)
        np.testing.assert_array_equal(imputed.numpy(), last_observed(values, mask).numpy())


def test_last_observed_value():
    values = torch.tensor([[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]])
    mask = torch.tensor([[[True, False, True, False], [False, False, False, False]]])
    assert last_observed(values, mask).flatten().tolist() == [3.0, 0.0]


@pytest.mark.parametrize("options", [dict(input_scaling="window"), OPTIONS])
def test_window_scaling_makes_forecasts_move_with_the_signal(options):
    """Affine equivariance: shifting and scaling the context shifts and scales the forecast (a test
    subject outside the training range is forecast as if it were inside)."""
    model = _model(**options)
    values, times, query = _window()
    with torch.no_grad():
        base = model.forecast(values, times, query, "per-query").double()
        moved = model.forecast(values * 4.0 + 7.0, times, query, "per-query").double()
    np.testing.assert_allclose(moved.numpy(), (base * 4.0 + 7.0).numpy(), atol=2e-5)


def test_window_scaling_is_exactly_inverted():
    model = _model(input_scaling="window")
    values, _, _ = _window()
    mask = torch.ones_like(values, dtype=torch.bool)
    inputs, frame = model.model_inputs(values, mask)
    assert torch.allclose(inputs.mean(-1), torch.zeros(1), atol=1e-6)
    assert torch.allclose(inputs.std(-1, unbiased=False), torch.ones(1), atol=1e-5)
    back = model.to_data_units(inputs.reshape(-1, values.shape[-1]), torch.zeros(values.shape[0] * values.shape[1], 1), frame)
    np.testing.assert_allclose(back.reshape(values.shape).numpy(), values.numpy(), atol=1e-6)
    flat = torch.full((1, 1, 10), 0.3)  # a constant row: scale floored, no division by zero
    inputs, frame = model.model_inputs(flat, torch.ones_like(flat, dtype=torch.bool))
    assert torch.isfinite(inputs).all() and frame.scale.item() == pytest.approx(model.config.scale_floor)


def test_missing_points_do_not_enter_the_frame():
    model = _model(input_scaling="window")
    values, _, _ = _window()
    mask = torch.rand(values.shape, generator=torch.Generator().manual_seed(5)) > 0.3
    changed = torch.where(mask, values, torch.full_like(values, 1e6))
    a, fa = model.model_inputs(values, mask)
    b, fb = model.model_inputs(changed, mask)
    assert torch.equal(a, b) and torch.equal(fa.loc, fb.loc) and torch.equal(fa.scale, fb.scale)
    assert torch.all(a[~mask] == 0)  # zero-filled in the model's units


def test_value_path_init_and_effect():
    model = _model(value_embedding=True)
    w = model.value_path.weight
    assert w.std().item() == pytest.approx(1.0, rel=0.5) and torch.all(model.value_path.bias == 0)
    values, times, _ = _window()
    with torch.no_grad():
        with_path = model.encode(values, times).hidden
        model.value_path.weight.zero_()
        without = model.encode(values, times).hidden
    assert not torch.allclose(with_path, without)


def test_auxiliary_absolute_loss():
    model = _model(**OPTIONS).train()
    values, times, _ = _window(t=33)
    ctx, target, mask = values[..., :-1], values[..., -1], torch.ones_like(values[..., :-1], dtype=torch.bool)
    plain = model.next_step_loss(ctx, times[:, :-1], target, times[:, -1], mask, False)
    assert torch.equal(plain, model.next_step_loss(ctx, times[:, :-1], target, times[:, -1], mask, False, 0.0))
    with torch.no_grad():
        pred, readout, readout_last, fr = model.predict_with_readouts(ctx, times[:, :-1], mask, times[:, -1:])
    huber = torch.nn.functional.huber_loss
    absolute = (fr.rows("loc") + fr.rows("scale") * readout).view(pred.shape)[..., 0]
    extra = huber(absolute, target, delta=2.0) + huber(fr.rows("loc") + fr.rows("scale") * readout_last,
                                                       fr.rows("last"), delta=2.0)
    aux = model.next_step_loss(ctx, times[:, :-1], target, times[:, -1], mask, False, 0.5)
    assert aux.item() == pytest.approx(plain.item() + 0.5 * extra.item(), rel=1e-5)
    aux.backward()
    assert model.decoder.readout.weight.grad.abs().sum() > 0


def test_options_round_trip_through_config_json_and_old_checkpoints_load_as_faithful(tmp_path):
    model = _model(**OPTIONS)
    save_pretrained(model, tmp_path / "new")
    loaded = from_pretrained(tmp_path / "new")
    assert loaded.config == model.config and loaded.config.output_skip == "last-value"
    values, times, query = _window()
    with torch.no_grad():
        np.testing.assert_array_equal(loaded.forecast(values, times, query, "per-query").numpy(),
                                      model.forecast(values, times, query, "per-query").numpy())
    old = json.loads((tmp_path / "new" / "config.json").read_text())
    for key in ("input_scaling", "scale_floor", "value_embedding", "value_embedding_init", "output_skip"):
        old.pop(key)
    assert SoterConfig.from_dict(old).is_faithful  # a checkpoint written before the options is the paper's model
    with pytest.raises(ConfigError, match="output_skip"):
        preset("soter-tiny").replace(output_skip="mean")


def test_training_config_sets_the_model_options(tmp_path, corpus):
    from models.soter.training.trainer import Trainer

    cfg = TrainConfig(model="soter-tiny", corpus=str(corpus), out=str(tmp_path / "run"), steps=2, max_length=32,
                      min_length=32, batch_size=2, aux_absolute_weight=0.5, checkpoint_every=2, log_every=1,
                      model_options=dict(input_scaling="window", value_embedding=True, output_skip="last-value"))
    trainer = Trainer(cfg)
    assert trainer.model.config.output_skip == "last-value" and trainer.model.value_path is not None
    trainer.fit(log=lambda *_: None)
    assert from_pretrained(tmp_path / "run" / "checkpoint-00000002").config == trainer.model.config
    assert TrainConfig().model_options == {} and TrainConfig().model_config() == preset("soter-small")
    with pytest.raises(ValueError, match="aux_absolute_weight"):
        TrainConfig(aux_absolute_weight=-1)


def test_sqrt_dataset_weighting(corpus):
    from models.soter.training.corpus import open_corpus

    datasets = open_corpus(corpus)
    sampler = WindowSampler(datasets, 32, 2, 0, dataset_weighting="sqrt")
    sizes = np.sqrt([np.maximum(d.lengths - 32, 0).sum() for d in sampler.datasets])
    np.testing.assert_allclose(sampler.dataset_p, sizes / sizes.sum())
    with pytest.raises(ValueError, match="sqrt"):
        WindowSampler(datasets, 32, 2, 0, dataset_weighting="log")
