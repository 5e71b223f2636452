"""Normalised permutation entropy on signals whose value is known, and against neurokit2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.npe import DELAY, ORDER, dataset_npe, ordinal_patterns, permutation_entropy


def test_documented_defaults():
    assert (ORDER, DELAY) == (4, 1)


@pytest.mark.parametrize("x", [np.arange(1000.0), -np.arange(1000.0) ** 2, np.full(50, 3.0)])
def test_monotone_or_constant_series_have_zero_entropy(x):
    assert permutation_entropy(x) == 0.0


def test_white_noise_is_close_to_one():
    noise = np.random.default_rng(0).standard_normal(100_000)
    assert 0.995 < permutation_entropy(noise) <= 1.0
    assert 0.995 < permutation_entropy(noise, order=3, delay=2) <= 1.0


def test_bandt_pompe_example_by_hand():
    # (4,7,9) (7,9,10): rising twice; (9,10,6) (6,11,3): 3rd < 1st < 2nd twice; (10,6,11) once
    x = np.array([4, 7, 9, 10, 6, 11, 3.0])
    p = np.array([2, 2, 1]) / 5
    assert permutation_entropy(x, order=3) == pytest.approx(-(p * np.log(p)).sum() / math.log(6), abs=1e-15)


def test_vectors_touching_a_missing_sample_are_not_counted():
    x = np.array([0, 1, 2, 3, np.nan, 3, 2, 1, 0])
    assert len(ordinal_patterns(x, order=3)) == 4  # two rising, two falling; none across the gap
    assert permutation_entropy(x, order=3) == pytest.approx(math.log(2) / math.log(6), abs=1e-15)
    with pytest.raises(ValueError, match="no embedding vector free of missing"):
        permutation_entropy(np.array([1.0, np.nan, 2.0, 3.0, np.nan, 4.0]), order=3)


@pytest.mark.parametrize("order,delay", [(3, 1), (4, 1), (5, 2)])
def test_matches_neurokit2(order, delay):
    nk = pytest.importorskip("neurokit2")
    x = np.cumsum(np.random.default_rng(order).standard_normal(3000))  # a random walk: far from 0 and 1
    ours = permutation_entropy(x, order, delay)
    theirs, _ = nk.entropy_permutation(x, dimension=order, delay=delay, corrected=True)
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_bad_parameters_and_short_series_are_errors():
    with pytest.raises(ValueError, match="too short"):
        permutation_entropy(np.arange(3.0))
    with pytest.raises(ValueError, match="order >= 2"):
        permutation_entropy(np.arange(10.0), order=1)
    with pytest.raises(ValueError, match="1-D"):
        permutation_entropy(np.zeros((2, 10)))


def test_dataset_npe_is_the_mean_over_channels_and_recordings():
    noise = np.random.default_rng(1).standard_normal(5000)
    a = np.stack([np.arange(5000.0), noise])
    b = np.stack([noise[::-1], np.arange(5000.0)])
    expected = np.mean([0.0, permutation_entropy(noise), permutation_entropy(noise[::-1]), 0.0])
    assert dataset_npe([a, b]) == pytest.approx(expected, abs=1e-15)
    assert dataset_npe([a], max_samples=100) == pytest.approx(np.mean([0.0, permutation_entropy(noise[:100])]))
    assert dataset_npe([np.arange(2.0)[None], a]) == pytest.approx(dataset_npe([a]))  # too short: left out
    with pytest.raises(ValueError, match="no series"):
        dataset_npe([np.arange(2.0)[None]])
