"""Log-weight utilities: normalisation, Kish ESS, systematic resampling."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.samplers import _weights


@pytest.mark.parametrize("n", [1, 7, 1000])
@pytest.mark.parametrize("level", [0.0, -800.0, 700.0])
def test_ess_of_equal_weights_is_n(n, level):
    # Far outside exp's range on purpose: the computation stays in log space.
    assert _weights.ess(np.full(n, level)) == pytest.approx(n, rel=1e-12)


def test_ess_of_a_single_nonzero_weight_is_one():
    lw = np.full(50, -np.inf)
    lw[17] = -3.0
    assert _weights.ess(lw) == pytest.approx(1.0)


def test_ess_matches_the_kish_formula():
    w = np.random.default_rng(0).gamma(0.5, size=200)
    assert _weights.ess(np.log(w)) == pytest.approx(w.sum() ** 2 / np.sum(w**2))


def test_normalise():
    lw = np.array([-1000.0, -1000.0 + np.log(3.0), -np.inf])
    assert np.allclose(_weights.normalise(lw), [0.25, 0.75, 0.0])


@pytest.mark.parametrize("bad", [np.full(3, -np.inf), np.array([0.0, np.inf])])
def test_normalise_refuses_degenerate_weights(bad):
    with pytest.raises(ValueError, match="every importance weight is zero"):
        _weights.normalise(bad)


def check_counts_within_one(resample, weights, n, rng):
    counts = np.bincount(resample(weights, n, rng), minlength=len(weights))
    assert counts.sum() == n
    expected = n * weights
    assert np.all(counts >= np.floor(expected) - 1e-9), "a count below floor(n w)"
    assert np.all(counts <= np.ceil(expected) + 1e-9), "a count above ceil(n w)"


@pytest.mark.parametrize("n", [1, 10, 97, 5000])
def test_systematic_counts_are_within_one_of_n_times_w(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        weights = rng.dirichlet(np.full(int(rng.integers(1, 60)), 0.3))
        check_counts_within_one(_weights.systematic_resample, weights, n, rng)


def test_systematic_with_a_zero_weight_never_picks_it():
    weights = np.array([0.5, 0.0, 0.5, 0.0])
    index = _weights.systematic_resample(weights, 1000, np.random.default_rng(1))
    assert set(np.unique(index)) == {0, 2}


def test_planted_multinomial_resampling_fails_the_within_one_check():
    # Companion: multinomial resampling is unbiased but its counts stray further than one.
    def multinomial(weights, n, rng):
        return rng.choice(len(weights), size=n, p=weights)

    weights = np.full(10, 0.1)
    with pytest.raises(AssertionError, match="a count"):
        check_counts_within_one(multinomial, weights, 5000, np.random.default_rng(0))
