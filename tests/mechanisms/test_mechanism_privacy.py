"""Privacy guarantees in closed form, to the last digit (or to a root-finder's tolerance).

Each check has its derivation beside it. The mechanisms compute their guarantees
from parameters; these tests recompute them from the published formulas (and,
where possible, by brute force over the output distribution).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from _mechanism_registry import discrete_gaussian_logpmf_bruteforce

import dpinfer as dp
from dpinfer import accounting

PAIRS = [(0.2, 1.0), (0.3, 0.7), (1.0, 1.0), (2.5, 3.0), (1e-3, 5.0), (7.0, 0.1)]


# --- Laplace -----------------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "sens"), PAIRS)
def test_laplace_scale_is_sensitivity_over_epsilon(eps, sens):
    # log eta(x|s) - log eta(x|s') = (|x - s'| - |x - s|) / b <= |s - s'| / b <= D / b,
    # so b = D / eps gives eps-DP, and the claim is D / b.
    mech = dp.Laplace.from_privacy(epsilon=eps, sensitivity=sens)
    assert mech.scale == sens / eps
    priv = mech.privacy
    assert priv.epsilon == sens / (sens / eps)
    assert priv.epsilon == pytest.approx(eps, rel=4e-16)
    assert (priv.delta, priv.notion, priv.rho) == (0.0, "pure", None)
    assert accounting.laplace_epsilon(float(mech.scale), sens) == priv.epsilon


def test_laplace_vector_guarantees():
    # Scalar sensitivity = l1 bound on the whole vector: sum_j |d_j| / b_j <= D / min_j b_j.
    mech = dp.Laplace([0.5, 2.0, 4.0], sensitivity=1.5)
    assert mech.privacy.epsilon == 1.5 / 0.5
    # Per-coordinate bounds |d_j| <= D_j: the log-ratio is at most sum_j D_j / b_j.
    mech = dp.Laplace([0.5, 2.0, 4.0], sensitivity=[0.1, 0.2, 0.3])
    assert mech.privacy.epsilon == math.fsum([0.1 / 0.5, 0.2 / 2.0, 0.3 / 4.0])
    # from_privacy with a vector event shape: one scale, the l1 bound
    mech = dp.Laplace.from_privacy(epsilon=0.5, sensitivity=2.0, event_shape=(4,))
    np.testing.assert_array_equal(mech.scale, np.full(4, 2.0 / 0.5))
    assert mech.privacy.epsilon == 2.0 / (2.0 / 0.5)


# --- Gaussian ----------------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "delta", "sens"), [(0.5, 1e-5, 1.0), (0.9, 1e-8, 3.0)])
def test_gaussian_classical_calibration(eps, delta, sens):
    # Dwork & Roth (2014), Theorem A.1: for eps < 1, sigma = D sqrt(2 ln(1.25/delta)) / eps.
    mech = dp.Gaussian.from_privacy(
        epsilon=eps, delta=delta, sensitivity=sens, calibration="classical"
    )
    assert float(mech.sigma) == sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
    assert mech.privacy.epsilon == eps and mech.privacy.delta == delta
    # the classical sigma is conservative: its exact delta at eps is below the target
    assert accounting.gaussian_delta(eps, float(mech.sigma), sens) < delta


@pytest.mark.parametrize("eps", [1.0, 1.5, 10.0])
def test_gaussian_classical_calibration_refuses_large_epsilon(eps):
    with pytest.raises(ValueError, match=rf"epsilon must be < 1 .*got {eps!r}"):
        dp.Gaussian.from_privacy(epsilon=eps, delta=1e-5, sensitivity=1.0, calibration="classical")


def _balle_wang_delta_scipy(eps, sigma, sens):
    # Balle & Wang (2018), Theorem 8: the privacy loss of N(0, s^2) vs N(D, s^2) is
    # N(mu^2/2, mu^2) with mu = D/s, and delta(eps) = P[L > eps] - e^eps P[L' < -eps]
    # = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D).
    a = sens / (2 * sigma) - eps * sigma / sens
    b = -sens / (2 * sigma) - eps * sigma / sens
    return st.norm.cdf(a) - math.exp(eps) * st.norm.cdf(b)


@pytest.mark.parametrize(
    ("eps", "delta", "sens"),
    [(1.0, 1e-5, 1.0), (0.1, 1e-6, 2.0), (3.0, 1e-3, 0.5), (8.0, 1e-10, 1.0), (0.01, 1e-5, 1.0)],
)
def test_gaussian_analytic_calibration(eps, delta, sens):
    mech = dp.Gaussian.from_privacy(epsilon=eps, delta=delta, sensitivity=sens)
    sigma = float(mech.sigma)
    # sigma solves delta(eps; sigma) = delta (root finder: 1e-10 relative)
    assert accounting.gaussian_delta(eps, sigma, sens) == pytest.approx(delta, rel=1e-10)
    assert accounting.gaussian_delta(eps, sigma, sens) <= delta * (1 + 1e-12)
    # an independent evaluation of the same curve with scipy.stats.norm.cdf
    assert _balle_wang_delta_scipy(eps, sigma, sens) == pytest.approx(delta, rel=1e-8)
    # and it is the smallest such sigma
    assert accounting.gaussian_delta(eps, sigma * (1 - 1e-8), sens) > delta
    priv = mech.privacy
    assert (priv.epsilon, priv.delta) == (eps, delta)
    # zCDP: D_alpha(N(0,s^2) || N(D,s^2)) = alpha D^2 / (2 s^2), so rho = D^2 / (2 s^2)
    assert priv.rho == sens**2 / (2 * sigma**2)
    # the classical calibration, where valid, needs more noise
    if eps < 1:
        classical = accounting.gaussian_sigma_classical(eps, delta, sens)
        assert classical > sigma


def test_gaussian_raw_sigma_reports_epsilon_on_the_exact_curve():
    mech = dp.Gaussian(2.0, sensitivity=1.0, delta=1e-6)
    eps = mech.privacy.epsilon
    assert accounting.gaussian_delta(eps, 2.0, 1.0) == pytest.approx(1e-6, rel=1e-10)
    assert _balle_wang_delta_scipy(eps, 2.0, 1.0) == pytest.approx(1e-6, rel=1e-8)
    assert accounting.gaussian_epsilon(1e-6, 2.0, 1.0) == eps


def test_gaussian_with_so_much_noise_that_delta_alone_covers_it():
    # delta(0) = 2 Phi(D / (2 sigma)) - 1 <= delta: the guarantee holds for every epsilon > 0.
    mech = dp.Gaussian(1e4, sensitivity=1.0, delta=0.01)
    assert accounting.gaussian_delta(0.0, 1e4, 1.0) <= 0.01
    priv = mech.privacy
    assert 0 < priv.epsilon <= 1e-12
    assert priv.delta == 0.01


# --- discrete Laplace ----------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "sens"), [(0.5, 1), (1.0, 3), (0.05, 2), (4.0, 1)])
def test_discrete_laplace_epsilon_is_sensitivity_over_scale(eps, sens):
    # P(x) ∝ exp(-|x| / t): the log-ratio at neighbours s, s' is at most |s - s'| / t <= D / t.
    mech = dp.DiscreteLaplace.from_privacy(epsilon=eps, sensitivity=sens)
    assert mech.scale == sens / eps
    assert mech.privacy.epsilon == sens / mech.scale
    assert mech.privacy.epsilon == pytest.approx(eps, rel=4e-16)
    assert mech.privacy.delta == 0.0


# --- discrete Gaussian ---------------------------------------------------------------------


def _discrete_gaussian_delta_bruteforce(eps, sigma, sens):
    # delta(eps) = sum_k max(0, P(k) - e^eps Q(k)) with P = N_Z(0, s^2) and Q = N_Z(D, s^2),
    # each pmf normalised by its own direct sum.
    k = np.arange(-int(60 * sigma) - 60 - sens, int(60 * sigma) + 61 + sens)
    log_p = discrete_gaussian_logpmf_bruteforce(k, sigma)
    log_q = discrete_gaussian_logpmf_bruteforce(k - sens, sigma)
    diff = np.exp(log_p) - np.exp(eps + log_q)
    return math.fsum(diff[diff > 0].tolist())


@pytest.mark.parametrize(
    ("eps", "sigma", "sens"),
    [(1.0, 3.0, 1), (0.5, 10.0, 2), (2.0, 1.0, 1), (0.2, 25.0, 3), (3.0, 0.7, 1), (1.0, 4.5, 4)],
)
def test_discrete_gaussian_delta_is_cks_theorem_7(eps, sigma, sens):
    # Canonne, Kamath & Steinke (2020), Theorem 7, against the direct sum over the pmf.
    exact = accounting.discrete_gaussian_delta(eps, sigma, sens)
    assert exact == pytest.approx(_discrete_gaussian_delta_bruteforce(eps, sigma, sens), rel=1e-9)


@pytest.mark.parametrize(
    ("eps", "delta", "sens"), [(1.0, 1e-5, 1), (0.5, 1e-6, 3), (2.0, 1e-8, 2)]
)
def test_discrete_gaussian_calibration(eps, delta, sens):
    mech = dp.DiscreteGaussian.from_privacy(epsilon=eps, delta=delta, sensitivity=sens)
    exact = _discrete_gaussian_delta_bruteforce(eps, mech.sigma, sens)
    # sigma is the root's upper end: delta(eps; sigma) <= delta, tight to the root finder
    assert exact == pytest.approx(delta, rel=1e-9)
    assert accounting.discrete_gaussian_delta(eps, mech.sigma, sens) <= delta
    assert accounting.discrete_gaussian_delta(eps, mech.sigma * (1 - 1e-8), sens) > delta
    priv = mech.privacy
    assert (priv.epsilon, priv.delta) == (eps, delta)
    assert priv.rho == sens**2 / (2 * mech.sigma**2)  # CKS Theorem 4: D^2/(2 s^2)-zCDP


def test_discrete_gaussian_raw_sigma_and_vector_releases():
    mech = dp.DiscreteGaussian(5.0, sensitivity=2, delta=1e-6)
    eps = mech.privacy.epsilon
    assert _discrete_gaussian_delta_bruteforce(eps, 5.0, 2) == pytest.approx(1e-6, rel=1e-9)
    # vector releases: rho-zCDP converted by Bun & Steinke Prop. 1.3,
    # eps = rho + 2 sqrt(rho log(1/delta)), inverted by the calibration
    vec = dp.DiscreteGaussian.from_privacy(
        epsilon=1.0, delta=1e-6, sensitivity=1, event_shape=(3,)
    )
    sigma = float(vec.sigma[0])
    np.testing.assert_array_equal(vec.sigma, np.full(3, sigma))
    rho = 1 / (2 * sigma**2)
    assert vec.privacy.rho == rho
    assert rho + 2 * math.sqrt(rho * math.log(1e6)) == pytest.approx(1.0, rel=1e-12)
    raw = dp.DiscreteGaussian(sigma, sensitivity=1, delta=1e-6, event_shape=(3,))
    assert raw.privacy.epsilon == accounting.zcdp_to_approx(rho, 1e-6)


# --- binomial release ----------------------------------------------------------------------


@pytest.mark.parametrize(("n", "m", "length"), [(1000, 1000, 10), (50, 7.5, 3), (8, 3, 1)])
def test_binomial_release_epsilon_is_proposition_4(n, m, length):
    # Xiong et al. (2023), Prop. 4: per coordinate the ratio is at most (1 + 1/m)^n <= e^{n/m}
    # and L coordinates compose: eps = n L / m; the tight value is n L log(1 + 1/m).
    mech = dp.BinomialRelease(n=n, m=m, population=100, length=length)
    assert mech.privacy.epsilon == n * length / m
    assert mech.tight_epsilon == n * length * math.log1p(1 / m)
    assert mech.tight_epsilon < mech.privacy.epsilon
    back = dp.BinomialRelease.from_privacy(
        epsilon=mech.privacy.epsilon, n=n, population=100, length=length
    )
    assert back.m == n * length / (n * length / m)
    assert back.m == pytest.approx(m, rel=1e-15)


@pytest.mark.parametrize("length", [1, 2])
def test_binomial_release_tight_epsilon_is_the_brute_force_max(length):
    # max over all curves I in {0..K}^L, neighbours I' (|I_t - I'_t| <= 1) and releases r
    # of log eta(r | I) - log eta(r | I').
    mech = dp.BinomialRelease(n=8, m=3, population=6, length=length)
    curves = np.array(np.meshgrid(*[np.arange(7)] * length, indexing="ij")).reshape(length, -1).T
    releases = np.array(np.meshgrid(*[np.arange(9)] * length, indexing="ij")).reshape(length, -1).T
    table = np.array([mech.logpdf(r, curves) for r in releases])  # (releases, curves)
    close = np.max(np.abs(curves[:, None, :] - curves[None, :, :]), axis=-1) == 1
    i, j = np.nonzero(close)
    worst = np.max(table[:, i] - table[:, j])
    assert worst == pytest.approx(mech.tight_epsilon, rel=1e-12)
    assert worst <= mech.privacy.epsilon


# --- sparse vector -------------------------------------------------------------------------


@pytest.mark.parametrize("c", [1, 2, 5])
@pytest.mark.parametrize("sens", [1.0, 0.01, 3.5])
def test_sparse_vector_epsilon_is_theorem_1(c, sens):
    # Park, Vinaroz & Jitkrittum (2021), Theorem 1 (Lyu et al. 2017, Alg. 1): threshold noise
    # Lap(b) costs D/b, query noise Lap(2b) costs D/b per positive: eps = (c + 1) D / b.
    # Resampling the threshold after each positive composes c one-positive runs of 2D/b each.
    b = 0.37
    once = dp.SparseVector(0.0, scale=b, c=c, sensitivity=sens)
    again = dp.SparseVector(0.0, scale=b, c=c, sensitivity=sens, resample=True)
    assert once.privacy.epsilon == (c + 1) * sens / b
    assert again.privacy.epsilon == 2 * c * sens / b
    for resample, factor in ((False, c + 1), (True, 2 * c)):
        svt = dp.SparseVector.from_privacy(
            epsilon=0.8, threshold=0.0, c=c, sensitivity=sens, resample=resample
        )
        assert svt.scale == factor * sens / 0.8
        assert svt.privacy.epsilon == factor * sens / svt.scale
        assert svt.privacy.epsilon == pytest.approx(0.8, rel=4e-16)
        assert svt._threshold_scale() == svt.scale and svt._query_scale() == 2 * svt.scale
