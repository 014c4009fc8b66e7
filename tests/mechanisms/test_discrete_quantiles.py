"""The discrete families' inverse CDFs in their far tails and on both discrete-Gaussian paths.

The contract suite checks ``release_from_uniform`` against a brute-force CDF for
``u`` in ``[1e-9, 1 - 1e-9]`` at the registry's parameters. Here: the tails down to
``u = 1e-300`` and up to ``1 - 2**-53`` (bracketing ``F(q - 1) < u <= F(q)`` with
independently summed tails), and the Euler-Maclaurin path of the discrete Gaussian
(``sigma > 50``) against brute force.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

import dpinfer as dp
from dpinfer.mechanisms import _discrete_quantiles as dq
from dpinfer.noise.discrete_gaussian import euler_maclaurin_log_cdf

EXTREME_U = np.array([1e-300, 1e-200, 1e-40, 1e-17, 0.5, 1 - 2**-53, 1 - 1e-15, 1 - 1e-12])


def _dgauss_log_tail(k: int, sigma: float) -> float:
    """``log P(X <= k)`` for ``k <= 0`` by a direct sum of the normalised pmf."""
    half = int(40 * sigma) + 60
    j = np.arange(-half, half + 1, dtype=float)
    log_pmf = -(j**2) / (2 * sigma**2)
    log_pmf -= logsumexp(log_pmf)
    return float(logsumexp(log_pmf[j <= k]))


def _brackets(q: int, u: float, log_cdf) -> bool:
    """``F(q - 1) < u <= F(q)``, each side in its accurate tail (symmetric laws)."""
    if u <= 0.5:
        return log_cdf(q - 1) < math.log(u) <= log_cdf(q)
    log_v = math.log1p(-u)  # 1 - u is exact here
    # S(k) = F(-k - 1): S(q - 1) > 1 - u >= S(q)
    return log_cdf(-q) > log_v >= log_cdf(-q - 1)


@pytest.mark.parametrize("scale", [0.3, 2.5, 40.0])
def test_discrete_laplace_quantile_in_the_far_tails(scale):
    p = math.exp(-1 / scale)

    def log_cdf(k):
        # F(k) = p^{-k} / (1 + p) for k < 0, 1 - p^{k+1} / (1 + p) for k >= 0
        if k < 0:
            return -k * math.log(p) - math.log1p(p)
        return math.log1p(-(p ** (k + 1)) / (1 + p))

    q = dq.discrete_laplace_quantile(EXTREME_U, scale)
    assert all(_brackets(int(k), float(u), log_cdf) for k, u in zip(q, EXTREME_U, strict=True))


def test_discrete_laplace_tail_companion_detects_an_off_by_one():
    # The bracketing check must fail for a quantile one step off.
    p = math.exp(-1 / 2.5)

    def log_cdf(k):
        if k < 0:
            return -k * math.log(p) - math.log1p(p)
        return math.log1p(-(p ** (k + 1)) / (1 + p))

    q = dq.discrete_laplace_quantile(EXTREME_U, 2.5)
    assert not all(_brackets(int(k) + 1, float(u), log_cdf) for k, u in zip(q, EXTREME_U))


@pytest.mark.parametrize("sigma", [0.4, 3.0, 49.0, 60.0, 400.0])
def test_discrete_gaussian_quantile_in_the_far_tails(sigma):
    q = dq.discrete_gaussian_quantile(EXTREME_U, sigma)

    def log_cdf(k):
        if k <= 0:
            return _dgauss_log_tail(k, sigma)
        return math.log1p(-math.exp(_dgauss_log_tail(-k - 1, sigma)))

    assert all(_brackets(int(k), float(u), log_cdf) for k, u in zip(q, EXTREME_U, strict=True))


def _brute_quantile(u, sigma):
    half = int(60 * sigma) + 60
    k = np.arange(-half, half + 1)
    log_pmf = -(k.astype(float) ** 2) / (2 * sigma**2)
    cdf = np.cumsum(np.exp(log_pmf - logsumexp(log_pmf)))
    return k[np.searchsorted(cdf, u, side="left")]


@pytest.mark.parametrize("sigma", [50.5, 137.0, 2500.0])
def test_discrete_gaussian_series_path_matches_brute_force(sigma):
    u = np.random.default_rng(3).uniform(1e-9, 1 - 1e-9, size=20_000)
    np.testing.assert_array_equal(
        dq.discrete_gaussian_quantile(u, sigma), _brute_quantile(u, sigma)
    )


def test_discrete_gaussian_series_companion_detects_a_missing_correction():
    # Without its 1/(24 sigma^2) term the series misplaces quantiles at sigma = 60.
    sigma = 60.0
    u = np.random.default_rng(4).uniform(1e-9, 1 - 1e-9, size=20_000)
    rough = np.ceil(sigma * dq.ndtri(u) - 0.5).astype(np.int64)
    assert np.any(rough != _brute_quantile(u, sigma))
    np.testing.assert_array_equal(
        dq.discrete_gaussian_quantile(u, sigma), _brute_quantile(u, sigma)
    )


def test_the_two_discrete_gaussian_cdfs_agree_where_they_meet():
    sigma = 50.0
    support, log_cdf = dq._discrete_gaussian_table(sigma)
    keep = np.abs(support) < 400
    series = euler_maclaurin_log_cdf(support[keep], sigma)
    np.testing.assert_allclose(np.exp(series), np.exp(log_cdf[keep]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(series, log_cdf[keep], rtol=0, atol=1e-12)


def test_release_from_uniform_of_a_wide_discrete_gaussian_uses_the_series():
    mech = dp.DiscreteGaussian(300.0)
    u = np.random.default_rng(5).uniform(1e-9, 1 - 1e-9, size=(1000, 1))
    out = mech.release_from_uniform(np.array([7]), u)
    np.testing.assert_array_equal(out[:, 0], 7 + _brute_quantile(u[:, 0], 300.0))
