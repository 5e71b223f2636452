"""Per-window augmentation of training windows: rate changes keep values and timestamps consistent, flips only where
the signal allows them, levels stay in the corpus's units, and no augmentation leaves every batch as it was."""

from __future__ import annotations

import numpy as np
import pytest

from models.soter.training.augment import (MARGIN, AugmentPlan, apply_plan, draw_plan, parse_augment, signal_kind)
from models.soter.training.config import TrainConfig
from models.soter.training.corpus import open_corpus
from models.soter.training.sampler import WindowSampler
from models.soter.training.train import main

RATE = 100.0


def _sine(plan: AugmentPlan, length: int, freq: float, phase: float = 0.3):
    """A raw stretch of a sine at RATE Hz, as long as the plan needs, starting at 12.5 s."""
    t = 12.5 + np.arange(plan.raw_length(length)) / RATE
    return (0.5 + 0.3 * np.sin(2 * np.pi * freq * t + phase))[None], t


@pytest.mark.parametrize("plan", [AugmentPlan(decimate=2), AugmentPlan(decimate=4), AugmentPlan(factor=0.6),
                                  AugmentPlan(factor=1.7)])
def test_a_rate_change_keeps_values_and_timestamps_consistent(plan):
    """Resampled values are the signal at the new timestamps, which are on the new rate's grid."""
    length = 120
    values, times = _sine(plan, length, freq=2.0)
    out, new_times = apply_plan(plan, values, times, length, ("other",))
    assert out.shape == (1, length) and out.dtype == np.float32 and new_times.shape == (length,)
    new_rate = RATE / plan.decimate if plan.decimate > 1 else RATE * plan.factor
    np.testing.assert_allclose(np.diff(new_times), 1.0 / new_rate, rtol=2e-2)
    assert times[0] <= new_times[0] and new_times[-1] <= times[-1]
    expected = 0.5 + 0.3 * np.sin(2 * np.pi * 2.0 * new_times + 0.3)
    np.testing.assert_allclose(out[0], expected, atol=5e-3)


def test_decimation_is_anti_aliased():
    """A tone above the new Nyquist frequency is filtered out rather than folded into the band."""
    plan = AugmentPlan(decimate=4)  # 100 Hz -> 25 Hz, Nyquist 12.5 Hz
    values, times = _sine(plan, 100, freq=20.0)
    out, _ = apply_plan(plan, values, times, 100, ("other",))
    assert np.ptp(out) < 0.05 * 0.6  # the plain stride would keep a 5 Hz alias of full amplitude
    assert np.ptp(values[0, ::4]) > 0.3


def test_flips_only_where_the_signal_allows_them():
    rng = np.random.default_rng(0)
    x = rng.random((4, 50))
    t = np.arange(50) / RATE
    out, out_t = apply_plan(AugmentPlan(flip=True), x, t, 50, ("ecg", "ppg", "eda", "generic"))
    np.testing.assert_allclose(out[0], 1 - x[0], atol=1e-7)  # ECG lead polarity
    np.testing.assert_allclose(out[1:3], x[1:3], atol=1e-7)  # PPG and EDA never flip
    np.testing.assert_allclose(out[3], (1 - x[3])[::-1], atol=1e-7)  # a generic series: sign and time
    np.testing.assert_array_equal(out_t, t)  # timestamps keep their order
    assert [signal_kind(c) for c in ("II", "ECG", "V5", "vx", "PLETH", "RESP", "EDA", "ABP")] == [
        "ecg", "ecg", "ecg", "ecg", "ppg", "rsp", "eda", "other"]
    same, _ = apply_plan(AugmentPlan(flip=True), x[:1], t, 50, ("other",))
    np.testing.assert_allclose(same, x[:1], atol=1e-7)  # unknown channels are never flipped


def test_scale_and_offset_keep_windows_in_the_unit_range():
    rng = np.random.default_rng(1)
    t = np.arange(64) / RATE
    moved = 0
    for seed in range(40):
        x = 0.2 + 0.5 * rng.random((2, 64))
        out, _ = apply_plan(AugmentPlan(scale=True, offset=True, seed=seed), x, t, 64, ("ecg", "other"))
        assert np.isfinite(out).all() and out.min() >= -1e-6 and out.max() <= 1 + 1e-6
        moved += not np.allclose(out, x, atol=1e-6)
        # scale and offset are affine per channel: the shape is kept
        for c in range(2):
            assert np.corrcoef(out[c], x[c])[0, 1] == pytest.approx(1.0, abs=1e-6)
    assert moved == 40


def test_plans_follow_their_probabilities():
    rng = np.random.default_rng(2)
    plans = [draw_plan({"decimate": 0.3, "resample": 0.3, "flip": 1.0}, rng) for _ in range(400)]
    dec = np.mean([p.decimate > 1 for p in plans])
    res = np.mean([p.factor != 1.0 for p in plans])
    assert 0.2 < dec < 0.4 and 0.2 < res < 0.4 and not any(p.decimate > 1 and p.factor != 1 for p in plans)
    assert all(p.flip and not p.scale and not p.offset for p in plans)
    assert {p.decimate for p in plans} == {1, 2, 3, 4}
    factors = [p.factor for p in plans if p.factor != 1.0]
    assert 0.5 <= min(factors) and max(factors) <= 2.0
    assert AugmentPlan(decimate=3).raw_length(100) == 3 * (100 + 2 * MARGIN)


def test_no_augmentation_gives_todays_batches_bit_for_bit(corpus):
    ds = open_corpus(corpus)
    kw = dict(max_target_offset=6, next_step_prob=0.5, min_context=8)
    today = WindowSampler(ds, 32, 3, seed=9, **kw)
    none = WindowSampler.from_config(ds, TrainConfig(max_length=32, min_length=16, batch_size=3, seed=9, augment="",
                                                     **kw))
    zero = WindowSampler(ds, 32, 3, seed=9, **kw, augment={"flip": 0.0})
    for step in range(6):
        for other in (none, zero):
            a, b = today.batch(step), other.batch(step)
            assert np.array_equal(a.values, b.values) and np.array_equal(a.times, b.times)
            assert np.array_equal(a.observed, b.observed)


def test_augmented_batches_keep_their_structure_and_are_pure_functions_of_the_step(corpus):
    ds = open_corpus(corpus)  # a 64 Hz synthetic dataset
    kw = dict(max_target_offset=6, next_step_prob=0.5, min_context=8, targets_per_window=2,
              augment={"decimate": 0.4, "resample": 0.4, "scale": 0.5, "offset": 0.5, "flip": 0.5})
    sampler = WindowSampler(ds, 32, 4, seed=2, **kw)
    today = WindowSampler(ds, 32, 4, seed=2, **{k: v for k, v in kw.items() if k != "augment"})
    rates = set()
    for step in range(6):
        b, again, plain = sampler.batch(step), sampler.batch(step), today.batch(step)
        assert np.array_equal(b.values, again.values) and np.array_equal(b.times, again.times)
        assert b.values.shape == plain.values.shape and b.observed.shape == plain.observed.shape
        assert b.missing_regime == plain.missing_regime and b.dataset == plain.dataset
        assert np.isfinite(b.values).all() and b.values.min() > -0.1 and b.values.max() < 1.1
        length = sampler.context_length(step)
        dt = np.diff(b.times[:, :length], axis=1)
        assert (dt > 0).all()
        rates.update(np.round(1.0 / np.median(dt, axis=1)).tolist())
    assert max(rates) > 64 * 1.1 and min(rates) < 64 / 1.9  # upsampled and decimated windows
    halves = [WindowSampler(ds, 32, 2, seed=2, rank=r, world_size=2, **kw).batch(3) for r in (0, 1)]
    np.testing.assert_array_equal(np.concatenate([h.values for h in halves]), sampler.batch(3).values)


def test_generated_windows_are_augmented_too(corpus):
    ds = open_corpus(corpus)
    kw = dict(generated_share=1.0, generators={"sarima": 1.0}, missing_prob=0.0)
    plain = WindowSampler(ds, 40, 3, seed=6, **kw).batch(0)
    flipped = WindowSampler(ds, 40, 3, seed=6, **kw, augment={"flip": 1.0}).batch(0)
    np.testing.assert_allclose(flipped.values, (1 - plain.values)[..., ::-1], atol=1e-6)  # sign and time
    np.testing.assert_array_equal(flipped.times, plain.times)


def test_bad_augment_values_are_one_clear_error(capsys):
    assert parse_augment("") == {} and parse_augment("flip=0.5, scale=0") == {"flip": 0.5}
    for bad, match in [("flap=0.5", "flap"), ("flip=2", r"\[0, 1\]"), ("flip", "NAME=PROBABILITY"),
                       ("decimate=0.6,resample=0.6", "at most 1"), ("scale=x", "not a number")]:
        with pytest.raises(ValueError, match=match):
            TrainConfig(augment=bad)
    with pytest.raises(ValueError, match="unknown"):
        WindowSampler([], 32, 2, seed=0, augment={"mirror": 0.5})
    with pytest.raises(SystemExit) as exit_:
        main(["fit", "--corpus", "nowhere", "--augment", "flip=3"])
    assert exit_.value.code == 2 and "flip" in capsys.readouterr().err
