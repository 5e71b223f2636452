"""The shortcuts of the backbone equal the full computations they replace: the last token's pass (``last_only``),
the last step's prefix DFT, and the rotary embedding prepared once per pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.soter.config import preset
from models.soter.model import SoterModel
from models.soter.routing import prefix_dft
from models.soter.rope import apply_prepared, apply_rotary, prepare_rotary, rotary_angles


def _model(**options) -> SoterModel:
    torch.manual_seed(0)
    return SoterModel(preset("soter-tiny").replace(**options))


def _inputs(b: int = 3, c: int = 2, t: int = 21):
    g = torch.Generator().manual_seed(1)
    return torch.randn(b, c, t, generator=g), (torch.arange(t, dtype=torch.float64) / 64).repeat(b, 1)


@pytest.mark.parametrize("options", [
    {},
    {"shared_expert_input": "causal_mean"},
    {"router": "learned"},
    {"expert_execution": "dense"},
    {"cd_layer": None},
    {"dft_impl": "torch"},
])
def test_the_last_token_pass_is_the_full_pass_last_row(options):
    model = _model(**options)
    values, times = _inputs()
    with torch.no_grad():
        full = model.encode(values, times)
        last = model.encode(values, times, last_only=True)
    assert last.hidden.shape == (6, 1, full.hidden.shape[-1])
    torch.testing.assert_close(last.hidden[:, 0], full.hidden[:, -1], rtol=1e-5, atol=1e-6)
    assert torch.equal(last.experts[-1][:, 0], full.experts[-1][:, -1])
    for a, b in zip(last.experts[:-1], full.experts[:-1]):
        assert torch.equal(a, b)


def test_forecasts_use_the_last_token_pass_and_keep_their_values():
    model = _model()
    values, times = _inputs()
    query = times[:, -1:] + torch.arange(1, 4, dtype=torch.float64)[None] / 64
    with torch.no_grad():
        got = model.forecast(values, times, query, rollout="per-query")
        enc = model.encode(values, times)  # the full pass, then the same decoding by hand
        h_last = enc.hidden[:, -1]
        t_last = times[:, -1].repeat_interleave(2 * 3)
        t_rows = query.repeat_interleave(2, dim=0)
        readout = model.decoder(h_last.repeat_interleave(3, dim=0), t_last, t_rows.reshape(-1, 1)).view(6, 3)
        want = model.to_data_units(readout, model.decoder.readout(h_last), model.frame(values, torch.ones_like(
            values, dtype=torch.bool), times), h_last, t_rows).view(3, 2, 3)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("impl", ["fast", "torch", "loop"])
@pytest.mark.parametrize("t", [1, 19])
def test_the_last_step_prefix_dft_is_the_full_one_last_step(impl, t):
    h = torch.randn(4, t, 16, generator=torch.Generator().manual_seed(t))
    full = prefix_dft(h, 64, impl)
    last = prefix_dft(h, 64, impl, last_only=True)
    assert last.shape == (4, 1, 33)
    torch.testing.assert_close(last, full[:, -1:], rtol=1e-6, atol=1e-6)


def test_the_fast_kernel_gives_the_same_dft_whatever_its_phase_table_holds(monkeypatch):
    """Its phases are kept between calls in one table per N grown to the longest length: a short sequence read
    from a table grown for a long one gets the DFT of a table made for it alone."""
    from models.soter import routing_cpu

    monkeypatch.setattr(routing_cpu, "_PHASES", {})
    h = torch.randn(2, 9, 8, generator=torch.Generator().manual_seed(3))
    alone = prefix_dft(h, 32).clone()
    prefix_dft(torch.randn(2, 300, 8), 32)  # grows the table past 9 rows
    assert routing_cpu._PHASES[(32, np.dtype(np.float32))][0].shape[0] >= 300
    assert torch.equal(prefix_dft(h, 32), alone)
    assert torch.equal(prefix_dft(h, 32, last_only=True), alone[:, -1:])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_prepared_rotary_embedding_is_the_rotary_embedding_bit_for_bit(dtype):
    g = torch.Generator().manual_seed(2)
    positions = torch.cumsum(torch.rand(3, 11, generator=g, dtype=torch.float64), -1)
    cos, sin = rotary_angles(positions, 16, 10000.0)
    x = torch.randn(3, 11, 2, 16, generator=g, dtype=dtype)  # [R, T, heads, D]: the projection's output
    rotated = apply_prepared(x, *prepare_rotary(cos, sin, dtype, heads=2))
    assert torch.equal(rotated.transpose(1, 2), apply_rotary(x.transpose(1, 2), cos, sin))  # [R, heads, T, D]


def test_a_training_step_through_the_last_token_pass_has_the_full_pass_gradients(monkeypatch):
    """The loss reads h_T only: every parameter's gradient equals the one through the full pass."""
    model = _model()
    values, times = _inputs(t=17)
    mask = torch.ones_like(values, dtype=torch.bool)
    target, target_time = torch.randn(3, 2), times[:, -1] + 1 / 64

    def grads() -> dict[str, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        model.next_step_loss(values, times, target, target_time, mask, controlled=False).backward()
        return {n: (p.grad.clone() if p.grad is not None else torch.zeros_like(p)) for n, p in model.named_parameters()}

    last = grads()
    monkeypatch.setattr(model, "encode", lambda v, t, last_only=False: SoterModel.encode(model, v, t))
    full = grads()
    for name in full:
        torch.testing.assert_close(last[name], full[name], rtol=1e-4, atol=1e-7, msg=name)
    assert sum(float(g.abs().sum()) for g in last.values()) > 0


@pytest.mark.parametrize("t", [1, 48, 130])
def test_the_fast_kernels_last_step_is_the_full_ones_last_step_bit_for_bit(t):
    """The last-step kernel measures with the full kernel's loop, so that its float32 sums over H round alike:
    the last-token pass routes exactly as the full pass's last row."""
    h = torch.randn(5, t, 64, generator=torch.Generator().manual_seed(t))
    assert torch.equal(prefix_dft(h, 256, "fast", last_only=True), prefix_dft(h, 256, "fast")[:, -1:])
