"""Exact totals over groups of cells: the sums over the splits of a total against brute force.

A group's likelihood is the sum over every split of its total among its cells of the
product of the cells' factors (latent pmf from scipy.stats, noise from each mechanism's
own ``logpdf``), enumerated here split by split; the compiled convolution must agree
within its bound ``tol`` (relative, so within ``tol`` in the log), and its scores with
central finite differences of the enumeration. A companion that sums each cell alone,
ignoring the total, must fail the same comparison.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.stats as st
from scipy.special import logsumexp

import dpinfer as dp
from dpinfer.marginal._forms import joined_form, kernel_form, read_only, release_form
from dpinfer.marginal._groups import OK, group_sweep
from dpinfer.marginal._totals import draw_given_totals, read_totals
from dpinfer.results import effective_sample_size

from ._brute import LATENTS, log_marginal
from .test_kernel import FAMILIES

TOL = 1e-10
DG, DL = dp.DiscreteGaussian(2.0), dp.DiscreteLaplace(1.5)
SUPPRESSING = dp.Thresholded(dp.DiscreteGaussian(3.0), threshold=5)
BINOMIAL_RELEASE = dp.BinomialRelease(n=200, m=50, population=60, length=1)
# (family, a, b, mechanism, released, total): one group each; the parameters near the
# releases and the total, and far from them, as a sampler's warm-up goes
CASES = {
    "poisson, discrete gaussian": ("poisson", [3.0, 7.0, 1.5], 0, DG, [4, 5, 0], 12),
    "poisson, discrete laplace, 4 cells": (
        "poisson",
        [3.0, 7.0, 1.5, 10.0],
        0,
        DL,
        [2, 9, 1, 14],
        25,
    ),
    "poisson, total 0": ("poisson", [0.4, 2.0], 0, DG, [0, 3], 0),
    "poisson, means far below": ("poisson", [1e-3, 2e-3, 5e-3], 0, DG, [5, 8, 3], 16),
    "poisson, means far above": ("poisson", [400.0, 900.0], 0, DL, [410, 880], 6),
    "poisson, total far above": ("poisson", [2.0, 3.0], 0, DG, [1, 4], 3000),
    "poisson, a zero mean": ("poisson", [0.0, 4.0, 2.5], 0, DG, [1, 5, 2], 8),
    "poisson, gaussian": ("poisson", [3.0, 6.0], 0, dp.Gaussian(0.8), [2.6, 7.3], 9),
    "poisson, laplace": ("poisson", [3.0, 6.0, 2.0], 0, dp.Laplace(1.2), [2.6, 7.3, 0.4], 11),
    "poisson, thresholded": (
        "poisson",
        [3.0, 7.0, 1.5, 6.0],
        0,
        SUPPRESSING,
        [np.nan, 9, np.nan, 6],
        20,
    ),
    "poisson, binomial release": ("poisson", [5.0, 9.0], 0, BINOMIAL_RELEASE, [[30], [55]], 14),
    "negative binomial": (
        "negative_binomial",
        [0.6, 3.0, 8.0],
        [0.3, 0.5, 0.2],
        DG,
        [2, 3, 30],
        20,
    ),
    "binomial": ("binomial", [20, 30, 15], [0.3, 0.5, 0.1], DL, [5, 16, 1], 25),
    "geometric": ("geometric", [0.3, 0.5, 0.2], 0, DG, [2, 1, 6], 9),
    "discrete uniform": ("discrete_uniform", [0, 2, 1], [10, 12, 6], DG, [3, 9, 6], 14),
}
# which of (a, b) the latent's log-pmf is differentiable in
SMOOTH = {
    "poisson": (0,),
    "negative_binomial": (0, 1),
    "binomial": (1,),
    "geometric": (0,),
    "discrete_uniform": (),
}


def group_kernel(family, a, b, pairs, starts, totals, tol=TOL):
    """The compiled sums: (log-likelihood per group, score a, score b per cell, status)."""
    form = kernel_form(*joined_form([release_form(m, np.asarray(r), True) for m, r in pairs]))
    a = np.asarray(a, dtype=float)
    b = np.broadcast_to(np.asarray(b, dtype=float), a.shape).copy()
    logp, status = np.empty(len(totals)), np.empty(len(totals), dtype=np.int64)
    score_a, score_b = np.empty(a.size), np.empty(a.size)
    group_sweep(
        FAMILIES[family],
        a,
        b,
        *form,
        tol,
        read_only(starts, np.int64),
        read_only(totals),
        logp,
        score_a,
        score_b,
        status,
    )
    return logp, score_a, score_b, status


def _cell_logpdf(mechanism, released, k):
    """``log eta(released | k)`` for every k, from the mechanism's own density."""
    values = k.reshape(-1, *mechanism.event_shape)
    return mechanism.logpdf(np.reshape(released, mechanism.event_shape), values)


def brute_group(family, a, b, mechanism, released, total):
    """``log sum over the splits of total of prod_i p(k_i) eta(r_i | k_i)``, split by split."""
    k = np.arange(total + 1)
    n = len(a)
    b = np.broadcast_to(b, (n,))
    log_f = np.array(
        [
            LATENTS[family](a[i], b[i]).logpmf(k) + _cell_logpdf(mechanism, released[i], k)
            for i in range(n)
        ]
    )
    grid = np.stack(np.meshgrid(*[k] * (n - 1), indexing="ij"), axis=-1).reshape(-1, n - 1)
    last = total - grid.sum(axis=1)
    splits = np.column_stack([grid, last])[last >= 0]
    return float(logsumexp(log_f[np.arange(n), splits].sum(axis=1)))


def _agrees(got, reference):
    return abs(got - reference) <= 2 * TOL + 1e-12 * abs(reference)


def _finite_difference(family, a, b, mechanism, released, total, which, i):
    params = [
        np.array(a, dtype=float),
        np.broadcast_to(np.array(b, dtype=float), (len(a),)).copy(),
    ]
    h = 1e-6 * max(abs(params[which][i]), 1e-3)
    values = []
    for sign in (1, -1):
        moved = [p.copy() for p in params]
        moved[which][i] += sign * h
        if moved[which][i] < 0:  # a mean of zero: one-sided
            moved[which][i] = 0.0
        values.append(brute_group(family, *moved, mechanism, released, total))
    span = 2 * h if params[which][i] >= h else h
    return (values[0] - values[1]) / span


@pytest.mark.parametrize("case", list(CASES))
def test_a_group_matches_the_sum_over_every_split(case):
    family, a, b, mechanism, released, total = CASES[case]
    logp, score_a, score_b, status = group_kernel(
        family, a, b, [(mechanism, released)], [0, len(a)], [total]
    )
    assert status[0] == OK
    reference = brute_group(family, a, b, mechanism, released, total)
    assert _agrees(logp[0], reference), (logp[0], reference)
    for which in SMOOTH[family]:
        got = (score_a, score_b)[which]
        for i in range(len(a)):
            want = _finite_difference(family, a, b, mechanism, released, total, which, i)
            assert got[i] == pytest.approx(want, rel=1e-5, abs=1e-6), (which, i)


@pytest.mark.parametrize("case", list(CASES))
def test_a_companion_that_ignores_the_total_fails_the_comparison(case):
    # the planted bug: each cell summed alone (the model without the total), by brute force
    family, a, b, mechanism, released, total = CASES[case]
    b = np.broadcast_to(b, (len(a),))
    ignored = sum(
        log_marginal(
            family, a[i], b[i], [(mechanism, np.reshape(released[i], mechanism.event_shape))]
        )
        for i in range(len(a))
    )
    assert not _agrees(ignored, brute_group(family, a, b, mechanism, released, total))


def test_many_groups_in_one_sweep_are_each_their_own_sum():
    a = [3.0, 7.0, 1.5, 4.0, 4.0, 0.5, 9.0]
    released = [4, 5, 0, 10, 2, 1, 8]
    starts, totals = [0, 3, 5, 7], [12, 9, 11]
    logp, score_a, _, status = group_kernel("poisson", a, 0, [(DG, released)], starts, totals)
    assert np.all(status == OK)
    for g, total in enumerate(totals):
        cells = slice(starts[g], starts[g + 1])
        assert _agrees(logp[g], brute_group("poisson", a[cells], 0, DG, released[cells], total))
        alone, _, _, _ = group_kernel(
            "poisson", a[cells], 0, [(DG, released[cells])], [0, len(a[cells])], [total]
        )
        assert logp[g] == alone[0]


def test_a_larger_group_matches_a_sum_by_dynamic_programming():
    # 12 cells: the splits of the total added cell by cell (each cell's factor from scipy
    # and logpdf over 0..total, in linear scale relative to its peak), not enumerated
    rng = np.random.default_rng(3)
    mu = rng.uniform(5.0, 40.0, size=12)
    released = rng.poisson(mu) + rng.integers(-3, 4, size=12)
    total = int(mu.sum()) + 17
    k = np.arange(total + 1)
    partial, log_scale = np.zeros(total + 1), 0.0
    partial[0] = 1.0
    for m, r in zip(mu, released, strict=True):
        log_f = st.poisson.logpmf(k, m) + DG.logpdf(np.array(r), k)
        peak = log_f.max()
        partial = np.convolve(partial, np.exp(log_f - peak))[: total + 1]
        log_scale += peak + np.log(partial.max())
        partial /= partial.max()
    reference = log_scale + np.log(partial[total])
    logp, _, _, status = group_kernel("poisson", mu, 0, [(DG, released)], [0, 12], [total])
    assert status[0] == OK
    assert abs(logp[0] - reference) <= 2 * TOL + 1e-12 * abs(reference)


def test_two_releases_of_each_cell_in_a_group():
    a, total = [3.0, 7.0, 1.5], 12
    first, second = [4, 5, 0], [2, 8, 1]
    logp, _, _, _ = group_kernel("poisson", a, 0, [(DG, first), (DL, second)], [0, 3], [total])
    k = np.arange(total + 1)
    log_f = np.array(
        [
            st.poisson.logpmf(k, a[i])
            + DG.logpdf(np.array(first[i]), k)
            + DL.logpdf(np.array(second[i]), k)
            for i in range(3)
        ]
    )
    splits = [(i, j, total - i - j) for i in k for j in k if i + j <= total]
    reference = logsumexp([log_f[0, i] + log_f[1, j] + log_f[2, m] for i, j, m in splits])
    assert _agrees(logp[0], reference)


# --- through PyMC ---------------------------------------------------------------------


def _observed_terms(model, variable):
    """Per-cell log-likelihood of ``variable`` and its gradient in every value variable."""
    logp = model.logp(vars=[variable], sum=False)[0]
    grads = pt.grad(logp.sum(), model.value_vars)
    return pytensor.function(model.value_vars, [logp, *grads])


def test_to_pymc_with_totals_and_free_cells_matches_brute_force():
    # three counties of three cells; the last county publishes no total; suppressed cells
    released = np.array([[np.nan, 9, 6], [12, np.nan, np.nan], [7, 5, np.nan]])
    county = np.array([0, 1, -1])[:, None]
    totals = np.array([20, 15])
    mu = np.array([[3.0, 7.0, 6.0], [9.0, 2.0, 3.5], [6.0, 4.0, 2.0]])
    with pm.Model() as model:
        rate = pm.Flat("rate", shape=(3, 3))
        y = SUPPRESSING.to_pymc(
            "y", pm.Poisson.dist(mu=rate), observed=released, totals=(county, totals)
        )
    logp, grad = _observed_terms(model, y)(mu)
    for c in range(2):
        want = brute_group("poisson", mu[c], 0, SUPPRESSING, released[c], totals[c])
        assert _agrees(logp[c, 0], want)
        assert np.all(logp[c, 1:] == 0.0)
        for i in range(3):
            fd = _finite_difference("poisson", mu[c], 0, SUPPRESSING, released[c], totals[c], 0, i)
            assert grad[c, i] == pytest.approx(fd, rel=1e-5, abs=1e-6)
    for i in range(3):
        want = log_marginal("poisson", mu[2, i], 0, [(SUPPRESSING, released[2, i])])
        assert logp[2, i] == pytest.approx(want, abs=2 * TOL)


def test_dp_to_pymc_with_two_releases_of_the_cells_and_their_totals():
    first, second = np.array([[4, 5, 0], [10, 2, 3]]), np.array([[2, 8, 1], [9, 4, 4]])
    mu, totals = np.array([[3.0, 7.0, 1.5], [4.0, 4.0, 4.0]]), np.array([12, 9])
    with pm.Model() as model:
        rate = pm.Flat("rate", shape=(2, 3))
        y = dp.to_pymc(
            "y",
            pm.Poisson.dist(mu=rate),
            observed=[(DG, first), (DL, second)],
            totals=(np.arange(2)[:, None], totals),
        )
    logp = _observed_terms(model, y)(mu)[0]
    for c in range(2):
        alone, _, _, _ = group_kernel(
            "poisson", mu[c], 0, [(DG, first[c]), (DL, second[c])], [0, 3], [totals[c]]
        )
        assert logp[c, 0] == pytest.approx(alone[0], abs=1e-12)


def test_posterior_predictive_releases_add_up_to_the_totals_within_the_noise():
    # noise of sigma 0.3 on Poisson(3) and Poisson(6) counts whose total is 10: the sum of a
    # group's two releases has variance about 2 * 0.3**2 given the total, 9 without it (the
    # planted bug, independent counts, gives that). Level: the variance of 400 draws exceeds 1
    # with probability far below 1e-9 when it is 0.18.
    mech = dp.DiscreteGaussian(0.3)
    with pm.Model():
        y = mech.to_pymc(
            "y",
            pm.Poisson.dist(mu=np.array([[3.0, 6.0]])),
            observed=np.array([[4, 6]]),
            totals=([[0, 0]], [10]),
        )
        draws = pm.draw(y, draws=400, random_seed=3)
    sums = draws.sum(axis=(1, 2))
    assert abs(sums.mean() - 10) < 0.1
    assert sums.var() < 1.0
    independent = pm.draw(pm.Poisson.dist(mu=np.array([3.0, 6.0])), draws=400, random_seed=3)
    assert independent.sum(axis=1).var() > 1.0


def test_the_totals_condition_posterior_predictive_draws():
    # Poisson counts given their total are multinomial: each cell's share of a 2-cell group is
    # Binomial(total, mu_1 / (mu_1 + mu_2)). Chi-square test at level 1e-3 (so a correct
    # sampler fails with probability 1e-3 at a new seed; the seed is fixed).
    released, mu, total = np.array([[4, 9]]), np.array([3.0, 6.0]), 10
    forms = [release_form(DG, released, True)]
    groups = read_totals((np.zeros((1, 2), dtype=int), [total]), (1, 2), forms)
    rng = np.random.default_rng(11)
    draws = np.array(
        [
            draw_given_totals(FAMILIES["poisson"], mu, np.zeros(2), groups, TOL, rng)
            for _ in range(4000)
        ]
    )
    assert np.all(draws.sum(axis=1) == total)
    expected = st.binom(total, mu[0] / mu.sum())
    assert _chi_square_p(draws[:, 0], expected) > 1e-3
    # the planted bug: the first cell drawn as if there were no total
    unconditioned = rng.poisson(mu[0], size=4000)
    assert _chi_square_p(unconditioned, expected) < 1e-3


def test_draws_given_a_total_for_a_negative_binomial_latent():
    # two cells: P(first = k | total) ~ nb_1(k) nb_2(total - k), enumerated; level 1e-3 as above
    n, p, total = np.array([0.7, 4.0]), np.array([0.3, 0.4]), 15
    groups = read_totals(([[0, 0]], [total]), (1, 2), [release_form(DG, np.array([[1, 2]]), True)])
    rng = np.random.default_rng(5)
    draws = np.array(
        [
            draw_given_totals(FAMILIES["negative_binomial"], n, p, groups, TOL, rng)
            for _ in range(4000)
        ]
    )
    assert np.all(draws.sum(axis=1) == total)
    k = np.arange(total + 1)
    pmf = st.nbinom(n[0], p[0]).pmf(k) * st.nbinom(n[1], p[1]).pmf(total - k)
    expected = st.rv_discrete(values=(k, pmf / pmf.sum()))
    assert _chi_square_p(draws[:, 0], expected) > 1e-3
    assert _chi_square_p(rng.negative_binomial(n[0], p[0], size=4000), expected) < 1e-3


def _chi_square_p(samples, dist) -> float:
    """p-value of Pearson's chi-square test of integer samples against ``dist``."""
    k = np.arange(int(dist.ppf(1e-9)), int(dist.ppf(1 - 1e-9)) + 1)
    observed = np.array([np.sum(samples == v) for v in k])
    expected = dist.pmf(k) * len(samples)
    keep = expected >= 5
    observed = np.append(observed[keep], len(samples) - observed[keep].sum())
    expected = np.append(expected[keep], len(samples) - expected[keep].sum())
    if expected[-1] < 1e-9:
        observed, expected = observed[:-1], expected[:-1]
    return float(st.chisquare(observed, expected).pvalue)


# --- refusals -------------------------------------------------------------------------


def _with_totals(totals, dist=None, mechanism=DG, released=np.array([[4, 5], [7, 1]])):
    with pm.Model():
        dist = pm.Poisson.dist(mu=3.0) if dist is None else dist
        return mechanism.to_pymc("y", dist, observed=released, totals=totals)


@pytest.mark.parametrize(
    ("totals", "error", "message"),
    [
        ([[0, 1]], TypeError, r"\(groups, values\) pair"),
        (
            (np.zeros((3,), dtype=int), [5]),
            ValueError,
            r"does not broadcast to the cells' shape \(2, 2\)",
        ),
        ((np.arange(2)[:, None], [[9, 8]]), ValueError, r"one total per group .* shape \(1, 2\)"),
        (
            (np.arange(2)[:, None], [9, -8]),
            ValueError,
            r"non-negative counts: 1 of 2 .* position \[1\]",
        ),
        (
            (np.arange(2)[:, None], [9, 8.5]),
            ValueError,
            r"totals\[1\] \(values\) must hold integers: .* \[1\]",
        ),
        ((np.arange(2)[:, None], [9, 2.0**60]), ValueError, r"below 2\*\*53"),
        ((np.array([[0], [2]]), [9, 8]), ValueError, r"group number in \[0, 2\)"),
        ((np.array([[0], [0]]), [9, 8]), ValueError, r"group 1 has no cell"),
        ((np.arange(2)[:, None], [9, 8.0], 3), TypeError, r"\(groups, values\) pair"),
    ],
)
def test_bad_totals_are_refused_naming_the_problem(totals, error, message):
    with pytest.raises(error, match=message):
        _with_totals(totals)


def test_a_total_no_split_can_meet_is_refused_naming_its_group_not_its_value():
    mech = dp.BinomialRelease(n=20, m=5, population=60, length=1)
    released = np.array([[3], [5], [4], [9]])
    with pytest.raises(ValueError, match=r"group 1 has a total that no split") as info:
        _with_totals(([[0], [0], [1], [1]], [100, 1234]), mechanism=mech, released=released)
    assert "1234" not in str(info.value)


def test_a_continuous_latent_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match=r"discrete distribution .* pm.Poisson.dist"):
        _with_totals(
            (np.arange(2)[:, None], [9, 8]),
            dist=pm.Gamma.dist(2.0, 0.5),
            mechanism=dp.Gaussian(1.0),
        )


def test_a_mixture_latent_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match=r"one family .* not a mixture"):
        _with_totals((np.arange(2)[:, None], [9, 8]), dist=pm.ZeroInflatedPoisson.dist(0.5, 3.0))


def test_totals_with_a_model_variable_are_refused():
    with pm.Model(), pytest.raises(TypeError, match=r"unregistered one such as pm.Poisson.dist"):
        s = pm.Poisson("s", 3.0, shape=2)
        DG.to_pymc("y", s, observed=np.array([4, 5]), totals=([0, 0], [9]))


# --- NUTS -----------------------------------------------------------------------------


def test_nuts_with_totals_samples_the_exact_posterior_of_the_rate():
    # 20 counties x 4 cells, counts Poisson(rate * w_k) with known age weights w_k and a Gamma
    # prior on the rate; every cell released with discrete Gaussian noise, each county's total
    # exact. Given the totals the noisy cells say nothing more about the rate (the split of a
    # Poisson total is multinomial, free of the rate), so its exact posterior is
    # Gamma(2 + sum of totals, 0.05 + 20 sum w). NUTS must match its mean within 4 Monte Carlo
    # standard errors (false failure about 1e-4 at a new seed; the seed is fixed). Without the
    # totals the posterior (brute-force sums on a grid) sits farther from the truth: the
    # planted companion that drops the totals fails the same check.
    rng = np.random.default_rng(2024)
    truth, weights, sigma = 12.0, np.array([0.5, 1.0, 1.5, 1.0]), 6.0
    counts = rng.poisson(truth * weights, size=(20, 4))
    released = dp.DiscreteGaussian(sigma).release(counts, rng=rng)
    totals = counts.sum(axis=1)
    exact = st.gamma(2.0 + totals.sum(), scale=1 / (0.05 + 20 * weights.sum()))
    with pm.Model():
        rate = pm.Gamma("rate", 2.0, 0.05)
        dp.DiscreteGaussian(sigma).to_pymc(
            "y",
            pm.Poisson.dist(mu=rate * np.tile(weights, (20, 1))),
            observed=released,
            totals=(np.arange(20)[:, None], totals),
        )
        idata = pm.sample(
            200,
            tune=200,
            chains=2,
            cores=1,
            random_seed=7,
            progressbar=False,
            compute_convergence_checks=False,
        )
    draws = idata.posterior["rate"].values.ravel()
    ess = effective_sample_size(idata.posterior["rate"].values)
    error = 4 * exact.std() / np.sqrt(ess)
    assert abs(draws.mean() - exact.mean()) < error
    dropped = _posterior_mean_without_totals(released, weights, sigma)
    assert abs(dropped - exact.mean()) > error
    assert abs(exact.mean() - truth) < abs(dropped - truth)


def _posterior_mean_without_totals(released, weights, sigma):
    """Posterior mean of the rate from the noisy cells alone, by brute-force sums on a grid."""
    grid = np.linspace(5.0, 25.0, 801)
    mech = dp.DiscreteGaussian(sigma)
    s = np.arange(0, 120)
    log_lik = np.zeros_like(grid)
    for r, w in zip(released.ravel(), np.tile(weights, released.shape[0]), strict=True):
        terms = (
            st.poisson.logpmf(s[:, None], w * grid[None, :]) + mech.logpdf(np.array(r), s)[:, None]
        )
        log_lik += logsumexp(terms, axis=0)
    log_post = log_lik + st.gamma(2.0, scale=1 / 0.05).logpdf(grid)
    weights_grid = np.exp(log_post - log_post.max())
    return float((grid * weights_grid).sum() / weights_grid.sum())
