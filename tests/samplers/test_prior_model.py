"""Prior and Model: batched sampling, densities and input checks."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.model import as_prior


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_dict_prior_draws_a_batch_per_parameter():
    prior = dp.Prior(
        {
            "theta": st.gamma(25),
            "k": st.poisson(3.0),
            "w": st.dirichlet([1.0, 2.0, 3.0]),
            "m": st.multivariate_normal(np.zeros(2), np.eye(2)),
        }
    )
    draws = prior.sample(7, _rng())
    assert prior.names == ("theta", "k", "w", "m")
    assert {k: v.shape for k, v in draws.items()} == {
        "theta": (7,),
        "k": (7,),
        "w": (7, 3),
        "m": (7, 2),
    }
    expected = (
        st.gamma(25).logpdf(draws["theta"])
        + st.poisson(3.0).logpmf(draws["k"])
        + st.dirichlet([1.0, 2.0, 3.0]).logpdf(draws["w"].T)
        + st.multivariate_normal(np.zeros(2), np.eye(2)).logpdf(draws["m"])
    )
    assert np.allclose(prior.logpdf(draws), expected)


@pytest.mark.parametrize(
    ("dist", "shape"),
    [
        (st.norm(0, 1), (1,)),
        (st.multivariate_normal(np.zeros(2), np.eye(2)), (1, 2)),
        (st.multivariate_normal(np.zeros(1), np.eye(1)), (1,)),
        (st.dirichlet([1.0, 1.0, 1.0]), (1, 3)),
    ],
)
def test_a_batch_of_one_keeps_its_leading_axis(dist, shape):
    # scipy's multivariate distributions squeeze size=1 draws; the prior must not.
    prior = dp.Prior({"x": dist})
    draws = prior.sample(1, _rng())
    assert draws["x"].shape == shape
    assert prior.logpdf(draws).shape == (1,)


def test_dirichlet_density_is_per_draw():
    # scipy's dirichlet.logpdf takes components first; a (n, k) batch must score row by row,
    # also when n == k.
    dist = st.dirichlet([1.0, 2.0, 3.0])
    prior = dp.Prior({"w": dist})
    draws = prior.sample(3, _rng(1))
    assert np.allclose(prior.logpdf(draws), [dist.logpdf(row) for row in draws["w"]])


def test_same_generator_state_gives_the_same_prior_draws():
    prior = dp.Prior({"theta": st.gamma(25), "w": st.dirichlet([1.0, 1.0])})
    a, b = prior.sample(50, _rng(4)), prior.sample(50, _rng(4))
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_callable_prior():
    def sample(n, rng):
        mu = rng.standard_normal(n)
        return {"mu": mu, "x": mu + rng.standard_normal(n)}

    def logpdf(p):
        return st.norm.logpdf(p["mu"]) + st.norm.logpdf(p["x"] - p["mu"])

    prior = dp.Prior(sample, logpdf=logpdf)
    draws = prior.sample(5, _rng())
    assert prior.has_logpdf
    assert prior.logpdf(draws).shape == (5,)
    assert not dp.Prior(sample).has_logpdf
    with pytest.raises(ValueError, match="pass logpdf"):
        dp.Prior(sample).logpdf(draws)


def test_callable_prior_with_the_wrong_batch():
    prior = dp.Prior(lambda n, rng: {"mu": rng.standard_normal(n + 1)})
    with pytest.raises(
        ValueError, match=re.escape("'mu' returned draws of shape (6,)") + ".*leading.* 5"
    ):
        prior.sample(5, _rng())


def test_callable_prior_returning_no_dict():
    with pytest.raises(TypeError, match="must return a dict"):
        dp.Prior(lambda n, rng: rng.standard_normal(n)).sample(5, _rng())


@pytest.mark.parametrize("value", [3.0, "gamma", [1, 2], np.zeros(3)])
def test_dict_value_that_is_not_a_distribution(value):
    with pytest.raises(TypeError, match=re.escape("prior['theta'] must be a frozen scipy.stats")):
        dp.Prior({"theta": value})


@pytest.mark.parametrize("family", [st.gamma, st.norm, st.poisson, st.dirichlet])
def test_unfrozen_family_is_refused(family):
    with pytest.raises(TypeError, match="frozen .* not the family itself"):
        dp.Model(prior={"theta": family}, simulate=lambda p, rng: p["theta"])


@pytest.mark.parametrize("spec", [3, "theta", [st.norm()]])
def test_prior_neither_dict_nor_callable(spec):
    with pytest.raises(TypeError, match="prior must be a dict of frozen scipy.stats"):
        dp.Model(prior=spec, simulate=lambda p, rng: p)


def test_empty_prior():
    with pytest.raises(ValueError, match="at least one parameter"):
        dp.Prior({})


def test_model_checks_its_callables():
    with pytest.raises(TypeError, match="simulate must be callable, got int"):
        dp.Model(prior={"theta": st.norm()}, simulate=3)
    with pytest.raises(TypeError, match="loglik must be callable, got str"):
        dp.Model(prior={"theta": st.norm()}, simulate=lambda p, rng: p, loglik="x")


def test_as_prior():
    prior = dp.Prior({"theta": st.norm()})
    assert as_prior(prior) is prior
    assert isinstance(as_prior({"theta": st.norm()}), dp.Prior)

    class Duck:
        def sample(self, n, rng):
            return {"theta": rng.standard_normal(n)}

        def logpdf(self, params):
            return st.norm.logpdf(params["theta"])

    duck = Duck()
    assert as_prior(duck) is duck
    with pytest.raises(TypeError, match="proposal must be"):
        as_prior(object(), name="proposal")


def poisson_sim(p, rng):
    return rng.poisson(p["theta"])


def test_reprs_say_the_parameters_the_simulator_and_the_likelihood():
    model = dp.Model(
        prior={"theta": st.gamma(25, scale=np.float64(2.0)), "mu": st.norm(np.zeros(2), 1)},
        simulate=poisson_sim,
    )
    assert repr(model.prior) == "Prior(theta ~ gamma(25, scale=2), mu ~ norm([0, 0], 1))"
    assert repr(model) == (
        "Model(prior: theta ~ gamma(25, scale=2), mu ~ norm([0, 0], 1); simulate: poisson_sim)"
    )
    likelihood = dp.Model(simulate=poisson_sim, loglik=st.poisson.logpmf)
    assert repr(likelihood) == (
        "Model(prior: none; simulate: poisson_sim; loglik: rv_discrete.logpmf)"
    )


def test_reprs_of_multivariate_and_callable_priors():
    prior = dp.Prior(
        {"w": st.dirichlet([1, 1, 1]), "m": st.multivariate_normal([0, 0], np.eye(2))}
    )
    assert repr(prior) == (
        "Prior(w ~ dirichlet(alpha=[1, 1, 1]), m ~ multivariate_normal(mean=[0, 0], "
        "cov=<array of shape (2, 2)>))"
    )
    assert repr(dp.Prior(np.zeros_like)) == "Prior(sample=zeros_like, logpdf=none)"


def test_reprs_of_models_from_pymc():
    import pymc as pm

    with pm.Model() as pm_model:
        theta = pm.Gamma("theta", alpha=25, beta=1)
        pm.Poisson("s", mu=theta)
    model = dp.Model.from_pymc(pm_model, statistic="s")
    assert repr(model) == (
        "Model(prior: theta ~ Gamma(25, f()); simulate: PyMC model of s; "
        "likelihood: Likelihood(pymc, ParameterSpace(theta: (0, inf))))"
    )
    with pm.Model() as one_record:
        rate = pm.Gamma("rate", alpha=2.0, beta=1.0)
        pm.Poisson("x", mu=rate)
    records = dp.RecordModel.from_pymc(one_record, record="x", statistic=np.asarray)
    assert repr(records) == (
        "RecordModel(prior: rate ~ Gamma(2, f()); records: PyMC model of one record; "
        "statistic: asarray; theta | records: Metropolis on loglik)"
    )


def test_record_model_repr():
    def bernoulli_records(p, n, rng):
        return rng.random((len(p["p"]), n)) < p["p"][:, None]

    def beta_update(x, rng):
        return {"p": rng.beta(2 + x.sum(1), 2 + (~x).sum(1))}

    model = dp.RecordModel({"p": st.beta(2, 2)}, bernoulli_records, np.asarray, update=beta_update)
    assert repr(model) == (
        "RecordModel(prior: p ~ beta(2, 2); records: "
        "test_record_model_repr.<locals>.bernoulli_records; statistic: asarray; "
        "theta | records: update=test_record_model_repr.<locals>.beta_update)"
    )
