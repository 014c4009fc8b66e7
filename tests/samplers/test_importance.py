"""Importance-sampling ABC against closed forms (Gong 2022, eq. 3.3).

Each check asserts; each has a companion that plants a bug and must fail.
Seeds are fixed; quoted false-failure rates are those under a random seed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp

from ._oracles import (
    LaplacePosterior,
    gaussian_log_evidence,
    gaussian_posterior,
    laplace_log_evidence,
    normal_model,
    weighted_moments,
)

SIGMA = 1.0
S_DP = 1.3
DRAWS = 20_000
Z_MAX = 4.0  # |z| threshold: false-failure rate ~6e-5 per normal-approximation test
# Kolmogorov threshold: P(sqrt(n) D > 1.949) = 0.1% for i.i.d. draws. The resampled posterior
# is checked with n = ESS / 2, which bounds the weighted-ECDF plus resampling variance
# F(1 - F) (1/ESS + 1/draws); false-failure rate approximately 0.1%.
KS_CRIT = float(st.kstwobign.isf(1e-3))


def _importance(mechanism, released, *, model=None, draws=DRAWS, rng=11, **options):
    model = normal_model() if model is None else model
    options = {"batch_size": 7000, "progressbar": False, **options}
    return dp.importance_abc(model, mechanism, released, draws=draws, rng=rng, **options)


def _particles(idata, name="theta"):
    stats = idata.sample_stats
    values = stats[f"particle_{name}"].values
    values = values.reshape(-1, *values.shape[2:])
    weights = np.exp(stats["log_weight"].values.ravel())
    return values, weights


def check_weighted_moments(idata, mean, var):
    theta, w = _particles(idata)
    m_hat, se_m, v_hat, se_v = weighted_moments(theta, w)
    z_mean, z_var = (m_hat - mean) / se_m, (v_hat - var) / se_v
    assert abs(z_mean) < Z_MAX, f"weighted mean {m_hat:.4f} vs {mean:.4f} (z = {z_mean:.1f})"
    assert abs(z_var) < Z_MAX, f"weighted variance {v_hat:.4f} vs {var:.4f} (z = {z_var:.1f})"


def check_resampled_posterior(idata, cdf, mean, var):
    draws = idata.posterior["theta"].values.ravel()
    ess = idata.posterior.attrs["ess"]
    stat = st.kstest(draws, cdf).statistic
    assert stat * math.sqrt(ess / 2) < KS_CRIT, f"resampled KS distance {stat:.4f} (ESS {ess:.0f})"
    # Mean of the resampled draws: IS error var/ESS plus resampling error <= var/draws.
    se = math.sqrt(var / ess + var / len(draws))
    z = (draws.mean() - mean) / se
    assert abs(z) < Z_MAX, f"resampled mean {draws.mean():.4f} vs {mean:.4f} (z = {z:.1f})"


def check_log_evidence(idata, log_z):
    attrs = idata.posterior.attrs
    n, ess = attrs["n_simulations"], attrs["ess"]
    # exp(log_evidence) is the mean of n i.i.d. weights with squared coefficient of
    # variation n/ESS - 1, so se(log Z_hat) ~ sqrt((n/ESS - 1) / n) by the delta method.
    se = math.sqrt((n / ess - 1) / n)
    z = (attrs["log_evidence"] - log_z) / se
    assert abs(z) < Z_MAX, f"log evidence {attrs['log_evidence']:.4f} vs {log_z:.4f} (z={z:.1f})"


# --- scalar Gaussian release ------------------------------------------------------------------

EXACT = gaussian_posterior(S_DP, SIGMA)


def test_weighted_particles_match_the_closed_form_moments():
    idata = _importance(dp.Gaussian(SIGMA), S_DP)
    check_weighted_moments(idata, EXACT.mean(), EXACT.var())


def test_planted_wrong_scale_fails_the_weighted_moment_check():
    idata = _importance(dp.Gaussian(2 * SIGMA), S_DP)
    with pytest.raises(AssertionError, match="weighted"):
        check_weighted_moments(idata, EXACT.mean(), EXACT.var())


def test_resampled_posterior_matches_the_closed_form():
    idata = _importance(dp.Gaussian(SIGMA), S_DP)
    assert idata.posterior["theta"].shape == (4, DRAWS // 4)
    check_resampled_posterior(idata, EXACT.cdf, EXACT.mean(), EXACT.var())


def test_planted_wrong_scale_fails_the_resampled_posterior_check():
    idata = _importance(dp.Gaussian(2 * SIGMA), S_DP)
    with pytest.raises(AssertionError, match="resampled"):
        check_resampled_posterior(idata, EXACT.cdf, EXACT.mean(), EXACT.var())


def test_log_evidence_matches_the_closed_form():
    idata = _importance(dp.Gaussian(SIGMA), S_DP)
    check_log_evidence(idata, gaussian_log_evidence(S_DP, SIGMA))


def test_planted_wrong_scale_fails_the_log_evidence_check():
    idata = _importance(dp.Gaussian(0.5 * SIGMA), S_DP)
    with pytest.raises(AssertionError, match="log evidence"):
        check_log_evidence(idata, gaussian_log_evidence(S_DP, SIGMA))


# --- with a proposal other than the prior -----------------------------------------------------


class Shifted:
    """A N(0.6, 0.8^2) proposal; ``wrong_logpdf`` plants a bug (it reports the prior density)."""

    def __init__(self, *, wrong_logpdf=False):
        self.dist = st.norm(0.6, 0.8)
        self.wrong_logpdf = wrong_logpdf

    def sample(self, n, rng):
        return {"theta": self.dist.rvs(size=n, random_state=rng)}

    def logpdf(self, params):
        dist = st.norm(0.0, 1.0) if self.wrong_logpdf else self.dist
        return dist.logpdf(params["theta"])


def test_proposal_weights_recover_the_closed_form():
    idata = _importance(dp.Gaussian(SIGMA), S_DP, proposal=Shifted())
    assert idata.posterior.attrs["proposal"].startswith("<")
    check_weighted_moments(idata, EXACT.mean(), EXACT.var())
    check_log_evidence(idata, gaussian_log_evidence(S_DP, SIGMA))


def test_proposal_given_as_a_dict_of_frozen_distributions():
    idata = _importance(dp.Gaussian(SIGMA), S_DP, proposal={"theta": st.norm(0.6, 0.8)})
    check_weighted_moments(idata, EXACT.mean(), EXACT.var())


def test_planted_proposal_density_error_fails_the_moment_check():
    idata = _importance(dp.Gaussian(SIGMA), S_DP, proposal=Shifted(wrong_logpdf=True))
    with pytest.raises(AssertionError, match="weighted"):
        check_weighted_moments(idata, EXACT.mean(), EXACT.var())


# --- vector release: 2-D Laplace --------------------------------------------------------------

SCALES = (0.5, 2.0)
S_DP_VEC = (0.8, -1.5)


def check_vector_laplace(mechanism):
    idata = _importance(mechanism, S_DP_VEC, model=normal_model(dim=2), draws=12_000)
    theta, w = _particles(idata)
    assert theta.shape == (12_000, 2)
    # Two coordinates, two moments each: false-failure rate <= 2.4e-4 in all.
    for j, (x, b) in enumerate(zip(S_DP_VEC, SCALES, strict=True)):
        exact = LaplacePosterior(x, b)
        m_hat, se_m, v_hat, se_v = weighted_moments(theta[:, j], w)
        assert abs(m_hat - exact.mean) < Z_MAX * se_m, f"weighted mean, coordinate {j}"
        assert abs(v_hat - exact.var) < Z_MAX * se_v, f"weighted variance, coordinate {j}"
    check_log_evidence(idata, laplace_log_evidence(S_DP_VEC, SCALES))


def test_vector_laplace_matches_numerical_integration():
    check_vector_laplace(dp.Laplace(SCALES))


def test_planted_swapped_scales_fail_the_vector_check():
    with pytest.raises(AssertionError, match="weighted|log evidence"):
        check_vector_laplace(dp.Laplace(SCALES[::-1]))


# --- bookkeeping ------------------------------------------------------------------------------


def test_particles_are_one_per_draw_and_weights_normalised():
    # 7001 draws over 4 chains: 1751 each, 7004 particles in chunks of 7000 and 4.
    idata = _importance(dp.Gaussian(SIGMA), S_DP, draws=7001)
    theta, w = _particles(idata)
    assert theta.shape == (7004,)
    assert idata.posterior["theta"].shape == (4, 1751)
    assert idata.posterior.attrs["n_simulations"] == 7004
    assert w.sum() == pytest.approx(1.0)
    assert 1 <= idata.posterior.attrs["ess"] <= 7004


def test_chunk_of_one_with_a_vector_parameter():
    # A final chunk of a single particle: multivariate scipy priors squeeze size=1 draws.
    model = normal_model(dim=2)
    idata = _importance(
        dp.Laplace(SCALES), S_DP_VEC, model=model, draws=5, rng=0, chains=1, batch_size=4
    )
    assert idata.posterior["theta"].shape == (1, 5, 2)


def test_far_release_with_tiny_noise_does_not_underflow():
    # Every weight is below 1e-10000 on the natural scale; in log space nothing underflows.
    model = dp.Model(
        prior={"p": st.uniform(0, 1)}, simulate=lambda p, rng: rng.binomial(3, p["p"])
    )
    mech = dp.DiscreteLaplace(scale=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        idata = dp.importance_abc(model, mech, 40, draws=100, rng=0, progressbar=False)
    log_weight = idata.sample_stats["log_weight"].values
    assert np.all(np.isfinite(log_weight))
    assert np.exp(log_weight).sum() == pytest.approx(1.0)
    assert -40_000 < idata.posterior.attrs["log_evidence"] < -30_000
    assert idata.posterior.attrs["ess"] >= 1
