"""GridPosterior against closed forms: normal-normal, beta-binomial, gamma-Poisson, 2-D products.

Statistical checks (KS tests of the draws) use fixed seeds; the comment beside each
gives its false-failure rate, and a companion plants a bug that the same check must catch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import betaln, gammaln

import dpinfer as dp
from dpinfer.grid import GridPosterior

KS_LEVEL = 1e-3  # a correct draw fails one KS check with probability 0.1%

# normal mean, prior N(0, 1), one observation y = 1 with sd 0.5: posterior N(0.8, 0.2)
Y, SD = 1.0, 0.5
NORMAL_POST = st.norm(0.8, math.sqrt(0.2))
NORMAL_LOG_Z = st.norm(0.0, math.sqrt(1.0 + SD**2)).logpdf(Y)


def _normal(n=2001, prior=st.norm(0, 1).logpdf):
    return GridPosterior(np.linspace(-6, 6, n), lambda m: st.norm(m, SD).logpdf(Y), prior)


@pytest.fixture(scope="module")
def normal():
    return _normal()


def test_normal_normal_moments_quantiles_cdf_evidence(normal):
    assert normal.mean() == pytest.approx(0.8, abs=1e-10)
    assert normal.std() == pytest.approx(math.sqrt(0.2), rel=1e-9)
    q = np.array([0.01, 0.05, 0.5, 0.95, 0.99])
    np.testing.assert_allclose(normal.ppf(q), NORMAL_POST.ppf(q), rtol=0, atol=1e-8)
    x = np.array([-1.0, 0.3, 0.8, 1.7])
    np.testing.assert_allclose(normal.cdf(x), NORMAL_POST.cdf(x), atol=1e-10)
    np.testing.assert_allclose(normal.pdf(x), NORMAL_POST.pdf(x), rtol=1e-6, atol=1e-8)
    assert normal.log_evidence == pytest.approx(NORMAL_LOG_Z, abs=1e-10)
    assert normal.evidence == pytest.approx(math.exp(NORMAL_LOG_Z), rel=1e-10)
    assert normal.cdf(-7.0) == 0.0 and normal.cdf(7.0) == 1.0
    assert normal.cov().shape == (1, 1)


def test_values_instead_of_callables_and_a_shift_give_the_same_posterior(normal):
    grid = np.linspace(-6, 6, 2001)
    post = GridPosterior(
        grid, st.norm(grid, SD).logpdf(Y), st.norm(0, 1).logpdf(grid), log_shift=NORMAL_LOG_Z
    )
    assert post.integral == pytest.approx(1.0, abs=1e-10)  # the shift was the evidence
    assert post.mean() == pytest.approx(normal.mean(), abs=1e-13)
    assert post.log_evidence == pytest.approx(normal.log_evidence, abs=1e-12)


def test_a_tiny_likelihood_does_not_underflow():
    # log-sum-exp: a log-likelihood near -1e4 everywhere still gives the posterior
    post = GridPosterior(
        np.linspace(-6, 6, 2001), lambda m: st.norm(m, SD).logpdf(Y) - 1e4, st.norm(0, 1).logpdf
    )
    assert post.mean() == pytest.approx(0.8, abs=1e-10)
    assert post.log_evidence == pytest.approx(NORMAL_LOG_Z - 1e4, rel=1e-14)


def test_beta_binomial():
    a, b, n, k = 2.0, 3.0, 20, 7
    post = GridPosterior(
        np.linspace(0, 1, 4001), lambda p: st.binom.logpmf(k, n, p), st.beta(a, b).logpdf
    )
    exact = st.beta(a + k, b + n - k)
    log_z = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    log_z += betaln(a + k, b + n - k) - betaln(a, b)
    assert post.mean() == pytest.approx(exact.mean(), abs=1e-10)
    assert post.std() == pytest.approx(exact.std(), rel=1e-8)
    q = [0.05, 0.5, 0.95]
    np.testing.assert_allclose(post.ppf(q), exact.ppf(q), atol=1e-8)
    assert post.log_evidence == pytest.approx(log_z, abs=1e-9)


def test_logspace_gamma_poisson():
    # Gamma(2, rate 1) prior, a Poisson count of 5: posterior Gamma(7, rate 2)
    post = GridPosterior.logspace(
        1e-8, 200.0, lambda t: st.poisson.logpmf(5, t), st.gamma(2.0).logpdf
    )
    exact = st.gamma(7.0, scale=0.5)
    assert post.mean() == pytest.approx(3.5, rel=1e-10)
    assert post.std() == pytest.approx(exact.std(), rel=1e-9)
    q = [0.05, 0.5, 0.95]
    np.testing.assert_allclose(post.ppf(q), exact.ppf(q), rtol=1e-9)
    log_z = gammaln(7) - 7 * math.log(2) - gammaln(2) - gammaln(6)  # negative binomial pmf
    assert post.log_evidence == pytest.approx(log_z, abs=1e-10)
    assert post.cdf(-1.0) == 0.0 and np.isnan(post.cdf(np.nan))


def test_quadrature_error_is_an_upper_bound_on_a_coarse_grid():
    for n in (11, 21, 41):
        post = _normal(n)
        actual = abs(post.log_evidence - NORMAL_LOG_Z)  # relative error of the evidence
        assert actual <= post.quadrature_error, (n, actual, post.quadrature_error)
    assert _normal(2001).quadrature_error < 1e-10


# --- two parameters -------------------------------------------------------------------


@pytest.fixture(scope="module")
def product():
    """Two normal means with independent normal priors: the posterior is a product."""
    mu = np.linspace(-6, 6, 801)
    nu = np.linspace(-4, 10, 701)

    def loglik(m, v):
        return st.norm(m, SD).logpdf(Y) + st.norm(v, 1.0).logpdf(3.0)

    def log_prior(m, v):
        return st.norm(0, 1).logpdf(m) + st.norm(1, 2).logpdf(v)

    # second mean: prior N(1, 4), observation 3 with sd 1: posterior N(2.6, 0.8)
    return GridPosterior((mu, nu), loglik, log_prior), (NORMAL_POST, st.norm(2.6, math.sqrt(0.8)))


def test_product_posterior_margins_and_evidence(product):
    post, (px, py) = product
    np.testing.assert_allclose(post.mean(), [px.mean(), py.mean()], atol=1e-9)
    np.testing.assert_allclose(post.std(), [px.std(), py.std()], rtol=1e-7)
    assert abs(post.cov()[0, 1]) < 1e-10
    q = np.array([0.05, 0.5, 0.95])
    np.testing.assert_allclose(post.ppf(q), np.column_stack([px.ppf(q), py.ppf(q)]), atol=1e-8)
    np.testing.assert_allclose(post.cdf([0.8, 2.0]), [0.5, py.cdf(2.0)], atol=1e-10)
    log_z = NORMAL_LOG_Z + st.norm(1.0, math.sqrt(5.0)).logpdf(3.0)
    assert post.log_evidence == pytest.approx(log_z, abs=1e-9)
    assert post.marginal(1).mean() == pytest.approx(2.6, abs=1e-9)


def test_correlated_posterior_covariance():
    # bivariate normal posterior (flat prior on the grid): correlation 0.6
    cov = np.array([[1.0, 0.6], [0.6, 1.0]])
    dist = st.multivariate_normal([0.5, -0.5], cov)
    grid = (np.linspace(-8, 8, 641), np.linspace(-9, 8, 681))
    post = GridPosterior(grid, lambda x, y: dist.logpdf(np.stack([x, y], -1)))
    np.testing.assert_allclose(post.cov(), cov, atol=1e-8)
    assert post.log_evidence == pytest.approx(0.0, abs=1e-9)


def test_draws_match_the_closed_form_1d(normal):
    draws = normal.draws(20_000, rng=3)
    assert st.kstest(draws, NORMAL_POST.cdf).pvalue > KS_LEVEL  # false failure 0.1%


def test_planted_missing_prior_fails_the_same_ks_check():
    # the bug: the prior left out (a flat prior), so the draws follow N(1, 0.25)
    draws = _normal(prior=None).draws(20_000, rng=3)
    assert st.kstest(draws, NORMAL_POST.cdf).pvalue < KS_LEVEL


def test_draws_match_the_closed_form_2d(product):
    post, margins = product
    draws = post.draws(20_000, rng=5)
    for column, dist in zip(draws.T, margins, strict=True):
        # two checks: false failure at most 0.2% in all
        assert st.kstest(column, dist.cdf).pvalue > KS_LEVEL


def test_planted_swapped_axes_fail_the_2d_ks_check(product):
    post, margins = product
    draws = post.draws(20_000, rng=5)[:, ::-1]  # the bug: coordinates swapped
    assert st.kstest(draws[:, 0], margins[0].cdf).pvalue < KS_LEVEL


def test_draws_are_reproducible_and_sample_gives_chains(normal):
    np.testing.assert_array_equal(normal.draws(5, rng=1), normal.draws(5, rng=1))
    idata = normal.sample(30, chains=2, names=["mu"], rng=1)
    assert idata.posterior["mu"].shape == (2, 30)
    assert idata.attrs["method"] == "grid"


def test_exported_from_the_package():
    assert dp.GridPosterior is GridPosterior and "GridPosterior" in dp.__all__


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([0.0, 1.0], np.zeros(2)), {}, "grid"),
        ((np.array([0.0, 2.0, 1.0]), np.zeros(3)), {}, "strictly increasing"),
        ((np.array([0.0, np.nan, 1.0]), np.zeros(3)), {}, "grid must be finite"),
        ((np.linspace(0, 1, 5), np.zeros(4)), {}, "log_likelihood must give shape"),
        ((np.linspace(0, 1, 5), np.full(5, np.nan)), {}, "NaN"),
        ((np.linspace(0, 1, 5), np.full(5, -np.inf)), {}, "no mass"),
        ((np.linspace(0, 1, 5), "abc"), {}, "log_likelihood"),
        ((np.linspace(0, 1, 5), np.zeros(5)), {"log_shift": math.nan}, "log_shift"),
        ((np.linspace(0, 1, 5), np.zeros(5)), {"log_shift": -1e4}, "would overflow"),
    ],
)
def test_bad_input_is_refused_by_name(args, kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        GridPosterior(*args, **kwargs)


def test_bad_quantiles_sizes_and_logspace_bounds_are_refused(normal):
    with pytest.raises(ValueError, match="q must lie in"):
        normal.ppf(1.0)
    with pytest.raises(ValueError, match="n must be"):
        normal.draws(0)
    with pytest.raises(ValueError, match="upper must exceed lower"):
        GridPosterior.logspace(2.0, 1.0, lambda t: -t)
    with pytest.raises(ValueError, match="num must be at least 3"):
        GridPosterior.logspace(1.0, 2.0, lambda t: -t, num=2)
    with pytest.raises(ValueError, match="axis must be 0 or 1"):
        normal.marginal(0)
