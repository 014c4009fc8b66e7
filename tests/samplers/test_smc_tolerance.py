"""Tolerance-based SMC-ABC (Del Moral, Doucet & Jasra 2012): the approximate baseline.

It targets the ABC posterior at its final tolerance on the release distance, not the
exact posterior; with simulated releases (``s~ = mechanism.release(s)``) that ABC
posterior tends to the exact one as the tolerance shrinks. The checks below: the
tolerance schedule and the bookkeeping, and a loose comparison with the exact posterior
at a small tolerance. Each statistical check has a companion with a planted bug that
must fail it; seeds are fixed, and the quoted false-failure rates are those under a
random seed. Reproducibility under executors, the global random state and the progress
bar are tested for both SMC samplers in ``test_smc.py``.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import dpinfer as dp

from ._helpers import prior_without_logpdf_model, wrong_shape_model
from ._oracles import gaussian_posterior, normal_model
from .test_smc import check_draws_match

SIGMA = 1.0
S_DP = 1.3
PARTICLES = 2000
# Small enough that the ABC posterior is the exact one to within 0.2% of a standard deviation
# (a uniform window of half-width 0.2 widens the release variance 2 by 0.2^2 / 3), large enough
# that the default min_acceptance = 0.02 does not stop the run first (it stops near 0.1).
FINAL_TOLERANCE = 0.2
# Conservative ESS, as for smc_abc: over 100 seeds the variance of the posterior mean was 1.3
# times the i.i.d. variance, and at ESS = particles / 4 the largest |z| was 1.7 and the
# smallest KS p-value 0.32.
ESS_DIVISOR = 4


def _tolerance_smc(mechanism=None, *, final_tolerance=FINAL_TOLERANCE, rng=41, **kwargs):
    kwargs = {"particles": PARTICLES, "batch_size": 5000, "progressbar": False, **kwargs}
    mechanism = dp.Gaussian(SIGMA) if mechanism is None else mechanism
    return dp.tolerance_smc_abc(
        normal_model(), mechanism, S_DP, final_tolerance=final_tolerance, rng=rng, **kwargs
    )


# --- the schedule ------------------------------------------------------------------------------


def check_schedule_reaches_final_tolerance(idata, final_tolerance):
    attrs = idata.posterior.attrs
    for c, final in enumerate(attrs["chain_tolerance"]):  # each chain has its own schedule
        tol = attrs["stage_tolerance"][attrs["stage_chain"] == c]
        assert len(tol) >= 2
        assert np.all(np.diff(tol) < 0), f"tolerances do not decrease: {tol}"
        assert tol[-1] == final_tolerance, (
            f"chain {c} stopped at tolerance {tol[-1]:.4g}, not {final_tolerance}"
        )
        assert final == tol[-1]
    assert attrs["tolerance"] == attrs["chain_tolerance"].max()
    # Every final particle is within the final tolerance of the release.
    assert np.all(idata.sample_stats["release_distance"].values <= final_tolerance)


def test_tolerance_decreases_and_stops_at_the_final_tolerance():
    check_schedule_reaches_final_tolerance(_tolerance_smc(), FINAL_TOLERANCE)


def test_planted_early_stop_fails_the_schedule_check():
    # min_acceptance = 0.2 stops the run after the second stage (acceptance 0.13 there).
    idata = _tolerance_smc(min_acceptance=0.2)
    with pytest.raises(AssertionError, match="stopped at tolerance"):
        check_schedule_reaches_final_tolerance(idata, FINAL_TOLERANCE)


def test_min_acceptance_stops_before_an_unreachable_tolerance():
    idata = _tolerance_smc(final_tolerance=0.0, particles=500, chains=2)
    attrs = idata.posterior.attrs
    for c in range(2):
        rates = attrs["stage_acceptance_rate"][attrs["stage_chain"] == c]
        assert rates[-1] < 0.02  # the default min_acceptance
        assert np.all(rates[:-1] >= 0.02)
    assert attrs["tolerance"] > 0


def test_records_simulations_and_stages():
    idata = _tolerance_smc(particles=500, chains=2)
    attrs = idata.posterior.attrs
    k = attrs["chain_n_stages"].sum()
    for name in ("stage_tolerance", "stage_acceptance_rate", "stage_simulations"):
        assert attrs[name].shape == (k,), name
    for c in range(2):
        mine = attrs["stage_chain"] == c
        # The initial population, then one simulation per particle passing the prior step,
        # per move.
        assert attrs["chain_n_simulations"][c] == 250 + attrs["stage_simulations"][mine].sum()
        assert attrs["chain_acceptance_rate"][c] == attrs["stage_acceptance_rate"][mine][-1]
        assert attrs["chain_n_distinct"][c] == attrs["stage_n_distinct"][mine][-1]
    assert attrs["n_simulations"] == attrs["chain_n_simulations"].sum()
    assert np.all(attrs["stage_simulations"] > 0)
    assert attrs["acceptance_rate"] == attrs["chain_acceptance_rate"].mean()
    assert "approximate" in attrs["method"]
    assert math.isnan(attrs["log_evidence"])
    assert idata.posterior["theta"].shape == (2, 250)
    assert idata.sample_stats["release_distance"].shape == (2, 250)


# --- a loose comparison with the exact posterior at a small tolerance -------------------------


def check_close_to_exact(idata):
    # KS + 4 z-tests at ESS = particles / 4: nominal false-failure rate 0.13%.
    draws = idata.posterior["theta"]
    exact = gaussian_posterior(S_DP, SIGMA)
    check_draws_match(draws, exact, n_eff=draws.size / ESS_DIVISOR)


def test_small_tolerance_posterior_is_close_to_the_exact_posterior():
    check_close_to_exact(_tolerance_smc())


def test_planted_loose_tolerance_fails_the_exactness_check():
    # Tolerance 4 keeps nearly every prior simulation: the result is close to the prior.
    with pytest.raises(AssertionError, match="KS p-value|mean|quantile"):
        check_close_to_exact(_tolerance_smc(final_tolerance=4.0))


def test_planted_wrong_mechanism_scale_fails_the_exactness_check():
    # Releases simulated with sigma = 3 while the oracle used sigma = 1.
    with pytest.raises(AssertionError, match="KS p-value|mean|quantile"):
        check_close_to_exact(_tolerance_smc(dp.Gaussian(3 * SIGMA)))


def check_smaller_tolerance_is_closer(loose, tight):
    # Wasserstein-1 distance to the exact posterior, from the quantile functions. From
    # tolerance 2 (the ABC posterior is visibly wider: sd 0.88 against 0.82) to 0.2 it fell by
    # a factor 4.4 or more over 4 seeds; halving is required.
    exact = gaussian_posterior(S_DP, SIGMA)

    def w1(idata):
        draws = np.sort(idata.posterior["theta"].values.ravel())
        return float(
            np.mean(np.abs(draws - exact.ppf((np.arange(draws.size) + 0.5) / draws.size)))
        )

    assert w1(tight) < w1(loose) / 2, f"W1 {w1(tight):.3f} (tight) vs {w1(loose):.3f} (loose)"


def test_smaller_tolerance_is_closer_to_the_exact_posterior():
    check_smaller_tolerance_is_closer(_tolerance_smc(final_tolerance=2.0), _tolerance_smc())


def test_planted_ignored_tolerance_fails_the_closeness_check():
    # A sampler that ignored final_tolerance would give the same (loose) posterior twice.
    with pytest.raises(AssertionError, match="W1"):
        check_smaller_tolerance_is_closer(
            _tolerance_smc(final_tolerance=2.0), _tolerance_smc(final_tolerance=2.0, rng=42)
        )


# --- invalid input ------------------------------------------------------------------------------


def _call(**kwargs):
    kwargs = {"particles": 80, "rng": 0, "progressbar": False, **kwargs}
    released = kwargs.pop("released", 0.5)
    model = kwargs.pop("model", normal_model())
    return dp.tolerance_smc_abc(model, dp.Gaussian(1.0), released, **kwargs)


@pytest.mark.parametrize("name", ["particles", "max_moves", "max_stages", "batch_size"])
@pytest.mark.parametrize("value", [0, -2, 1.5])
def test_counts_not_positive_integers(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a positive integer, got {value}"):
        _call(**{name: value})


@pytest.mark.parametrize("name", ["quantile", "min_acceptance", "move_probability"])
@pytest.mark.parametrize("value", [0.0, 1.0, 1.5, float("nan")])
def test_fractions_outside_the_open_unit_interval(name, value):
    with pytest.raises(ValueError, match=f"{name} must lie in the open interval \\(0, 1\\)"):
        _call(**{name: value})


@pytest.mark.parametrize("value", [-0.1, float("nan"), float("inf")])
def test_final_tolerance_not_a_non_negative_number(value):
    with pytest.raises(ValueError, match="final_tolerance must be a non-negative finite number"):
        _call(final_tolerance=value)


@pytest.mark.parametrize("released", [np.nan, np.inf])
def test_non_finite_release(released):
    with pytest.raises(ValueError, match="released must (be finite|hold numbers, not NaN)"):
        _call(released=released)


def test_release_of_the_wrong_shape():
    with pytest.raises(ValueError, match=re.escape("released must have shape ()")):
        _call(released=[0.5, 1.0])


def test_simulator_of_the_wrong_shape():
    with pytest.raises(ValueError, match=re.escape("simulate returned an array of shape (20, 3)")):
        _call(model=wrong_shape_model(3))


def test_prior_without_logpdf():
    with pytest.raises(ValueError, match="tolerance_smc_abc needs a prior with a logpdf"):
        _call(model=prior_without_logpdf_model())
