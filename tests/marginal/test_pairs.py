"""Wide Poisson cells summed over every other term: the bound on what it leaves out, the sums.

``dpinfer.marginal._poisson`` sums a cell whose noise is wide and whose mode is not small over
the terms of its mode's parity, twice (``_sum_pairs``), where ``_pairs_suffice`` bounds the
difference, the alternating sum of the terms. The bound is checked against that alternating
sum computed exactly (mpmath, with digits enough for the bound), and the sweep's sums against
the brute-force references; planted bugs, a bound that leaves out part of its integral and a
sweep that sums every cell by pairs, must fail.
"""

from __future__ import annotations

import functools
import math

import mpmath
import numba as nb
import numpy as np
import pytest

import dpinfer as dp
from dpinfer.marginal import _poisson as P
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
    """Over CASES: the largest ``log(|D| / S)`` less ``bound(B, m)``, and how many qualify."""
    worst, eligible = -math.inf, 0
    for v, m, offset in CASES:
        mu = m + offset * math.sqrt(v + m)
        # the bound at m covers the modes m and m - 1: it is checked at both
        for claimed in (bound(1.0 / v, float(m)), bound(1.0 / v, m + 1.0)):
            eligible += claimed <= math.log(P.PAIRS_ERROR)
            digits = 30 + int(-claimed / math.log(10.0))
            for lam in _mode_rates(v, mu, m):
                worst = max(worst, _log_other_parity(v, mu, lam, m, digits) - claimed)
    return worst, eligible


def test_the_bound_on_the_other_parity_holds_for_every_rate_of_a_mode():
    worst, eligible = _worst_slack(P._log_pairs_bound)
    assert worst <= 0.0
    assert 0 < eligible < 2 * len(CASES)  # the cases hold cells on both sides of the decision


@nb.njit
def _first(a, b):
    return a


def test_companion_a_bound_without_the_far_half_of_its_integral_fails():
    # Planted bug: J bounded on [0, pi / 2] alone (the larger-of-two pieces taken as the first);
    # on wide noise the integrand's mass near u = pi, e^{-2m}, is then missed
    near_only = recompiled(P._log_pairs_integral, max=_first)
    worst, _ = _worst_slack(recompiled(P._log_pairs_bound, _log_pairs_integral=near_only))
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
