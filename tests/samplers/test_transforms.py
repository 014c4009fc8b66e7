"""The unconstrained scale of the SMC and DA-MCMC moves: round trips and log-Jacobians.

The SMC target on the unconstrained scale ``z`` is ``pi(theta(z)) |dtheta/dz|``;
a wrong log-Jacobian biases every bounded-parameter posterior. These checks are
deterministic (no randomness beyond fixed grids); each numerical check has a
companion with a planted bug that must fail it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from scipy.integrate import quad

import dpinfer as dp
from dpinfer.likelihood import ParameterSpace
from dpinfer.samplers.da._theta import ThetaKernel

SUPPORTS = {
    "real line": (-np.inf, np.inf),
    "lower bound": (2.0, np.inf),
    "upper bound": (-np.inf, -1.5),
    "interval": (0.1, 0.9),
}
Z = np.linspace(-8.0, 8.0, 161)


def _inside(lo, hi):
    """Points strictly inside the support, including points near each finite end."""
    if np.isfinite(lo) and np.isfinite(hi):
        return lo + (hi - lo) * np.array([1e-6, 1e-3, 0.2, 0.5, 0.77, 1 - 1e-3, 1 - 1e-6])
    if np.isfinite(lo):
        return lo + np.array([1e-6, 1e-3, 0.5, 1.0, 30.0, 1e4])
    if np.isfinite(hi):
        return hi - np.array([1e-6, 1e-3, 0.5, 1.0, 30.0, 1e4])
    return np.array([-1e4, -3.0, 0.0, 0.25, 7.0, 1e4])


def _scalar(lower, upper) -> ParameterSpace:
    """One scalar parameter with support ``(lower, upper)``: maps act elementwise."""
    return ParameterSpace(["x"], support={"x": (lower, upper)})


def _natural(space: ParameterSpace, z):
    return space.to_natural(z)[0]


@pytest.mark.parametrize("support", list(SUPPORTS))
def test_round_trips(support):
    space = _scalar(*SUPPORTS[support])
    theta = _natural(space, Z)
    np.testing.assert_allclose(space.to_unconstrained(theta), Z, rtol=1e-9, atol=1e-9)
    x = _inside(*SUPPORTS[support])
    np.testing.assert_allclose(_natural(space, space.to_unconstrained(x)), x, rtol=1e-9)


@pytest.mark.parametrize("support", list(SUPPORTS))
def test_images_lie_inside_the_support_and_are_increasing_or_decreasing(support):
    lo, hi = SUPPORTS[support]
    theta = _natural(_scalar(lo, hi), Z)
    assert np.all((theta > lo) & (theta < hi))
    steps = np.diff(theta)
    assert np.all(steps > 0) or np.all(steps < 0)  # a bijection onto the support


def check_log_jacobian_matches_numerical_derivative(space: ParameterSpace):
    # Central difference of the map; h = 1e-5 gives relative error ~1e-9 here.
    h = 1e-5
    numeric = (_natural(space, Z + h) - _natural(space, Z - h)) / (2 * h)
    error = np.max(np.abs(space.log_jacobian(Z) - np.log(np.abs(numeric))))
    assert error < 1e-6, f"log-Jacobian differs from log|d theta/dz| by {error:.3g}"


@pytest.mark.parametrize("support", list(SUPPORTS))
def test_log_jacobian_matches_the_numerical_derivative(support):
    check_log_jacobian_matches_numerical_derivative(_scalar(*SUPPORTS[support]))


class DroppedIntervalWidth(ParameterSpace):
    """Planted bug: the logit Jacobian without the ``log(upper - lower)`` term."""

    def log_jacobian(self, z):
        return super().log_jacobian(z) - np.log(self.upper - self.lower)


class NoJacobian(ParameterSpace):
    """Planted bug: the Jacobian dropped altogether."""

    def log_jacobian(self, z):
        return np.zeros_like(np.asarray(z, dtype=float))


@pytest.mark.parametrize(
    ("bug", "support"),
    [(DroppedIntervalWidth, "interval"), *((NoJacobian, s) for s in SUPPORTS if s != "real line")],
)
def test_planted_wrong_jacobian_fails_the_derivative_check(bug, support):
    with pytest.raises(AssertionError, match="log-Jacobian differs"):
        lower, upper = SUPPORTS[support]
        check_log_jacobian_matches_numerical_derivative(bug(["x"], support={"x": (lower, upper)}))


def test_log_jacobian_is_finite_far_out():
    # log-space formulas: no overflow to inf or log(0) for |z| in the hundreds.
    z = np.array([-700.0, -40.0, 40.0, 700.0])
    for lo, hi in SUPPORTS.values():
        assert np.all(np.isfinite(_scalar(lo, hi).log_jacobian(z)))


# --- the prior seen on the unconstrained scale is a normalised density -----------------------

PRIORS = {
    "norm": st.norm(0.3, 2.0),
    "gamma": st.gamma(4.0),  # (not shape 2: then E[1/theta] = 1 hides a dropped Jacobian)
    "shifted gamma": st.gamma(3.0, loc=2.0, scale=0.5),
    "reflected weibull": st.weibull_max(1.5, loc=-1.5),  # support (-inf, -1.5]
    "beta": st.beta(3.0, 2.0, loc=0.1, scale=0.8),  # support (0.1, 0.9)
}


def check_unconstrained_prior_integrates_to_one(dist, space: ParameterSpace):
    def density(z):
        theta = _natural(space, np.array([z]))
        return float(np.exp(dist.logpdf(theta) + space.log_jacobian(np.array([z])))[0])

    # Every prior here keeps all but ~1e-12 of its mass in |z| < 40 (tails at least e^{-|z|/2}).
    total = quad(density, -40.0, 40.0, limit=400, points=[-5.0, 0.0, 5.0])[0]
    assert abs(total - 1.0) < 1e-6, f"prior density on the z scale integrates to {total:.6f}"


@pytest.mark.parametrize("name", list(PRIORS))
def test_prior_on_the_unconstrained_scale_integrates_to_one(name):
    dist = PRIORS[name]
    space = ParameterSpace.from_prior(dp.Prior({"x": dist}), {"x": np.zeros(3)})
    assert space.bounds["x"] == tuple(float(b) for b in dist.support())
    check_unconstrained_prior_integrates_to_one(dist, space)


@pytest.mark.parametrize("name", ["gamma", "beta"])
def test_planted_dropped_jacobian_fails_the_normalisation_check(name):
    dist = PRIORS[name]
    with pytest.raises(AssertionError, match="integrates to"):
        space = NoJacobian.from_prior(dp.Prior({"x": dist}), {"x": np.zeros(3)})
        check_unconstrained_prior_integrates_to_one(dist, space)


# --- ParameterSpace: several parameters, vector parameters, callable priors -------------------


def _mixed_prior():
    return dp.Prior(
        {
            "a": st.gamma(25.0),
            "b": st.beta(2.0, 5.0),
            "c": st.norm(0.0, 1.0),
            "v": st.multivariate_normal(np.zeros(2), np.eye(2)),
        }
    )


def test_parameter_space_round_trip_and_jacobian_sum():
    prior = _mixed_prior()
    params = prior.sample(50, np.random.default_rng(0))
    space = ParameterSpace.from_prior(prior, params)
    assert space.size == 5
    assert space.names == ("a", "b", "c", "v")
    z = space.batch_to_unconstrained(params)
    assert z.shape == (50, 5)
    back, log_jac = space.batch_from_unconstrained(z)
    for name, value in params.items():
        assert back[name].shape == value.shape
        np.testing.assert_allclose(back[name], value, rtol=1e-10)
    # Row log-Jacobian = log-transform term of "a" (z itself) + logit term of "b" + 0 + 0.
    logit_term = -np.logaddexp(0, z[:, 1]) - np.logaddexp(0, -z[:, 1])
    np.testing.assert_allclose(log_jac, z[:, 0] + logit_term, rtol=1e-12)
    # Vector and real-line parameters are moved on their own scale.
    np.testing.assert_array_equal(z[:, 2], params["c"])
    np.testing.assert_array_equal(z[:, 3:], params["v"])


def test_callable_prior_is_moved_on_its_own_scale():
    prior = dp.Prior(
        lambda n, rng: {"theta": rng.gamma(2.0, size=n)},
        logpdf=lambda p: st.gamma(2.0).logpdf(p["theta"]),
    )
    params = prior.sample(4, np.random.default_rng(1))
    space = ParameterSpace.from_prior(prior, params)
    lower, upper = space.bounds["theta"]
    assert math.isinf(lower) and math.isinf(upper)
    z = space.batch_to_unconstrained(params)
    np.testing.assert_array_equal(z[:, 0], params["theta"])
    assert np.all(space.batch_from_unconstrained(z)[1] == 0)


# --- one ParameterSpace: read from a prior or built from names and supports ------------------


def test_a_space_read_from_a_prior_equals_the_one_built_from_its_supports():
    prior = _mixed_prior()
    params = prior.sample(20, np.random.default_rng(2))
    read = ParameterSpace.from_prior(prior, params)
    built = ParameterSpace(
        {"a": (), "b": (), "c": (), "v": (2,)}, support={"a": "positive", "b": "unit"}
    )
    assert read.names == built.names and read.shapes == built.shapes
    assert read.bounds == built.bounds and read.labels == built.labels
    z = read.batch_to_unconstrained(params)
    np.testing.assert_array_equal(z, built.batch_to_unconstrained(params))
    # a row of the batch maps as the flat vector of one parameter set does
    row = built.flatten({k: v[3] for k, v in params.items()})
    np.testing.assert_array_equal(z[3], built.to_unconstrained(row))


def test_a_named_support_overrides_a_callable_priors_real_line():
    # a RecordModel accepts named supports; the Metropolis step of theta used to fail on them
    prior = dp.Prior(
        lambda n, rng: {"p": rng.beta(2.0, 2.0, size=n)},
        logpdf=lambda p: st.beta(2.0, 2.0).logpdf(p["p"]),
    )
    params = prior.sample(5, np.random.default_rng(3))
    assert ParameterSpace.from_prior(prior, params).bounds["p"] == (-np.inf, np.inf)
    for support in ("unit", (0.0, 1.0)):
        space = ParameterSpace.from_prior(prior, params, support={"p": support})
        assert space.bounds["p"] == (0.0, 1.0)
    with pytest.raises(ValueError, match=r"support\['p'\] must be one of"):
        ParameterSpace.from_prior(prior, params, support={"p": "interval"})


def test_the_da_mcmc_theta_step_takes_a_named_support():
    model = dp.RecordModel(
        prior=dp.Prior(
            lambda n, rng: {"p": rng.beta(2.0, 2.0, size=n)},
            logpdf=lambda p: st.beta(2.0, 2.0).logpdf(p["p"]),
        ),
        simulate=lambda p, n, rng: (rng.random((len(p["p"]), n)) < p["p"][:, None]) * 1.0,
        statistic=lambda x: x,
        loglik=lambda x, p: st.bernoulli.logpmf(x, p["p"][:, None]).sum(1),
        support={"p": "unit"},
    )
    kernel = ThetaKernel(model, steps=1, n_records=10)
    draws = model.prior.sample(10, np.random.default_rng(4))
    walk = kernel.start({"p": draws["p"][:1]}, draws)
    assert kernel.space.bounds["p"] == (0.0, 1.0)
    assert np.isfinite(walk.log_prior)
