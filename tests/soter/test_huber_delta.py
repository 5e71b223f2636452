"""The `huber_delta` model option (rule V8 in docs/soter-anchored-rules.md): the training loss's delta, stored in the checkpoint's
config.json; the loss uses it; a run may start from weights trained with another delta (the loss is not the model)."""

from __future__ import annotations

import json

import pytest
import torch

from models.soter.config import preset
from models.soter.io import save_pretrained
from models.soter.model import SoterModel
from models.soter.training.config import TrainConfig
from tests.soter.test_cpu_training import _cfg
from tests.soter.test_recipe_options import _window


def test_the_flag_sets_the_model_configs_delta_and_zero_keeps_the_presets():
    assert TrainConfig(model_options={"huber_delta": "0.01"}).model_options == {"huber_delta": 0.01}
    assert TrainConfig().model_config().huber_delta == 2.0  # the preset's


@pytest.mark.parametrize("delta", [2.0, 0.01, 1e-4])
def test_the_loss_is_the_huber_loss_with_the_configured_delta(delta):
    torch.manual_seed(0)
    model = SoterModel(preset("soter-tiny").replace(huber_delta=delta)).eval()
    values, times, _ = _window()
    mask = torch.ones_like(values, dtype=torch.bool)
    target, target_time = values[..., -1], times[:, -1]
    with torch.no_grad():
        loss = model.next_step_loss(values[..., :-1], times[:, :-1], target, target_time, mask[..., :-1], False)
        pred = model.predict(values[..., :-1], times[:, :-1], mask[..., :-1], target_time[:, None])[..., 0]
    error = (pred - target).abs()
    expected = torch.where(error < delta, 0.5 * error ** 2, delta * (error - 0.5 * delta)).mean()
    torch.testing.assert_close(loss, expected.to(loss.dtype))
    if delta == 1e-4:  # small delta: about delta x MAE, so the absolute error is what is trained
        torch.testing.assert_close(loss / delta, error.mean().to(loss.dtype), rtol=1e-2, atol=0)


def test_a_run_starts_from_weights_trained_with_another_delta(corpus, tmp_path):
    from models.soter.training.trainer import Trainer

    torch.manual_seed(1)
    parent = SoterModel(preset("soter-tiny"))
    save_pretrained(parent, tmp_path / "parent")
    trainer = Trainer(_cfg(corpus, tmp_path / "run", init_weights=str(tmp_path / "parent"), huber_delta=0.01))
    assert trainer.model.config.huber_delta == 0.01
    for (name, ours), theirs in zip(trainer.model.state_dict().items(), parent.state_dict().values()):
        assert torch.equal(ours, theirs), name
    trainer.fit(log=lambda m: None)
    saved = json.loads((tmp_path / "run" / "checkpoint-00000004" / "config.json").read_text())
    assert saved["huber_delta"] == 0.01
