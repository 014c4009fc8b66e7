"""The ABCDP examples: the mixture of uniforms (Section 6.1) and the COVID-19 cubic (6.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.models import covid_polynomial as cp
from dpinfer.models import mixture_uniform as mu

GOF_LEVEL = 1e-3  # rejection level of each goodness-of-fit test = its false-failure rate

# --- mixture of uniforms ------------------------------------------------------------------


def check_mixture_sampler(sampler, weights, *, n=20_000, seed=0):
    """Component frequencies (chi-square) and within-component uniformity (KS)."""
    y = sampler(weights, n, np.random.default_rng(seed))
    assert y.shape == (n, 1)
    labels = np.floor(y[:, 0]).astype(int)
    counts = np.bincount(labels, minlength=5)
    assert counts.size == 5
    assert st.chisquare(counts, np.asarray(weights) * n).pvalue > GOF_LEVEL
    assert st.kstest(y[:, 0] - labels, "uniform").pvalue > GOF_LEVEL


def test_mixture_sampler_draws_the_mixture():
    check_mixture_sampler(mu.sample_mixture, mu.TRUE_WEIGHTS)
    check_mixture_sampler(mu.sample_mixture, [0.1, 0.4, 0.05, 0.05, 0.4])
    y = mu.sample_mixture([0.0, 0.5, 0.0, 0.0, 0.5], 5000, np.random.default_rng(1))
    assert set(np.unique(np.floor(y))) == {1.0, 4.0}  # empty components stay empty


def test_planted_wrong_component_order_is_caught():
    def reversed_components(weights, n, rng):
        return mu.sample_mixture(np.asarray(weights)[::-1], n, rng)

    with pytest.raises(AssertionError):
        check_mixture_sampler(reversed_components, mu.TRUE_WEIGHTS)


def test_mixture_model_is_vectorised_over_weight_vectors():
    model = mu.model(n_observations=50)
    params = model.prior.sample(7, np.random.default_rng(1))
    assert params["weights"].shape == (7, 5)
    np.testing.assert_allclose(params["weights"].sum(axis=1), 1.0)
    pseudo = model.simulate(params, np.random.default_rng(2))
    assert pseudo.shape == (7, 50, 1) and np.all((pseudo >= 0) & (pseudo < 5))
    assert np.all(np.isfinite(model.prior.logpdf(params)))
    a = mu.confidential_data(n_observations=30, rng=5)
    np.testing.assert_array_equal(a, mu.confidential_data(n_observations=30, rng=5))
    assert a.shape == (30, 1)
    with pytest.raises(ValueError, match="components"):
        mu.sample_mixture(np.ones((2, 4)) / 4, 10, np.random.default_rng(0))


def test_precomputed_distances_replay_the_base_distance_exactly():
    observed = mu.confidential_data(n_observations=100, rng=1)
    base = mu.distance(rng=2)
    public = dict(n_proposals=120, batch_size=50, rng=3)  # the proposals, their chunks, seed
    params, values = mu.public_draws(observed, base, **public)
    assert params["weights"].shape == (120, 5) and values.shape == (120,)
    dist = mu.PrecomputedDistances(base, observed, values)
    assert dist.sensitivity(100) == base.sensitivity(100) == 2 / 100
    np.testing.assert_array_equal(dist(observed, np.arange(120)), values)
    with pytest.raises(ValueError, match="not the data these distances were computed from"):
        dist(observed + 1e-3, np.arange(3))
    # the same draws through dpinfer.abcdp with a model (same chunking and seeds)
    out = dp.abcdp(
        observed,
        base,
        model=mu.model(n_observations=100),
        **public,
        epsilon_total=math.inf,
        epsilon_abc=0.05,
        c=1000,
        progressbar=False,
    )
    expected = np.flatnonzero(values <= 0.05)
    np.testing.assert_array_equal(out.sample_stats["query_index"].values.ravel(), expected)


def test_run_experiment_is_reproducible_and_beats_the_prior_without_noise():
    kwargs = dict(c=10, epsilon_abc=0.1, n_observations=200, n_proposals=400, rng=0)
    abc = mu.run_experiment(epsilon_total=math.inf, repetitions=2, **kwargs)
    prior_mse = np.mean((mu.PRIOR_MEAN - mu.TRUE_WEIGHTS) ** 2)
    assert np.all(abc.mse < prior_mse / 2)
    assert np.all((abc.n_accepted >= 1) & (abc.n_accepted <= 10))
    dp1 = mu.run_experiment(epsilon_total=1.0, privacy_rng=4, **kwargs)
    dp2 = mu.run_experiment(epsilon_total=1.0, privacy_rng=4, **kwargs)
    np.testing.assert_array_equal(dp1.posterior_mean, dp2.posterior_mean)


def test_figure3_grid_has_one_value_per_setting_and_repetition():
    grid = mu.figure3(
        c_values=(5, 20),
        epsilon_abc_values=(0.1, 0.5),
        epsilon_total_values=(1.0, math.inf),
        n_observations=100,
        n_proposals=200,
        noise_repetitions=3,
        rng=1,
        privacy_rng=2,
    )
    assert grid.dims == ("resample", "c", "epsilon_total", "epsilon_abc", "repetition")
    assert grid.shape == (2, 2, 2, 2, 3) and np.all(np.isfinite(grid.values))
    # no noise: resample makes no difference and repetitions coincide
    inf = grid.sel(epsilon_total=math.inf)
    np.testing.assert_array_equal(inf.sel(resample=False), inf.sel(resample=True))
    np.testing.assert_allclose(inf.std("repetition"), 0.0, atol=1e-15)


# --- COVID-19 cubic -----------------------------------------------------------------------


def test_covid_data_scaling_and_sensitivity():
    assert cp.CASES.size == 18 and cp.CASES[0] == 1 and cp.CASES[-1] == 1705
    np.testing.assert_array_equal(cp.observed_data()[:, 0], cp.CASES / 2000)
    timed = cp.observed_data(time_aware=True)
    assert timed.shape == (18, 2) and timed[0, 0] == 0 and timed[-1, 0] == 1
    # one day's count replaced: MMD with B_k = 1 over N = 18 records
    assert cp.distance().sensitivity(18) == 2 / 18
    y = cp.observed_data()
    worst = 0.0
    rng = np.random.default_rng(0)
    pseudo = cp.model().simulate(cp.prior().sample(500, rng), rng)
    for day in range(18):
        for value in (0.0, 5.0, -3.0, y[day, 0] + 0.05):
            y_prime = y.copy()
            y_prime[day] = value
            change = np.abs(cp.distance()(y, pseudo) - cp.distance()(y_prime, pseudo))
            worst = max(worst, change.max())
    assert worst <= 2 / 18


def test_covid_curve_is_the_papers_cubic():
    params = {
        "a0": np.array([1.0, 0.0]),
        "a1": np.array([0.0, 2.0]),
        "a2": np.array([0.0, 0.0]),
        "a3": np.array([5.0, -1.0]),
    }
    t = cp.DAYS
    np.testing.assert_array_equal(cp.curve(params), [5 + t**3, -1 + 2 * t**2])
    sim = cp.model().simulate(params, None)
    np.testing.assert_array_equal(sim[..., 0], cp.curve(params) / cp.SCALE)


def test_covid_run_accepts_c_close_curves_without_noise_and_calibrates_with_noise():
    out = cp.run_experiment(math.inf, n_proposals=4000, rng=0)
    post = {k: out.posterior[k].values.ravel() for k in cp.PARAMETERS}
    assert post["a0"].size == cp.C
    sim = cp.curve(post)[..., None] / cp.SCALE
    assert np.all(cp.distance()(cp.observed_data(), sim) <= cp.EPSILON_ABC)
    noisy = cp.run_experiment(13.0, n_proposals=4000, rng=0, privacy_rng=1)
    attrs = noisy.posterior.attrs
    assert attrs["b"] == (cp.C + 1) * (2 / 18) / 13.0 and attrs["epsilon"] == 13.0
    assert noisy.posterior["a0"].size <= cp.C
    timed = cp.run_experiment(44.0, n_proposals=2000, rng=0, privacy_rng=1, time_aware=True)
    assert timed.posterior.attrs["sensitivity"] == 2 / 18
