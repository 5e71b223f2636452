"""Stability as a property (protocols/adversarial.py). Every departing SOTER entry stays within the context-derived
bound and near the simple answers on adversarial contexts, and within 1.5x last value's error on contexts that end on
a steep rise just before a peak (an R wave, a pulse's upstroke); a head that extrapolates without damping breaks the
bound, a straight line the rise property, and ``output_bound`` bounds any model by construction."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.registry import load_model
from models.soter.adapter import SoterAdapter
from models.soter.config import preset
from models.soter.entries import discover
from models.soter.model import SoterModel
from protocols import adversarial
from protocols.adversarial import CASES, RISE_CASES, RISE_SETTINGS, check
from protocols.interface import Model, SeriesBatch

RATES = (64.0, 250.0)  # a wearable ECG/PPG rate and a clinical one (a 3-point slope is steeper per sample)


def _undamped(output_bound: float = 0.0) -> SoterAdapter:
    """A window-scaled, last-value-anchored soter-tiny whose short-trend head follows the last 3 points' slope at
    gain 1 for ~e^10 sampling intervals: a straight line, not damped."""
    torch.manual_seed(0)
    cfg = preset("soter-tiny").replace(input_scaling="window", value_embedding=True, output_skip="last-value",
                                       short_trend_points=3, output_bound=output_bound, solver="rk4")
    model = SoterModel(cfg)
    with torch.no_grad():
        model.short_trend_head.weight.zero_()
        model.short_trend_head.bias.copy_(torch.tensor([1.0, 10.0]))
    return SoterAdapter(model, name="undamped", rollout="per-query")


class _LastSlope(Model):
    """Extrapolates the last two samples' slope in a straight line: what a forecaster that keeps climbing does."""

    name = "last-slope"

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        v, t = batch.values, batch.timestamps
        slope = (v[..., -1] - v[..., -2]) / (t[:, -1] - t[:, -2])[:, None]
        return v[..., -1:] + slope[..., None] * (query_times - t[:, -1:])[:, None]


class _Truth(Model):
    """Forecasts the named cases' true continuations, in the order :func:`check` asks for them."""

    name = "truth"

    def __init__(self, rate: float, names: tuple[str, ...], setting: tuple[int, int]) -> None:
        self.truths = [c.truth for c in adversarial.cases(rate, *setting) if c.name in names]

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self.truths.pop(0)


def test_the_cases_are_the_documented_ones_and_deterministic():
    first, second = adversarial.cases(), adversarial.cases()
    assert [c.name for c in first] == list(CASES)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.batch.values, b.batch.values)
        assert a.batch.values.shape == (adversarial.WINDOWS, 1, adversarial.CONTEXT)
        assert a.truth.shape == (adversarial.WINDOWS, 1, adversarial.HORIZON)


@pytest.mark.parametrize("setting", RISE_SETTINGS)
@pytest.mark.parametrize("rate", RATES)
def test_the_rise_cases_end_on_a_steep_rise_just_before_a_peak(rate, setting):
    slope = max(1, round(adversarial.SLOPE * rate))
    lead = {"r-upstroke": adversarial.R_LEAD, "pulse-upstroke": round(adversarial.PULSE_LEAD * rate)}
    for case in adversarial.cases(rate, *setting):
        if case.name not in RISE_CASES:
            continue
        ctx, truth = case.batch.values[:, 0], case.truth[:, 0]
        span = ctx.max(-1) - ctx.min(-1)
        assert np.all(ctx[:, -1] - ctx[:, -1 - slope] > 0.1 * span), case.name  # a steep rise at the end
        assert np.all(ctx[:, -1] > ctx[:, -2]), case.name
        ahead = truth[:, :lead[case.name] + 1]
        peak = ahead.argmax(-1)
        assert np.all(peak < lead[case.name]), case.name  # the peak is within the lead, not past it (or the horizon)
        assert np.all(ahead.max(-1) > ctx[:, -1]), case.name  # still rising into it


@pytest.mark.parametrize("setting", RISE_SETTINGS)
@pytest.mark.parametrize("rate", RATES)
def test_the_rise_property_can_fail_and_can_pass(rate, setting):
    """Against last value at 1.5x: straight-line extrapolation of the last slope fails it, last value scores exactly
    1 and the true continuation 0."""
    climbing = {r.case: r for r in check(_LastSlope(), rate, RISE_CASES, *setting)}
    assert all(r.ratio > adversarial.RISE_FACTOR and not r.passed for r in climbing.values()), climbing
    last = check(load_model("last-value", seed=0), rate, RISE_CASES, *setting)
    assert [(r.case, r.ratio, r.passed) for r in last] == [(c, 1.0, True) for c in RISE_CASES]
    exact = check(_Truth(rate, RISE_CASES, setting), rate, RISE_CASES, *setting)
    assert [(r.case, r.rmse, r.ratio, r.passed) for r in exact] == [(c, 0.0, 0.0, True) for c in RISE_CASES]


def test_the_simple_answers_pass_and_an_undamped_head_breaks_the_bound():
    for name in ("window-mean",):
        assert all(r.passed for r in check(load_model(name, seed=0))), name
    broken = {r.case: r for r in check(_undamped(), names=("upstroke",))}  # the one case this test is about
    assert not broken["upstroke"].bounded and broken["upstroke"].worst_excess > 1.0


def test_output_bound_bounds_the_same_weights_by_construction():
    bounded = check(_undamped(output_bound=adversarial.MARGIN))
    assert all(r.bounded for r in bounded), [(r.case, r.worst_excess) for r in bounded if not r.bounded]


def test_output_bound_off_is_the_model_without_it():
    torch.manual_seed(1)
    model = SoterModel(preset("soter-tiny").replace(solver="rk4")).eval()
    values = torch.rand(2, 2, 40)
    times = torch.arange(40, dtype=torch.float64)[None].repeat(2, 1) / 64
    query = times[:, -1:] + torch.arange(1, 9, dtype=torch.float64)[None] / 64
    plain = model.predict_each(values, times, query)
    model.config = model.config.replace(output_bound=0.0)
    torch.testing.assert_close(model.predict_each(values, times, query), plain, rtol=0, atol=0)
    model.config = model.config.replace(output_bound=0.1)
    clipped = model.predict_each(values, times, query)
    span = values.amax(-1, keepdim=True) - values.amin(-1, keepdim=True)
    assert (clipped <= values.amax(-1, keepdim=True) + 0.1 * span + 1e-6).all()
    assert (clipped >= values.amin(-1, keepdim=True) - 0.1 * span - 1e-6).all()


def test_check_narrows_to_named_cases_and_refuses_unknown_ones():
    assert [r.case for r in check(load_model("last-value", seed=0), names=("flat", "spike"))] == ["spike", "flat"]
    with pytest.raises(ValueError, match="unknown adversarial case"):
        check(load_model("last-value", seed=0), names=("ramp",))


@pytest.fixture(scope="module")
def shipped() -> dict[str, object]:
    """Each shipped entry loaded once for both rates (forecasting does not change a loaded model)."""
    return {}


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("name", [n for n, e in discover().items() if not e.faithful])
def test_every_departing_entry_has_the_adversarial_properties(name, rate, shipped):
    """Every case at 128/64, the rise cases included: today's ``soter-anchored`` (soter-cpu-64-noaux) passes them at
    64 and 250 Hz (ratios to last value 0.44-1.07, docs/soter.md); a candidate that replaces it must too."""
    if name not in shipped:
        shipped[name] = load_model(name, seed=0)
    model = shipped[name]
    failed = [(r.case, round(r.worst_excess, 3), round(r.ratio, 2)) for r in check(model, rate) if not r.passed]
    assert not failed, failed


# (checkpoint folder, rate) where a registered departing entry is known to break the rise property at the shortest
# setting: soter-cpu-64-noaux (soter-anchored today) is 1.85x last value's on the pulse upstroke at 250 Hz, 48/24: it
# falls back towards the context's mean while the pulse keeps rising (docs/soter.md). Strict: should that checkpoint
# pass, the mark fails and must go; any other checkpoint is held to the plain assertion.
RISE_KNOWN_FAILURES = {("soter-cpu-64-noaux", 250.0)}


def _rise_params() -> list:
    out = []
    for name, entry in discover().items():
        if entry.faithful:
            continue
        for rate in RATES:
            known = (entry.folder.name, rate) in RISE_KNOWN_FAILURES
            reason = (f"{entry.folder.name} reverts towards the mean on the pulse upstroke at {rate:g} Hz, 48/24 "
                      "(docs/soter.md)")
            marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)]
            out.append(pytest.param(name, rate, marks=marks if known else [], id=f"{name}-{rate:g}"))
    return out


@pytest.mark.parametrize(("name", "rate"), _rise_params())
def test_every_departing_entry_is_within_1_5x_last_value_on_rises_at_the_shortest_setting(name, rate, shipped):
    """The rise cases at 48/24 (the test above holds them at 128/64): a context of a third of a beat ending on an
    upstroke, where neither climbing on nor falling back to the context's mean is safe."""
    if name not in shipped:
        shipped[name] = load_model(name, seed=0)
    results = check(shipped[name], rate, RISE_CASES, *RISE_SETTINGS[1])
    failed = [(r.case, round(r.ratio, 2)) for r in results if not r.passed]
    assert not failed, failed


def test_the_departing_checkpoints_own_heads_leave_the_bound_without_output_bound():
    """Why soter-anchored runs with ``output_bound`` (issue #45): its short-trend and reversion heads are not damped by
    construction, and at 250 Hz they take a pulse's foot out of the context's range; with the bound the same weights
    stay inside it (the test above)."""
    entry = discover()["soter-anchored"]
    if entry.folder.name != "soter-cpu-64-noaux":
        pytest.skip("soter-anchored no longer runs the checkpoint with the short-trend head")
    unbounded = {r.case: r for r in check(load_model(entry.name, seed=0, output_bound=0.0), 250.0, names=("trough",))}
    assert not unbounded["trough"].bounded and unbounded["trough"].worst_excess > adversarial.TOLERANCE
