"""Monte Carlo EM whose importance sampler collapses says so: "not converged", no Monte Carlo s.e.

Issue 19, section 5. Two reproductions of an E-step whose weights sit on one or
a few simulations (effective sample size near 1):

* far in the tail: a Poisson count released with Gaussian noise (sd 5) at
  1e6, EM started at 1. Simulations at the current rate never come near the
  release; each M-step follows the largest draw. The old code returned about
  650,000 after 500 iterations with a Monte Carlo s.e. of 0 and no warning.
* many parameters at once: 10 Poisson rates, each count released with
  Laplace(1) noise (a small stand-in for the 40 county rates of issue 18). The
  joint weight is a product of 10 Laplace densities: its log has a spread of
  about 20 nats, and the ESS stays near 1 at every iteration even at the MLE.

Both are deterministic for their seeds (the ESS is 1 to 6 at every iteration,
far below the floor of 100), so the checks have no false-failure rate. Each
has a planted-bug companion: with the floor switched off the old silent
output comes back, and the same check fails on it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import gammaln

import dpinfer as dp
from dpinfer.samplers.mcem import MCEMInfo, _estep, _health, _schedule

from .test_mcem import callable_likelihood, poisson_model

K = 10  # rates in the many-parameter model


def fit_with_warnings(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = dp.mcem(*args, progressbar=False, **kwargs)
    return fit, [w for w in caught if issubclass(w.category, dp.MCEMConvergenceWarning)]


def reported_as_collapsed(fit, caught) -> bool:
    """A warning that says "not converged" and why; NaN standard and Monte Carlo errors."""
    flat = [np.ravel(v) for v in (*fit.monte_carlo_se.values(), *fit.standard_error.values())]
    return (
        not fit.converged
        and len(caught) == 1
        and "not converged" in str(caught[0].message)
        and "effective sample size" in str(caught[0].message)
        and all(np.isnan(v).all() for v in flat)
        and "effective sample size" in fit.attrs["standard_error_note"]
        and "NOT converged" in repr(fit)
    )


def no_floor(monkeypatch):
    """The planted bug: no ESS floor (the behaviour before the fix)."""
    for module in (_estep, _health, _schedule):
        monkeypatch.setattr(module, "MIN_ESS", 0.0)


# --- far in the tail --------------------------------------------------------------------------
def fit_tail():
    model = poisson_model(callable_likelihood())
    schedule = dp.AscentSchedule(max_iterations=20)
    return fit_with_warnings(
        model, dp.Gaussian(5.0), 1e6, start={"theta": 1.0}, rng=1, schedule=schedule
    )


def test_tail_release_warns_not_converged_without_monte_carlo_error():
    fit, caught = fit_tail()
    assert np.all(fit.trace["ess"].values < 4)  # the reproduction: ESS 1 to 3 at every iteration
    assert reported_as_collapsed(fit, caught)
    assert "20 of 20 iterations" in str(caught[0].message)


def test_planted_no_floor_reports_a_zero_monte_carlo_error(monkeypatch):
    no_floor(monkeypatch)
    fit, caught = fit_tail()
    assert fit.monte_carlo_se["theta"] == 0.0  # the old output: an MC s.e. of exactly 0
    assert not reported_as_collapsed(fit, caught)


# --- many parameters --------------------------------------------------------------------------
def rates_model(k: int = K):
    """``k`` Poisson rates, each count released: a vector parameter (also used elsewhere)."""
    likelihood = dp.Likelihood.from_callables(
        lambda s, p: np.sum(s * np.log(p["theta"]) - p["theta"] - gammaln(s + 1), axis=1),
        score=lambda s, p: s / p["theta"] - 1,
        hessian=lambda s, p: -(s / p["theta"] ** 2)[:, :, None] * np.eye(k),
        params={"theta": (k,)},
        support={"theta": "positive"},
        exponential_family=dp.ExponentialFamily(
            statistic=lambda s: s, maximize=lambda m: {"theta": m}
        ),
    )
    return dp.Model(simulate=lambda p, rng: rng.poisson(p["theta"]), likelihood=likelihood)


def fit_many():
    rng = np.random.default_rng(3)
    mech = dp.Laplace(np.ones(K))
    released = mech.release(rng.poisson(rng.gamma(20, 3, size=K)), rng=rng)
    schedule = dp.AscentSchedule(max_iterations=10, max_size=20_000, information_size=20_000)
    return fit_with_warnings(
        rates_model(),
        mech,
        released,
        start={"theta": np.full(K, 50.0)},
        rng=1,
        schedule=schedule,
        batch_size=20_000,
    )


def test_many_parameters_collapse_is_reported():
    fit, caught = fit_many()
    assert np.nanmax(fit.trace["ess"].values) < 10
    assert reported_as_collapsed(fit, caught)
    assert fit.monte_carlo_se["theta"].shape == (K,)


def test_planted_no_floor_reports_many_parameters_as_if_fine(monkeypatch):
    no_floor(monkeypatch)
    fit, caught = fit_many()
    assert np.all(np.isfinite(fit.monte_carlo_se["theta"]))
    assert not reported_as_collapsed(fit, caught)


# --- a low ESS near the MLE grows the sample instead of ending the run ------------------------
def fit_precise_release():
    # Laplace scale 0.1 against a Poisson sd of 9: about 7% of the draws near 80.6 carry the
    # weight, an ESS near 60 at the first sample size of 1000
    model = poisson_model(callable_likelihood())
    mech = dp.Laplace.from_privacy(epsilon=10.0, sensitivity=1.0)
    schedule = dp.AscentSchedule(information_size=10_000)
    return fit_with_warnings(model, mech, 80.6, start={"theta": 80.0}, rng=3, schedule=schedule)


def test_low_ess_near_the_mle_grows_the_sample():
    fit, caught = fit_precise_release()
    ess = fit.trace["ess"].values
    assert ess[0] < _estep.MIN_ESS <= ess[-1]
    assert fit.trace["n_simulations"].values[-1] > 1000
    assert fit.converged and not caught


def test_planted_no_floor_stops_below_it(monkeypatch):
    no_floor(monkeypatch)
    fit, _ = fit_precise_release()
    assert fit.trace["ess"].values[-1] < 100


# --- running out of iterations --------------------------------------------------------------
def test_running_out_of_iterations_warns_not_converged():
    model = poisson_model(callable_likelihood())
    mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    schedule = dp.StagedSchedule(stages=((1000, 1e-3),), max_iterations=3)
    fit, caught = fit_with_warnings(
        model, mech, 37.4, start={"theta": 1.0}, rng=4, schedule=schedule
    )
    assert not fit.converged and len(caught) == 1
    message = str(caught[0].message)
    assert "not converged" in message and "max_iterations = 3" in message
    assert np.isfinite(fit.monte_carlo_se["theta"])  # the samples were fine: errors reported
    assert fit.attrs["convergence_note"] in message


@pytest.mark.parametrize("ess", [1.0, 99.0])
def test_health_flags_a_last_e_step_below_the_floor(ess):
    info = MCEMInfo(np.ones(1), 1000, ess, 0.0, 0.0, 0.0, 0, False)
    health = _health.diagnose([info], [True], dp.AscentSchedule(), info_ess=500.0)
    assert health.collapsed and not health.converged
