"""Likelihoods for MCEM: autodiff derivatives, parameter spaces, PyMC models, input errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import gammaln

import dpinfer as dp
from dpinfer.likelihood import ParameterSpace

from ._helpers import poisson_model


# --- derivatives by autodiff against closed forms -----------------------------------------
def test_pymc_poisson_derivatives_are_exact():
    import pymc as pm

    lik = dp.Likelihood.from_pymc(
        lambda p: pm.Poisson.dist(mu=p["theta"]), params=["theta"], support={"theta": "positive"}
    )
    s = np.array([0, 3, 37, 80])
    theta = np.array([2.5, 10.0, 37.4, 60.0])
    lp, g, h = lik.derivatives(s, theta[:1], order=2)  # one theta for the batch
    assert lp == pytest.approx(st.poisson.logpmf(s, 2.5))
    assert g[:, 0] == pytest.approx(s / 2.5 - 1)
    assert h[:, 0, 0] == pytest.approx(-s / 2.5**2)
    batch = {"theta": theta}
    assert lik.logp(s, batch) == pytest.approx(st.poisson.logpmf(s, theta))
    assert lik.score(s, batch)[:, 0] == pytest.approx(s / theta - 1)
    # non-integer statistics (the naive fit evaluates the release itself)
    assert lik.logp(np.array([37.4]), {"theta": np.array([37.4])})[0] == pytest.approx(
        37.4 * np.log(37.4) - 37.4 - gammaln(38.4)
    )


def test_pymc_normal_with_vector_parameter():
    import pymc as pm

    lik = dp.Likelihood.from_pymc(
        lambda p: pm.Normal.dist(mu=p["m"], sigma=p["sd"]),  # sd: (n, 1)
        params={"m": (2,), "sd": (1,)},
        support={"sd": "positive"},
    )
    assert lik.space.labels == ("m[0]", "m[1]", "sd[0]")
    s = np.array([[0.5, -1.0], [2.0, 1.0]])
    theta = np.array([0.0, 1.0, 2.0])
    lp, g, h = lik.derivatives(s, theta, order=2)
    assert lp == pytest.approx(st.norm.logpdf(s, [0.0, 1.0], 2.0).sum(axis=1))
    z = (s - [0.0, 1.0]) / 2.0
    assert g[:, :2] == pytest.approx(z / 2.0)
    assert g[:, 2] == pytest.approx((z**2).sum(axis=1) / 2.0 - 2 / 2.0)
    assert h[:, 0, 0] == pytest.approx(np.full(2, -1 / 4))
    assert h[:, 2, 2] == pytest.approx(-3 * (z**2).sum(axis=1) / 4 + 2 / 4)
    assert np.allclose(h, np.transpose(h, (0, 2, 1)))


def test_pytensor_and_callable_likelihoods_agree():
    import pytensor.tensor as pt

    auto = dp.Likelihood.from_pytensor(
        lambda s, p: s * pt.log(p["theta"]) - p["theta"] - pt.gammaln(s + 1),
        params=["theta"],
        support={"theta": "positive"},
    )
    manual = dp.Likelihood.from_callables(
        lambda s, p: s * np.log(p["theta"]) - p["theta"] - gammaln(s + 1),
        score=lambda s, p: (s / p["theta"] - 1)[:, None],
        hessian=lambda s, p: (-s / p["theta"] ** 2)[:, None, None],
        params=["theta"],
    )
    s = np.arange(10.0)
    for a, b in zip(
        auto.derivatives(s, np.array([4.0]), order=2),
        manual.derivatives(s, np.array([4.0]), order=2),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_callables_are_shape_checked():
    lik = dp.Likelihood.from_callables(
        lambda s, p: np.zeros(len(s)), score=lambda s, p: np.zeros(len(s)), params=["a"]
    )
    with pytest.raises(ValueError, match=r"score returned shape \(3,\); expected \(3, 1\)"):
        lik.score(np.zeros(3), {"a": np.zeros(3)})
    with pytest.raises(ValueError, match="never approximated by finite differences"):
        lik.hessian(np.zeros(3), {"a": np.zeros(3)})


def test_likelihood_pickles_without_compiled_functions():
    import cloudpickle
    import pymc as pm

    lik = dp.Likelihood.from_pymc(lambda p: pm.Poisson.dist(mu=p["theta"]), params=["theta"])
    before = lik.score(np.array([3]), {"theta": np.array([2.0])})
    again = cloudpickle.loads(cloudpickle.dumps(lik))
    assert again.score(np.array([3]), {"theta": np.array([2.0])}) == pytest.approx(before)


# --- parameter spaces ------------------------------------------------------------------------
def test_parameter_space_transforms_round_trip_with_chain_rule():
    space = ParameterSpace(
        ["a", "b", "c", "d"], support={"b": "positive", "c": (0.0, 2.0), "d": (-np.inf, 1.0)}
    )
    theta = np.array([-3.0, 0.5, 1.5, -2.0])
    phi = space.to_unconstrained(theta)
    back, d1, d2 = space.to_natural(phi)
    np.testing.assert_allclose(back, theta)
    h = 1e-4
    up, down = space.to_natural(phi + h)[0], space.to_natural(phi - h)[0]
    np.testing.assert_allclose(d1, (up - down) / (2 * h), rtol=1e-6)
    np.testing.assert_allclose(d2, (up - 2 * back + down) / h**2, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({"theta": -1.0}, r"start\['theta'\] = -1.0 lies outside the support"),
        ({"theta": 0.0}, r"start\['theta'\] = 0.0 lies outside the support"),
        ({"theta": np.nan}, r"start\['theta'\] must be finite"),
        ({}, r"missing \['theta'\]"),
        ({"theta": 1.0, "x": 2.0}, r"unknown \['x'\]"),
    ],
)
def test_start_is_validated(value, match):
    model = poisson_model()
    with pytest.raises(ValueError, match=match):
        dp.mcem(model, _mech(), 37.4, start=value, progressbar=False)


def test_start_must_be_a_dict():
    with pytest.raises(TypeError, match="start must be a dict"):
        dp.mcem(poisson_model(), _mech(), 37.4, start=1.0, progressbar=False)


@pytest.mark.parametrize("released", [np.nan, np.inf, [1.0, 2.0]])
def test_release_is_validated(released):
    with pytest.raises(ValueError, match="released must"):
        dp.mcem(poisson_model(), _mech(), released, start={"theta": 1.0}, progressbar=False)


def test_model_without_likelihood_is_refused_with_what_mcem_needs():
    bare = dp.Model(prior={"theta": st.gamma(25)}, simulate=lambda p, rng: rng.poisson(p["theta"]))
    with pytest.raises(ValueError, match="no likelihood.*score and Hessian.*Model.from_pymc"):
        dp.mcem(bare, _mech(), 37.4, start={"theta": 1.0}, progressbar=False)
    with_loglik = dp.Model(
        prior={"theta": st.gamma(25)},
        simulate=lambda p, rng: rng.poisson(p["theta"]),
        loglik=lambda s, p: st.poisson.logpmf(s, p["theta"]),
    )
    with pytest.raises(ValueError, match="only a loglik callable.*finite differences"):
        dp.mcem(with_loglik, _mech(), 37.4, start={"theta": 1.0}, progressbar=False)
    no_hessian = dp.Likelihood.from_callables(
        lambda s, p: st.poisson.logpmf(s, p["theta"]),
        score=lambda s, p: (s / p["theta"] - 1)[:, None],
        params=["theta"],
    )
    model = dp.Model(
        prior={"theta": st.gamma(25)},
        simulate=lambda p, rng: rng.poisson(p["theta"]),
        likelihood=no_hessian,
    )
    with pytest.raises(ValueError, match="no score/Hessian"):
        dp.mcem(model, _mech(), 37.4, start={"theta": 1.0}, progressbar=False)


def test_other_options_are_validated():
    model = poisson_model()
    kwargs = dict(start={"theta": 1.0}, progressbar=False)
    with pytest.raises(ValueError, match="schedule must be"):
        dp.mcem(model, _mech(), 37.4, schedule="fast", **kwargs)
    with pytest.raises(ValueError, match="mstep must be"):
        dp.mcem(model, _mech(), 37.4, mstep="newton", **kwargs)
    with pytest.raises(ValueError, match="accelerate=True needs schedule='staged'"):
        dp.mcem(model, _mech(), 37.4, schedule="auto", accelerate=True, **kwargs)
    with pytest.raises(TypeError, match="likelihood must be a dpinfer.Likelihood"):
        dp.Model(prior={"theta": st.gamma(2)}, simulate=lambda p, r: p, likelihood=len)
    with pytest.raises(ValueError, match="stages"):
        dp.StagedSchedule(stages=())
    with pytest.raises(ValueError, match="alpha"):
        dp.AscentSchedule(alpha=1.5)
    no_family = dp.Likelihood.from_callables(
        lambda s, p: s,
        score=lambda s, p: s[:, None],
        hessian=lambda s, p: s[:, None, None],
        params=["theta"],
    )
    m = dp.Model(prior={"theta": st.gamma(2)}, simulate=lambda p, r: p, likelihood=no_family)
    with pytest.raises(ValueError, match="mstep='exponential' needs"):
        dp.mcem(m, _mech(), 37.4, mstep="exponential", **kwargs)


# --- Model.from_pymc -------------------------------------------------------------------------
def test_model_from_pymc_prior_simulator_and_likelihood():
    import pymc as pm

    with pm.Model() as pm_model:
        theta = pm.Gamma("theta", alpha=25.0, beta=1.0)
        pm.Poisson("s", mu=theta)
    model = dp.Model.from_pymc(pm_model, statistic="s")
    assert model.pymc_model is pm_model and model.statistic == "s"
    assert model.likelihood.space.bounds == {"theta": (0.0, np.inf)}
    rng = np.random.default_rng(1)
    draws = model.prior.sample(40_000, rng)["theta"]
    assert st.kstest(draws, st.gamma(25).cdf).pvalue > 1e-4  # false failure 1e-4
    x = np.array([10.0, 25.0, 40.0])
    assert model.prior.logpdf({"theta": x}) == pytest.approx(st.gamma(25).logpdf(x))
    s = model.simulate({"theta": np.full(40_000, 12.0)}, rng)
    assert s.shape == (40_000,)
    assert abs(s.mean() - 12.0) < 6 * np.sqrt(12.0 / 40_000)
    assert model.loglik(np.array([3]), {"theta": np.array([2.0])}) == pytest.approx(
        st.poisson.logpmf(3, 2.0)
    )
    # same seed, same draws; the chunk's generator drives PyTensor's
    a = model.simulate({"theta": np.full(5, 3.0)}, np.random.default_rng(9))
    b = model.simulate({"theta": np.full(5, 3.0)}, np.random.default_rng(9))
    assert np.array_equal(a, b)


def test_model_from_pymc_fits_by_mcem():
    import pymc as pm

    with pm.Model() as pm_model:
        theta = pm.Gamma("theta", alpha=25.0, beta=1.0)
        pm.Poisson("s", mu=theta)
    model = dp.Model.from_pymc(
        pm_model,
        statistic="s",
        exponential_family=dp.ExponentialFamily(lambda s: s, lambda m: {"theta": m[0]}),
    )
    fit = dp.mcem(
        model,
        _mech(),
        37.4,
        start={"theta": 1.0},
        rng=2,
        schedule=dp.StagedSchedule(stages=((1000, 1e-3), (100_000, 1e-4))),
        progressbar=False,
    )
    # exact: 37.2373, information 1.5821e-2 (tests/samplers/test_mcem.py); 6 MC s.e.
    assert abs(fit.estimate["theta"] - 37.2373) < 6 * fit.monte_carlo_se["theta"]
    assert fit.observed_information[0, 0] == pytest.approx(1.5821e-2, rel=0.03)


def test_model_from_pymc_errors():
    import pymc as pm

    with pm.Model() as pm_model:
        a = pm.Normal("a")
        b = pm.Normal("b")
        pm.Normal("s", a + b)
    with pytest.raises(ValueError, match="statistic 'x' is not a random variable"):
        dp.Model.from_pymc(pm_model, statistic="x")
    with pytest.raises(ValueError, match="depends on the random variable 'b'"):
        dp.Model.from_pymc(pm_model, statistic="s", params=["a"])
    with pytest.raises(TypeError, match="pymc.Model"):
        dp.Model.from_pymc("model", statistic="s")


# --- helpers ---------------------------------------------------------------------------------
def _mech():
    return dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
