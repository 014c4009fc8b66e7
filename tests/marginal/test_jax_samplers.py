"""PyMC's JAX samplers on a to_pymc model: numpyro and blackjax against ``pm.sample``.

A small county model (hierarchical Poisson rates, discrete Gaussian releases, as in
``benchmarks/tables.py``) is sampled by PyMC's own NUTS and, through the JAX backend
(:mod:`dpinfer.marginal._jax`), by numpyro (chains vectorised: the callback's ``vmap``
path) and blackjax (PyMC's default, chains mapped over host devices); the posterior
means of (mu, tau) must agree within Monte Carlo error.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import dpinfer as dp
from dpinfer.results import effective_sample_size

# PyMC's JAX module asks XLA for a host device per chain (blackjax's chains are mapped over
# them), which takes effect only before JAX starts, and importing blackjax starts it
pytest.importorskip("pymc.sampling.jax")
pytest.importorskip("numpyro")
pytest.importorskip("blackjax")

from dpinfer.marginal import _jax as marginal_jax  # noqa: E402

pytestmark = pytest.mark.slow

CELLS = 12
DRAWS = {"tune": 300, "draws": 500, "chains": 2}
# |difference| / its standard error below 4 for each of the 2 x 2 comparisons: a false
# failure has probability about 4 x 6.3e-5 = 2.5e-4 (normal approximation of the means)
Z_LIMIT = 4.0


def county_model():
    rng = np.random.default_rng(7)
    population = np.round(np.exp(rng.normal(8.0, 1.0, size=CELLS))).astype(np.int64) + 100
    counts = rng.poisson(population * np.exp(-5.0 + 0.4 * rng.standard_normal(CELLS)))
    mechanism = dp.DiscreteGaussian.from_zcdp(rho=0.5, sensitivity=1)
    released = mechanism.release(counts, rng=8)
    with pm.Model() as model:
        mu = pm.Normal("mu", -5.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", 0.0, 1.0, shape=CELLS)
        lam = population * pm.math.exp(mu + tau * z)
        mechanism.to_pymc("cases", pm.Poisson.dist(mu=lam), observed=released)
    return model


def _sample(sampler, draws=DRAWS, **kwargs):
    with county_model():
        idata = pm.sample(
            **draws, random_seed=11, progressbar=False, compute_convergence_checks=False,
            **({} if sampler == "pymc" else {"nuts_sampler": sampler}), **kwargs,
        )  # fmt: skip
    return {v: idata.posterior[v].values for v in ("mu", "tau")}


def _mean_and_error(draws):
    """The posterior mean and its Monte Carlo standard error (the ESS of the mean)."""
    return draws.mean(), draws.std() / np.sqrt(effective_sample_size(draws, method="mean"))


def z_scores(got, want):
    """|difference of the posterior means| / its Monte Carlo standard error, per variable."""
    out = {}
    for v in want:
        (m1, e1), (m2, e2) = _mean_and_error(got[v]), _mean_and_error(want[v])
        out[v] = abs(m1 - m2) / np.hypot(e1, e2)
    return out


@pytest.fixture(scope="module")
def reference():
    return _sample("pymc")


@pytest.mark.parametrize(
    ("sampler", "kwargs"),
    [
        ("numpyro", {"nuts_sampler_kwargs": {"chain_method": "vectorized"}}),
        ("blackjax", {}),
    ],
)
def test_jax_samplers_agree_with_pymc(reference, sampler, kwargs):
    scores = z_scores(_sample(sampler, **kwargs), reference)
    assert max(scores.values()) < Z_LIMIT, scores


class _DoubledRate(marginal_jax.HostSweep):
    """Planted bug: the cells are summed at twice the latent rate (consistent scores)."""

    def __call__(self, a, b):
        logp, score_a, score_b = super().__call__(2 * np.asarray(a), b)
        return logp, 2 * score_a, score_b


def test_planted_bug_a_callback_at_the_wrong_rate_is_caught(reference, monkeypatch):
    monkeypatch.setattr(marginal_jax, "HostSweep", _DoubledRate)
    kwargs = {"nuts_sampler_kwargs": {"chain_method": "vectorized"}}
    # the bug moves mu by log 2, about 120 standard errors at 500 draws: 100 show it
    short = {"tune": 100, "draws": 100, "chains": 2}
    scores = z_scores(_sample("numpyro", draws=short, **kwargs), reference)
    assert max(scores.values()) >= Z_LIMIT, scores
