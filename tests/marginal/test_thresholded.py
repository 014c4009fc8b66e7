"""Suppressed cells in the marginalised likelihood: kernel, PyMC and NUTS against references.

A suppressed cell contributes ``log P(s + noise below T)``; the kernel's terms for the four
noise families are checked against ``Thresholded.logpdf`` summed by brute force (far in both
tails of the suppression probability), and NUTS on a table with per-cell zCDP scales and
suppressed cells against the exact posterior by quadrature, with a companion that drops the
suppressed cells and must fail.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.results import effective_sample_size

from ._brute import log_marginal
from ._table import posterior_moments
from .test_kernel import kernel

TOL = 1e-10
INNER = {
    "discrete gaussian": dp.DiscreteGaussian(7.0),
    "discrete laplace": dp.DiscreteLaplace(5.0),
    "gaussian": dp.Gaussian(7.0),
    "laplace": dp.Laplace(5.0),
}


@pytest.mark.parametrize("inner", list(INNER))
@pytest.mark.parametrize("publish", ["at_least", "above"])
@pytest.mark.parametrize("mu", [0.5, 40.0, 90.0, 400.0, 5e4])
def test_a_suppressed_cell_matches_brute_force(inner, publish, mu):
    mech = dp.Thresholded(INNER[inner], threshold=90, publish=publish)
    reference = log_marginal("poisson", mu, 0, [(mech, np.nan)])
    logp, *_ = kernel("poisson", mu, 0, [(mech, np.nan)])
    assert abs(logp - reference) <= 2 * TOL + 1e-12 * abs(reference)


@pytest.mark.parametrize("inner", ["discrete gaussian", "gaussian"])
def test_a_published_cell_of_a_threshold_is_the_inner_density(inner):
    mech = dp.Thresholded(INNER[inner], threshold=90)
    for mu in (60.0, 120.0):
        got = kernel("poisson", mu, 0, [(mech, 97)])[0]
        assert got == pytest.approx(kernel("poisson", mu, 0, [(INNER[inner], 97)])[0], abs=1e-12)


def test_the_suppression_score_is_the_gradient():
    mech = dp.Thresholded(dp.DiscreteGaussian(7.0), threshold=90)
    for mu in (30.0, 95.0, 300.0):
        _, score, _, _ = kernel("poisson", mu, 0, [(mech, np.nan)])
        h = 1e-5 * mu
        up = log_marginal("poisson", mu + h, 0, [(mech, np.nan)])
        down = log_marginal("poisson", mu - h, 0, [(mech, np.nan)])
        assert score == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-8)


def test_a_published_cell_below_its_threshold_is_refused():
    mech = dp.Thresholded(dp.DiscreteGaussian(3.0, event_shape=(2,)), threshold=90)
    with pm.Model():
        with pytest.raises(ValueError, match="published cells below the threshold.*\\[1\\]"):
            mech.to_pymc("y", pm.Poisson.dist(50.0, shape=2), observed=np.array([95, 60]))


# --- NUTS on a table with per-cell zCDP noise and suppressed cells -----------------------

POP = np.array([700, 1500, 400, 2600, 900, 300, 1200])
RHO = np.array([0.5, 0.125, 0.02, 0.5, 0.02, 0.125, 0.02])  # sigma 1, 2, 5, 1, 5, 2, 5
THRESHOLD = 12
PRIOR = st.gamma(2.0, scale=1 / 200.0)


def _release():
    mech = dp.Thresholded(
        dp.DiscreteGaussian.from_zcdp(rho=RHO, sensitivity=1), threshold=THRESHOLD
    )
    counts = np.random.default_rng(11).poisson(POP * 0.008)
    return mech, mech.release(counts, rng=12)


def _exact(mech, released, *, drop_suppressed=False):
    cells = [
        (dp.Thresholded(dp.DiscreteGaussian(s), threshold=THRESHOLD), p, y)
        for s, p, y in zip(mech.mechanism.sigma, POP, released, strict=True)
        if not (drop_suppressed and np.isnan(y))
    ]
    return posterior_moments(cells, PRIOR, np.linspace(1e-6, 0.04, 1601))


@pytest.fixture(scope="module")
def nuts_draws():
    mech, released = _release()
    assert np.isnan(released).sum() >= 2  # the configuration suppresses some cells
    with pm.Model():
        rate = pm.Gamma("rate", 2.0, 200.0)
        mech.to_pymc("cases", pm.Poisson.dist(mu=POP * rate), observed=released)
        idata = pm.sample(
            1000,
            tune=500,
            chains=2,
            cores=1,
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return mech, released, idata.posterior["rate"].values


def _z(draws, exact):
    return (draws.mean() - exact[0]) / (exact[1] / np.sqrt(effective_sample_size(draws)))


def test_nuts_with_suppressed_cells_matches_quadrature(nuts_draws):
    mech, released, draws = nuts_draws
    # |z| < 4: false-failure rate about 6e-5 for an exact sampler
    assert abs(_z(draws, _exact(mech, released))) < 4


def test_companion_dropping_the_suppressed_cells_fails_the_same_check(nuts_draws):
    mech, released, draws = nuts_draws
    assert abs(_z(draws, _exact(mech, released, drop_suppressed=True))) > 4
