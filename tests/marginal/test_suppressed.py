"""Suppressed discrete Gaussian cells of a Poisson latent on their fast path (``._suppressed``).

``marginal_sweep`` sums a Poisson cell whose one release is a suppressed discrete Gaussian
(Wikimedia's hidden cells) by ``dpinfer.marginal._suppressed`` from the first evaluation on
(the mode is then searched for). These tests run it from fresh and warm states over a grid
of rates (from 1e-300 to 1e20), sigmas and cuts against the general sum
(``._kernels._cell``, the sweep with every cell marked for it) and against the independent
brute-force sums of ``_brute``, and plant a misplaced ratio table, which the same checks
must catch.
"""

from __future__ import annotations

import functools
import types

import numba as nb
import numpy as np
import pytest

import dpinfer as dp
from dpinfer.marginal import _poisson as P
from dpinfer.marginal import _suppressed as S
from dpinfer.marginal import _sweep
from dpinfer.marginal._families import POISSON
from dpinfer.marginal._forms import joined_form, kernel_form, release_form
from dpinfer.noise.form import MAX_TABLE, table_range

from ._brute import log_marginal
from ._recompiled import loop_with
from .test_sweep import anchored

TOL = 1e-10
RATES = [1e-300, 1e-8, 0.3, 5.0, 60.0, 89.0, 120.0, 400.0, 800.0, 1e3, 3e3, 1e5, 1e16, 1e20]
# (sigma, cut): the pageviews tiers' (cut = threshold - 1), a narrow noise, a cut below 0
CASES = [(18.3, 89.0), (90.0, 549.0), (179.8, 999.0), (1.0, 3.0), (7.0, -50.0)]

# rates at which every case's mode is within the table: these must take the fast path
ORDINARY = [r for r in RATES if 0.3 <= r <= 3e3]


def mechanism(sigma, cut, n):
    """``n`` cells suppressed below ``cut + 1`` with discrete Gaussian noise of ``sigma``."""
    inner = dp.DiscreteGaussian(np.full(n, sigma), event_shape=(n,))
    return dp.Thresholded(inner, threshold=np.full(n, cut + 1.0), publish="at_least")


@functools.cache
def constants(sigma, cut, n):
    form = release_form(mechanism(sigma, cut, n), np.full(n, np.nan), latent_discrete=True)
    return kernel_form(*joined_form([form]))


def sweep(rates, sigma, cut, state, form_table=None, *, loop=_sweep._sweep):
    """The sweep (``loop``) of Poisson cells at ``rates``: (logp, score, terms)."""
    rates = np.asarray(rates, dtype=float)
    n = rates.size
    form, table = form_table or constants(sigma, cut, n)
    out = [np.empty(n) for _ in range(3)]
    terms = np.empty(n, dtype=np.int64)
    # the contour integral of wide cells switched off (``contour``; test_fourier.py's): the
    # table's path and the general sum are this file's
    refused = np.empty(n, dtype=np.int64)
    arrays = (rates, np.zeros(n), form, table, TOL, state, *out, terms, 0, n, refused, False)
    assert loop(POISSON, *arrays) == 0
    return out[0], out[1], terms


def warm(rates, sigma, cut, *, general=False, form_table=None):
    """The second of two sweeps at ``rates`` (the first leaves each cell's mode), and the state."""
    state = np.full((len(rates), P.STATE), np.nan)
    if general:
        state[:, P.STEP] = -1.0  # prepared for the general sum
    sweep(rates, sigma, cut, state, form_table)
    return (*sweep(rates, sigma, cut, state, form_table), state)


@functools.cache
def reference(sigma, cut, rate):
    """The brute-force log-likelihood of one suppressed cell."""
    return log_marginal("poisson", rate, 0, [(mechanism(sigma, cut, 1), np.array([np.nan]))])


@pytest.mark.parametrize(("sigma", "cut"), CASES)
def test_the_fast_path_is_the_general_sum(sigma, cut):
    logp, score, terms, state = warm(RATES, sigma, cut)
    general, general_score, general_terms, _ = warm(RATES, sigma, cut, general=True)
    assert np.all(state[:, P.STEP] == S.SUPPRESSED)
    ordinary = np.isin(RATES, ORDINARY)
    # on the fast path: its mode's constants are set
    assert np.all(anchored(state)[ordinary])
    # both are within tol of the exact sum: within 2 tol of each other
    np.testing.assert_allclose(logp, general, rtol=1e-12, atol=2 * TOL)
    # the scores in the log rate, E[s] - rate: each sum's E[s] misses at most tol of the mass,
    # in tails within some 10 standard deviations of the rate (a score in the rate divides
    # that by the rate: at 1e-8 the general sum's is 1e-8 off)
    rates = np.array(RATES)
    slack = 2 * TOL * (rates + 10 * np.sqrt(rates) + 10)
    gap = np.abs(rates * score - rates * general_score)
    assert np.all(gap <= 1e-8 * np.abs(rates * general_score) + slack)
    # the extreme rates return with the terms of the noise's width, not the rate's
    assert terms.max() <= 60 * sigma + 100
    assert np.all(np.abs(terms - general_terms) <= 2 * np.ceil(7 * np.sqrt(general_terms)) + 8)


def _first_and_stale_sums(sigma, cut, loop=_sweep._sweep):
    """The first evaluation's sums at ``ORDINARY``, whether it left every cell on the fast path,
    and the sums there after stale states (modes far below and far above)."""
    state = np.full((len(ORDINARY), P.STATE), np.nan)
    first = sweep(ORDINARY, sigma, cut, state, loop=loop)
    fast = bool(np.all(anchored(state)))
    stale = []
    for start in (1e-8, 1e5):
        state = np.full((len(ORDINARY), P.STATE), np.nan)
        sweep(np.full(len(ORDINARY), start), sigma, cut, state, loop=loop)
        stale.append(sweep(ORDINARY, sigma, cut, state, loop=loop))
    same = all(np.array_equal(a, b) for sums in stale for a, b in zip(first, sums, strict=True))
    return fast, same


@pytest.mark.parametrize(("sigma", "cut"), CASES)
def test_the_first_evaluation_is_on_the_fast_path_and_any_state_gives_its_sums(sigma, cut):
    assert _first_and_stale_sums(sigma, cut) == (True, True)


@nb.njit(error_model="numpy")
def _ready_for_known_modes(lam, form, table, j, row, z):
    return row[P.MODE] >= 0.0 and S.ready(lam, form, table, j, row, z)


def test_companion_a_first_evaluation_left_to_the_general_sum_is_caught():
    # Planted bug: the loop (run by the interpreter) sends a suppressed cell without a mode yet
    # to the general sum, whose terms are not the fast path's; the same loop without it passes
    planted = types.SimpleNamespace(**vars(S))
    planted.ready = _ready_for_known_modes
    assert _first_and_stale_sums(18.3, 89.0, loop_with()) == (True, True)
    assert _first_and_stale_sums(18.3, 89.0, loop_with(suppressed=planted)) == (False, False)


@pytest.mark.parametrize(("sigma", "cut"), CASES)
@pytest.mark.parametrize("rate", [0.3, 60.0, 800.0, 3e3])
def test_the_fast_path_matches_the_brute_force_sum(sigma, cut, rate):
    logp, _, _, state = warm([rate], sigma, cut)
    assert anchored(state)[0]
    exact = reference(sigma, cut, rate)
    assert abs(logp[0] - exact) <= 2 * TOL + 1e-12 * abs(exact)


@pytest.mark.parametrize(("sigma", "cut"), [(18.3, 89.0), (179.8, 999.0)])
@pytest.mark.parametrize("rate", [1e-8, 0.3, 120.0, 800.0])
def test_the_fast_score_is_the_gradient_of_the_exact_log_likelihood(sigma, cut, rate):
    _, score, _, state = warm([rate], sigma, cut)
    assert anchored(state)[0]
    h = 1e-5 * rate
    fd = (reference(sigma, cut, rate + h) - reference(sigma, cut, rate - h)) / (2 * h)
    assert score[0] == pytest.approx(fd, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize(("sigma", "cut"), [(90.0, 549.0), (179.8, 999.0)])
@pytest.mark.parametrize("depth", [60.0, 190.0])
def test_a_rate_far_above_its_cut_keeps_the_fast_path(sigma, cut, depth):
    # NUTS's warm-up takes the pageviews rates to e^2-e^3 times their posterior's, modes 40
    # sigma and more above the cut: a table 40 sigma deep left them to the general sum, which
    # sums the noise's tail for each term (up to 1.8 ms a cell)
    rate = cut + depth * sigma
    logp, score, _, state = warm([rate], sigma, cut)
    assert anchored(state)[0]
    exact = reference(sigma, cut, rate)
    assert abs(logp[0] - exact) <= 2 * TOL + 1e-12 * abs(exact)
    h = 1e-5 * rate
    fd = (reference(sigma, cut, rate + h) - reference(sigma, cut, rate - h)) / (2 * h)
    assert score[0] == pytest.approx(fd, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 179.8, 819.0, 820.0, 5e3, 9e4, 9.5e4, 9.6e4, 1e5])
def test_the_table_is_deep_where_it_stays_small(sigma):
    # 200 sigma deep, or 40 sigma and at most 2**17 counts more, as far as the table then fits
    # in MAX_TABLE; never shallower than 40 sigma, and a table that fitted then still fits
    low, high = table_range(sigma)
    depth = -low - 1
    assert high == np.ceil(12 * sigma) + 1
    assert 40 * sigma <= depth <= 40 * sigma + 2**17 + 1

    def entries(depth):
        return 2 * (np.ceil(depth) + np.ceil(12 * sigma) + 3)

    if entries(40 * sigma) <= MAX_TABLE:
        assert 2 * (high - low + 1) <= MAX_TABLE
    aim = min(200 * sigma, 40 * sigma + 2**17)
    if entries(aim) + 16 <= MAX_TABLE:
        assert depth >= aim


def test_a_window_beyond_the_table_takes_the_general_sum():
    # sigma 1: the table covers k in [-201, 13]; a cut of 300 puts a rate of 5 at k near 295
    logp, _, _, state = warm([5.0], 1.0, 300.0)
    assert np.isnan(state[0, P.AT])  # the fast path's constants were never set
    exact = reference(1.0, 300.0, 5.0)
    assert abs(logp[0] - exact) <= 2 * TOL + 1e-12 * abs(exact)


def test_a_cell_sums_the_same_on_a_walk_of_small_steps():
    # a sampler's path: the mode moves a few counts a step (walked), or more (bisected)
    rng = np.random.default_rng(3)
    path = 800.0 * np.exp(np.cumsum(0.02 * rng.standard_normal(40)))
    state = np.full((1, P.STATE), np.nan)
    general = np.full((1, P.STATE), np.nan)
    general[:, P.STEP] = -1.0
    for step, rate in enumerate(path):
        logp, score, _ = sweep([rate], 179.8, 999.0, state)
        expected, expected_score, _ = sweep([rate], 179.8, 999.0, general)
        assert abs(logp[0] - expected[0]) <= 2 * TOL
        assert score[0] == pytest.approx(expected_score[0], rel=1e-8, abs=1e-9)
        # on the fast path at every step after the first (which finds the mode)
        assert step == 0 or anchored(state)[0]


def test_companion_a_misplaced_ratio_table_is_caught():
    # each ratio read one place off (R(c - s - 1) for R(c - s)): the same checks must fail
    sigma, cut = 18.3, 89.0
    form, table = constants(sigma, cut, len(ORDINARY))
    state = np.full((len(ORDINARY), P.STATE), np.nan)
    sweep(ORDINARY, sigma, cut, state, (form, table))
    state[:, S.AT_ZERO] -= 1.0
    state[:, P.AT] = np.nan  # recompute the mode's constants on the planted table
    logp, _, _ = sweep(ORDINARY, sigma, cut, state, (form, table))
    general, _, _, _ = warm(ORDINARY, sigma, cut, general=True)
    assert not np.allclose(logp, general, rtol=1e-12, atol=2 * TOL)
    assert any(
        abs(value - reference(sigma, cut, rate)) > 2 * TOL
        for value, rate in zip(logp, ORDINARY, strict=True)
    )
