"""Monte Carlo EM at the boundary of the parameter space and with an impossible naive MLE.

A Poisson rate with a release of -3.2 (Laplace, epsilon = 0.5): the exact
log-likelihood ``log sum_s Poisson(s | theta) Laplace(-3.2 | s, 2)`` decreases
in theta (checked below by summation), so the MLE is the bound 0. Every
schedule must report it there, without a standard error or Wald interval, with
a warning, and never crash.

False-failure rates: the boundary checks are deterministic for the fixed seeds
(the M-step reaches the bound, or EM stops within 2.5e-4 of it with the score
pointing to it: under 1e-4 standard errors, against the 0.01 needed); the
interior control flags an interior MLE only when it lies within 0.01 standard
errors of the bound, and the nearest of the settings is 0.57 standard errors
away (theta 2.8, s.e. 4.9): rate 0. Each check has a planted-bug companion
that must fail.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.samplers.mcem import _boundary

from .test_mcem import (
    SETTINGS,
    SMALL,
    callable_likelihood,
    exact_loglik,
    mech,
    poisson_model,
)

RELEASED, EPSILON = -3.2, 0.5
LEANS_TO_ZERO = 0  # the setting whose score at the seed-5 estimate is negative


@pytest.fixture(scope="module")
def model():
    return poisson_model(callable_likelihood())


def fit_boundary(model, schedule, seed):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = dp.mcem(
            model,
            mech(EPSILON),
            RELEASED,
            start={"theta": 1.0},
            rng=seed,
            schedule=schedule,
            progressbar=False,
        )
    boundary = [w for w in caught if issubclass(w.category, dp.BoundaryEstimateWarning)]
    return fit, boundary


def reported_at_boundary(fit, boundary_warnings) -> bool:
    """The estimate is the bound 0, with no s.e., no Wald interval, and a warning."""
    lo, hi = fit.wald_interval()["theta"]
    return (
        fit.estimate["theta"] == 0.0
        and fit.at_boundary == ("theta",)
        and np.isnan(fit.standard_error["theta"])
        and np.isnan(lo)
        and np.isnan(hi)
        and len(boundary_warnings) == 1
        and "boundary" in str(boundary_warnings[0].message)
        and "at boundary" in repr(fit)
    )


def test_exact_likelihood_decreases_from_the_bound():
    grid = np.array([1e-6, 0.01, 0.1, 0.5, 1.0, 3.0])
    values = [exact_loglik(t, RELEASED, EPSILON) for t in grid]
    assert np.all(np.diff(values) < 0)


# seeds 2 (staged) and 3 (ascent) crashed before: the exponential maximiser returned 0.0;
# seed 0 of the ascent schedule stopped at theta = 2.3e-6 with a finite Louis s.e.
ASCENT = dp.AscentSchedule(information_size=100_000, max_size=10**6)
CASES = [(SMALL, 2), (SMALL, 0), (ASCENT, 3), (ASCENT, 0)]


@pytest.mark.parametrize(
    ("schedule", "seed"), CASES, ids=["staged2", "staged0", "ascent3", "ascent0"]
)
def test_boundary_mle_is_reported_as_such(model, schedule, seed):
    fit, caught = fit_boundary(model, schedule, seed)
    assert reported_at_boundary(fit, caught)
    assert np.isnan(fit.covariance).all()


def test_planted_bug_boundary_check_fails_without_detection(model, monkeypatch):
    """Without boundary detection (the old behaviour) the same check must fail."""
    none = lambda space, *args: np.zeros(space.size, bool)  # noqa: E731
    monkeypatch.setattr(_boundary, "on_closed_bound", none)
    monkeypatch.setattr(_boundary, "at_bound", none)
    fit, caught = fit_boundary(model, SMALL, 0)
    assert not reported_at_boundary(fit, caught)


def fit_interior(model, eps, released):
    return dp.mcem(
        model, mech(eps), released, start={"theta": 1.0}, rng=5, schedule=SMALL, progressbar=False
    )


@pytest.fixture(scope="module")
def interior_fits(model):
    with warnings.catch_warnings():
        warnings.simplefilter("error", dp.BoundaryEstimateWarning)
        return [fit_interior(model, eps, s) for eps, s, _ in SETTINGS]


def interior_reported(fits) -> bool:
    return all(fit.at_boundary == () and np.isfinite(fit.standard_error["theta"]) for fit in fits)


def test_interior_mles_are_not_reported_at_the_boundary(interior_fits):
    assert interior_reported(interior_fits)


def test_planted_bug_interior_check_fails_when_every_estimate_counts_as_close(model, monkeypatch):
    """With an absurd resolution an interior fit whose score leans to 0 is flagged."""
    monkeypatch.setattr(_boundary, "RESOLUTION", 1e9)
    eps, released, _ = SETTINGS[LEANS_TO_ZERO]
    with pytest.warns(dp.BoundaryEstimateWarning):
        fit = fit_interior(model, eps, released)
    assert not interior_reported([fit])


# --- a naive likelihood that is -inf at the release ----------------------------------------
def binomial_model(n=100):
    lik = dp.Likelihood.from_callables(
        lambda s, p: st.binom.logpmf(s, n, p["p"]),
        score=lambda s, p: (s / p["p"] - (n - s) / (1 - p["p"]))[:, None],
        hessian=lambda s, p: (-s / p["p"] ** 2 - (n - s) / (1 - p["p"]) ** 2)[:, None, None],
        params=["p"],
        support={"p": (0, 1)},
    )
    return dp.Model(simulate=lambda q, rng: rng.binomial(n, q["p"]), likelihood=lik)


def naive_reported_missing(fit) -> bool:
    note = fit.attrs["naive_note"]
    return (
        np.isnan(fit.naive_estimate["p"])
        and np.isnan(fit.naive_standard_error["p"])
        and "no probability" in note
        and "naive" in repr(fit)
    )


def fit_binomial():
    return dp.mcem(
        binomial_model(),
        mech(1.0),
        71.6,
        start={"p": 0.5},
        rng=3,
        schedule=SMALL,
        mstep="general",
        progressbar=False,
    )


def test_impossible_naive_likelihood_reports_nan_and_why():
    fit = fit_binomial()
    assert naive_reported_missing(fit)
    assert fit.estimate["p"] == pytest.approx(0.716, abs=0.02)  # the DP MLE itself is fine


def test_planted_bug_naive_check_fails_when_the_start_is_returned(monkeypatch):
    monkeypatch.setattr(_boundary, "naive_failure", lambda *args: None)
    fit = fit_binomial()
    assert fit.naive_estimate["p"] == 0.5  # the old answer: the start value
    assert not naive_reported_missing(fit)
