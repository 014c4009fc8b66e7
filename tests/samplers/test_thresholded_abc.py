"""Exact ABC on a table with per-cell zCDP discrete Gaussian noise and suppressed cells.

Four counts ``s_j ~ Poisson(pop_j r)`` are released through discrete Gaussian noise
with a rho of their own (sigma 1, 2, 5 and 5) and a threshold of 25: two cells are
published, two suppressed. The exact posterior of ``r`` is computed by quadrature on
a fine grid, each cell's count summed against its noise: the published cells
against the discrete Gaussian pmf, the suppressed ones against the probability
that count plus noise falls below 25, both by brute force (direct sums of the pmf
normalised by its own sum, independently of dpinfer).

Rejection ABC and SMC ABC with ``Thresholded`` as the kernel must match it within
Monte Carlo error: the posterior mean within ``Z = 4`` standard errors
(``sd / sqrt(ess)``; the rejection draws are i.i.d.), false-failure rate 6e-5 each,
and (rejection) a Kolmogorov-Smirnov test against the exact CDF at level 1e-3. The
planted-bug companion drops the suppressed cells (treats them as absent, as a naive
analysis of the published file would) and must fail.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import logsumexp

import dpinfer as dp

Z = 4.0
KS_LEVEL = 1e-3
POPS = np.array([100, 150, 60, 90])
RHO = [0.5, 0.125, 0.02, 0.02]  # sigma = 1 / sqrt(2 rho): 1, 2, 5, 5
THRESHOLD = 25
RELEASED = np.array([31.0, 40.0, np.nan, np.nan])
PRIOR = st.gamma(20, scale=0.0135)  # mean 0.27, sd 0.06


def mechanism():
    noise = dp.DiscreteGaussian.from_zcdp(rho=RHO, sensitivity=1)
    return dp.Thresholded(noise, threshold=THRESHOLD)


def model():
    return dp.Model(
        prior={"r": PRIOR}, simulate=lambda p, rng: rng.poisson(POPS * p["r"][:, None])
    )


def _log_noise_pmf(x, sigma):
    support = np.arange(-int(40 * sigma) - 40, int(40 * sigma) + 41)
    log_z = logsumexp(-(support**2) / (2 * sigma**2))
    return -(np.asarray(x, float) ** 2) / (2 * sigma**2) - log_z


def _cell_log_eta(j, counts, sigma):
    """``log eta_j(y_j | s)`` at every count ``s``: the pmf, or the suppressed event."""
    if not np.isnan(RELEASED[j]):
        return _log_noise_pmf(RELEASED[j] - counts, sigma)
    below = np.arange(-200, THRESHOLD)  # the noisy values the threshold suppresses
    return logsumexp(_log_noise_pmf(below[None, :] - counts[:, None], sigma), axis=1)


@pytest.fixture(scope="module")
def exact():
    """Grid, density and CDF of the exact posterior of r (midpoint rule on 4,000 points).

    The grid covers the prior's mass but 1e-12 at each end ([0.03, 0.95]); counts up to
    300 leave out Poisson mass below 1e-20 wherever r is on it.
    """
    sigma = 1 / np.sqrt(2 * np.array(RHO))
    assert PRIOR.cdf(0.03) < 1e-12 and PRIOR.sf(0.95) < 1e-12
    r = 0.03 + (np.arange(4000) + 0.5) * (0.92 / 4000)
    counts = np.arange(0, 300)
    log_post = PRIOR.logpdf(r)
    for j in range(4):
        log_eta = _cell_log_eta(j, counts, sigma[j])
        log_post = log_post + logsumexp(
            st.poisson.logpmf(counts[None, :], POPS[j] * r[:, None]) + log_eta[None, :], axis=1
        )
    w = np.exp(log_post - logsumexp(log_post))
    return {"r": r, "w": w, "mean": float(w @ r), "cdf": np.cumsum(w)}


class _SuppressedCellsDropped(dp.Thresholded):
    """Planted: the suppressed cells contribute nothing (as if they were not in the table)."""

    def _log_suppressed(self, s):
        return np.zeros(np.shape(s))


def _matches(draws, ess, exact) -> bool:
    se = draws.std() / np.sqrt(ess)
    return abs(draws.mean() - exact["mean"]) < Z * se


def _ks_pvalue(draws, exact) -> float:
    return st.kstest(draws, lambda x: np.interp(x, exact["r"], exact["cdf"])).pvalue


@pytest.fixture(scope="module")
def rejection_draws():
    out = {}
    for label, mech in (("right", mechanism()), ("dropped", _planted())):
        idata = dp.rejection_abc(model(), mech, RELEASED, draws=3000, rng=11, progressbar=False)
        out[label] = idata.posterior["r"].values.ravel()
    return out


def _planted():
    right = mechanism()
    return _SuppressedCellsDropped(right.mechanism, threshold=THRESHOLD)


def test_the_suppressed_cells_carry_information(exact):
    # guards the companion: without the suppressed cells the posterior moves by many se
    assert 0.2 < exact["mean"] < 0.3


def test_rejection_abc_matches_the_exact_posterior(rejection_draws, exact):
    draws = rejection_draws["right"]
    assert _matches(draws, draws.size, exact)
    assert _ks_pvalue(draws, exact) > KS_LEVEL


def test_rejection_companion_dropping_suppressed_cells_fails(rejection_draws, exact):
    draws = rejection_draws["dropped"]
    assert not _matches(draws, draws.size, exact)
    assert _ks_pvalue(draws, exact) < KS_LEVEL


@pytest.mark.parametrize("label", ["right", "dropped"])
def test_smc_abc_matches_the_exact_posterior_and_the_companion_fails(label, exact):
    mech = mechanism() if label == "right" else _planted()
    idata = dp.smc_abc(model(), mech, RELEASED, particles=2000, rng=12, progressbar=False)
    draws = idata.posterior["r"].values.ravel()
    assert _matches(draws, idata.attrs["ess"], exact) == (label == "right")
    # the release with its NaN cells, the guarantee in zCDP, the parameters of both layers
    np.testing.assert_array_equal(idata.observed_data["s_dp"].values, RELEASED)
    assert idata.attrs["rho"] == 0.5 and np.isnan(idata.attrs["epsilon"])
    np.testing.assert_allclose(idata.constant_data["mechanism_inner_sigma"], [1, 2, 5, 5])
    np.testing.assert_array_equal(idata.constant_data["mechanism_threshold"], [25] * 4)
