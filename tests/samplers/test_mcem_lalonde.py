"""Monte Carlo EM on Gong's Lalonde example against the exact likelihood of the release.

The reference (:func:`dpinfer.models.lalonde.exact_mle`) maximises the exact
log-likelihood, a sum of one-dimensional convolutions (closed form for the means,
quadrature for the variances), and differentiates it numerically. MCEM uses only
simulation, the mechanism density and the PyMC likelihood's autodiff derivatives.

False-failure rates: estimates within 6 Monte Carlo standard errors (< 1e-4 per
parameter, allowing for the s.e. being estimated); standard errors within 5% of
the exact ones (their Monte Carlo error at N = 1e5 is below 0.5%).
"""

from __future__ import annotations

import numpy as np
import pytest

import dpinfer as dp
from dpinfer.models import lalonde as ll
from dpinfer.models.lalonde._exact import _normal_laplace
from dpinfer.models.lalonde._mle import _shared_likelihood

RELEASED = np.array([6.9, 4.1, 55.0, 33.0])
SCHEDULE = dp.StagedSchedule(stages=((1000, 1e-3), (100_000, 1e-4)))
Z = 6.0


@pytest.fixture(scope="module")
def reference():
    return ll.exact_mle(RELEASED)


@pytest.fixture(scope="module")
def fit():
    return ll.mle(RELEASED, schedule=SCHEDULE, rng=8)


def estimates_ok(fit, reference):
    return all(
        abs(fit.estimate[p] - reference["estimate"][p]) < Z * fit.monte_carlo_se[p]
        for p in ll.PARAMETERS
    )


def standard_errors_ok(se, reference, rtol=0.05):
    return all(abs(se[p] / reference["standard_error"][p] - 1) < rtol for p in ll.PARAMETERS)


def test_mle_matches_exact_maximiser(fit, reference):
    assert fit.converged
    assert estimates_ok(fit, reference)


def test_louis_standard_errors_match_exact_hessian(fit, reference):
    assert standard_errors_ok(fit.standard_error, reference)
    # entries: Monte Carlo s.d. about 0.04 at N = 1e5 (batch means), so 0.25 is ~6 s.d.
    assert fit.observed_information == pytest.approx(reference["information"], abs=0.25)


def test_planted_naive_standard_errors_fail(fit, reference):
    naive = ll.naive_mle(RELEASED)
    assert naive["estimate"]["tau"] == pytest.approx(RELEASED[0] - RELEASED[1])
    assert fit.naive_standard_error["tau"] == pytest.approx(naive["standard_error"]["tau"])
    assert not standard_errors_ok(naive["standard_error"], reference)
    # the privacy noise on the means costs about two thirds of tau's precision
    assert fit.standard_error["tau"] > 2.5 * naive["standard_error"]["tau"]


def test_planted_complete_information_fails(fit, reference):
    se = np.sqrt(np.diag(np.linalg.inv(fit.complete_information)))
    assert not standard_errors_ok(dict(zip(ll.PARAMETERS, se, strict=True)), reference)


def test_exponential_and_general_paths_agree():
    start = ll.naive_mle(RELEASED)["estimate"]
    schedule = dp.StagedSchedule(stages=((2000, 1e-6),))
    kwargs = dict(start=start, schedule=schedule, rng=3, accelerate=True)
    fam = ll.mle(RELEASED, mstep="exponential", **kwargs)
    gen = ll.mle(RELEASED, mstep="general", **kwargs)
    for p in ll.PARAMETERS:
        assert gen.estimate[p] == pytest.approx(fam.estimate[p], abs=1e-5)
    assert gen.observed_information == pytest.approx(fam.observed_information, rel=1e-4)


def test_plain_em_converges_to_the_same_fixed_point():
    # Without acceleration EM creeps (rate ~0.93) but reaches the same fixed point of
    # the stage's common-random-number map.
    start = ll.naive_mle(RELEASED)["estimate"]
    schedule = dp.StagedSchedule(stages=((2000, 1e-7),), max_iterations=2000)
    plain = ll.mle(RELEASED, start=start, schedule=schedule, rng=3, accelerate=False)
    fast = ll.mle(RELEASED, start=start, schedule=schedule, rng=3, accelerate=True)
    assert plain.converged and fast.converged
    assert fast.iterations < plain.iterations / 2
    for p in ll.PARAMETERS:
        assert fast.estimate[p] == pytest.approx(plain.estimate[p], abs=1e-5)
    assert np.all(plain.trace["q_increase"].values >= -1e-12)
    assert plain.fraction_missing_information[0] > 0.85


def test_model_from_pymc_gives_the_same_likelihood():
    import pymc as pm

    nt, nc = ll.N_TREATED, ll.N_CONTROL
    with pm.Model() as pm_model:
        tau = pm.Normal("tau", 0.0, 5.0)
        mu = pm.Normal("mu", 4.0, 5.0)
        sig_t = pm.Gamma("sigma_t", alpha=2.0, beta=0.2)
        sig_c = pm.Gamma("sigma_c", alpha=2.0, beta=0.2)
        pm.Normal("ybar_t", mu + tau, sig_t / np.sqrt(nt))
        pm.Normal("ybar_c", mu, sig_c / np.sqrt(nc))
        pm.Gamma("s2_t", alpha=(nt - 1) / 2, beta=(nt - 1) / (2 * sig_t**2))
        pm.Gamma("s2_c", alpha=(nc - 1) / 2, beta=(nc - 1) / (2 * sig_c**2))
    model = dp.Model.from_pymc(pm_model, statistic=list(ll.STATISTICS))
    assert model.likelihood.space.labels == ll.PARAMETERS
    assert model.likelihood.space.bounds["sigma_t"] == (0.0, np.inf)
    rng = np.random.default_rng(0)
    s = ll.simulate_statistics(ll.model().prior.sample(50, rng), rng)
    theta = np.array([1.5, 4.0, 7.0, 5.5])
    ours = model.likelihood.derivatives(s, theta, order=2)
    # ll.likelihood(), the instance the module's fits have compiled already
    factory = _shared_likelihood().derivatives(s, theta, order=2)
    for a, b in zip(ours, factory, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    # and its simulator has the model's distribution (means and variances of 20k draws)
    draws = model.simulate(model.likelihood.space.batch(theta, 20_000), rng)
    ref = ll.simulate_statistics(model.likelihood.space.batch(theta, 20_000), rng)
    np.testing.assert_allclose(draws.mean(0), ref.mean(0), rtol=0.02)
    np.testing.assert_allclose(draws.std(0), ref.std(0), rtol=0.05)


def test_exact_reference_agrees_with_direct_quadrature():
    from scipy.integrate import quad
    from scipy.stats import norm

    theta = [2.0, 4.0, 7.0, 5.0]
    b = ll.SCALES[0]
    sd = theta[2] / np.sqrt(ll.N_TREATED)
    direct = quad(
        lambda s: norm.pdf(s, 6.0, sd) * np.exp(-abs(6.9 - s) / b) / (2 * b), 6.0 - 12, 6.0 + 12
    )[0]
    closed = _normal_laplace(6.9 - 6.0, sd**2, b)
    assert closed == pytest.approx(np.log(direct), abs=1e-9)
