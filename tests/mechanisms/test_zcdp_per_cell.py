"""Guarantees stated in zCDP, per-cell budgets, and their closed forms.

Each closed form is written beside its check: rho = D^2 / (2 min_j sigma_j^2) for a
scalar sensitivity (a bound on the l2 norm of the whole change, which may all fall
on the least noisy cell), rho = sum_j D_j^2 / (2 sigma_j^2) for per-cell bounds; the
Laplace families' epsilon likewise with l1. A planted copy that reports its
guarantee from the largest sigma must fail the same check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize as so
import scipy.stats as st
from _mechanism_registry import MaxSigmaDiscreteGaussian

import dpinfer as dp
from dpinfer import accounting

WIKIMEDIA_RHO = [0.015, 6.166e-4, 1.546e-4]


# --- the Privacy object ------------------------------------------------------------------


def test_a_zcdp_guarantee_needs_no_delta():
    priv = dp.Privacy(rho=0.5)
    assert (priv.epsilon, priv.delta, priv.rho, priv.notion) == (None, 0.0, 0.5, "zCDP")
    assert str(priv) == "0.5-zCDP"
    assert str(dp.Privacy(epsilon=0.5, delta=1e-6, rho=0.1)) == "(0.5, 1e-06)-DP, 0.1-zCDP"


@pytest.mark.parametrize("delta", [1e-5, 1e-7, 0.3])
@pytest.mark.parametrize("rho", [0.015, 0.5, 2.556])
def test_to_approx_is_bun_steinke_proposition_1_3(rho, delta):
    # rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP for every delta > 0
    approx = dp.Privacy(rho=rho, neighbouring="n").to_approx(delta)
    assert approx.epsilon == rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert (approx.delta, approx.rho, approx.neighbouring) == (delta, rho, "n")


def test_to_approx_of_dp_guarantees():
    assert dp.Privacy(0.3).to_approx(1e-6) == dp.Privacy(0.3, 1e-6)  # pure holds at any delta
    assert dp.Privacy(0.3, 1e-6).to_approx(1e-5).epsilon == 0.3
    with pytest.raises(ValueError, match="implies no guarantee at the smaller delta=1e-07"):
        dp.Privacy(0.3, 1e-6).to_approx(1e-7)
    # with a rho too, the smaller of the two conversions
    gauss = dp.Privacy(5.0, 1e-6, rho=0.5).to_approx(1e-6)
    assert gauss.epsilon == min(5.0, 0.5 + 2 * math.sqrt(0.5 * math.log(1e6)))
    with pytest.raises(ValueError, match=r"delta must lie in the open interval \(0, 1\)"):
        dp.Privacy(rho=0.5).to_approx(0.0)


def test_to_zcdp():
    assert dp.Privacy(0.5).to_zcdp() == dp.Privacy(rho=0.125)  # Bun & Steinke, Prop. 1.4
    assert dp.Privacy(1.0, 1e-6, rho=0.08).to_zcdp().rho == 0.08
    for no_rho in (dp.Privacy(1.0, 1e-6), dp.Privacy(math.inf)):
        with pytest.raises(ValueError, match="implies no zCDP guarantee"):
            no_rho.to_zcdp()


def test_bad_zcdp_guarantees_are_refused():
    with pytest.raises(ValueError, match="Privacy needs epsilon .*got epsilon=None and rho=None"):
        dp.Privacy()
    with pytest.raises(ValueError, match=r"has no delta; got delta=1e-06"):
        dp.Privacy(rho=0.5, delta=1e-6)
    with pytest.raises(ValueError, match="rho must be a positive finite number"):
        dp.Privacy(rho=math.nan)


# --- composition ---------------------------------------------------------------------------


def test_compose_adds_rho():
    rhos = [0.015, 0.015, 6.166e-4]
    total = accounting.compose(*(dp.Privacy(rho=r) for r in rhos))
    assert total == dp.Privacy(rho=math.fsum(rhos))
    # a pure guarantee joins as eps^2 / 2, an approximate one through its own rho
    mixed = accounting.compose(dp.Privacy(rho=0.1), dp.Privacy(0.2), dp.Privacy(1, 1e-6, rho=0.3))
    assert mixed == dp.Privacy(rho=math.fsum([0.1, 0.2**2 / 2, 0.3]))
    # without a zCDP-only input, composition is as before: epsilons and deltas add
    old = accounting.compose(dp.Privacy(0.5, 1e-6, rho=0.1), dp.Privacy(0.25, 1e-6, rho=0.2))
    assert (old.epsilon, old.delta, old.rho) == (0.75, 2e-6, math.fsum([0.1, 0.2]))


def test_compose_refuses_approximate_dp_without_rho_beside_zcdp():
    with pytest.raises(ValueError, match=r"approximate DP without a rho .*to_approx\(delta\)"):
        accounting.compose(dp.Privacy(rho=0.1), dp.Privacy(1.0, 1e-6))
    # the documented route: convert the zCDP guarantee first
    total = accounting.compose(dp.Privacy(rho=0.1).to_approx(1e-6), dp.Privacy(1.0, 1e-6))
    assert total.epsilon == 1.0 + accounting.zcdp_to_approx(0.1, 1e-6)


# --- Gaussian and discrete Gaussian: from_zcdp and the two sensitivity conventions ------------


def _closed_form_rho(sigma, sensitivity):
    sigma = np.asarray(sigma, dtype=float)
    if np.ndim(sensitivity):
        return math.fsum((np.asarray(sensitivity, float) ** 2 / (2 * sigma**2)).tolist())
    return float(sensitivity) ** 2 / (2 * float(np.min(sigma)) ** 2)


def _check_rho(mech):
    """The reported rho is the closed form for the mechanism's sigma and sensitivity."""
    assert mech.privacy.rho == pytest.approx(
        _closed_form_rho(mech.sigma, mech.sensitivity), rel=1e-15
    )


@pytest.mark.parametrize("family", [dp.Gaussian, dp.DiscreteGaussian])
def test_from_zcdp_with_one_rho(family):
    mech = family.from_zcdp(rho=0.5, sensitivity=2, event_shape=(4,))
    np.testing.assert_array_equal(mech.sigma, np.full(4, 2 / math.sqrt(1.0)))
    assert mech.privacy.notion == "zCDP"
    assert mech.privacy.rho == pytest.approx(0.5, rel=1e-15)
    _check_rho(mech)
    scalar = family.from_zcdp(rho=0.015, sensitivity=1)
    assert scalar.event_shape == () and float(scalar.sigma) == 1 / math.sqrt(0.03)


@pytest.mark.parametrize("family", [dp.Gaussian, dp.DiscreteGaussian])
def test_from_zcdp_per_cell_rho_with_a_bound_on_the_whole_change(family):
    # sigma_j = D / sqrt(2 rho_j); the whole change may fall on the least noisy cell:
    # rho = D^2 / (2 min sigma^2) = max_j rho_j
    mech = family.from_zcdp(rho=WIKIMEDIA_RHO, sensitivity=math.sqrt(10))
    np.testing.assert_allclose(mech.sigma**2, [10 / (2 * r) for r in WIKIMEDIA_RHO], rtol=1e-15)
    np.testing.assert_allclose(mech.sigma, [18.257, 90.050, 179.838], atol=1e-3)
    assert mech.privacy.rho == pytest.approx(max(WIKIMEDIA_RHO), rel=1e-15)
    _check_rho(mech)


@pytest.mark.parametrize("family", [dp.Gaussian, dp.DiscreteGaussian])
def test_from_zcdp_per_cell_rho_with_per_cell_bounds(family):
    # each cell's change bounded by D_j: rho = sum_j D_j^2 / (2 sigma_j^2) = sum_j rho_j
    rho, sens = [0.5, 0.25, 0.1], [1, 2, 3]
    mech = family.from_zcdp(rho=rho, sensitivity=sens)
    np.testing.assert_allclose(mech.sigma, np.array(sens) / np.sqrt(2 * np.array(rho)))
    assert mech.privacy.rho == pytest.approx(math.fsum(rho), rel=1e-15)
    _check_rho(mech)
    assert "coordinate-wise" in mech.privacy.neighbouring


@pytest.mark.parametrize("family", [dp.Gaussian, dp.DiscreteGaussian])
def test_raw_per_cell_sigma_reports_both_conventions(family):
    sigma = [2.0, 0.5, 4.0]
    whole = family(sigma, sensitivity=3)
    assert whole.privacy.rho == 3**2 / (2 * 0.5**2)
    cells = family(sigma, sensitivity=[1, 1, 2])
    assert cells.privacy.rho == math.fsum([1 / 8, 1 / 0.5, 4 / 32])


def test_from_zcdp_refuses_what_it_cannot_mean():
    with pytest.raises(ValueError, match=r"rho is a scalar but sensitivity is per cell"):
        dp.Gaussian.from_zcdp(rho=0.5, sensitivity=[1.0, 1.0])
    with pytest.raises(ValueError, match=r"rho must be positive and finite"):
        dp.DiscreteGaussian.from_zcdp(rho=[0.5, -1], sensitivity=1)
    with pytest.raises(ValueError, match=r"rho of shape \(3,\) and sensitivity of shape \(2,\)"):
        dp.Gaussian.from_zcdp(rho=[0.5, 0.5, 0.5], sensitivity=[1.0, 1.0])
    with pytest.raises(ValueError, match=r"rho of shape \(3,\) does not broadcast .*\(2,\)"):
        dp.Gaussian.from_zcdp(rho=[0.5, 0.5, 0.5], sensitivity=1.0, event_shape=(2,))
    # the discrete family: whole per-cell bounds; a real l2 bound only over several cells
    with pytest.raises(ValueError, match=r"sensitivity must be a positive integer .*got \[1.5"):
        dp.DiscreteGaussian.from_zcdp(rho=[0.5, 0.5], sensitivity=[1.5, 1])
    with pytest.raises(ValueError, match=r"sensitivity must be a positive integer .*got 1.5"):
        dp.DiscreteGaussian.from_zcdp(rho=0.5, sensitivity=1.5)
    assert dp.DiscreteGaussian.from_zcdp(rho=0.5, sensitivity=1.5, event_shape=(2,)).sensitivity


def _balle_wang_epsilon(delta, mu):
    """The exact epsilon of N(0, 1) vs N(mu, 1) at delta, by scipy's root finder."""

    def excess(eps):
        return st.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * st.norm.cdf(-mu / 2 - eps / mu)

    return so.brentq(lambda e: excess(e) - delta, 0, 50, xtol=1e-14)


def test_gaussian_per_cell_with_delta_is_the_exact_curve():
    # the privacy loss of a shift d is N(mu^2/2, mu^2) with mu = ||d / sigma||; the worst d
    # under per-cell bounds has every d_j = D_j, so mu = sqrt(2 rho)
    mech = dp.Gaussian([1.0, 2.0, 4.0], sensitivity=[1.0, 1.0, 2.0], delta=1e-6)
    mu = math.sqrt(1 + 0.25 + 0.25)
    assert mech.privacy.rho == pytest.approx(mu**2 / 2, rel=1e-15)
    assert mech.privacy.epsilon == pytest.approx(_balle_wang_epsilon(1e-6, mu), rel=1e-9)


def test_discrete_gaussian_with_delta_converts_rho_for_vectors():
    # several cells: rho-zCDP (by the convention) converted by Proposition 1.3
    mech = dp.DiscreteGaussian([1.0, 2.0, 4.0], sensitivity=[1, 1, 2], delta=1e-6)
    rho = math.fsum([1 / 2, 1 / 8, 4 / 32])
    assert mech.privacy.epsilon == rho + 2 * math.sqrt(rho * math.log(1e6))
    # one cell: the exact curve of CKS Theorem 7, whatever the form of the parameters
    one = dp.DiscreteGaussian([3.0], sensitivity=[2], delta=1e-6)
    scalar = dp.DiscreteGaussian(3.0, sensitivity=2, delta=1e-6)
    assert one.privacy.epsilon == scalar.privacy.epsilon
    assert accounting.discrete_gaussian_delta(one.privacy.epsilon, 3.0, 2) == pytest.approx(
        1e-6, rel=1e-9
    )


def test_closed_form_check_flags_privacy_from_the_largest_sigma():
    mech = dp.DiscreteGaussian.from_zcdp(rho=[0.05, 0.005, 0.002], sensitivity=1)
    _check_rho(mech)
    planted = MaxSigmaDiscreteGaussian(mech.sigma, sensitivity=1)
    with pytest.raises(AssertionError):
        _check_rho(planted)


# --- Laplace families: budgets split across cells ------------------------------------------


def test_laplace_from_privacy_splits_a_budget_across_statistics():
    mech = dp.Laplace.from_privacy(epsilon=[0.5, 0.5], sensitivity=[0.4, 80])
    np.testing.assert_array_equal(mech.scale, [0.4 / 0.5, 80 / 0.5])
    assert mech.privacy.epsilon == math.fsum([0.4 / 0.8, 80 / 160]) == 1.0
    # per-cell budgets under a bound on the whole change: the largest budget is the guarantee
    whole = dp.Laplace.from_privacy(epsilon=[0.5, 0.1], sensitivity=1.0)
    assert whole.privacy.epsilon == 1.0 / min(1 / 0.5, 1 / 0.1) == 0.5
    with pytest.raises(ValueError, match="epsilon is a scalar but sensitivity is per cell"):
        dp.Laplace.from_privacy(epsilon=1.0, sensitivity=[0.4, 80])


def test_discrete_laplace_per_cell_conventions():
    mech = dp.DiscreteLaplace([30.0, 30.0, 300.0], sensitivity=1)  # l1 bound on the whole
    assert mech.privacy.epsilon == 1 / 30.0
    cells = dp.DiscreteLaplace([30.0, 30.0, 300.0], sensitivity=[1, 1, 1])
    assert cells.privacy.epsilon == math.fsum([1 / 30, 1 / 30, 1 / 300])
    split = dp.DiscreteLaplace.from_privacy(epsilon=[0.5, 0.25], sensitivity=[1, 2])
    np.testing.assert_array_equal(split.scale, [2.0, 8.0])
    assert split.privacy.epsilon == 0.75
    with pytest.raises(ValueError, match="sensitivity must be a positive integer"):
        dp.DiscreteLaplace([1.0, 2.0], sensitivity=[1, 1.5])
