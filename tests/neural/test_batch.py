"""Batched amortised sampling: ``estimator.sample(releases)`` and ``posterior(releases, prior)``.

The estimators are trained for one round on the prior predictive of the two-parameter toy
problem (amortised), with the tiny settings of ``test_api``. Statistical checks state
their false-failure rate beside them; each has a companion that must fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from dpinfer.neural import MCMC, _mcmc, sple, sppe

from . import _toy
from .test_api import TINY

RELEASES = np.array([[1.6, -0.9], [-2.0, 1.5], [0.3, 0.2]])
MCMC_SETTINGS = MCMC(warmup=200, thin=5, proposal_chains=4, initial_candidates=200)


@pytest.fixture(scope="module")
def posterior():
    return sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, **{**TINY, "rng": 1})[1]


@pytest.fixture(scope="module")
def likelihood():
    mcmc = MCMC(warmup=20, thin=1, proposal_chains=4, initial_candidates=50)
    with pytest.warns(RuntimeWarning, match="R-hat"):  # the tiny final chains
        return sple(_toy.model(), _toy.mechanism(), _toy.RELEASED, mcmc=mcmc, **TINY, rng=1)[1]


def test_posterior_batch_layout_and_reproducibility(posterior):
    idata = posterior.sample(RELEASES, draws=40, rng=3)
    assert idata.posterior["a"].dims == ("chain", "draw", "release")
    assert idata.posterior["a"].shape == (4, 10, 3)
    assert idata.sample_stats["log_q"].shape == (4, 10, 3)
    np.testing.assert_array_equal(idata.observed_data["s_dp"], RELEASES)
    assert np.asarray(idata.attrs["ess_release"]).shape == (3,)
    assert idata.attrs["method"] == "sppe" and idata.attrs["releases"] == 3
    again = posterior.sample(RELEASES, draws=40, rng=3)
    np.testing.assert_array_equal(idata.posterior["b"], again.posterior["b"])
    other = posterior.sample(RELEASES, draws=40, rng=4)
    assert not np.array_equal(idata.posterior["b"], other.posterior["b"])
    # log_q is the estimate's density at each draw, as for one release
    first = {k: np.asarray(idata.posterior[k])[:, :, 0].ravel() for k in ("a", "b")}
    np.testing.assert_allclose(
        np.asarray(idata.sample_stats["log_q"])[:, :, 0].ravel(),
        posterior.log_prob(first, RELEASES[0]),
        rtol=1e-4,
    )


def test_batch_draws_are_each_releases_own(posterior):
    # i.i.d. draws from one flow: a two-sample KS test per parameter, false failure 0.1%
    batch = posterior.sample(RELEASES[:2], draws=2000, rng=5)
    single = posterior.sample(RELEASES[0], draws=2000, rng=6)
    for name in ("a", "b"):
        mine = np.asarray(batch.posterior[name])[:, :, 0].ravel()
        other = np.asarray(batch.posterior[name])[:, :, 1].ravel()
        reference = np.asarray(single.posterior[name]).ravel()
        assert st.ks_2samp(mine, reference).pvalue > 1e-3
        # companion: the other release's draws are told apart
        assert st.ks_2samp(other, reference).pvalue < 1e-3


def test_a_batch_of_one_and_bad_batches(posterior):
    one = posterior.sample(RELEASES[:1], draws=8, rng=1)
    assert one.posterior["a"].shape == (4, 2, 1)
    with pytest.raises(ValueError, match=r"\(one release, .*\) or \(m, \*\(2,\)\)"):
        posterior.sample(np.zeros((3, 3)), draws=8)
    with pytest.raises(ValueError, match="a batch of m >= 1"):
        posterior.sample(np.zeros((0, 2)), draws=8)
    with pytest.raises(ValueError, match="released"):
        posterior.sample(np.array([[0.0, np.nan]]), draws=8)


def test_likelihood_batch_layout(likelihood):
    idata = likelihood.posterior(RELEASES, _toy.model().prior, draws=40, mcmc=MCMC_SETTINGS, rng=2)
    assert idata.posterior["a"].shape == (4, 10, 3)
    for stat in ("log_likelihood_estimate", "lp"):
        assert idata.sample_stats[stat].shape == (4, 10, 3)
    assert np.asarray(idata.attrs["rhat_release"]).shape == (3,)
    assert 0 < idata.attrs["mcmc_acceptance_rate"] < 1


def test_likelihood_batch_chains_target_their_own_release(likelihood):
    # each release's kept states carry log q(its release | theta) and its log target
    prior = _toy.model().prior
    idata = likelihood.posterior(RELEASES, prior, draws=40, mcmc=MCMC_SETTINGS, rng=7)
    for i, release in enumerate(RELEASES):
        params = {k: np.asarray(idata.posterior[k])[:, :, i].ravel() for k in ("a", "b")}
        log_q = likelihood.log_prob(release, params)
        stats = {
            k: np.asarray(idata.sample_stats[k])[:, :, i].ravel()
            for k in ("lp", "log_likelihood_estimate")
        }
        np.testing.assert_allclose(stats["log_likelihood_estimate"], log_q, rtol=1e-6)
        # the toy prior is normal: no change of variables, lp = log prior + log q
        np.testing.assert_allclose(stats["lp"], prior.logpdf(params) + log_q, rtol=1e-6)
        other = likelihood.log_prob(RELEASES[(i + 1) % 3], params)
        assert not np.allclose(stats["log_likelihood_estimate"], other, rtol=1e-3)


def _group_targets(z):
    """Group 0 of the chains targets N(-3, 1), group 1 N(4, 0.05^2)."""
    half = len(z) // 2
    centre = np.r_[np.full(half, -3.0), np.full(half, 4.0)]
    scale = np.r_[np.ones(half), np.full(half, 0.05)]
    return st.norm.logpdf(z[:, 0], centre, scale)


def _moves(z):
    """Fraction of consecutive kept states that differ (the acceptance rate with thin=1)."""
    return np.mean(np.diff(z[..., 0], axis=1) != 0, axis=1)


def test_grouped_chains_adapt_their_own_proposal():
    rng = np.random.default_rng(0)
    start = np.r_[np.full(4, -3.0), np.full(4, 4.0)][:, None]
    options = MCMC(warmup=500, thin=1)
    run = _mcmc.random_walk_metropolis(
        _group_targets, start, np.eye(1), 2000, options, rng, groups=2
    )
    z = run.z.reshape(2, 4, 2000, 1)
    # means within 6 standard errors (the chains' ESS is at least a tenth of their 4000 draws)
    for group, (mean, sd) in enumerate([(-3.0, 1.0), (4.0, 0.05)]):
        assert abs(z[group].mean() - mean) < 6 * sd / math.sqrt(400)
        assert 0.15 < _moves(z[group]).mean() < 0.5  # each adapted towards 0.3
    # companion: one proposal for both groups (groups=1) cannot suit both widths
    shared = _mcmc.random_walk_metropolis(_group_targets, start, np.eye(1), 1000, options, rng)
    rates = [_moves(g).mean() for g in shared.z.reshape(2, 4, 1000, 1)]
    assert min(rates) < 0.15 or max(rates) > 0.5
