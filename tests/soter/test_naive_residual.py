"""The naive-residual output (``output_skip="naive-residual"``, rule V16 in docs/soter-anchored-rules.md): the
untrained model is exactly its naive start in every rollout and regime, so its selection score equals that naive
baseline's; training can move it (every new part gets a gradient); the direct-head control has no solver and starts
at the same place; bad combinations are refused."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from harness.commands.selection import best_naive
from harness.records.store import read_records
from harness.run.runner import RunConfig, execute
from models.soter.config import ConfigError, preset
from models.soter.direct_head import DirectHead, horizon_steps
from models.soter.io import from_pretrained, save_pretrained
from models.soter.model import SoterModel
from protocols.specs import Setting

NAIVE = dict(input_scaling="window", value_embedding=True, output_skip="naive-residual", output_bound=0.5)


def _model(seed: int = 0, **options) -> SoterModel:
    torch.manual_seed(seed)
    return SoterModel(preset("soter-tiny").replace(**{**NAIVE, **options})).eval()


def _window(rate: float = 64.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    values = torch.randn(3, 2, 40, generator=g).cumsum(-1)
    times = torch.arange(40, dtype=torch.float64)[None].repeat(3, 1) / rate
    query = times[:, -1:] + torch.arange(1, 9, dtype=torch.float64)[None] / rate
    return values, times, query


@pytest.mark.parametrize("head", ["ode", "direct"])
@pytest.mark.parametrize("rollout", ["per-query", "direct", "autoregressive"])
def test_the_untrained_model_is_exactly_last_value(head, rollout):
    model = _model(decoder_head=head, field_dt=head == "ode")
    values, times, query = _window()
    with torch.no_grad():
        pred = model.forecast(values, times, query, rollout)
    torch.testing.assert_close(pred, values[..., -1:].expand_as(pred), rtol=0, atol=0)


@pytest.mark.parametrize("head", ["ode", "direct"])
def test_a_window_mean_start_is_the_observed_mean_and_missing_points_are_skipped(head):
    model = _model(naive_start="window-mean", decoder_head=head)
    values, times, query = _window()
    mask = torch.rand(values.shape, generator=torch.Generator().manual_seed(4)) > 0.3
    mask[..., -1] = False  # the last sample missing: the mean and the last value are the observed ones
    with torch.no_grad():
        pred = model.predict(values, times, mask, query, controlled=True)
    mean = (values * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True)
    torch.testing.assert_close(pred, mean.expand_as(pred), rtol=1e-6, atol=1e-6)
    model = _model(decoder_head=head)
    with torch.no_grad():
        pred = model.predict(values, times, mask, query, controlled=True)
    idx = torch.where(mask, torch.arange(40), -1).amax(-1, keepdim=True)
    torch.testing.assert_close(pred, values.gather(-1, idx).expand_as(pred), rtol=0, atol=0)


@pytest.mark.parametrize("head", ["ode", "direct"])
def test_every_new_part_learns(head):
    """One optimiser step moves the mix head and the residual readout (a zero readout's weights still get a
    gradient; after the step the backbone does too)."""
    model = _model(decoder_head=head).train()
    values, times, query = _window()
    target = values[..., -1:] + torch.linspace(0.5, 2.0, 8)  # a rise no naive forecast follows
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        opt.zero_grad()
        loss = model.next_step_loss(values, times, target, query, torch.ones_like(values, dtype=torch.bool), False)
        loss.backward()
        if not losses:
            assert model.mix_head.weight.grad.abs().sum() > 0
            assert model.decoder.readout.weight.grad.abs().sum() > 0
        losses.append(float(loss.detach()))
        opt.step()
    assert model.blocks[0].attn_norm.weight.grad.abs().sum() > 0  # the second step reaches the backbone
    assert losses[1] < losses[0]


def test_the_mix_is_read_per_horizon_step_in_sampling_intervals():
    """The weight of step k is the k-th column at every sampling rate (the index counts intervals, not seconds)."""
    assert horizon_steps(torch.tensor([[0.2, 1.0, 1.4, 2.6, 70.0]]), 64).tolist() == [[0, 0, 0, 2, 63]]
    for rate in (64.0, 360.0):
        model = _model()
        with torch.no_grad():
            model.mix_head.bias.copy_(torch.linspace(0.0, 1.0, 64))
        values, times, query = _window(rate)
        with torch.no_grad():
            pred = model.forecast(values, times, query, "per-query")
        last, mean = values[..., -1:], values.mean(-1, keepdim=True)
        weight = torch.linspace(0.0, 1.0, 64)[:8]
        torch.testing.assert_close(pred, last + weight * (mean - last), rtol=1e-5, atol=1e-5)


def test_the_direct_head_has_no_solver_and_round_trips(tmp_path):
    model = _model(decoder_head="direct")
    assert isinstance(model.decoder, DirectHead) and not hasattr(model.decoder, "field")
    assert sum(p.numel() for p in model.parameters()) >= model.config.minimum_parameters()
    with torch.no_grad():
        model.decoder.readout.weight.normal_()
    save_pretrained(model, tmp_path / "ckpt")
    loaded = from_pretrained(tmp_path / "ckpt").eval()
    values, times, query = _window()
    with torch.no_grad():
        torch.testing.assert_close(loaded.forecast(values, times, query, "per-query"),
                                   model.forecast(values, times, query, "per-query"))


@pytest.mark.parametrize("options, message", [
    (dict(decoder_head="direct", output_skip="last-value"), "needs output_skip 'naive-residual'"),
    (dict(decoder_head="direct", field_dt=True), "field_dt"),
    (dict(mean_reversion=True), "own mix"),
    (dict(mix_steps=0), "mix_steps"),
    (dict(naive_start="median"), "naive_start"),
])
def test_bad_combinations_are_one_clear_error(options, message):
    with pytest.raises(ConfigError, match=message):
        preset("soter-tiny").replace(**{**NAIVE, **options})


def test_the_step0_selection_score_equals_the_naive_start(tmp_path):
    """The harness's forecasting cells of the untrained model are last value's, so under the selection rule its
    score (geometric mean of the ratios to the best naive baseline) is last value's score."""
    ckpt = save_pretrained(_model(field_dt=True), tmp_path / "step0")
    run = RunConfig(models=("soter-anchored", "last-value", "window-mean", "drift", "seasonal-naive"),
                    options={"settings": (Setting(48, 24),), "max_windows_per_subject": 2}, out=tmp_path / "run",
                    weights=(("soter-anchored", str(ckpt)),), progress=False)
    execute(run, log=lambda m: None)
    frame = read_records(tmp_path / "run" / "records.csv")
    assert set(frame["status"]) == {"ok"}
    table, summary = best_naive(frame)
    cells = table.set_index(["dataset", "model"])
    for metric in ("rmse", "mae"):
        pd.testing.assert_series_equal(cells.xs("soter-anchored", level="model")[metric],
                                       cells.xs("last-value", level="model")[metric], rtol=1e-6)
    score = summary.set_index("model")["score"]
    assert score["soter-anchored"] == pytest.approx(score["last-value"], rel=1e-6)
