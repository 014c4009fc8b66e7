"""Tiny valid arguments for the sweep: models, mechanisms, data and PyMC pieces.

They are small so that a bad value that is silently accepted costs milliseconds,
not a sampler run.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import distances as dist
from dpinfer import theory

from ._harness import Param


def P(  # noqa: N802
    name, kind="", *extra, named="", optional=False, elementwise=False, confidential=False
):
    return Param(name, kind, tuple(extra), named, optional, elementwise, confidential)


def choices(valid: str) -> tuple:
    """Bad values of a choice: NumPy arrays and a list holding the valid ``valid``."""
    return (np.array([valid, valid]), np.array([valid]), np.array(valid), [valid])


def _simulate(p, rng):
    return p["theta"] + rng.standard_normal(len(p["theta"]))


def model():
    return dp.Model(prior={"theta": st.norm(0.0, 1.0)}, simulate=_simulate)


def _records(params, n, rng):
    return (rng.random((len(params["p"]), n)) < params["p"][:, None]).astype(np.int64)


def _update(records, rng):
    ones = records.sum(axis=1)
    return {"p": rng.beta(2 + ones, 2 + records.shape[1] - ones)}


def record_model():
    return dp.RecordModel({"p": st.beta(2, 2)}, _records, lambda x: x, update=_update)


@cache
def _poisson_likelihood():
    import pymc as pm

    return dp.Likelihood.from_pymc(
        lambda p: pm.Poisson.dist(mu=p["theta"]),
        params=["theta"],
        support={"theta": "positive"},
        exponential_family=dp.ExponentialFamily(
            statistic=lambda s: s, maximize=lambda m: {"theta": m[0]}
        ),
    )


def poisson_model():
    return dp.Model(
        simulate=lambda p, rng: rng.poisson(p["theta"]), likelihood=_poisson_likelihood()
    )


MECH = dp.Laplace(1.0)

OBS = np.random.default_rng(5).normal(size=(10, 1))

THETA = {"mu": np.linspace(-1.0, 1.0, 30)}

PSEUDO = THETA["mu"][:, None, None] + np.zeros((30, 10, 1))


def _rfmmd():
    return dist.RandomFeatureMMD(8, 1.3, rng=1)


def _mech_method(make, method, **fixed):
    def call(**kwargs):
        return getattr(make(), method)(**{**fixed, **kwargs})

    return call


def _to_pymc(name="r", value=0.0, **kwargs):
    import pymc as pm

    with pm.Model():
        return dp.Laplace(1.0).to_pymc(name, value, **kwargs)


_DEFAULT = object()


def _marginal_to_pymc(dist=_DEFAULT, observed=_DEFAULT):
    """``dp.to_pymc`` of three discrete Gaussian cells (a Poisson(5) latent by default)."""
    import pymc as pm

    with pm.Model():
        dist = pm.Poisson.dist(mu=5.0) if dist is _DEFAULT else dist
        observed = [(dp.DiscreteGaussian(2.0), [4, 9, 6])] if observed is _DEFAULT else observed
        return dp.to_pymc("y", dist, observed=observed)


def _bad_latents() -> list:
    """Distributions that do not fit three cells, or are not distributions of one value."""
    import pymc as pm

    return [
        pm.Poisson.dist(mu=np.ones(4)),
        pm.Poisson.dist(mu=np.ones((2, 3))),
        pm.Poisson.dist(mu=5.0, shape=4),
        pm.Normal.dist(0.0, 1.0),  # continuous latent, integer releases
        pm.MvNormal.dist(np.zeros(3), np.eye(3)),
        1.0,
        None,
    ]


def _to_pymc_totals(**kwargs):
    import pymc as pm

    with pm.Model():
        return dp.to_pymc(
            "y", pm.Poisson.dist(mu=3.0), observed=[(dp.DiscreteGaussian(2.0), [4, 5])], **kwargs
        )


def _svt():
    return dp.SparseVector(0.0, scale=1.0, c=1, sensitivity=1.0)


def _binomial():
    return {"n": 10, "m": 4, "population": 100, "length": 3}


def _plot_flip(**kwargs):
    import matplotlib.pyplot as plt

    fig = theory.plot_flip_probability(**kwargs)
    plt.close(fig)


def _build_normal():
    import pymc as pm

    mu = pm.Normal("mu", 0.0, 10.0)
    return pm.Normal("s", mu, 1.0)


def _pseudo_model():
    return dp.Model(
        prior={"mu": st.norm(0, 1)},
        simulate=lambda p, rng: p["mu"][:, None, None] + rng.normal(size=(len(p["mu"]), 10, 1)),
    )


@cache
def _pymc_normal_model():
    import pymc as pm

    with pm.Model() as pm_model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("s", mu, 1.0)
    return pm_model


def _poisson_factory(p):
    import pymc as pm

    return pm.Poisson.dist(mu=p["theta"])
