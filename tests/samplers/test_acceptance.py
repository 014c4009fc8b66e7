"""Predicting the cost of exact rejection ABC, and stopping a run that cannot finish.

``dp.rejection_abc(model, mech, 2**70, draws=20)`` used to run to its budget of 10^9
simulations before saying anything. The acceptance rate ``pi(s_dp) / sup eta`` is now
estimated (in log space) from the run's own proposals, and the run stops once even the
optimistic prediction exceeds ``max_simulations``; ``dp.estimate_acceptance_rate``
gives the same prediction before a run.

Statistical checks use fixed seeds; their false-failure rates (under a random seed)
are stated beside them, and each has a planted-bug companion that must fail it.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.samplers.acceptance import Z_PREDICT

from ._oracles import gaussian_log_evidence, normal_model

SIGMA = 1.0
S_DP = 1.3
Z_MAX = 4.0  # two-sided normal test: false-failure rate 6e-5


class LooseBound(dp.Gaussian):
    """Planted bug: states a supremum twice too large (the acceptance rate halves)."""

    def log_max_density_at(self, released):
        return super().log_max_density_at(released) + math.log(2.0)


def _counting_poisson():
    calls = []

    def simulate(p, rng):
        calls.append(len(p["theta"]))
        return rng.poisson(p["theta"])

    return dp.Model(prior={"theta": st.gamma(25)}, simulate=simulate), calls


LAPLACE = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)


def _gaussian_rejection(**options):
    """Rejection ABC of the normal model's release ``S_DP`` through ``Gaussian(SIGMA)``."""
    return dp.rejection_abc(normal_model(), dp.Gaussian(SIGMA), S_DP, progressbar=False, **options)


# --- the reproduction: a release no simulation can reach -----------------------------------


def test_a_release_at_2_to_the_70_is_refused_after_one_chunk_naming_the_prediction():
    model, calls = _counting_poisson()
    # the release is also past float64's resolution at this noise scale, which is warned of
    with (
        pytest.warns(dp.PrecisionWarning, match="float64 rounding"),
        pytest.raises(dp.SimulationBudgetExceeded) as info,
    ):
        dp.rejection_abc(model, LAPLACE, 2**70, draws=20, rng=1, progressbar=False)
    assert sum(calls) == 100_000  # one chunk of the default batch size, not 10**9
    message = str(info.value)
    assert "stopped after 100,000 simulations" in message
    assert "max_simulations=1000000000" in message
    assert "10^1.03e+20 simulations" in message  # the predicted cost, in log space
    assert "smc_abc" in message and "importance_abc" in message
    assert "raise max_simulations" not in message  # no budget the library accepts is enough


def test_a_small_budget_is_refused_before_it_is_spent():
    model, calls = _counting_poisson()
    with pytest.raises(dp.SimulationBudgetExceeded, match="stopped after 1,000 simulations"):
        dp.rejection_abc(
            model,
            LAPLACE,
            150.0,
            draws=100,
            rng=1,
            batch_size=1000,
            max_simulations=10**6,
            progressbar=False,
        )
    assert sum(calls) == 1000


def test_the_refusal_suggests_a_budget_when_one_would_do():
    # rate about 0.43 (closed form 0.4349): 10**5 draws cost about 2.3e5 simulations
    with pytest.raises(dp.SimulationBudgetExceeded) as info:
        _gaussian_rejection(draws=10**5, rng=3, batch_size=2000, max_simulations=50_000)
    message = str(info.value)
    assert "stopped after 2,000 simulations" in message
    # the optimistic cost (rate + 4 s.e.) is the least budget that can suffice
    assert re.search(r"raise max_simulations to at least 2\.\d+e\+05", message)
    assert "far in the tail" not in message  # the release is not unlikely, the budget is small


def test_companion_a_budget_that_suffices_is_never_cut_short():
    # expected cost about 2300 simulations for 1000 draws; the budget is twice that
    idata = _gaussian_rejection(draws=1000, rng=5, batch_size=100, max_simulations=4600)
    assert idata.posterior["theta"].size == 1000


# --- the public estimate -------------------------------------------------------------------


def _closed_form_moments(s_dp, sigma):
    """E[w] and E[w^2] for w = exp(-(s_dp - s)^2 / (2 sigma^2)), s ~ N(0, 2)."""

    def mean_w(var):  # E exp(-(s_dp - s)^2 / (2 var)) = sqrt(var / (var + 2)) N-kernel
        return math.sqrt(var / (var + 2.0)) * math.exp(-(s_dp**2) / (2 * (var + 2.0)))

    return mean_w(sigma**2), mean_w(sigma**2 / 2)


def check_estimate_matches_the_closed_form(mechanism, *, n=20_000, rng=11):
    est = dp.estimate_acceptance_rate(
        normal_model(), mechanism, S_DP, simulations=n, rng=rng, batch_size=6000
    )
    p0, m2 = _closed_form_moments(S_DP, SIGMA)
    z = (est.rate - p0) / est.standard_error
    assert abs(z) < Z_MAX, f"acceptance rate {est.rate:.4f} vs closed form {p0:.4f} (z={z:.1f})"
    # the standard error against sd(w) / sqrt(n) from the closed form; the sample sd of
    # 20,000 bounded w has a relative error near 0.5%, so 5% is about ten of its s.e.
    se0 = math.sqrt((m2 - p0**2) / n)
    assert abs(est.standard_error / se0 - 1) < 0.05, (est.standard_error, se0)
    assert est.simulations == n
    # log evidence = log rate + log sup eta
    assert est.log_evidence == pytest.approx(
        gaussian_log_evidence(S_DP, SIGMA), abs=Z_MAX * est.standard_error / p0
    )


def test_the_estimate_and_its_error_match_the_closed_form():
    check_estimate_matches_the_closed_form(dp.Gaussian(SIGMA))


def test_planted_loose_supremum_fails_the_estimate_check():
    with pytest.raises(AssertionError, match="acceptance rate"):
        check_estimate_matches_the_closed_form(LooseBound(SIGMA))


def test_the_estimate_is_the_same_with_any_batch_size_and_executor():
    from concurrent.futures import ThreadPoolExecutor

    args = (normal_model(), dp.Gaussian(SIGMA), S_DP)
    one = dp.estimate_acceptance_rate(*args, simulations=3000, rng=2, batch_size=1000)
    with ThreadPoolExecutor(2) as pool:
        two = dp.estimate_acceptance_rate(
            *args, simulations=3000, rng=2, batch_size=1000, executor=pool
        )
    assert one == two


def test_predictions_stay_finite_in_log_space_far_in_the_tail():
    model, _ = _counting_poisson()
    est = dp.estimate_acceptance_rate(model, LAPLACE, 2**70, simulations=1000, rng=1)
    assert est.rate == 0.0 and math.isfinite(est.log_rate)
    assert est.log_rate == pytest.approx(-(2**70) / 5, rel=1e-6)
    assert est.expected_simulations(20) == math.inf
    assert est.log_expected_simulations(20) == pytest.approx(2**70 / 5, rel=1e-6)
    assert str(est).startswith("acceptance rate 10^-1.03e+20")


def test_expected_simulations_of_a_known_rate():
    est = dp.AcceptanceRate(math.log(0.01), math.log(0.001), 10_000, 0.0)
    assert est.expected_simulations(50) == pytest.approx(5000)
    assert est.expected_simulations(50, z=Z_PREDICT) == pytest.approx(50 / 0.014)
    with pytest.raises(ValueError, match="z must be"):
        est.expected_simulations(50, z=-1)
    with pytest.raises(ValueError, match="draws must be"):
        est.expected_simulations(0)


def test_the_pilot_needs_two_simulations():
    with pytest.raises(ValueError, match="simulations must be at least 2"):
        dp.estimate_acceptance_rate(normal_model(), dp.Gaussian(1.0), 0.0, simulations=1)


def test_a_single_simulation_per_chunk_is_never_refused_for_lack_of_an_error_estimate():
    # batch_size=1: after the first chunk the standard error is unknown (inf), so the
    # optimistic cost is zero and the run goes on
    idata = _gaussian_rejection(draws=4, batch_size=1, rng=0)
    assert idata.posterior["theta"].size == 4
    assert np.isfinite(idata.posterior["theta"].values).all()
