"""Exactness of rejection ABC against closed forms (Gong 2022, Theorem 3.1).

Every statistical check below is a function that asserts; each has a
companion test that plants a bug and requires the same check to fail.
Seeds are fixed, so the outcomes are deterministic; the quoted false-failure
rates are those of the checks under a random seed.
"""

from __future__ import annotations

import math
import re

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
)

SIGMA = 1.0
S_DP = 1.3
KS_ALPHA = 1e-3  # KS p-value threshold: false-failure rate 0.1% per KS test
Z_MAX = 4.0  # |z| threshold: false-failure rate 6e-5 per two-sided normal-approximation test


class LooseBound(dp.Gaussian):
    """Planted bug: states a supremum twice too large (acceptance rate halves)."""

    def log_max_density_at(self, released):
        return super().log_max_density_at(released) + math.log(2.0)


class TightBound(dp.Gaussian):
    """Planted bug: states a supremum half the true one (the density exceeds it)."""

    def log_max_density_at(self, released):
        return super().log_max_density_at(released) - math.log(2.0)


def _rejection(mechanism, released, *, model=None, draws=4000, rng=20240501, **options):
    model = normal_model() if model is None else model
    options = {"chains": 4, "batch_size": 2000, "progressbar": False, **options}
    return dp.rejection_abc(model, mechanism, released, draws=draws, rng=rng, **options)


# --- scalar Gaussian release: posterior is normal in closed form ------------------------------


def check_posterior_matches_gaussian_closed_form(mechanism, *, rng=20240501):
    idata = _rejection(mechanism, S_DP, rng=rng)
    theta = idata.posterior["theta"].values.ravel()
    assert theta.shape == (4000,)
    pvalue = st.kstest(theta, gaussian_posterior(S_DP, SIGMA).cdf).pvalue
    assert pvalue > KS_ALPHA, f"KS p-value {pvalue:.2e} against the closed-form posterior"


def test_rejection_draws_follow_the_closed_form_posterior():
    check_posterior_matches_gaussian_closed_form(dp.Gaussian(SIGMA))


def test_planted_wrong_mechanism_scale_fails_the_ks_check():
    # Inference with sigma = 2 while the release was made (and the oracle computed) with 1.
    with pytest.raises(AssertionError, match="KS p-value"):
        check_posterior_matches_gaussian_closed_form(dp.Gaussian(2 * SIGMA))


def check_acceptance_rate_matches_evidence(mechanism, *, rng=7):
    idata = _rejection(mechanism, S_DP, rng=rng)
    attrs = idata.posterior.attrs
    n_sim = attrs["n_simulations"]
    # Closed form: P(accept) = pi(s_dp) / sup eta = N(s_dp; 0, 2 + sigma^2) / max eta.
    log_z = gaussian_log_evidence(S_DP, SIGMA)
    p0 = math.exp(log_z - dp.Gaussian(SIGMA).log_max_density)
    rate = attrs["acceptance_rate"]
    se = math.sqrt(p0 * (1 - p0) / n_sim)
    z = (rate - p0) / se
    assert abs(z) < Z_MAX, f"acceptance rate {rate:.4f} vs closed form {p0:.4f} (z = {z:.1f})"
    # log_evidence = log(rate) + log sup eta; delta method: se(log rate) = se(rate) / rate.
    z_log = (attrs["log_evidence"] - log_z) / (se / p0)
    assert abs(z_log) < Z_MAX, f"log evidence {attrs['log_evidence']:.4f} vs {log_z:.4f}"


def test_acceptance_rate_and_evidence_match_the_closed_form():
    check_acceptance_rate_matches_evidence(dp.Gaussian(SIGMA))


def test_planted_loose_supremum_fails_the_acceptance_rate_check():
    # The draws stay exact with a loose bound; only the acceptance rate reveals it.
    with pytest.raises(AssertionError, match="acceptance rate"):
        check_acceptance_rate_matches_evidence(LooseBound(SIGMA))


def test_planted_too_small_supremum_is_caught_by_rejection_abc():
    with pytest.raises(RuntimeError, match="exceeded its stated supremum"):
        _rejection(TightBound(SIGMA), S_DP, draws=100)


# --- vector release: 2-D Laplace with per-coordinate scales -----------------------------------

SCALES = (0.5, 2.0)
S_DP_VEC = (0.8, -1.5)


def check_vector_laplace_posterior(mechanism, *, rng=99):
    idata = _rejection(mechanism, S_DP_VEC, model=normal_model(dim=2), draws=3000, rng=rng)
    theta = idata.posterior["theta"].values.reshape(-1, 2)
    assert theta.shape == (3000, 2)
    # One KS test per coordinate: false-failure rate <= 0.2% in all.
    for j, (x, b) in enumerate(zip(S_DP_VEC, SCALES, strict=True)):
        pvalue = st.kstest(theta[:, j], LaplacePosterior(x, b).cdf).pvalue
        assert pvalue > KS_ALPHA, f"KS p-value {pvalue:.2e} for coordinate {j}"
    # The coordinates are independent a posteriori (prior, model and noise all factorise):
    # |Pearson r| * sqrt(n) is approximately N(0, 1).
    r = np.corrcoef(theta.T)[0, 1]
    assert abs(r) * math.sqrt(len(theta)) < Z_MAX, f"posterior correlation {r:.3f}"
    # Acceptance rate vs the closed-form evidence (normal-Laplace convolution).
    attrs = idata.posterior.attrs
    p0 = math.exp(laplace_log_evidence(S_DP_VEC, SCALES) - dp.Laplace(SCALES).log_max_density)
    z = (attrs["acceptance_rate"] - p0) / math.sqrt(p0 * (1 - p0) / attrs["n_simulations"])
    assert abs(z) < Z_MAX, f"acceptance rate {attrs['acceptance_rate']:.4f} vs {p0:.4f}"


def test_vector_laplace_posterior_matches_numerical_integration():
    check_vector_laplace_posterior(dp.Laplace(SCALES))


def test_planted_swapped_laplace_scales_fail_the_vector_check():
    with pytest.raises(AssertionError, match="KS p-value"):
        check_vector_laplace_posterior(dp.Laplace(SCALES[::-1]))


def test_vector_oracle_agrees_with_quadrature():
    # The normal-Laplace closed form that the vector oracles rest on.
    from scipy.integrate import quad

    from ._oracles import log_normal_laplace

    for tau, b, z in [(1.0, 0.5, 0.3), (math.sqrt(2.0), 2.0, -1.5), (1.0, 5.0, 3.0)]:
        numeric = quad(
            lambda s, z=z, tau=tau, b=b: st.norm.pdf(s, 0, tau) * st.laplace.pdf(z - s, 0, b),
            -40,
            40,
            points=[z],
        )[0]
        assert np.exp(log_normal_laplace(z, tau, b)) == pytest.approx(numeric, rel=1e-9)


# --- draws and bookkeeping --------------------------------------------------------------------


def test_exactly_draws_are_returned_and_simulations_are_whole_batches():
    # 777 draws over 4 chains: rounded up to 4 x 195 = 780 draws
    idata = _rejection(dp.Gaussian(SIGMA), S_DP, draws=777, batch_size=500)
    assert idata.posterior["theta"].shape == (4, 195)
    n_sim = idata.posterior.attrs["n_simulations"]
    assert n_sim % 500 == 0
    assert n_sim >= 780
    one = _rejection(dp.Gaussian(SIGMA), S_DP, draws=777, batch_size=500, chains=1)
    assert one.posterior["theta"].shape == (1, 777)


def test_budget_exceeded_reports_rate_and_expected_cost():
    with pytest.raises(dp.SimulationBudgetExceeded) as info:
        _rejection(
            dp.Gaussian(SIGMA), S_DP, draws=10**6, rng=3, batch_size=1000, max_simulations=5000
        )
    message = str(info.value)
    assert "max_simulations=5000" in message
    assert "acceptance rate 0.4" in message  # closed form: 0.4349
    assert "expected cost" in message
    assert re.search(r"about 2\.\d+e\+06 simulations", message)  # 10**6 / 0.435
