"""The rank statistic and its test, on simulated ranks (no sampler): fast and exact checks."""

from __future__ import annotations

import numpy as np
import scipy.stats as st

from dpinfer.calibration._ranks import bins_for, ranks, thinned, uniformity_pvalue


def _rejection_rate(fractional_sets: np.ndarray, alpha: float) -> float:
    bins = bins_for(fractional_sets.shape[1])
    return float(np.mean([uniformity_pvalue(u, bins) < alpha for u in fractional_sets]))


def test_false_failure_rate_is_the_level():
    # 2000 runs of 100 uniform fractional ranks: the rate of p < 0.05 has sd 0.0049, so
    # the window [0.03, 0.07] fails a calibrated test with probability 5e-5
    sets = np.random.default_rng(0).random((2000, 100))
    assert 0.03 < _rejection_rate(sets, 0.05) < 0.07


def test_companion_a_non_uniform_rank_law_is_rejected():
    # ranks of posteriors 0.6 times too narrow: u = Phi(z / 0.6) for a standard normal z
    z = np.random.default_rng(1).standard_normal((200, 100))
    assert _rejection_rate(st.norm.cdf(z / 0.6), 0.05) > 0.5


def test_ranks_are_uniform_on_0_to_L_with_ties():
    # a discrete parameter: truth and 9 draws i.i.d. Poisson(2); 40,000 replicates
    rng = np.random.default_rng(2)
    draws = rng.poisson(2.0, size=(9, 40_000)).astype(float)
    truth = rng.poisson(2.0, size=40_000).astype(float)
    rank, fractional = ranks(draws, truth, rng)
    counts = np.bincount(rank, minlength=10)
    assert st.chisquare(counts).pvalue > 1e-3  # false failure 0.1%
    assert st.kstest(fractional, "uniform").pvalue > 1e-3  # likewise
    # companion: counting only the draws below the truth (ties all placed after it)
    below = np.sum(draws < truth, axis=0)
    assert st.chisquare(np.bincount(below, minlength=10)).pvalue < 1e-3


def test_thinning_keeps_equally_spaced_draws():
    draws = np.arange(4 * 100, dtype=float).reshape(4, 100, 1)
    kept = thinned(draws, 40.0)  # ESS 40 of 400: about 20 kept, 5 per chain, every 20th
    np.testing.assert_array_equal(kept[:5, 0], [0, 20, 40, 60, 80])
    assert kept.shape == (20, 1)
    assert thinned(draws, 330.0).shape == (400, 1)  # ESS >= 0.8 N: independent, all kept
    assert thinned(draws, np.nan).shape == (400, 1)
    assert thinned(draws, 0.5).shape == (4, 1)  # at least one per chain
