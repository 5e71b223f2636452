"""SOTER's properties as the paper states them (CPU, soter-tiny)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.interpolate import CubicSpline

from models.soter.adapter import SoterAdapter
from models.soter.attention import Attention
from models.soter.config import PRESETS, ConfigError, SoterConfig, preset
from models.soter.decoder import Decoder, VectorField
from models.soter.model import SoterModel, count_parameters
from models.soter.rope import apply_rotary, normalise_timestamps, prepare_rotary, rotary_angles
from models.soter.routing import band_logits, prefix_dft_fast, prefix_dft_loop, psd_route
from models.soter.spline import NaturalCubicSpline
from protocols import interface
from protocols.interface import SeriesBatch

TINY = preset("soter-tiny")


def _model(cfg: SoterConfig = TINY, seed: int = 0, dtype=torch.float64) -> SoterModel:
    torch.manual_seed(seed)
    return SoterModel(cfg).to(dtype).eval()


def _inputs(b=2, c=3, t=24, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(b, c, t, generator=g, dtype=dtype)
    times = (torch.arange(t, dtype=torch.float64) / 8).repeat(b, 1)
    return values, times


# -- configs ------------------------------------------------------------------------------------
def test_parameter_counts_of_the_three_configs():
    counts = {name: count_parameters(SoterModel(cfg)) for name, cfg in PRESETS.items()}
    assert counts["soter-tiny"] == (71425, 52993)
    assert counts["soter-small"] == (11101441, 6382849)  # the official defaults: ~11.1M / 6.4M
    assert counts["soter-paper"] == (50148033, 20288193)  # the paper: 49.79M / 20.29M
    assert abs(counts["soter-paper"][1] / 1e6 - 20.29) < 0.01


def test_config_validation_and_round_trip(tmp_path):
    with pytest.raises(ConfigError):
        SoterConfig(hidden_size=30, num_heads=4)
    with pytest.raises(ConfigError):
        SoterConfig(cd_layer=6)
    with pytest.raises(ConfigError, match="router"):
        SoterConfig(router="magic")
    TINY.save(tmp_path / "c.json")
    assert SoterConfig.load(tmp_path / "c.json") == TINY
    with pytest.raises(ConfigError, match="unknown SOTER preset"):
        preset("soter-huge")


# -- CT-RoPE ------------------------------------------------------------------------------------
def test_regular_timestamps_give_token_indices():
    t = (1000.0 + torch.arange(17, dtype=torch.float64) / 360).repeat(3, 1)
    np.testing.assert_allclose(normalise_timestamps(t).numpy(), np.tile(np.arange(17.0), (3, 1)), atol=1e-12)


def test_normalised_timestamps_are_strictly_increasing_on_the_grid():
    t = torch.tensor([[0.0, 0.001, 0.002, 5.0, 5.0001, 10.0]], dtype=torch.float64)
    p = normalise_timestamps(t)
    assert torch.all(p[:, 1:] - p[:, :-1] >= 0.1 - 1e-9)
    np.testing.assert_allclose((p * 10).numpy(), np.round((p * 10).numpy()), atol=1e-9)


def test_rope_scores_depend_on_time_differences_only():
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 6, 8, dtype=torch.float64), torch.randn(1, 1, 6, 8, dtype=torch.float64)
    pos = torch.tensor([[0.0, 1.3, 2.0, 4.7, 5.0, 9.1]], dtype=torch.float64)
    scores = []
    for shift in (0.0, 123.4):
        cos, sin = rotary_angles(pos + shift, 8, 10000.0)
        scores.append(apply_rotary(q, cos, sin) @ apply_rotary(k, cos, sin).transpose(-1, -2))
    torch.testing.assert_close(scores[0], scores[1])


def test_rope_with_indices_equals_standard_rope():
    torch.manual_seed(0)
    x = torch.randn(1, 2, 5, 8, dtype=torch.float64)
    cos, sin = rotary_angles(torch.arange(5, dtype=torch.float64)[None], 8, 10000.0)
    # standard RoPE, written out for pair (i, i + D/2) at position m: angle m * theta^(-2i/D)
    inv = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    ang = torch.arange(5, dtype=torch.float64)[:, None] * inv
    a, b = x[..., :4], x[..., 4:]
    expected = torch.cat([a * ang.cos() - b * ang.sin(), b * ang.cos() + a * ang.sin()], dim=-1)
    torch.testing.assert_close(apply_rotary(x, cos, sin), expected)


# -- routing --------------------------------------------------------------------------------------
@pytest.mark.parametrize("t", [1, 17, 33])
def test_loop_and_fast_prefix_dft_agree(t):
    h = torch.randn(3, t, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(t))
    ref = prefix_dft_loop(h, 64)
    fast = prefix_dft_fast(h, 64, budget=300)  # tiny budget: many frequency chunks
    torch.testing.assert_close(fast, ref, rtol=1e-10, atol=1e-10)
    logits_ref, logits_fast = band_logits(ref, 4), band_logits(fast, 4)
    torch.testing.assert_close(logits_fast, logits_ref, rtol=1e-10, atol=1e-10)
    gap = torch.sort(logits_ref, dim=-1, descending=True).values
    clear = (gap[..., 1] - gap[..., 2]) > 1e-6  # where the top-2 set is unambiguous
    i_ref = torch.sort(torch.topk(logits_ref, 2).indices, -1).values
    i_fast = torch.sort(torch.topk(logits_fast, 2).indices, -1).values
    assert torch.equal(i_ref[clear], i_fast[clear])
    assert t == 1 or clear.float().mean() > 0.9  # at t = 0 every bin has the same magnitude: ties


def test_numba_kernel_matches_the_reference():
    from models.soter import routing_cpu
    from models.soter.routing import prefix_dft

    assert routing_cpu.available()
    h = torch.randn(3, 29, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(prefix_dft(h, 64, "fast"), prefix_dft_loop(h, 64), rtol=1e-10, atol=1e-10)
    h32 = h.float()
    torch.testing.assert_close(prefix_dft(h32, 64, "fast"), prefix_dft_loop(h, 64).float(), rtol=1e-5, atol=1e-5)


def test_routing_is_causal_and_has_no_gradient():
    h = torch.randn(2, 20, 8, dtype=torch.float64, requires_grad=True)
    logits, idx, w = psd_route(h, 4, 2, 64)
    assert not w.requires_grad and idx.shape == (2, 20, 2)
    h2 = h.detach().clone()
    h2[:, 12:] += 5.0
    logits2, idx2, _ = psd_route(h2, 4, 2, 64)
    torch.testing.assert_close(logits2[:, :12], logits[:, :12])
    assert torch.equal(idx2[:, :12], idx[:, :12])
    probs = torch.softmax(logits, -1)
    torch.testing.assert_close(w, torch.gather(probs, -1, idx))  # not renormalised


def test_fast_routing_never_materialises_the_full_tensor(monkeypatch):
    seen = []
    real = torch.cumsum

    def spy(x, dim):
        seen.append(x.numel())
        return real(x, dim=dim)

    monkeypatch.setattr(torch, "cumsum", spy)
    prefix_dft_fast(torch.randn(4, 64, 16), 512, budget=1 << 14)
    assert seen and max(seen) <= 1 << 14 < 4 * 64 * 257 * 16


# -- backbone -----------------------------------------------------------------------------------------
def test_attention_and_routing_stack_is_causal_with_causal_shared_input():
    cfg = TINY.replace(shared_expert_input="causal_mean")
    model = _model(cfg)
    values, times = _inputs()
    base = model.encode(values, times)
    changed = values.clone()
    changed[:, :, 15:] = torch.randn_like(changed[:, :, 15:]) * 10
    out = model.encode(changed, times)
    torch.testing.assert_close(out.hidden.view(2, 3, 24, -1)[:, :, :15], base.hidden.view(2, 3, 24, -1)[:, :, :15])
    for e_base, e_new in zip(base.experts, out.experts):
        assert torch.equal(e_base[:, :15], e_new[:, :15])


def test_faithful_window_mean_shared_expert_is_a_sequence_level_residual():
    # the paper's shared branch adds the window mean to every position, so earlier positions
    # do see later values; the forecast remains causal (it starts from the last state)
    model = _model()
    values, times = _inputs()
    changed = values.clone()
    changed[:, :, 15:] += 3.0
    a, b = model.encode(values, times).hidden, model.encode(changed, times).hidden
    assert not torch.allclose(a[:, :15], b[:, :15])


def test_single_channel_uses_the_ci_path_and_channel_order_is_equivariant():
    model = _model()
    values, times = _inputs(c=1)
    cd = model.encode(values, times).hidden
    no_cd = _model(TINY.replace(cd_layer=None))
    no_cd.load_state_dict(model.state_dict())
    torch.testing.assert_close(cd, no_cd.encode(values, times).hidden)
    values, times = _inputs(c=3)
    perm = torch.tensor([2, 0, 1])
    h = model.encode(values, times).hidden.view(2, 3, 24, -1)
    hp = model.encode(values[:, perm], times).hidden.view(2, 3, 24, -1)
    torch.testing.assert_close(hp, h[:, perm])


def test_cd_layer_mixes_channels_and_is_movable():
    model = _model()
    values, times = _inputs()
    changed = values.clone()
    changed[:, 1] += 1.0
    h, h2 = model.encode(values, times).hidden.view(2, 3, 24, -1), model.encode(changed, times).hidden.view(2, 3, 24, -1)
    assert not torch.allclose(h[:, 0], h2[:, 0])  # channel 0 sees channel 1 through the CD layer
    ci = _model(TINY.replace(cd_layer=None))
    h, h2 = ci.encode(values, times).hidden.view(2, 3, 24, -1), ci.encode(changed, times).hidden.view(2, 3, 24, -1)
    torch.testing.assert_close(h[:, 0], h2[:, 0])
    assert [b.channel_dependent for b in _model(TINY.replace(cd_layer=0)).blocks] == [True, False, False]


# -- decoder ---------------------------------------------------------------------------------------------
def test_spline_matches_scipy_natural_spline_on_irregular_points():
    g = torch.Generator().manual_seed(1)
    t = torch.cumsum(torch.rand(4, 15, generator=g, dtype=torch.float64) + 0.1, 1)
    y = torch.randn(4, 15, generator=g, dtype=torch.float64)
    observed = torch.rand(4, 15, generator=g) > 0.35
    observed[:, :3] = True
    spline = NaturalCubicSpline(t, y, observed)
    q = torch.stack([t[:, 4] + 0.01, t[:, -1] + 0.7, t[:, -1] + 2.0], 1)  # inside and extrapolated
    out = spline.evaluate(q)
    for r in range(4):
        o = observed[r].numpy()
        ref = CubicSpline(t[r].numpy()[o], y[r].numpy()[o], bc_type="natural")(q[r].numpy())
        np.testing.assert_allclose(out[r].numpy(), ref, rtol=1e-10, atol=1e-10)


def test_zero_control_equals_the_field_without_control_block():
    torch.manual_seed(0)
    with_control = VectorField(TINY).double()
    without = VectorField(TINY.replace(control=False)).double()
    state = with_control.state_dict()
    first = state["layers.0.weight"]
    reduced = {**state, "layers.0.weight": first[:, :-1]}  # drop the z column
    without.load_state_dict(reduced)
    s, h = torch.tensor(0.3, dtype=torch.float64), torch.randn(5, TINY.hidden_size, dtype=torch.float64)
    torch.testing.assert_close(with_control(s, h, torch.zeros(5, dtype=torch.float64)), without(s, h, None))
    # and through a full solve
    torch.manual_seed(0)
    dec_a = Decoder(TINY).double()
    dec_b = Decoder(TINY.replace(control=False)).double()
    sa = dec_a.state_dict()
    dec_b.load_state_dict({**sa, "field.layers.0.weight": sa["field.layers.0.weight"][:, :-1]})
    t_last = torch.zeros(5, dtype=torch.float64)
    q = torch.tensor([[0.5, 1.0]], dtype=torch.float64).repeat(5, 1)
    torch.testing.assert_close(dec_a(h, t_last, q), dec_b(h, t_last, q), rtol=1e-12, atol=1e-12)


def test_solver_is_configurable_and_counts_evaluations():
    model = _model(TINY.replace(solver="rk4", rk4_steps=4))
    values, times = _inputs()
    with torch.no_grad():
        model.forecast(values, times, times[:, -1:] + 0.125, "direct")
    assert model.decoder.last_nfe == 16  # 4 steps x 4 stages
    dopri = _model()
    with torch.no_grad():
        dopri.forecast(values, times, times[:, -1:] + 0.125, "direct")
    assert dopri.decoder.last_nfe >= 6


# -- the harness's view: causality of forecasts and imputation ------------------------------------------
def _adapter(rollout="autoregressive", **kw):
    torch.manual_seed(0)
    return SoterAdapter(SoterModel(TINY), rollout=rollout, **kw)


@pytest.mark.parametrize("rollout", ["autoregressive", "direct"])
def test_forecast_shapes_determinism_and_batch_invariance(rollout):
    rng = np.random.default_rng(0)
    batch = SeriesBatch(rng.normal(size=(3, 2, 20)), np.tile(np.arange(20) / 4.0, (3, 1)))
    q = 5.0 + np.tile(np.arange(4) / 4.0, (3, 1))
    out = interface.forecast(_adapter(rollout), batch, q)
    assert out.shape == (3, 2, 4) and np.isfinite(out).all()
    np.testing.assert_array_equal(out, interface.forecast(_adapter(rollout), batch, q))
    alone = interface.forecast(_adapter(rollout), SeriesBatch(batch.values[1:2], batch.timestamps[1:2]), q[1:2])
    np.testing.assert_allclose(alone[0], out[1], rtol=1e-5, atol=1e-6)


def test_direct_and_autoregressive_agree_on_the_first_step():
    rng = np.random.default_rng(0)
    batch = SeriesBatch(rng.normal(size=(2, 2, 16)), np.tile(np.arange(16) / 4.0, (2, 1)))
    q = 4.0 + np.tile(np.arange(3) / 4.0, (2, 1))
    a = interface.forecast(_adapter("autoregressive"), batch, q)
    d = interface.forecast(_adapter("direct"), batch, q)
    np.testing.assert_allclose(a[:, :, 0], d[:, :, 0], rtol=1e-4, atol=1e-5)


def test_imputation_reads_only_the_observed_prefix():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(2, 2, 20))
    mask = rng.random((2, 2, 20)) > 0.3
    mask[:, :, :3] = True
    times = np.tile(np.arange(20) / 4.0, (2, 1))
    q = np.array([5.3, 5.1])
    base = interface.impute(_adapter(), SeriesBatch(values, times, mask), q)
    hidden = values.copy()
    hidden[~mask] = 1e3  # unobserved values must not matter
    np.testing.assert_allclose(interface.impute(_adapter(), SeriesBatch(hidden, times, mask), q), base, rtol=1e-6)
    assert base.shape == (2, 2) and np.isfinite(base).all()


def test_embedding_shape_and_mask():
    rng = np.random.default_rng(0)
    batch = SeriesBatch(rng.normal(size=(3, 2, 16)), np.tile(np.arange(16.0), (3, 1)))
    e = interface.embed(_adapter(), batch)
    assert e.shape == (3, TINY.hidden_size) and np.isfinite(e).all()


def test_per_channel_mode_feeds_channels_alone():
    rng = np.random.default_rng(0)
    batch = SeriesBatch(rng.normal(size=(2, 3, 16)), np.tile(np.arange(16.0), (2, 1)))
    q = 16.0 + np.tile(np.arange(2.0), (2, 1))
    out = interface.forecast(_adapter(per_channel=True), batch, q)
    single = interface.forecast(_adapter(), SeriesBatch(batch.values[:, 1:2], batch.timestamps), q)
    np.testing.assert_allclose(out[:, 1:2], single, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_cpu_and_cuda_agree():
    model = _model(dtype=torch.float32)
    values, times = _inputs(dtype=torch.float32)
    q = times[:, -1:] + 0.125
    with torch.no_grad():
        cpu = model.forecast(values, times, q, "direct")
        gpu = model.cuda().forecast(values.cuda(), times.cuda(), q.cuda(), "direct").cpu()
    torch.testing.assert_close(gpu, cpu, rtol=1e-3, atol=1e-4)


def test_attention_module_is_causal():
    torch.manual_seed(0)
    attn = Attention(16, 2).double()
    x = torch.randn(2, 10, 16, dtype=torch.float64)
    rotary = prepare_rotary(*rotary_angles(torch.arange(10, dtype=torch.float64).repeat(2, 1), 8, 10000.0),
                            torch.float64, heads=2)
    y = attn(x, rotary, causal=True)
    x2 = x.clone()
    x2[:, 6:] += 1.0
    torch.testing.assert_close(attn(x2, rotary, causal=True)[:, :6], y[:, :6])


@pytest.mark.parametrize("router", ["psd", "learned"])
def test_grouped_experts_equal_the_dense_sum(router):
    """Grouped execution (each expert on its routed tokens, zero-weight routings skipped) makes the
    same additions in the same order as the dense sum; only a matmul over a subset of rows may round
    its last bit differently."""
    cfg = TINY.replace(router=router)
    dense = _model(cfg.replace(expert_execution="dense"), dtype=torch.float32).train()
    grouped = _model(cfg.replace(expert_execution="grouped"), dtype=torch.float32).train()
    grouped.load_state_dict(dense.state_dict())
    values, times = _inputs(b=3, c=2, t=40, dtype=torch.float32)
    a, b = dense.encode(values, times), grouped.encode(values, times)
    torch.testing.assert_close(b.hidden, a.hidden, rtol=1e-6, atol=1e-6)
    assert all(torch.equal(x, y) for x, y in zip(a.experts, b.experts))
    (a.hidden.square().sum() + a.aux_loss).backward()
    (b.hidden.square().sum() + b.aux_loss).backward()
    grads = [(name, torch.zeros_like(p) if p.grad is None else p.grad, torch.zeros_like(q) if q.grad is None else q.grad)
             for (name, p), q in zip(dense.named_parameters(), grouped.parameters())]
    scale = max(gp.abs().max().item() for _, gp, _ in grads)  # (attention key biases have gradient ~0)
    for name, gp, gq in grads:
        torch.testing.assert_close(gq, gp, rtol=1e-4, atol=1e-5 * scale, msg=name)
    assert TINY.expert_execution == "auto"  # grouped on CPU (one process), dense under DDP/FSDP and on GPU
    auto = _model(dtype=torch.float32).blocks[0].moe
    with torch.no_grad():
        assert auto.grouped(values)
    assert auto.grouped(values)  # single-process CPU training too (missing expert gradients are zero-filled)


def test_auto_experts_are_dense_under_a_process_group(monkeypatch):
    """DDP and FSDP need a gradient for every parameter on every rank: dense there."""
    from models.soter import moe

    auto = _model(dtype=torch.float32).blocks[0].moe
    values = torch.randn(2, 5, TINY.hidden_size)
    monkeypatch.setattr(moe, "_distributed", lambda: True)
    assert not auto.grouped(values)
    with torch.no_grad():
        assert auto.grouped(values)  # inference never needs every gradient


def test_grouped_experts_skip_zero_weights_only():
    """A routing whose softmax weight underflowed to 0 contributes nothing either way."""
    from models.soter.moe import MixtureOfExperts

    torch.manual_seed(1)
    moe = MixtureOfExperts(TINY.replace(expert_execution="grouped"))
    x = torch.randn(2, 12, TINY.hidden_size)
    idx = torch.randint(0, TINY.num_experts, (2, 12, 1)).repeat(1, 1, 2)
    idx[..., 1] = (idx[..., 0] + 1) % TINY.num_experts
    w = torch.rand(2, 12, 2)
    w[0, :, 1] = 0.0
    shared = moe.shared(moe.shared_input(x)).expand_as(x)
    dense = shared.clone()
    for e, expert in enumerate(moe.experts):
        dense = dense + ((idx == e).float() * w).sum(-1, keepdim=True) * expert(x)
    torch.testing.assert_close(moe._grouped(x, shared, idx, w), dense, rtol=1e-6, atol=1e-6)


def test_the_cpu_grouping_of_routings_is_torchs_stable_sort(monkeypatch):
    """The numba counting sort gives the order, weights and counts of the torch path (a stable sort by expert),
    zero weights dropped, and leaves the weights on the autograd graph."""
    from models.soter import moe, routing_cpu

    g = torch.Generator().manual_seed(4)
    idx = torch.stack([torch.randperm(6, generator=g)[:3] for _ in range(50)])
    w = torch.rand(50, 3, generator=g)
    w[::7, 1] = 0.0
    w.requires_grad_()
    fast = moe.group_routings(idx, w, 6)
    monkeypatch.setattr(routing_cpu, "available", lambda: False)
    slow = moe.group_routings(idx, w, 6)
    assert torch.equal(fast[0], slow[0]) and torch.equal(fast[1], slow[1]) and fast[2] == slow[2]
    assert sum(fast[2]) == int((w != 0).sum()) and fast[1].requires_grad
    for e, (a, b) in enumerate(zip([0, *np.cumsum(fast[2])], np.cumsum(fast[2]))):
        tokens = fast[0][a:b]
        assert torch.all(tokens[1:] > tokens[:-1]) and torch.all((idx[tokens] == e).any(-1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_is_its_formula_bit_for_bit(dtype):
    """torch's fused rms_norm gives the float32 formula's values and gradients to the last bit (checkpoints were
    trained with the formula)."""
    from models.soter.layers import RMSNorm

    norm = RMSNorm(64, 1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(64, generator=torch.Generator().manual_seed(1)) + 0.5)
    x = torch.randn(3, 17, 64, generator=torch.Generator().manual_seed(2)).to(dtype).requires_grad_()
    x32 = x.float()
    want = (norm.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6))).to(dtype)
    got = norm(x)
    assert got.dtype == dtype and torch.equal(got, want)
    g_want, = torch.autograd.grad(want.float().square().sum(), x)
    g_got, = torch.autograd.grad(got.float().square().sum(), x)
    assert torch.equal(g_got, g_want)
