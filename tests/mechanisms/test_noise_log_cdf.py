"""Noise log-CDFs of the additive families against high-precision brute force, in both tails.

``_cell_log_cdf(cut, s)`` is ``log P(Y_j <= cut_j | s_j)``: the term of a suppressed
cell. Each family is checked with per-cell parameters against mpmath (40 digits):
closed forms summed or integrated independently of dpinfer, at points from the bulk to
probabilities far below 1e-300 and within 1e-17 of 1. The checks are deterministic.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import scipy.special as sc

import dpinfer as dp

mp.mp.dps = 40
RTOL = 1e-11


def _mp_discrete_tail(log_pmf, m, reach):
    """``log sum_{j >= m} exp(log_pmf(j))`` by a direct mpmath sum of ``reach`` terms."""
    first = log_pmf(m)
    return first + mp.log(mp.fsum(mp.e ** (log_pmf(m + i) - first) for i in range(reach)))


def _mp_discrete_log_cdf(log_pmf, k, reach):
    """``log P(X <= k)`` of a symmetric integer law, from the tail that keeps its digits."""
    if k < 0:
        return _mp_discrete_tail(log_pmf, -k, reach)
    return mp.log1p(-(mp.e ** _mp_discrete_tail(log_pmf, k + 1, reach)))


def _dgauss_log_pmf(sigma):
    s2 = 2 * mp.mpf(sigma) ** 2
    n = int(12 * sigma + 60)
    log_z = mp.log(mp.fsum(mp.e ** (-(mp.mpf(j) ** 2) / s2) for j in range(-n, n + 1)))
    return (lambda j: -(mp.mpf(j) ** 2) / s2 - log_z), n


def _dlaplace_log_pmf(scale):
    t = mp.mpf(scale)
    log_norm = mp.log(mp.tanh(1 / (2 * t)))
    return (lambda j: log_norm - abs(mp.mpf(j)) / t), int(60 * scale + 60)


def _mp_laplace_log_cdf(x, scale):
    z = mp.mpf(x) / scale
    return z - mp.log(2) if z < 0 else mp.log1p(-(mp.e ** (-z)) / 2)


def _mp_gauss_log_cdf(x, sigma):
    z = mp.mpf(x) / sigma
    return mp.log(mp.ncdf(z)) if z < 0 else mp.log1p(-mp.ncdf(-z))


def _points(scale, discrete, exponential):
    """From the far lower tail (probability ~1e-350) through the bulk to the far upper tail."""
    reach = (810 if exponential else math.sqrt(2 * 820)) * scale + 5
    x = np.concatenate([np.linspace(-reach, reach, 13), [-1.5, -1, -0.5, 0, 0.5, 1, 2]])
    return np.unique(np.round(x)) if discrete else x


def _assert_close_in_log(got, ref):
    ref = np.array([float(r) for r in ref])
    assert np.all(np.isfinite(got))  # no log(0), even at probabilities of 1e-350
    # log P within 1e-300 of 0 (P within 1e-300 of 1) is below the normal doubles
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-300)


def _cellwise(mech, params, discrete, reference, *, exponential=False):
    """Every point in every cell at once, each cell against the reference of its parameter."""
    points = [_points(p, discrete, exponential) for p in params]
    width = max(len(p) for p in points)
    cut = np.array([np.resize(p, width) for p in points]).T  # (width, cells)
    s = np.zeros_like(cut, dtype=np.int64 if discrete else float)
    got = mech._cell_log_cdf(cut, s)
    for j, p in enumerate(params):
        _assert_close_in_log(got[:, j], [reference(x, p) for x in cut[:, j]])


def test_laplace_log_cdf():
    scales = [0.3, 1.0, 40.0]
    mech = dp.Laplace(scales)
    _cellwise(mech, scales, False, _mp_laplace_log_cdf, exponential=True)


def test_gaussian_log_cdf():
    sigmas = [0.3, 1.0, 40.0]
    mech = dp.Gaussian(sigmas)
    _cellwise(mech, sigmas, False, _mp_gauss_log_cdf)


def test_discrete_laplace_log_cdf():
    scales = [0.3, 1.0, 3.7]
    tables = {t: _dlaplace_log_pmf(t) for t in scales}
    mech = dp.DiscreteLaplace(scales)
    _cellwise(
        mech,
        scales,
        True,
        lambda k, t: _mp_discrete_log_cdf(tables[t][0], int(k), tables[t][1]),
        exponential=True,
    )


# sigma 60 and 180 run the Euler-Maclaurin branch near the bulk and the direct sums beyond
DG_SIGMAS = [0.3, 1.0, 3.7306, 60.0, 180.0]


@pytest.fixture(scope="module")
def dg_tables():
    return {s: _dgauss_log_pmf(s) for s in DG_SIGMAS}


def test_discrete_gaussian_log_cdf(dg_tables):
    mech = dp.DiscreteGaussian(DG_SIGMAS)

    def reference(k, s):
        return _mp_discrete_log_cdf(dg_tables[s][0], int(k), dg_tables[s][1])

    _cellwise(mech, DG_SIGMAS, True, reference)


def test_discrete_gaussian_log_cdf_where_the_two_branches_meet(dg_tables):
    # just below and above m = 0.1 sigma^2, where the Euler-Maclaurin series hands over
    for sigma in (60.0, 180.0):
        m0 = int(0.1 * sigma**2)
        k = np.array([-m0 - 1, -m0, -m0 + 1, m0 - 2, m0 - 1, m0])
        got = dp.DiscreteGaussian(sigma)._cell_log_cdf(k, np.zeros(6, np.int64))
        log_pmf, reach = dg_tables[sigma]
        _assert_close_in_log(got, [_mp_discrete_log_cdf(log_pmf, int(x), reach) for x in k])


def test_discrete_log_cdf_is_floor_of_a_real_cut():
    # P(X <= x) = F(floor(x)) for non-integer cuts; integer s and huge values stay exact
    for mech in (dp.DiscreteGaussian(2.5), dp.DiscreteLaplace(2.5)):
        s = np.array([0, 0, 3, 2**60 + 3])
        got = mech._cell_log_cdf(np.array([1.7, -0.2, 3.0, 2.0**60]), s)
        want = mech._cell_log_cdf(np.array([1.0, -1.0, 0.0, -3.0]), np.zeros(4, np.int64))
        np.testing.assert_array_equal(got, want)


def test_naive_log_of_the_cdf_fails_the_same_check():
    # companion: log(cdf) in double precision underflows to -inf in the far lower tail and
    # rounds to 0 in the upper one, and the comparison above catches both
    x = np.array([-40.0, 9.0])
    with np.errstate(divide="ignore"):
        naive = np.log(sc.ndtr(x))
    with pytest.raises(AssertionError):
        _assert_close_in_log(naive, [_mp_gauss_log_cdf(v, 1.0) for v in x])
    _assert_close_in_log(
        dp.Gaussian(1.0)._cell_log_cdf(x, np.zeros(2)), [_mp_gauss_log_cdf(v, 1.0) for v in x]
    )
