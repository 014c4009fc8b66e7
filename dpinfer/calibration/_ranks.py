r"""Ranks of a true parameter among posterior draws, and the test of their uniformity.

*Ranks.* With ``L`` posterior draws ``x_1..x_L`` of a scalar component and its true
value ``t``, the rank is ``r = #{x_l < t}``; draws equal to ``t`` (a discrete
parameter) are ranked in random order, so ``r = #{x_l < t} + U{0..#{x_l = t}}``.
If the draws and ``t`` are exchangeable (exact, independent posterior draws and a
true value from the prior), ``r`` is uniform on ``{0, .., L}`` (Talts et al. 2018).
The *fractional rank* ``u = (r + V) / (L + 1)``, ``V ~ U(0, 1)``, is then exactly
uniform on ``(0, 1)`` whatever ``L``, so replicates with different numbers of
draws (after thinning) are pooled without binning artefacts.

*Thinning.* Autocorrelated draws (MCMC, SMC's resampled particles) make ranks pile
up at both ends even when every draw has the right distribution. Draws whose ESS is
below ``INDEPENDENT`` (0.8) times their number are thinned to about ``ESS / 2``,
equally spaced along each chain: a spacing of twice the integrated autocorrelation
time ``N / ESS``. Thinning to ``ESS`` draws (spacing ``N / ESS``) leaves neighbours
correlated (about ``e^-2`` for an AR(1) chain, more when the ESS of short chains is
overestimated), and on AR(1) chains of exact draws that was enough for the test to
fail (p = 4e-4 at autocorrelations 0.5 and 0.995, 100 draws per chain, 200
replicates); at ``ESS / 2`` the smallest p-value over the same cases was 0.025. An
ESS of at least ``0.8 N`` is read as independent draws (an i.i.d. sampler's bulk ESS
falls below ``N`` by estimation noise alone) and all draws are kept.

*Test.* Pearson's chi-square test of the fractional ranks in ``B`` equiprobable bins,
``B = min(20, replicates // 5)`` (at least 5 expected per bin), ``B - 1`` degrees of
freedom. Under a correct sampler the p-value is uniform up to the chi-square
approximation, so a test at level ``alpha`` fails a correct sampler with
probability ``alpha`` (``tests/calibration/test_ranks.py`` checks this rate on
simulated uniform ranks). It detects too narrow and too wide posteriors (ranks
piled at the ends or in the middle) and shifted ones.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats

from .._diagnostics import bulk_ess

MAX_BINS = 20
PER_BIN = 5
INDEPENDENT = 0.8


def bins_for(replicates: int) -> int:
    """Bins of the chi-square test for ``replicates`` ranks (fewer than 2: no test)."""
    return min(MAX_BINS, replicates // PER_BIN)


def uniformity_pvalue(fractional: np.ndarray, bins: int) -> float:
    """Pearson chi-square p-value of ``fractional`` ranks in ``bins`` equiprobable bins."""
    if bins < 2:
        return math.nan
    index = np.minimum((np.asarray(fractional) * bins).astype(int), bins - 1)
    expected = index.size / bins
    statistic = np.sum((np.bincount(index, minlength=bins) - expected) ** 2) / expected
    return float(scipy.stats.chi2.sf(statistic, bins - 1))


def thinned(draws: np.ndarray, ess: float) -> np.ndarray:
    """Keep about ``ess / 2`` of ``(chains, n, k)`` draws, equally spaced along each chain.

    Returns the kept draws flattened to ``(L, k)``; all of them when ``ess`` is at
    least ``INDEPENDENT`` times the number of draws (or not finite).
    """
    chains, n, k = draws.shape
    if math.isfinite(ess) and ess < INDEPENDENT * chains * n:
        per_chain = max(1, math.ceil(ess / (2 * chains)))
        draws = draws[:, (np.arange(per_chain) * n) // per_chain]
    return draws.reshape(-1, k)


def draws_ess(draws: np.ndarray, reported: float) -> float:
    """Return the ESS to thin by: the sampler's ``reported`` one, else the smallest bulk ESS."""
    if math.isfinite(reported) and reported > 0:
        return reported
    bulk = bulk_ess(draws)
    return float(np.nanmin(bulk)) if np.isfinite(bulk).any() else math.nan


def ranks(draws: np.ndarray, truth: np.ndarray, rng: np.random.Generator):
    """Ranks ``(k,)`` of ``truth`` among ``draws`` ``(L, k)`` and their fractional ranks."""
    below = np.sum(draws < truth, axis=0)
    ties = np.sum(draws == truth, axis=0)
    rank = below + rng.integers(0, ties + 1)
    fractional = (rank + rng.random(rank.shape)) / (draws.shape[0] + 1)
    return rank, fractional
