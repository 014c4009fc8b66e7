"""Extreme parameters are computed, or refused up front with the parameter, value and reason.

Issue 19, section 4: ``DiscreteGaussian.from_privacy(epsilon=1e-5, delta=1e-6)`` ran out of
memory after 17 s; ``DiscreteGaussian(1e-300)`` hung in ``release``, divided by zero in
``privacy`` and gave NaN in ``logpdf``; ``Gaussian(sigma=5e-324)`` gave NaN log-densities;
``compose`` overflowed at 1e308 and ``zcdp_gaussian(1e-200)`` divided by zero (those two are
in ``tests/test_accounting.py``). Each reproduction is a test here, with the class around it:
every family's range, the calibrations at tiny and huge epsilon, integer releases at the
edge of int64, float releases where rounding swallows the noise, the sparse vector's
threshold and the exact Gaussian audit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _mechanism_registry import discrete_gaussian_logpmf_bruteforce
from scipy.special import logsumexp

import dpinfer as dp
from dpinfer import accounting
from dpinfer.audit import verify_gaussian
from dpinfer.mechanisms.discrete import discrete_gaussian_sf

# --- the discrete Gaussian at tiny epsilon: no memory blow-up, and still exact ------------------


@pytest.mark.parametrize("sigma", [1.5e4, 3e4])
def test_discrete_gaussian_tail_beyond_the_direct_sum_is_exact(sigma):
    # above sigma = 1e4 the tail comes from the Euler-Maclaurin CDF: against the pmf summed
    log_pmf = discrete_gaussian_logpmf_bruteforce(np.arange(0, int(45 * sigma)), sigma)
    for x in [-3 * sigma, -1.5, 0.0, 0.5, sigma, 5 * sigma, 20 * sigma]:
        start = math.floor(x) + 1
        if start < 0:  # P[Y >= start] = 1 - P[Y <= start - 1] = 1 - P[Y >= 1 - start]
            direct = -math.expm1(logsumexp(log_pmf[1 - start :]))
        else:
            direct = math.exp(logsumexp(log_pmf[start:]))
        assert discrete_gaussian_sf(x, sigma) == pytest.approx(direct, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("epsilon", [1e-5, 1e-9, 1e-300])
def test_discrete_gaussian_calibration_at_tiny_epsilon(epsilon):
    # issue 19: MemoryError after 17 s at epsilon = 1e-5 (a 40-sigma array at sigma = 3e6)
    mech = dp.DiscreteGaussian.from_privacy(epsilon=epsilon, delta=1e-6, sensitivity=1)
    assert accounting.discrete_gaussian_delta(epsilon, mech.sigma, 1) <= 1e-6
    assert accounting.discrete_gaussian_delta(epsilon, mech.sigma * (1 - 1e-8), 1) > 1e-6
    # at this sigma the discrete and continuous Gaussians' delta curves nearly coincide
    continuous = accounting.gaussian_sigma_analytic(epsilon, 1e-6, 1.0)
    assert mech.sigma == pytest.approx(continuous, rel=1e-3)
    assert mech.privacy.epsilon == epsilon


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (
            lambda: dp.DiscreteGaussian.from_privacy(
                epsilon=1e-300, delta=1e-6, sensitivity=1, event_shape=(3,)
            ),
            r"epsilon=1e-300, delta=1e-06 and sensitivity=1 need sigma=.*above 9\.0072e\+15",
        ),
        (
            lambda: dp.Gaussian.from_privacy(
                epsilon=1e-310, delta=1e-6, sensitivity=1, calibration="classical"
            ),
            r"epsilon=1e-310, delta=1e-06 and sensitivity=1 need sigma=inf",
        ),
        (
            lambda: dp.Laplace.from_privacy(epsilon=1e-310, sensitivity=1),
            r"epsilon=1e-310 and sensitivity=1 need scale=inf",
        ),
        (
            lambda: dp.DiscreteLaplace.from_privacy(epsilon=1e-300, sensitivity=1),
            r"epsilon=1e-300 and sensitivity=1 need scale=9\.99+e\+299.*int64 range",
        ),
        (
            lambda: dp.SparseVector.from_privacy(
                epsilon=1e-320, threshold=0.2, c=2, sensitivity=1.0
            ),
            r"epsilon=1e-320, c=2 and sensitivity=1.0 need scale=inf",
        ),
    ],
)
def test_calibrations_out_of_range_name_epsilon(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_gaussian_calibration_at_extreme_epsilon_answers():
    for epsilon in (1e-300, 1e300):
        mech = dp.Gaussian.from_privacy(epsilon=epsilon, delta=1e-6, sensitivity=1.0)
        assert accounting.gaussian_delta(epsilon, mech.sigma, 1.0) <= 1e-6 * (1 + 1e-9)


# --- noise parameters outside what float64 or int64 can carry --------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        # issue 19: release hung, privacy ZeroDivisionError, logpdf NaN
        (lambda: dp.DiscreteGaussian(1e-300), r"sigma=1e-300 is below 1\.49167e-154.*underflows"),
        (lambda: dp.DiscreteGaussian(1e17), r"sigma=1e\+17 is above 9\.0072e\+15.*int64"),
        # issue 19: NaN log-densities
        (lambda: dp.Gaussian(sigma=5e-324), r"sigma=5e-324 is below 2\.22507e-308.*subnormal"),
        (lambda: dp.Gaussian([1.0, 1e307]), r"sigma=1e\+307 is above 1\.75556e\+305.*overflow"),
        (lambda: dp.Laplace(1e-310), r"scale=1e-310 is below 2\.22507e-308.*subnormal"),
        (lambda: dp.DiscreteLaplace(1e25), r"scale=1e\+25 is above 9\.0072e\+15.*int64"),
    ],
)
def test_noise_parameters_beyond_float64_or_int64_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_the_smallest_and_largest_supported_parameters_work():
    tiny = dp.DiscreteGaussian(1.5e-154, sensitivity=1, delta=1e-6)
    assert np.all(tiny.release(np.arange(5), rng=1) == np.arange(5))  # P(noise != 0) = 0
    assert tiny.logpdf(0, [0, 1]).tolist() == [0.0, pytest.approx(-1 / (2 * 1.5e-154**2))]
    assert tiny.privacy.rho == pytest.approx(0.5 / 1.5e-154**2)  # 2.2e307: finite
    gaussian = dp.Gaussian(1e-300, sensitivity=1, delta=1e-6)
    assert gaussian.privacy.epsilon == math.inf and gaussian.privacy.rho == math.inf
    assert np.isfinite(gaussian.logpdf(0.0, [0.0, 1e-300])).all()
    laplace = dp.DiscreteLaplace(1e-300, sensitivity=1)
    assert np.all(laplace.release(np.arange(5), rng=1) == np.arange(5))
    assert laplace.privacy.epsilon == pytest.approx(1e300)
    wide = dp.DiscreteGaussian(2.0**53)
    assert np.all(np.abs(wide.release(np.zeros(3, np.int64), rng=1)) < 40 * 2.0**53)


# --- releases at the edge of their number types ----------------------------------------------


@pytest.mark.parametrize("family", [dp.DiscreteLaplace, dp.DiscreteGaussian])
def test_integer_releases_never_wrap_around_int64(family):
    mech = family(5.0)
    values = np.array([2**63 - 1, -(2**63), 0] * 4)
    left = r"value must stay in the int64 range once the noise is added: \d+ of 12 entries"
    with pytest.raises(OverflowError, match=left):
        mech.release(values, rng=1)  # a positive draw at 2**63 - 1 wrapped to -2**63 before
    with pytest.raises(OverflowError, match="int64 range"):
        mech.release_from_uniform(np.array([2**63 - 1]), [0.999])


def test_float_releases_refuse_values_where_rounding_swallows_the_noise():
    # spacing(1e17) = 16 > 5 / 100: the noise would be rounded to multiples of 16
    coarse = (
        r"value must be small enough .* of the Laplace noise: 1 of 2 entries .* position \[1\]"
    )
    with pytest.raises(ValueError, match=coarse) as info:
        dp.Laplace(5.0).release([1.0, 1e17], rng=1)
    assert "1e+17" not in str(info.value)  # positions only: the values are confidential
    dp.Laplace(5.0).release([1.0, 1e12], rng=1)  # spacing 1.2e-4: fine


def test_sparse_vector_refuses_a_threshold_where_rounding_swallows_its_noise():
    with pytest.raises(ValueError, match=r"threshold=1e\+17 .*\(spacing 16\)"):
        dp.SparseVector(1e17, scale=0.03, c=1, sensitivity=1.0)
    dp.SparseVector(1e12, scale=0.03, c=1, sensitivity=1.0)  # spacing 1.2e-4 < 3e-4


def test_exact_gaussian_audit_refuses_a_lattice_it_cannot_hold():
    with pytest.raises(ValueError, match=r"verify_gaussian .* for sigma=10000000\.0"):
        verify_gaussian(dp.DiscreteGaussian(1e7, sensitivity=1, delta=1e-6))
