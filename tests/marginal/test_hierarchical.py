"""One PyMC definition of a table's model for ABC, MCEM and the NUTS reference.

A centred hierarchical model (random effects as ordinary PyMC variables) builds a
``dp.Model``; ``sample_reference`` sums each count of a vector statistic out cell by cell
and matches the exact posterior by quadrature; a support of joint configurations is refused
for a vector of counts (the planted companion shows what that reading gives).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import dpinfer as dp
from dpinfer.results import effective_sample_size

from ._table import POP, RELEASED, SIGMA


def _centred(n=5):
    with pm.Model() as model:
        mu = pm.Normal("mu", -6.0, 1.0)
        tau = pm.HalfNormal("tau", 0.5)
        log_r = pm.Normal("log_r", mu, tau, shape=n)
        pm.Poisson("cases", POP[:n] * pm.math.exp(log_r))
    return model


def test_a_centred_hierarchical_model_builds_a_model():
    model = dp.Model.from_pymc(_centred(), statistic="cases")
    rng = np.random.default_rng(0)
    draws = model.prior.sample(4000, rng)
    assert draws["log_r"].shape == (4000, 5)
    # the random effects are drawn around their hyperparameters: E (log_r - mu)^2 = E tau^2
    # (= 0.25); with 20,000 terms the relative standard error is about 1.6%
    offsets = draws["log_r"] - draws["mu"][:, None]
    assert np.mean(offsets**2) == pytest.approx(np.mean(draws["tau"] ** 2), rel=0.08)
    assert abs(np.corrcoef(draws["log_r"].mean(axis=1), draws["mu"])[0, 1]) > 0.9
    assert model.simulate(draws, rng).shape == (4000, 5)


@pytest.mark.parametrize("extra", ["observed", "potential"])
def test_what_a_prior_sampler_cannot_draw_from_is_refused_at_construction(extra):
    model = _centred()
    with model:
        if extra == "observed":
            pm.Normal("other", model["mu"], 1.0, observed=np.zeros(3))
        else:
            pm.Potential("penalty", -model["tau"])
    with pytest.raises(ValueError, match=f"{extra}.*prior"):
        dp.Model.from_pymc(model, statistic="cases")


def _rate_model():
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 400.0)
        pm.Poisson("cases", POP * rate)
    return dp.Model.from_pymc(model, statistic="cases")


MECH = dp.DiscreteGaussian(SIGMA, event_shape=(6,))


def _z(idata, exact):
    draws = idata.posterior["rate"].values
    return (draws.mean() - exact[0]) / (exact[1] / np.sqrt(effective_sample_size(draws)))


def test_sample_reference_sums_each_count_of_a_vector_out(exact):
    idata = dp.sample_reference(_rate_model(), MECH, RELEASED, draws=1000, tune=500, rng=4)
    assert idata.attrs["likelihood"] == "s summed out cell by cell (dpinfer.to_pymc)"
    # |z| < 4: false-failure rate about 6e-5 for an exact sampler
    assert abs(_z(idata, exact)) < 4


def test_a_support_of_joint_configurations_is_refused_for_a_vector():
    with pytest.raises(ValueError, match="joint values.*leave support out"):
        dp.sample_reference(
            _rate_model(), MECH, RELEASED, support=np.arange(60)[:, None] * np.ones(6, int)
        )


def test_companion_the_joint_configuration_reading_fails_the_exactness_check(exact):
    # Planted bug: what sample_reference used to do with a (k, 6) support: each row a joint
    # configuration of all six counts (here every count equal to the row's value).
    support = np.arange(60)[:, None] * np.ones(6, dtype=int)

    def build():
        return pm.Poisson.dist(POP * pm.Gamma("rate", 2.0, 400.0))

    def joint(dist, released):
        log_s = pm.logp(dist, support).sum(axis=-1)
        return pm.math.logsumexp(log_s + MECH.logpdf(released, support))

    idata = dp.sample_reference(build, MECH, RELEASED, loglik=joint, draws=1000, tune=500, rng=4)
    assert abs(_z(idata, exact)) > 4
