"""MCEM under executors with other schedules and likelihoods, streamed E-steps, compression.

The same seed giving the same fit serially, under threads and processes, the global numpy
state and the progress bar: over the sampler registry, in ``test_executors.py``.
"""

from __future__ import annotations

import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.samplers.mcem import _estep

from ._helpers import poisson_model

SCHEDULE = dp.StagedSchedule(stages=((2000, 1e-3), (20_000, 1e-4)))


def _gaussian_model():
    # s ~ N(m, 1) released with Laplace noise: continuous statistics, never compressed
    lik = dp.Likelihood.from_callables(
        lambda s, p: -0.5 * (s - p["m"]) ** 2,
        score=lambda s, p: (s - p["m"])[:, None],
        hessian=lambda s, p: -np.ones((len(s), 1, 1)),
        params=["m"],
        exponential_family=dp.ExponentialFamily(lambda s: s, lambda mean: {"m": mean[0]}),
    )
    return dp.Model(
        prior={"m": st.norm(0, 10)},
        simulate=lambda p, rng: p["m"] + rng.standard_normal(len(p["m"])),
        likelihood=lik,
    )


def _fit(model, executor=None, rng=21, schedule=SCHEDULE, released=37.4, **kwargs):
    return dp.mcem(
        model,
        dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0),
        released,
        start={"theta": 1.0} if "theta" in model.likelihood.space.names else {"m": 0.0},
        rng=rng,
        schedule=schedule,
        batch_size=5000,
        executor=executor,
        progressbar=False,
        **kwargs,
    )


def _same(a, b):
    return (
        a.estimate == b.estimate
        and np.array_equal(a.observed_information, b.observed_information)
        and np.array_equal(a.trace["theta"].values, b.trace["theta"].values)
        and np.array_equal(a.trace["ess"].values, b.trace["ess"].values)
    )


def test_same_fit_with_the_ascent_schedule_under_threads():
    schedule = dp.AscentSchedule(start=500, max_size=50_000, information_size=20_000)
    a = _fit(poisson_model(), schedule=schedule)
    with ThreadPoolExecutor(2) as pool:
        b = _fit(poisson_model(), executor=pool, schedule=schedule)
    assert _same(a, b)


def test_pymc_likelihood_under_a_thread_pool():
    import pymc as pm

    lik = dp.Likelihood.from_pymc(
        lambda p: pm.Poisson.dist(mu=p["theta"]),
        params=["theta"],
        support={"theta": "positive"},
    )
    model = dp.Model(
        prior={"theta": st.gamma(25)},
        simulate=lambda p, rng: rng.poisson(p["theta"]),
        likelihood=lik,
    )
    schedule = dp.StagedSchedule(stages=((2000, 1e-3),))
    a = _fit(model, schedule=schedule, mstep="general")
    with ThreadPoolExecutor(2) as pool:
        b = _fit(model, executor=pool, schedule=schedule, mstep="general")
    assert _same(a, b)


def test_streamed_sample_equals_cached_sample(monkeypatch):
    model = _gaussian_model()
    space = model.likelihood.space
    mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)

    def sample():
        draw = _estep.make_draw(
            model, mech, np.asarray(1.0), space, np.array([0.5]), compress=True
        )
        return _estep.WeightedSample(draw, [1000] * 20, np.random.SeedSequence(4))

    def terms(s):
        return {"s": s, "s2": s * s}

    cached = sample()
    first = cached.means(terms, squared=("s",))
    assert cached._cache is not None  # 20k rows fit in memory
    again = cached.means(terms, squared=("s",))
    monkeypatch.setattr(_estep, "CACHE_NUMBERS", 100)
    streamed = sample()
    one = streamed.means(terms, squared=("s",))
    two = streamed.means(terms, squared=("s",))
    assert streamed._cache is None  # regenerated on each pass
    for result in (again, one, two):
        assert result.first["s"] == first.first["s"] and result.ess == first.ess
        assert result.second["s"] == pytest.approx(first.second["s"], rel=1e-12)


def test_large_sample_runs_in_bounded_memory(monkeypatch):
    # 2e6 continuous statistics with chunks of 5000: holding them (and their weights)
    # would take 48 MB; the stream must stay far below.
    monkeypatch.setattr(_estep, "CACHE_NUMBERS", 50_000)
    schedule = dp.StagedSchedule(stages=((2_000_000, 1.0),))
    tracemalloc.start()
    try:
        fit = _fit(_gaussian_model(), schedule=schedule, released=1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fit.trace["n_simulations"].values[0] == 2_000_000
    assert peak < 8e6


@pytest.mark.parametrize("shape", [(1000,), (1000, 3)])
def test_compression_keeps_every_weighted_mean(shape):
    from scipy.special import logsumexp

    rng = np.random.default_rng(0)
    s = rng.poisson(4.0, size=shape)
    log_w = rng.normal(size=shape[0]) * 3
    chunk = _estep._compress(s, log_w)
    assert len(chunk.s) < shape[0]
    assert logsumexp(chunk.log_w) == pytest.approx(logsumexp(log_w))
    assert logsumexp(chunk.log_w2) == pytest.approx(logsumexp(2 * log_w))
    w, wc = np.exp(log_w - logsumexp(log_w)), np.exp(chunk.log_w - logsumexp(chunk.log_w))
    np.testing.assert_allclose(
        np.tensordot(wc, chunk.s, axes=(0, 0)), np.tensordot(w, s, axes=(0, 0)), rtol=1e-12
    )
