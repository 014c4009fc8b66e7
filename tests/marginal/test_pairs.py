"""Wide Poisson cells summed over every other term: the bound on what it leaves out, the sums.

A cell whose noise is wide and whose mode is not small is summed over the terms of one parity,
twice (``dpinfer.marginal._pairs_batch``, in batches), where ``_poisson._pairs_suffice`` bounds
the difference, the alternating sum of the terms. The bound is checked against that
alternating sum computed exactly (mpmath, with digits enough for the bound), the sweep's sums
against the brute-force references, and a batch's cells against each cell summed alone;
planted bugs, a bound that leaves out part of its integral, a sweep that sums every cell by
pairs and a batch whose lanes run to its widest cell's pairs, must fail.
"""

from __future__ import annotations

import functools
import math
import types

import mpmath
import numba as nb
import numpy as np
import pytest

import dpinfer as dp
from dpinfer.marginal import _pairs_batch as B
from dpinfer.marginal import _poisson as P
from dpinfer.marginal._families import POISSON
from dpinfer.marginal._forms import joined_form, kernel_form, release_form
from dpinfer.marginal._pairs_batch import _masked_pairs
from dpinfer.marginal._sweep import sweep_cells

from ._brute import log_marginal
from ._recompiled import recompiled, sweep_with
from .test_sweep import TOL, fresh, sweep

# rho = 0.05 (sigma^2 = 10): cells of modes 27 and more are summed by pairs
SIGMA = math.sqrt(10.0)
RATES = [3.0, 15.0, 24.0, 30.0, 60.0, 250.0, 1500.0, 4e5]


def _mode_rates(v, mu, m):
    """Rates whose mode is ``m``: both ends of the interval (the open one just inside), its middle.

    The mode of ``p(s | lam) e^{-(s - mu)^2 / (2v)}`` is ``m`` while
    ``lam up`` is in ``(m e^{-1/v}, m + 1]``, ``up = e^{(mu - 1/2 - m) / v}``.
    """
    up = math.exp((mu - 0.5 - m) / v)
    low, high = m * math.exp(-1.0 / v) / up, (m + 1.0) / up
    return [low * (1.0 + 1e-12), math.sqrt(low * high), high]


def _log_other_parity(v, mu, lam, m, digits):
    """``log(|D| / S)``, exactly: the alternating sum of the terms over their sum."""
    with mpmath.workdps(digits):
        lam, v, mu = mpmath.mpf(lam), mpmath.mpf(v), mpmath.mpf(mu)
        reach = int(60 * math.sqrt(float(v)) + 40 * math.sqrt(m + 1) + 60)
        first = max(0, m - reach)
        term = mpmath.exp(
            first * mpmath.log(lam) - mpmath.loggamma(first + 1) - (first - mu) ** 2 / (2 * v)
        )
        gauss, step = mpmath.exp((mu - mpmath.mpf(0.5) - first) / v), mpmath.exp(-1 / v)
        total = alternating = mpmath.mpf(0)
        for s in range(first, m + reach):
            total += term
            alternating += term if s % 2 == 0 else -term
            term *= lam / (s + 1) * gauss
            gauss *= step
        return float(mpmath.log(abs(alternating) / total))


CASES = [
    (v, m, mu_offset)
    for v in (1.0, 4.0, 10.0, 49.0)
    for m in (2, 3, 10, 27, 60, 200)
    for mu_offset in (-3.0, 0.0, 3.0)
]


@functools.cache
def _worst_slack(bound):
    """Over CASES: the largest ``log(|D| / S)`` less ``bound(B, lowest, highest)`` where the
    claim covers the case's mode; how many claims qualify, and how many were checked."""
    worst, eligible, checked = -math.inf, 0, 0
    for v, m, offset in CASES:
        mu = m + offset * math.sqrt(v + m)
        # the bound for modes lowest to highest covers the modes lowest - 1 to highest: it is
        # checked at m for claims that cover it, one mode alone and a grid's three
        claims = [(m, m), (m + 1, m + 1), (m + 1, m + 3), (m - 1, m + 1), (m - 2, m)]
        claimed = [bound(1.0 / v, float(lo), float(hi)) for lo, hi in claims if lo >= 2]
        eligible += sum(c <= math.log(P.PAIRS_ERROR) for c in claimed)
        checked += len(claimed)
        digits = 30 + int(-min(claimed) / math.log(10.0))
        for lam in _mode_rates(v, mu, m):
            worst = max(worst, _log_other_parity(v, mu, lam, m, digits) - min(claimed))
    return worst, eligible, checked


def test_the_bound_on_the_other_parity_holds_for_every_rate_of_a_mode():
    worst, eligible, checked = _worst_slack(P._log_pairs_bound)
    assert worst <= 0.0
    assert 0 < eligible < checked  # the cases hold cells on both sides of the decision


@nb.njit
def _first(a, b):
    return a


def test_companion_a_bound_without_the_far_half_of_its_integral_fails():
    # Planted bug: J bounded on [0, pi / 2] alone (the larger-of-two pieces taken as the first);
    # on wide noise the integrand's mass near u = pi, e^{-2m}, is then missed
    near_only = recompiled(P._log_pairs_integral, max=_first)
    worst, _, _ = _worst_slack(recompiled(P._log_pairs_bound, _log_pairs_integral=near_only))
    assert worst > 0.0


@functools.cache
def _reference(rate, released):
    return log_marginal("poisson", rate, 0, [(dp.DiscreteGaussian(SIGMA), released)])


def _warm_sums(released, cells=sweep_cells):
    """Whether every cell's warm logp is within tol of the brute-force sum; which took pairs."""
    pairs = [(dp.DiscreteGaussian(SIGMA), released)]
    state = fresh(len(RATES))
    sweep(RATES, pairs, state, cells=cells)
    logp, _, _ = sweep(RATES, pairs, state, cells=cells)
    exact = np.array([_reference(rate, released) for rate in RATES])
    within = bool(np.all(np.abs(logp - exact) <= 2 * TOL + 1e-12 * np.abs(exact)))
    return within, state[:, P.SD] < 0.0


@pytest.mark.parametrize("released", [3, 20, 60, 1500])
def test_wide_cells_by_pairs_give_the_brute_force_sums(released):
    within, by_pairs = _warm_sums(released)
    assert by_pairs.any()
    assert released > 20 or not by_pairs.all()  # small counts: both paths in the table
    assert within


@pytest.mark.parametrize("rate", [60.0, 1500.0])
def test_scores_by_pairs_are_the_gradient_of_the_exact_log_likelihood(rate):
    pairs = [(dp.DiscreteGaussian(SIGMA), 60)]
    state = fresh(1)
    sweep([rate], pairs, state)
    _, score, _ = sweep([rate], pairs, state)
    assert state[0, P.SD] < 0.0
    h = 1e-5 * rate
    fd = (_reference(rate + h, 60) - _reference(rate - h, 60)) / (2 * h)
    assert score[0] == pytest.approx(fd, rel=1e-5, abs=1e-7)


@nb.njit(error_model="numpy")
def _ready_pairs_everywhere(lam, form, n, j, row):
    ready = P.ready(lam, form, n, j, row)
    if ready and row[P.AT] >= 1.0:
        row[P.SD] = -abs(row[P.SD])
    return ready


def test_companion_every_cell_by_pairs_is_caught():
    # Planted bug: the sweep (run by the interpreter) marks every cell for pairs whatever the
    # bound says; the same sweep without it passes
    assert _warm_sums(3, sweep_with())[0]
    within, by_pairs = _warm_sums(3, sweep_with(ready=_ready_pairs_everywhere))
    assert by_pairs.all() and not within


def _table_sums(rates, released, cells=sweep_cells):
    """The warm logp and scores of a table of cells, one rate and release a cell, together."""
    n = len(rates)
    noise = dp.DiscreteGaussian(SIGMA)
    form = kernel_form(*joined_form([release_form(noise, released, latent_discrete=True)]))
    state, out, terms = fresh(n), [np.empty(n) for _ in range(3)], np.empty(n, np.int64)
    for _ in range(2):
        cells(POISSON, np.asarray(rates), np.zeros(n), *form, TOL, state, *out, terms, 0, n)
    return out[0], out[1], state


def _each_alone_and_together(cells=sweep_cells):
    """Whether a table's cells summed by pairs in batches (of 64, 64 and 22 cells, taking 9
    to 11 pairs a side untested) have the bits each has summed alone."""
    rng = np.random.default_rng(5)
    rates = np.geomspace(40.0, 3000.0, 150)
    released = np.round(rates + SIGMA * rng.standard_normal(rates.size))
    logp, score, state = _table_sums(rates, released, cells)
    assert np.all(state[:, P.SD] < 0.0)  # every cell by pairs
    alone = [_table_sums(rates[j : j + 1], released[j : j + 1]) for j in range(rates.size)]
    return np.array_equal(logp, [a[0][0] for a in alone]) and np.array_equal(
        score, [a[1][0] for a in alone]
    )


def test_a_batch_of_pairs_gives_each_cell_the_bits_it_has_alone():
    assert _each_alone_and_together()


@nb.njit(error_model="numpy", inline="always")
def _every_lane_on(batch, i, on):
    _masked_pairs(batch, i, True)


def test_companion_a_batch_that_runs_every_lane_to_the_largest_k_is_caught():
    # Planted bug: the batch's masked pairs run in every lane up to the batch's largest k, so
    # a cell takes the pairs of its batch's widest cell untested; the interpreted sweep with
    # the genuine batch passes
    assert _each_alone_and_together(sweep_with())
    planted = types.SimpleNamespace(
        **{name: getattr(B, name) for name in ("LANES", "ROWS", "queue", "takes")},
        sum_batch=recompiled(B.sum_batch, _masked_pairs=_every_lane_on),
    )
    assert not _each_alone_and_together(sweep_with(pairs=planted))
