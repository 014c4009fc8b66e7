"""Exact verification of the Gaussian family: closed-form and lattice privacy loss.

No sampling: each check is deterministic. The closed forms are checked against direct
numerical integration of the hockey-stick divergence; every calibration must verify,
and planted miscalibrations (the classical formula outside its range, a per-coordinate
claim from the wrong sigma, halved noise) must be refuted.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.integrate as si
import scipy.stats as st

import dpinfer as dp
from dpinfer import accounting
from dpinfer.audit import gaussian_pld_delta, hockey_stick_delta, verify_gaussian
from dpinfer.audit.gaussian import _lattice_delta


def _hockey_stick_by_quadrature(epsilon: float, mu: float) -> float:
    """``int max(0, phi(x) - e^eps phi(x - mu)) dx``, split where the densities cross."""
    # phi(x) > e^eps phi(x - mu)  <=>  x < mu/2 - eps/mu
    cross = mu / 2 - epsilon / mu

    def gap(x):
        return st.norm.pdf(x) - math.exp(epsilon) * st.norm.pdf(x, loc=mu)

    value, _ = si.quad(gap, -np.inf, cross, epsabs=0.0, epsrel=1e-12, limit=200)
    return value


@pytest.mark.parametrize(
    ("epsilon", "mu"), [(0.0, 1.0), (0.5, 0.3), (1.0, 1.0), (3.0, 2.5), (10.0, 4.0)]
)
def test_closed_form_delta_matches_numerical_integration(epsilon, mu):
    assert gaussian_pld_delta(epsilon, mu) == pytest.approx(
        _hockey_stick_by_quadrature(epsilon, mu), rel=1e-8, abs=1e-15
    )


def test_closed_form_delta_keeps_its_digits_at_large_epsilon():
    # at mu = 2, eps = 25 both terms are below 1e-30: the difference must not cancel to 0
    value = gaussian_pld_delta(25.0, 2.0)
    assert 0 < value < 1e-30
    assert value == pytest.approx(_hockey_stick_by_quadrature(25.0, 2.0), rel=1e-6)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0, 20.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
@pytest.mark.parametrize("sensitivity", [1.0, 2.5])
def test_analytic_calibration_verifies_and_is_tight(epsilon, delta, sensitivity):
    mech = dp.Gaussian.from_privacy(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    check = verify_gaussian(mech)
    assert check.holds, str(check)
    assert check.epsilon == pytest.approx(epsilon, rel=1e-8)  # the calibration is exact
    assert check.delta <= delta * (1 + 1e-9)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 0.9])
def test_classical_calibration_verifies_where_it_is_valid(epsilon):
    mech = dp.Gaussian.from_privacy(
        epsilon=epsilon, delta=1e-5, sensitivity=1.0, calibration="classical"
    )
    check = verify_gaussian(mech)
    assert check.holds and check.epsilon < epsilon  # conservative for epsilon < 1


def _classical_forced(epsilon: float, delta: float = 1e-5) -> dp.Gaussian:
    """Planted bug: the classical calibration used beyond epsilon < 1, claim kept."""
    sigma = math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    mech = dp.Gaussian(sigma, sensitivity=1.0, delta=delta)
    mech._calibrated_epsilon = float(epsilon)
    return mech


@pytest.mark.parametrize(("epsilon", "true_epsilon"), [(10.0, 10.3939), (20.0, 25.4426)])
def test_companion_classical_calibration_forced_beyond_its_range_is_refuted(epsilon, true_epsilon):
    check = verify_gaussian(_classical_forced(epsilon))
    assert not check.holds, str(check)
    assert check.epsilon == pytest.approx(true_epsilon, abs=1e-4)
    assert check.delta > 1e-5
    assert "REFUTED" in str(check)


def test_per_coordinate_sigma_uses_the_least_noisy_coordinate():
    mech = dp.Gaussian([1.0, 2.0, 0.5], sensitivity=0.75, delta=1e-6)
    check = verify_gaussian(mech)
    assert check.holds
    assert check.epsilon == pytest.approx(mech.privacy.epsilon, rel=1e-8)
    assert "mu = 1.5" in check.worst_case
    vector = dp.Gaussian.from_privacy(epsilon=0.7, delta=1e-6, sensitivity=1.0, event_shape=(4,))
    assert verify_gaussian(vector).holds


def test_companion_per_coordinate_claim_from_the_noisiest_coordinate_is_refuted():
    class LargestSigmaClaim(dp.Gaussian):
        """Planted bug: epsilon reported from max(sigma) instead of min(sigma)."""

        @property
        def privacy(self):
            eps = accounting.gaussian_epsilon(self.delta, float(np.max(self.sigma)), 0.75)
            return dp.Privacy(epsilon=eps, delta=self.delta)

    check = verify_gaussian(LargestSigmaClaim([1.0, 2.0, 0.5], sensitivity=0.75, delta=1e-6))
    assert not check.holds, str(check)


# --- the discrete Gaussian: lattice privacy loss ----------------------------------------


@pytest.mark.parametrize(("sigma", "sens"), [(0.8, 1), (3.0, 1), (5.0, 2), (12.5, 3)])
def test_lattice_delta_matches_the_theorem_and_the_tabulated_pmfs(sigma, sens):
    # three routes to delta(eps) for a scalar shift: the loss pmf, CKS Theorem 7, and the
    # hockey-stick sum over the two tabulated pmfs
    delta_at = _lattice_delta((sens,), sigma)
    k = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    log_pmf = dp.DiscreteGaussian(sigma).logpdf
    log_p = np.array([float(log_pmf(np.array(x), 0)) for x in k])
    log_q = np.array([float(log_pmf(np.array(x), sens)) for x in k])
    for eps in (0.0, 0.3, 1.0, 2.0):
        theorem = accounting.discrete_gaussian_delta(eps, sigma, sens)
        assert delta_at(eps) == pytest.approx(theorem, rel=1e-9, abs=1e-15)
        assert delta_at(eps) == pytest.approx(
            hockey_stick_delta(log_p, log_q, eps), rel=1e-9, abs=1e-15
        )


@pytest.mark.parametrize("event_shape", [(), (3,)])
def test_discrete_gaussian_calibration_verifies(event_shape):
    mech = dp.DiscreteGaussian.from_privacy(
        epsilon=1.0, delta=1e-6, sensitivity=2, event_shape=event_shape
    )
    check = verify_gaussian(mech)
    assert check.holds, str(check)
    if event_shape == ():
        assert check.epsilon == pytest.approx(1.0, rel=1e-6)  # exact calibration
    else:
        assert check.epsilon < 1.0  # the zCDP conversion is conservative
        # (2,), (1,), (1, 1), (1, 1, 1): every integer shift of l2 norm <= 2 in 3 coordinates
        assert "of 4 shifts" in check.worst_case


def test_companion_discrete_gaussian_with_halved_noise_is_refuted():
    mech = dp.DiscreteGaussian.from_privacy(epsilon=1.0, delta=1e-6, sensitivity=1)
    planted = dp.DiscreteGaussian(mech.sigma / 2, sensitivity=1, delta=1e-6)
    planted._calibrated_epsilon = 1.0  # the claim of the original
    check = verify_gaussian(planted)
    assert not check.holds and check.epsilon > 2.0


def test_verify_gaussian_checks_its_argument():
    with pytest.raises(TypeError, match="Gaussian or DiscreteGaussian mechanism, got Laplace"):
        verify_gaussian(dp.Laplace(1.0, sensitivity=1.0))
    with pytest.raises(ValueError, match="sensitivity"):
        verify_gaussian(dp.Gaussian(1.0, delta=1e-5))
    with pytest.raises(ValueError, match="epsilon must be a non-negative finite number"):
        gaussian_pld_delta(-1.0, 1.0)
    with pytest.raises(ValueError, match="mu must be"):
        gaussian_pld_delta(1.0, 0.0)
