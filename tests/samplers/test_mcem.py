"""Monte Carlo EM on a Poisson count against the exact observed likelihood (Gong 2022, 5.1).

The reference is the exact log-likelihood of the release,
``log sum_s Poisson(s | theta) Laplace(s_dp | s, 1/eps)``, summed over a range of
counts holding all but ~1e-12 of the mass; its maximiser comes from scipy and its
second derivative from central differences. The library never uses either.

False-failure rates: estimates are compared within 6 of their own Monte Carlo
standard errors (replicate runs gave z-scores with sd about 1.3, so about 4
sigma: < 1e-4 per comparison); information within per-setting relative
tolerances of 10 replicate standard deviations (< 1e-9). Every check has a
planted-bug companion that must fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import gammaln, logsumexp

import dpinfer as dp
from dpinfer.samplers.mcem import _estep, _mstep

from ._helpers import POISSON_FAMILY, callable_likelihood, poisson_model

# (epsilon, release, relative tolerance on the information): tolerances are 10x the
# standard deviation of the relative error over 8 replicate runs at N = 1e5.
SETTINGS = [(0.2, 37.4, 0.03), (0.5, 12.3, 0.03), (1.0, 80.6, 0.005), (0.1, 3.2, 0.25)]
SMALL = dp.StagedSchedule(stages=((1000, 1e-3), (100_000, 1e-4)))
Z = 6.0


# --- exact reference ---------------------------------------------------------------------
def exact_loglik(theta, released, epsilon):
    top = int(max(theta, released) + 60 * np.sqrt(theta + 1) + 60 / epsilon + 50)
    s = np.arange(top + 1)
    terms = s * np.log(theta) - theta - gammaln(s + 1) - epsilon * np.abs(released - s)
    return float(logsumexp(terms) + np.log(epsilon / 2))


def exact_mle(released, epsilon):
    res = minimize_scalar(
        lambda t: -exact_loglik(t, released, epsilon),
        bounds=(1e-3, 3 * released + 60),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(res.x)


def exact_derivatives(theta, released, epsilon):
    h = 1e-3 * theta
    f = [exact_loglik(theta + k * h, released, epsilon) for k in (-1, 0, 1)]
    return (f[2] - f[0]) / (2 * h), -(f[2] - 2 * f[1] + f[0]) / h**2


# --- models --------------------------------------------------------------------------------
def pymc_likelihood(family=POISSON_FAMILY):
    import pymc as pm

    return dp.Likelihood.from_pymc(
        lambda p: pm.Poisson.dist(mu=p["theta"]),
        params=["theta"],
        support={"theta": "positive"},
        exponential_family=family,
    )


def mech(epsilon):
    return dp.Laplace.from_privacy(epsilon=epsilon, sensitivity=1.0)


def fit_release_37(model, *, start=1.0, **options):
    """MCEM of the release 37.4 at epsilon 0.2 (the first setting), from ``theta = start``."""
    return dp.mcem(model, mech(0.2), 37.4, start={"theta": start}, progressbar=False, **options)


@pytest.fixture(scope="module")
def pymc_model():
    return poisson_model(pymc_likelihood())


@pytest.fixture(scope="module")
def fits(pymc_model):
    """One staged fit per setting, PyMC likelihood (autodiff), seed 11."""
    out = {}
    for eps, released, _ in SETTINGS:
        out[eps, released] = dp.mcem(
            pymc_model,
            mech(eps),
            released,
            start={"theta": 1.0},
            rng=11,
            schedule=SMALL,
            progressbar=False,
        )
    return out


# --- MLE and information against the exact likelihood ------------------------------------
def mle_ok(fit, reference):
    return abs(fit.estimate["theta"] - reference) < Z * fit.monte_carlo_se["theta"]


def information_ok(info, reference, rtol):
    return abs(info / reference - 1) < rtol


@pytest.mark.parametrize(("eps", "released", "rtol"), SETTINGS)
def test_mle_matches_exact_maximiser(fits, eps, released, rtol):
    fit = fits[eps, released]
    assert fit.converged
    assert mle_ok(fit, exact_mle(released, eps))


@pytest.mark.parametrize(("eps", "released", "rtol"), SETTINGS)
def test_louis_information_matches_exact_hessian(fits, eps, released, rtol):
    fit = fits[eps, released]
    _, info = exact_derivatives(fit.estimate["theta"], released, eps)
    assert information_ok(fit.observed_information[0, 0], info, rtol)
    assert fit.standard_error["theta"] == pytest.approx(info**-0.5, rel=rtol)


@pytest.mark.parametrize(("eps", "released", "rtol"), SETTINGS)
def test_planted_information_without_missing_information_fails(fits, eps, released, rtol):
    # Louis without the correction term: E[-d2 log pi(s|theta)] only.
    fit = fits[eps, released]
    _, info = exact_derivatives(fit.estimate["theta"], released, eps)
    assert not information_ok(fit.complete_information[0, 0], info, rtol)


@pytest.mark.parametrize(("eps", "released"), [(0.2, 37.4), (0.5, 12.3), (0.1, 3.2)])
def test_planted_naive_mle_fails(fits, eps, released):
    fit = fits[eps, released]
    naive = fit.naive_estimate["theta"]
    assert naive == pytest.approx(released)  # Poisson: the naive MLE is the release
    assert abs(naive - exact_mle(released, eps)) > Z * fit.monte_carlo_se["theta"]
    _, info = exact_derivatives(naive, released, eps)
    assert fit.naive_information[0, 0] == pytest.approx(1 / released)  # s_dp / theta^2
    assert not information_ok(fit.naive_information[0, 0], info, 0.03)


def test_gong_section_5_1_numbers(fits):
    # Gong: MLE 37.237, information 1.582e-2; naive 37.4 and 2.674e-2.
    fit = fits[0.2, 37.4]
    assert exact_mle(37.4, 0.2) == pytest.approx(37.237, abs=5e-4)
    assert exact_derivatives(37.237, 37.4, 0.2)[1] == pytest.approx(1.582e-2, abs=5e-6)
    assert fit.estimate["theta"] == pytest.approx(37.237, abs=Z * fit.monte_carlo_se["theta"])
    assert fit.observed_information[0, 0] == pytest.approx(1.582e-2, rel=0.03)
    assert fit.naive_estimate["theta"] == 37.4
    assert fit.naive_information[0, 0] == pytest.approx(2.674e-2, abs=5e-6)


def test_score_at_estimate_is_zero_within_monte_carlo_error(fits):
    fit = fits[0.2, 37.4]
    se_score = fit.monte_carlo_se["theta"] * fit.observed_information[0, 0]
    assert abs(fit.score[0]) < Z * se_score * np.sqrt(fit.attrs["n_information"] / 100_000)


# --- (4.6) and (4.7) away from the MLE ---------------------------------------------------------
def _sample_at(model, eps, released, theta, n, seed):
    space = model.likelihood.space
    draw = _estep.make_draw(
        model, mech(eps), np.asarray(released), space, np.array([theta]), compress=True
    )
    return _estep.WeightedSample(draw, [100_000] * (n // 100_000), np.random.SeedSequence(seed))


@pytest.mark.parametrize("theta", [20.0, 30.0, 45.0])
def test_observed_score_and_information_at_any_theta(theta):
    # Ten independent samples of 1e5 at theta: batch means give the Monte Carlo s.e.
    # |t| < 6 with 9 degrees of freedom fails falsely with probability ~2e-4.
    model = poisson_model(callable_likelihood())
    score, info = exact_derivatives(theta, 37.4, 0.2)
    fits = [
        _mstep.louis(
            _sample_at(model, 0.2, 37.4, theta, 100_000, seed), model.likelihood, np.array([theta])
        )
        for seed in range(10)
    ]

    def t_stat(values, target):
        values = np.asarray(values)
        return abs(values.mean() - target) / (values.std(ddof=1) / np.sqrt(len(values)))

    assert t_stat([f.score[0] for f in fits], score) < 6
    assert t_stat([f.information[0, 0] for f in fits], info) < 6
    # planted: the complete-data information is not the observed information
    assert t_stat([f.complete_information[0, 0] for f in fits], info) > 6


# --- Q increase --------------------------------------------------------------------------------
def exact_conditional_mean(theta, released, epsilon):
    top = int(max(theta, released) + 60 * np.sqrt(theta + 1) + 60 / epsilon + 50)
    s = np.arange(top + 1)
    terms = s * np.log(theta) - theta - gammaln(s + 1) - epsilon * np.abs(released - s)
    return float(np.sum(s * np.exp(terms - logsumexp(terms))))


def q_increase_ok(fit, released, eps, start):
    thetas = np.r_[start, fit.trace["theta"].values]
    ok = True
    for t in range(len(thetas) - 1):
        old, new = thetas[t], thetas[t + 1]
        se = float(fit.trace["q_increase_se"][t])
        exact = exact_conditional_mean(old, released, eps) * np.log(new / old) - (new - old)
        ok &= float(fit.trace["q_increase"][t]) >= -4 * se - 1e-12
        ok &= exact >= -4 * se - 1e-12
    return bool(ok)


def test_q_increase_is_non_negative_within_monte_carlo_error(fits):
    # The exact Q increase Q(theta_t+1; theta_t) - Q(theta_t; theta_t), with the exact
    # E-step, differs from the sample's by a Monte Carlo error whose s.e. the trace holds.
    assert q_increase_ok(fits[0.2, 37.4], 37.4, 0.2, 1.0)
    assert np.all(fits[0.2, 37.4].trace["q_increase"].values >= -1e-12)


def test_planted_overshooting_mstep_decreases_q():
    # a biased maximiser: theta = E[s] + 3 overshoots the maximiser of Q
    bad = dp.ExponentialFamily(statistic=lambda s: s, maximize=lambda m: {"theta": m[0] + 3})
    model = poisson_model(callable_likelihood(bad))
    fit = fit_release_37(model, rng=11, schedule=dp.StagedSchedule(stages=((10_000, 1e-3),)))
    assert not q_increase_ok(fit, 37.4, 0.2, 1.0)


# --- paths and schedules agree -----------------------------------------------------------------
def test_exponential_and_general_paths_agree(pymc_model):
    kwargs = dict(start={"theta": 1.0}, rng=5, schedule=SMALL, progressbar=False)
    fam = dp.mcem(pymc_model, mech(0.2), 37.4, mstep="exponential", **kwargs)
    gen = dp.mcem(pymc_model, mech(0.2), 37.4, mstep="general", **kwargs)
    assert fam.attrs["mstep"] == "exponential" and gen.attrs["mstep"] == "general"
    assert gen.estimate["theta"] == pytest.approx(fam.estimate["theta"], abs=1e-6)
    assert gen.observed_information == pytest.approx(fam.observed_information, rel=1e-6)


def test_general_path_without_a_declared_family():
    model = poisson_model(callable_likelihood(family=None))
    fit = fit_release_37(model, start=5.0, rng=2, schedule=SMALL)
    assert fit.attrs["mstep"] == "general"
    assert mle_ok(fit, exact_mle(37.4, 0.2))
    assert fit.naive_estimate["theta"] == pytest.approx(37.4, abs=1e-6)


def test_ascent_schedule_matches_exact():
    model = poisson_model(callable_likelihood())
    schedule = dp.AscentSchedule(information_size=100_000, max_size=10**6)
    fit = fit_release_37(model, rng=4, schedule=schedule)
    assert fit.converged and fit.attrs["schedule"] == "ascent"
    assert mle_ok(fit, exact_mle(37.4, 0.2))
    info = exact_derivatives(fit.estimate["theta"], 37.4, 0.2)[1]
    assert information_ok(fit.observed_information[0, 0], info, 0.03)
    assert np.all(fit.trace["q_increase"].values >= -1e-12)
    assert fit.trace["n_simulations"].values.max() > 1000  # the sample size grew


def test_staged_schedule_reports_non_convergence():
    model = poisson_model(callable_likelihood())
    with pytest.warns(dp.MCEMConvergenceWarning, match="not converged after 3 iterations"):
        schedule = dp.StagedSchedule(stages=((1000, 1e-3),), max_iterations=3)
        fit = fit_release_37(model, rng=4, schedule=schedule)
    assert not fit.converged
    assert fit.iterations == 3
    assert "NOT converged" in repr(fit)


def test_default_schedule_is_gongs_appendix_e():
    schedule = dp.StagedSchedule()
    assert schedule.stages == ((10**3, 1e-3), (10**5, 1e-4), (10**7, 1e-5))


# --- the result object ---------------------------------------------------------------------------
def test_result_layout(fits):
    import dataclasses

    fit = fits[0.2, 37.4]
    assert set(fit.estimate) == {"theta"}
    assert fit.covariance == pytest.approx(np.linalg.inv(fit.observed_information))
    lo, hi = fit.wald_interval(0.95)["theta"]
    assert lo < fit.estimate["theta"] < hi
    assert hi - lo == pytest.approx(2 * 1.959964 * fit.standard_error["theta"], rel=1e-6)
    trace = fit.trace
    for name in ("theta", "n_simulations", "ess", "q_increase", "q_increase_se", "stage"):
        assert trace[name].dims == ("iteration",)
    assert set(np.unique(trace["n_simulations"].values)) == {1000, 100_000}
    assert np.all(trace["ess"].values <= trace["n_simulations"].values)
    ds = fit.to_xarray()
    assert float(ds["estimate"].sel(parameter="theta")) == fit.estimate["theta"]
    assert ds["observed_information"].shape == (1, 1)
    assert "trace_theta" in ds and ds.attrs["method"] == "mcem"
    text = repr(fit)
    assert "theta" in text and "naive" in text and "converged" in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.converged = False
    assert 0 < fit.fraction_missing_information[0] < 1


def test_result_saves_to_netcdf(fits, tmp_path):
    import xarray as xr

    ds = fits[0.2, 37.4].to_xarray()
    ds.to_netcdf(tmp_path / "fit.nc")
    back = xr.load_dataset(tmp_path / "fit.nc")
    assert float(back["estimate"][0]) == float(ds["estimate"][0])
