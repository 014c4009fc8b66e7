"""Naive Bayes as records: the record model, and the exact posterior by finite sums.

``exact_posterior`` (Beta-binomial tables summed out) is checked against brute-force
enumeration of every dataset of n = 3 records, which uses nothing but the model's
definition, scipy's Laplace density and Beta functions.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import betaln

from dpinfer.models import naive_bayes as nb
from dpinfer.models.naive_bayes._data import _column


def _brute_force_means(released, epsilon, n):
    """Posterior means by enumerating every dataset of n records (8^n of them)."""
    cells = list(itertools.product((1, 2), repeat=3))  # (y, x1, x2)
    scale = nb.sensitivity(n=n) / epsilon
    log_w, means = [], []
    for data in itertools.product(cells, repeat=n):
        records = np.array(data)
        y = records[:, 0]
        n1 = int(np.sum(y == 1))
        lp = betaln(2 + n1, 2 + n - n1) - betaln(2, 2)
        mean = {"p_class": (2 + n1) / (4 + n)}
        for i in (1, 2):
            for k in range(nb.N_FEATURES):
                a = int(np.sum((y == i) & (records[:, 1 + k] == 1)))
                b = int(np.sum((y == i) & (records[:, 1 + k] == 2)))
                lp += betaln(2 + a, 2 + b) - betaln(2, 2)
                mean[nb.PARAMETER_NAMES[_column(i - 1, k)]] = (2 + a) / (4 + a + b)
        stats = nb.statistics(y, records[:, 1:])
        lp += st.laplace.logpdf(released, loc=stats, scale=scale).sum()
        log_w.append(lp)
        means.append(mean)
    w = np.exp(np.array(log_w) - max(log_w))
    w /= w.sum()
    return {k: float(sum(wi * m[k] for wi, m in zip(w, means, strict=True))) for k in means[0]}


def test_exact_posterior_equals_brute_force_enumeration():
    n, epsilon = 3, 2.0
    released = np.array([0.4, 0.3, 0.1, 0.5, 0.2, 0.1, 0.0, 0.3])
    exact = nb.exact_posterior(released, epsilon=epsilon, n=n)
    brute = _brute_force_means(released, epsilon, n)
    for name in nb.PARAMETER_NAMES:
        assert exact[name].mean() == pytest.approx(brute[name], rel=1e-10), name
        assert exact[name].cdf(0.0) == 0.0 and exact[name].cdf(1.0) == pytest.approx(1.0)


def test_exact_posterior_quantiles_and_moments_are_consistent():
    post = nb.exact_posterior(nb.RELEASED, epsilon=10.0)["p_x1_y2"]
    for q in (0.05, 0.5, 0.95):
        assert post.cdf(post.ppf(q)) == pytest.approx(q, abs=1e-9)
    # moments from the distribution function: E X = int (1 - F), E X^2 = int 2x (1 - F)
    grid = np.linspace(0, 1, 401)
    tail = 1 - post.cdf(grid)
    mean = np.trapezoid(tail, grid)
    sd = np.sqrt(np.trapezoid(2 * grid * tail, grid) - mean**2)
    assert mean == pytest.approx(post.mean(), abs=1e-5)
    assert sd == pytest.approx(post.std(), rel=1e-3)


def test_record_model_statistics_and_update():
    model, rng = nb.record_model(), np.random.default_rng(4)
    params = {k: np.array([nb.TRUE_PARAMS[k]] * 3) for k in nb.PARAMETER_NAMES}
    records = model.simulate_records(params, nb.N, rng)
    assert records.shape == (3, nb.N, 3) and set(np.unique(records)) <= {1, 2}
    t = model.statistics(records)
    for b in range(3):
        expected = nb.statistics(records[b, :, 0], records[b, :, 1:])
        np.testing.assert_allclose(t[b].sum(axis=0), expected, rtol=1e-12)
    # the conjugate update draws from Beta(2 + ones, 2 + others): check p_class's mean
    big = model.simulate_records({k: v[:1] for k, v in params.items()}, 2000, rng)
    draws = model.update(np.repeat(big, 4000, axis=0), rng)["p_class"]
    n1 = int(np.sum(big[0, :, 0] == 1))
    mean, sd = (2 + n1) / 2004, st.beta(2 + n1, 2 + 2000 - n1).std()
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(4000)  # z-test, false-failure 6e-5
