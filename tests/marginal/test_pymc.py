"""Marginalised releases inside PyMC models: densities, gradients, NUTS against quadrature."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import scipy.integrate as si
import scipy.stats as st
from scipy.special import logsumexp

import dpinfer as dp

from ._brute import log_marginal
from ._table import POP


def _cell_logp(model, name, point):
    return model.compile_logp(vars=[model[name]], sum=False)(point)[0]


def test_cell_log_likelihoods_match_brute_force_far_from_the_data():
    mech = dp.Gaussian(np.array([1.5, 3.0, 0.8, 6.0, 2.0, 4.0]))
    released = np.array([3.2, 11.7, -1.4, 40.3, 5.0, 9.9])
    with pm.Model() as model:
        rate = pm.LogNormal("rate", -5.0, 2.0)
        mech.to_pymc("cases", pm.Poisson.dist(mu=POP * rate), observed=released)
    for r in (1e-6, 4e-3, 0.5):  # far below, near and far above the data
        got = _cell_logp(model, "cases", {"rate_log__": np.log(r)})
        want = [
            log_marginal("poisson", p * r, 0, [(dp.Gaussian(s), y)])
            for p, s, y in zip(POP, mech.sigma, released, strict=True)
        ]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=3e-10)


def test_gradient_matches_finite_differences():
    mech = dp.DiscreteLaplace(2.0)
    with pm.Model() as model:
        log_rate = pm.Normal("log_rate", -6.0, 1.0)
        size = pm.Exponential("size", 0.1)
        dist = pm.NegativeBinomial.dist(mu=POP * pm.math.exp(log_rate), alpha=size)
        mech.to_pymc("cases", dist, observed=np.array([3, 12, 0, 40, 5, 9]))
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    point = {"log_rate": -5.1, "size_log__": np.log(2.5)}
    grad = dlogp(point)
    for i, key in enumerate(point):
        h = 1e-6
        up, down = dict(point), dict(point)
        up[key] += h
        down[key] -= h
        assert grad[i] == pytest.approx((logp(up) - logp(down)) / (2 * h), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("mech", [dp.Gaussian(2.5), dp.Laplace(2.5)], ids=["gaussian", "laplace"])
def test_a_normal_latent_has_the_closed_form_convolution(mech):
    released = np.array([-3.0, 0.4, 12.0])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sd = pm.HalfNormal("sd", 3.0)
        mech.to_pymc("y", pm.Normal.dist(mu, sd), observed=released)
    for m, s in ((0.5, 0.3), (1.0, 4.0), (-20.0, 1.0)):
        got = _cell_logp(model, "y", {"mu": m, "sd_log__": np.log(s)})
        for y, value in zip(released, got, strict=True):
            f = lambda x, y=y: st.norm(m, s).pdf(x) * np.exp(mech.logpdf(y, [x])[0])  # noqa: E731
            lo, hi = min(m - 40 * s, y - 60 * 2.5), max(m + 40 * s, y + 60 * 2.5)
            ref, _ = si.quad(f, lo, hi, points=sorted([m, y]), limit=800, epsabs=0, epsrel=1e-12)
            assert value == pytest.approx(np.log(ref), rel=1e-8)


def test_one_latent_through_two_mechanisms():
    direct, inside = dp.DiscreteGaussian(2.0), dp.DiscreteLaplace(5.0)
    y1, y2 = np.array([41, 7, 120]), np.array([30, 15, 99])
    with pm.Model() as model:
        rate = pm.LogNormal("rate", -4.0, 1.0)
        dp.to_pymc(
            "cases", pm.Poisson.dist(mu=POP[:3] * rate), observed=[(direct, y1), (inside, y2)]
        )
    got = _cell_logp(model, "cases", {"rate_log__": np.log(0.02)})
    want = [
        log_marginal("poisson", p * 0.02, 0, [(direct, a), (inside, b)])
        for p, a, b in zip(POP[:3], y1, y2, strict=True)
    ]
    np.testing.assert_allclose(got, want, atol=3e-10)


def test_posterior_predictive_draws_releases():
    mech = dp.DiscreteGaussian(2.0)
    with pm.Model():
        rate = pm.Gamma("rate", 2.0, 400.0)
        mech.to_pymc("cases", pm.Poisson.dist(mu=POP * rate), observed=np.zeros(6, int))
        draws = pm.sample_prior_predictive(draws=200, random_seed=1)
    cases = draws.prior_predictive["cases"].values
    assert cases.shape == (1, 200, 6) and cases.dtype.kind == "i"
    rate = draws.prior["rate"].values[0]
    # releases = Poisson counts + noise: the mean of cases / pop tracks the rate
    assert np.corrcoef(rate, (cases[0] / POP).mean(axis=1))[0, 1] > 0.9


def test_zero_inflated_and_mixture_latents_are_mixtures_of_marginals():
    mech = dp.DiscreteGaussian(3.0)
    released = np.array([0, 2, 25, -4])
    pop = POP[:4]
    with pm.Model() as model:
        rate = pm.LogNormal("rate", -5.0, 1.0)
        psi = pm.Beta("psi", 2.0, 2.0)
        mech.to_pymc("zip", pm.ZeroInflatedPoisson.dist(psi=psi, mu=pop * rate), observed=released)
        q = pm.Beta("q", 2.0, 2.0)
        mixture = pm.Mixture.dist(
            w=pm.math.stack([q, 1 - q]),
            comp_dists=[pm.Poisson.dist(pop * rate), pm.NegativeBinomial.dist(mu=10.0, alpha=2.0)],
        )
        mech.to_pymc("mix", mixture, observed=released)
    point = {"rate_log__": np.log(0.004), "psi_logodds__": 0.4, "q_logodds__": -1.1}
    psi_value, q_value = 1 / (1 + np.exp(-0.4)), 1 / (1 + np.exp(1.1))
    w_value = [q_value, 1 - q_value]
    for name, weights, comps in [
        ("zip", [1 - psi_value, psi_value], [("discrete_uniform", 0, 0), ("poisson", None, 0)]),
        ("mix", w_value, [("poisson", None, 0), ("negative_binomial", 2.0, 2.0 / 12.0)]),
    ]:
        got = _cell_logp(model, name, point)
        for i, (p, y) in enumerate(zip(pop, released, strict=True)):
            terms = [
                np.log(wk) + log_marginal(f, p * 0.004 if a is None else a, b, [(mech, y)])
                for wk, (f, a, b) in zip(weights, comps, strict=True)
            ]
            assert got[i] == pytest.approx(logsumexp(terms), abs=3e-10)


def test_a_distribution_without_a_bound_is_refused_by_name():
    with pm.Model():
        with pytest.raises(ValueError, match="BetaBinomial.*supported: Poisson"):
            dp.Laplace(2.0).to_pymc(
                "y", pm.BetaBinomial.dist(n=10, alpha=1.0, beta=2.0), observed=np.array([3.0])
            )
        with pytest.raises(ValueError, match="needs an integer confidential value"):
            dp.DiscreteLaplace(2.0).to_pymc("z", pm.Normal.dist(0, 1), observed=np.array([3]))
