"""The decoder's native dopri5 solve against torchdiffeq's (parity), and divergence as a status."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.soter.config import SoterConfig, preset
from models.soter.decoder import Decoder
from models.soter.dopri5 import DIVERGENCE_BOUND, MAX_STEPS, SolverDiverged, dopri5
from models.soter.entries import discover
from models.soter.io import from_pretrained
from models.soter.model import SoterModel

# native and torchdiffeq forecasts agree within this, absolute, in the harness's normalised space ([0, 1] MinMax):
# the same steps in float32 with the stage sums in another order (measured: at most 1.2e-6)
PARITY_TOLERANCE = 1e-5
SETTINGS = ((48, 24), (72, 36), (96, 48), (128, 64))
FOLDERS = {e.folder.name: e.folder for e in discover().values()}
FS = 125.0


def ecg_like(n_windows: int, channels: int, length: int, seed: int = 0) -> np.ndarray:
    """Beats (narrow Gaussians at a varying rate) on a breathing baseline with noise, MinMax-scaled to [0, 1] as
    the harness normalises: windows that look like the benchmark's, without reading a dataset."""
    rng = np.random.default_rng(seed)
    t = np.arange(length) / FS
    out = np.empty((n_windows, channels, length))
    for w in range(n_windows):
        for c in range(channels):
            rate = rng.uniform(0.9, 1.6)
            beats = np.arange(rng.uniform(0, 1 / rate), t[-1] + 1, 1 / rate)
            x = sum(np.exp(-0.5 * ((t - b) / 0.015) ** 2) for b in beats)
            x = x + 0.2 * np.sin(2 * np.pi * 0.25 * t + rng.uniform(0, 6)) + 0.02 * rng.standard_normal(length)
            out[w, c] = (x - x.min()) / (x.max() - x.min())
    return out


def _with_impl(model: SoterModel, impl: str) -> SoterModel:
    model.config = model.config.replace(solver_impl=impl)
    model.decoder.cfg = model.config
    return model


@pytest.fixture(scope="module", params=["soter-cpu-64", "soter-cpu-64-noaux"])
def shipped(request) -> SoterModel:
    if request.param not in FOLDERS:
        pytest.skip(f"{request.param} is not shipped")
    return from_pretrained(FOLDERS[request.param]).eval()


def test_shipped_configs_load_with_the_native_solve_by_default(shipped):
    """The shipped config.json files predate solver_impl: they load, and decode natively."""
    assert "solver_impl" not in (FOLDERS["soter-cpu-64"] / "config.json").read_text()
    assert SoterConfig().solver_impl == "native" and shipped.config.solver == "dopri5"


@pytest.mark.parametrize("context,horizon,rollout", [(c, h, "per-query") for c, h in SETTINGS]
                         + [(128, 64, "direct")])  # per-query: the harness's; direct: several query times
def test_native_forecasts_equal_torchdiffeqs_with_the_same_steps(shipped, context, horizon, rollout):
    values = torch.tensor(ecg_like(3, 2, context + horizon, seed=context), dtype=torch.float32)
    times = (torch.arange(context + horizon, dtype=torch.float64) / FS).repeat(3, 1)
    got = {}
    for impl in ("torchdiffeq", "native"):
        with torch.inference_mode():
            pred = _with_impl(shipped, impl).forecast(values[..., :context], times[:, :context],
                                                      times[:, context:], rollout)
        got[impl] = (pred, shipped.decoder.last_steps, shipped.decoder.last_nfe)
    _with_impl(shipped, "native")
    assert got["native"][1:] == got["torchdiffeq"][1:]  # same steps and field evaluations
    assert (got["native"][0] - got["torchdiffeq"][0]).abs().max().item() <= PARITY_TOLERANCE


@pytest.mark.parametrize("controlled", [False, True])
def test_a_training_step_matches_torchdiffeqs_loss_and_gradients(controlled):
    cfg = preset("soter-tiny")
    torch.manual_seed(0)
    base = SoterModel(cfg)
    data = torch.tensor(ecg_like(2, 2, 65, seed=3), dtype=torch.float32)
    times = (torch.arange(65, dtype=torch.float64) / FS).repeat(2, 1)
    mask = torch.ones(2, 2, 64, dtype=torch.bool)
    mask[:, :, 10:20] = False
    losses, grads = {}, {}
    for impl in ("torchdiffeq", "native"):
        model = SoterModel(cfg.replace(solver_impl=impl))
        model.load_state_dict(base.state_dict())
        model.train()
        loss = model.next_step_loss(data[..., :64], times[:, :64], data[..., 64], times[:, 64], mask, controlled)
        loss.backward()
        losses[impl] = loss.item()
        grads[impl] = torch.cat([p.grad.flatten() for p in model.decoder.parameters()])
        assert torch.isfinite(grads[impl]).all() and grads[impl].abs().sum() > 0
    assert abs(losses["native"] - losses["torchdiffeq"]) <= PARITY_TOLERANCE
    assert torch.allclose(grads["native"], grads["torchdiffeq"], rtol=1e-3, atol=1e-5)


def test_a_blowing_up_field_raises_the_divergence_status_in_both_solvers():
    """dh/ds = 10 h^2 from h = 1 blows up at s = 0.1: a bounded status, never a state of 1e17."""
    def field(s, h):
        return 10 * h * h

    with pytest.raises(SolverDiverged, match=r"left \|h\| <= 1e\+06"):
        dopri5(field, torch.ones(2, 3), torch.tensor([0.0, 1.0]), 1e-5, 1e-5)
    with pytest.raises(SolverDiverged, match="passed 5 steps"):
        dopri5(field, torch.ones(2, 3), torch.tensor([0.0, 1.0]), 1e-5, 1e-5, max_steps=5)
    with pytest.raises(SolverDiverged, match="non-finite"):
        dopri5(lambda s, h: h * float("nan"), torch.ones(2, 3), torch.tensor([0.0, 1.0]), 1e-5, 1e-5)
    assert DIVERGENCE_BOUND == 1e6 and MAX_STEPS >= 100


@pytest.mark.parametrize("impl", ["native", "torchdiffeq"])
def test_a_diverging_decoder_raises_the_status(impl):
    cfg = preset("soter-tiny").replace(solver_impl=impl)
    decoder = Decoder(cfg)
    with torch.no_grad():
        for layer in decoder.field.layers:
            layer.weight.fill_(3.0)
            layer.bias.fill_(3.0)
    h0 = torch.ones(4, cfg.hidden_size)
    with torch.no_grad(), pytest.raises(SolverDiverged, match="diverges|does not converge"):
        decoder(h0, torch.zeros(4), torch.full((4, 1), 20.0))


def test_a_field_that_writes_its_stages_into_the_solve_gives_the_same_states():
    """Without autograd the decoder's field writes each stage into the solve's buffer (no copy): the states are
    those of the same field returning its stages, to the last bit, and the write refuses to run under autograd."""
    from models.soter.decoder import _Dynamics

    cfg = preset("soter-tiny")
    torch.manual_seed(0)
    decoder = Decoder(cfg)
    h0 = torch.randn(6, cfg.hidden_size)
    dt = torch.full((6,), 0.05, dtype=torch.float64)
    grid = torch.tensor([0.0, 0.5, 1.0])
    with torch.no_grad():
        dyn = _Dynamics(decoder.field, dt, torch.zeros(6, dtype=torch.float64), None)
        dyn.split = True
        assert dyn.writes_into
        written, steps = dopri5(dyn, h0, grid, 1e-5, 1e-5)

        def returning(s, h):  # the same evaluation, without the out= path
            return dyn(s, h)

        returned, steps_returned = dopri5(returning, h0, grid, 1e-5, 1e-5)
    assert steps == steps_returned and torch.equal(written, returned)
    with pytest.raises(ValueError, match="only without autograd"):
        decoder.field.forward_split(torch.tensor(0.0), h0, None, None, dt[:, None].float(), out=torch.empty_like(h0))
