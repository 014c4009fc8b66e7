"""Wide Poisson cells with Gaussian releases: the contour integral of ``._fourier``.

A cell wider than ``WIDE`` counts is summed as a trapezoid sum of its Fourier integral
(a fixed number of nodes) instead of term by term; its error is bounded where it is
summed, and a cell whose bound fails goes back to the sum over s. These tests compare
it with an exact sum at 30 digits (mpmath) over releases near and far from the rate,
one and two releases, continuous and discrete noise; the score with the derivative of
that sum; and check that the bound refuses what it cannot vouch for, with planted
companions that must fail.
"""

from __future__ import annotations

import functools
import math

import mpmath as mp
import numba as nb
import numpy as np
import pytest

import dpinfer as dp
from dpinfer.marginal import _fourier as fourier
from dpinfer.marginal._families import POISSON
from dpinfer.marginal._forms import joined_form, kernel_form, release_form
from dpinfer.marginal._poisson import STATE
from dpinfer.marginal._sweep import sweep_cells

from ._brute import log_marginal
from ._recompiled import interpreted

TOL = 1e-10
NODES = fourier.plan(TOL)[1] + 1  # the term count a cell on this path reports
RELEASES = {
    "sigma 18.3": [(dp.DiscreteGaussian(18.3), 0)],
    "sigma 90": [(dp.DiscreteGaussian(90.0), 0)],
    "sigma 300": [(dp.DiscreteGaussian(300.0), 0)],
    "continuous 40": [(dp.Gaussian(40.0), 0.0)],
    "twice": [(dp.DiscreteGaussian(10.0), 0), (dp.DiscreteGaussian(25.0), 40)],
}
RATES = [200.0, 1500.0, 4e5]
# where the first release is, in widths of the cell from its rate: NUTS goes far
OFFSETS = [-30.0, -3.0, 0.0, 0.7, 4.0, 30.0]


def _releases(name, rate, offset):
    """``RELEASES[name]`` moved so that the first release is ``offset`` widths from the rate."""
    pairs = RELEASES[name]
    precision = sum(1.0 / _sigma(m) ** 2 for m, _ in pairs)
    width = 1.0 / math.sqrt(precision + 1.0 / rate)
    shift = round(rate + offset * width) if _discrete(pairs[0][0]) else rate + offset * width
    return [(m, r + shift) for m, r in pairs]


def _sigma(mechanism):
    return float(mechanism.sigma)


def _discrete(mechanism):
    return isinstance(mechanism, dp.DiscreteGaussian)


def _log_term(pairs, rate, s):
    """``log p(s | rate) + sum_m log eta_m(r_m | s)`` at mpmath's precision."""
    value = s * mp.log(rate) - rate - mp.loggamma(s + 1)
    for mechanism, r in pairs:
        sigma = _sigma(mechanism)
        value += _log_norm(sigma, _discrete(mechanism)) - (mp.mpf(r) - s) ** 2 / (2 * sigma**2)
    return value


@functools.cache
def _log_norm(sigma, discrete):
    """The log normaliser of a Gaussian density (on the integers, if ``discrete``)."""
    with mp.workdps(30):
        if discrete:  # sum_k e^{-k^2 / (2 sigma^2)}, Jacobi's theta_3 at 0
            return -mp.log(mp.jtheta(3, 0, mp.exp(-1 / (2 * mp.mpf(sigma) ** 2))))
        return -mp.log(sigma * mp.sqrt(2 * mp.pi))


@functools.cache
def exact(name, rate, offset):
    """``(log-likelihood, score)`` of the cell by sums over s at 30 digits."""
    pairs = _releases(name, rate, offset)
    precision = sum(1.0 / _sigma(m) ** 2 for m, _ in pairs)
    width = 1.0 / math.sqrt(precision + 1.0 / rate)
    mode = _mode(pairs, rate)
    lo, hi = max(0, int(mode - 16 * width - 20)), int(mode + 16 * width + 20)
    with mp.workdps(30):
        rate_mp = mp.mpf(rate)
        terms = [_log_term(pairs, rate_mp, mp.mpf(s)) for s in range(lo, hi + 1)]
        top = max(terms)
        weights = [mp.exp(t - top) for t in terms]
        total = mp.fsum(weights)
        mean = mp.fsum(w * s for w, s in zip(weights, range(lo, hi + 1), strict=True)) / total
        # the window holds the sum: its end terms are negligible (or it starts at 0)
        assert max(terms[0] if lo > 0 else -mp.inf, terms[-1]) - top < -60
        return float(top + mp.log(total)), float(mean / rate_mp - 1)


def _mode(pairs, rate):
    """The top of the cell's terms, by bisection on the sign of their log-ratio."""

    def rising(s):
        ratio = math.log(rate / (s + 1))
        for mechanism, r in pairs:
            ratio += (r - s - 0.5) / _sigma(mechanism) ** 2
        return ratio > 0

    lo, hi = 0.0, 1.0
    while rising(hi):
        hi *= 2
    while hi - lo > 1:
        mid = math.floor((lo + hi) / 2)
        lo, hi = (mid, hi) if rising(mid) else (lo, mid)
    return hi


def sweep(name, rates, offsets, *, cells=sweep_cells, tol=TOL):
    """The sweep of one cell for each (rate, offset): (logp, score, terms)."""
    pairs = [_releases(name, rate, offset) for rate, offset in zip(rates, offsets, strict=True)]
    n = len(pairs)
    forms = [
        release_form(m, np.array([p[k][1] for p in pairs]).reshape(n, *m.event_shape), True)
        for k, (m, _) in enumerate(pairs[0])
    ]
    out = [np.empty(n) for _ in range(3)]
    terms = np.empty(n, dtype=np.int64)
    state = np.full((n, STATE), np.nan)
    rates = np.asarray(rates, dtype=float)
    for _ in range(2):  # a fresh state, then the kept one
        cells(POISSON, rates, np.zeros(n), *kernel_form(*joined_form(forms)), tol, state,
              *out, terms, 0, n)  # fmt: skip
    return out[0], out[1], terms


def _cases():
    return [(r, o) for r in RATES for o in OFFSETS]


@pytest.mark.parametrize("name", RELEASES)
def test_wide_cells_are_the_exact_sums(name):
    rates, offsets = zip(*_cases(), strict=True)
    logp, score, terms = sweep(name, rates, offsets)
    assert np.all(terms == NODES)  # every cell took the contour integral
    for i, (rate, offset) in enumerate(_cases()):
        want, want_score = exact(name, rate, offset)
        assert abs(logp[i] - want) <= TOL, (rate, offset)
        assert abs(score[i] - want_score) <= 1e-9 * (1 + abs(want_score)), (rate, offset)


def test_narrower_cells_are_summed_term_by_term():
    # below WIDE at its rate (a small rate makes any cell narrow): the sum over s
    logp, _, terms = sweep("sigma 90", [3.0, 30.0], [0.0, 2.0])
    assert np.all(terms != NODES)
    assert abs(logp[0] - exact("sigma 90", 3.0, 0.0)[0]) <= TOL


def _coarse_plan(tol):
    """A planted plan: a step four times too coarse, a quarter of the nodes."""
    step, nodes = fourier.plan(tol)
    return 4 * step, max(nodes // 4, 1)


def test_cells_the_bounds_refuse_are_summed_over_s():
    # at tol 1e-15 the rounding bound refuses every cell (the companions below show that
    # the bounds refuse a plan too coarse at 1e-10): the sweep sums them over s, exactly
    logp, _, terms = sweep("sigma 90", [1500.0, 4e5], [0.0, 4.0], tol=1e-15)
    assert np.all(terms > 100)
    for i, (rate, offset) in enumerate([(1500.0, 0.0), (4e5, 4.0)]):
        assert abs(logp[i] - exact("sigma 90", rate, offset)[0]) <= TOL
    rates = [549.0, 600.0, 1500.0]  # near the cut, and far above it
    logp, _, terms = sweep_suppressed(90.0, 549.0, rates, tol=1e-15)
    assert np.all(terms > 100)  # the table's sum over s
    for i, rate in enumerate(rates):
        assert abs(logp[i] - exact_suppressed(90.0, 549.0, rate)[0]) <= 3 * TOL


def _at(row):
    """Where cell 0's entry of ``row`` is in a batch."""
    return row * fourier.BATCH


def test_companion_the_coarse_plan_is_wrong_where_not_refused():
    # the same plan with its refusals ignored: values off by far more than tol, so the
    # bounds above refused cells that needed refusing
    batch = np.zeros(fourier.ROWS * fourier.BATCH)
    step, nodes = _coarse_plan(TOL)
    rate, release = 1500.0, _releases("sigma 90", 1500.0, 4.0)[0][1]
    batch[_at(fourier.LAM)], batch[_at(fourier.KIND)] = rate, fourier.PUBLISHED
    batch[_at(fourier.V)], batch[_at(fourier.MU)] = 90.0**2, release
    batch[_at(fourier.REST)] = _log_norm(90.0, True)
    out = [np.full(1, np.nan) for _ in range(3)]
    refused = fourier.sum_batch(batch, 1, step, nodes, TOL, *out, np.empty(1, np.int64))
    assert refused == 1
    assert abs(batch[_at(fourier.VALUE)] - exact("sigma 90", rate, 4.0)[0]) > 1e3 * TOL


def test_companion_the_coarse_plan_is_wrong_near_the_cut_where_not_refused():
    batch = np.zeros(fourier.ROWS * fourier.BATCH)
    batch[_at(fourier.LAM)], batch[_at(fourier.KIND)] = 600.0, fourier.NEAR
    batch[_at(fourier.V)], batch[_at(fourier.MU)] = 90.0**2, 549.0
    batch[_at(fourier.REST)] = _log_norm(90.0, True)
    out = [np.full(1, np.nan) for _ in range(3)]
    step, nodes = _coarse_plan(TOL)
    assert fourier.sum_near_batch(batch, 1, step, nodes, TOL, *out, np.empty(1, np.int64)) == 1
    assert abs(batch[_at(fourier.VALUE)] - exact_suppressed(90.0, 549.0, 600.0)[0]) > 1e3 * TOL


@nb.njit(error_model="numpy")
def _no_cubic_node(batch, i, j, within):
    """A planted bug: the phase without its L (u - sin u) term."""
    at = i + fourier.BATCH * np.arange(fourier.ROWS)
    u = j * batch[at[fourier.H]]
    v, el = batch[at[fourier.V]], batch[at[fourier.L]]
    w = math.exp(-0.5 * v * u * u - el * (1.0 - math.cos(u)))
    phase = -u * batch[at[fourier.GRAD]]
    batch[at[fourier.TOT]] += w * math.cos(phase)
    batch[at[fourier.KT]] += w * math.cos(phase - u)
    batch[at[fourier.MAG]] += w


def _batch_sums(sum_batch, cells, batch=None):
    """``sum_batch``'s log-likelihoods of ``cells``, (kind, rate, sigma, mu) with discrete noise.

    ``mu`` is the release of a published cell (its P(mu) is the noise's log-normaliser), or
    the cut, or the cut plus one for a suppressed cell summed above it, as ``queue`` puts them.
    ``batch``: the array to sum them in (its rows are left as ``sum_batch`` left them).
    """
    batch = np.zeros(fourier.ROWS * fourier.BATCH) if batch is None else batch
    for i, (kind, rate, sigma, mu) in enumerate(cells):
        for row, value in [
            (fourier.CELL, i), (fourier.KIND, kind), (fourier.LAM, rate),
            (fourier.V, sigma**2), (fourier.MU, mu), (fourier.REST, _log_norm(sigma, True)),
        ]:  # fmt: skip
            batch[row * fourier.BATCH + i] = value
    n = len(cells)
    logp, score, score_b, terms = np.full(n, np.nan), np.empty(n), np.empty(n), np.empty(n, int)
    step, nodes = fourier.plan(TOL)
    assert sum_batch(batch, n, step, nodes, TOL, logp, score, score_b, terms) == 0
    return logp


def test_companion_a_phase_without_its_cubic_term_fails_the_exact_sums():
    # the same batch check first passes with the real nodes, compiled and interpreted
    rates, offsets = [1500.0, 4e5], [4.0, 30.0]
    mus = [_releases("sigma 90", r, o)[0][1] for r, o in zip(rates, offsets, strict=True)]
    cells = [(fourier.PUBLISHED, r, 90.0, mu) for r, mu in zip(rates, mus, strict=True)]
    want = [exact("sigma 90", r, o)[0] for r, o in zip(rates, offsets, strict=True)]
    for sums in (fourier.sum_batch, interpreted(fourier.sum_batch)):
        assert np.max(np.abs(_batch_sums(sums, cells) - want)) <= TOL
    broken = interpreted(fourier.sum_batch, _node=_no_cubic_node)
    assert np.max(np.abs(_batch_sums(broken, cells) - want)) > 1e3 * TOL


def test_a_cell_gets_the_same_value_in_any_batch():
    rates, offsets = zip(*_cases(), strict=True)
    together = sweep("sigma 18.3", rates, offsets)[0]
    alone = [sweep("sigma 18.3", [r], [o])[0][0] for r, o in _cases()]
    np.testing.assert_array_equal(together, alone)


# Suppressed cells: the pageviews tiers, (sigma, cut) with cut = threshold - 1
TIERS = [(18.3, 89.0), (90.0, 549.0), (179.8, 999.0)]
SUPPRESSED_RATES = [150.0, 400.0, 800.0, 1500.0, 3000.0, 1e4, 1e5]


def _threshold(sigma, cut, n):
    inner = dp.DiscreteGaussian(np.full(n, sigma), event_shape=(n,))
    return dp.Thresholded(inner, threshold=np.full(n, cut + 1.0), publish="at_least")


def sweep_suppressed(sigma, cut, rates, *, cells=sweep_cells, tol=TOL):
    """The sweep of suppressed Poisson cells at ``rates``: (logp, score, terms)."""
    n = len(rates)
    form = release_form(_threshold(sigma, cut, n), np.full(n, np.nan), latent_discrete=True)
    out = [np.empty(n) for _ in range(3)]
    terms = np.empty(n, dtype=np.int64)
    state = np.full((n, STATE), np.nan)
    for _ in range(2):
        cells(POISSON, np.asarray(rates, dtype=float), np.zeros(n),
              *kernel_form(*joined_form([form])), tol, state, *out, terms, 0, n)  # fmt: skip
    return out[0], out[1], terms


@functools.cache
def exact_suppressed(sigma, cut, rate):
    """``(log P(count + noise <= cut), its derivative)`` by the brute-force sums of ``_brute``."""
    pairs = [(_threshold(sigma, cut, 1), np.array([np.nan]))]
    h = 1e-5 * rate
    value = log_marginal("poisson", rate, 0, pairs)
    up, down = (log_marginal("poisson", rate + d, 0, pairs) for d in (h, -h))
    return value, (up - down) / (2 * h)


def _contour(terms):
    """Whether a cell's term count is the contour integral's (at most MORE_NODES x nodes)."""
    return terms <= fourier.MORE_NODES * (NODES - 1) + 1


@pytest.mark.parametrize(("sigma", "cut"), TIERS)
def test_wide_suppressed_cells_are_the_exact_probabilities(sigma, cut):
    logp, score, terms = sweep_suppressed(sigma, cut, SUPPRESSED_RATES)
    # the cells a few widths or more from the cut take the contour integral, whether their
    # rate is above the cut (the probability summed) or below it (its complement)
    far = [abs(r - cut) > 4 * math.sqrt(r + sigma**2) for r in SUPPRESSED_RATES]
    assert all(_contour(terms)[far])
    for i, rate in enumerate(SUPPRESSED_RATES):
        want, want_score = exact_suppressed(sigma, cut, rate)
        assert abs(logp[i] - want) <= 3 * TOL + 1e-13 * abs(want), rate
        assert score[i] == pytest.approx(want_score, rel=1e-6, abs=1e-9), rate


@nb.njit(error_model="numpy")
def _complement_forgotten(batch, i):
    """A planted bug: a suppressed cell summed above its cut scores its complement."""
    return batch[fourier.VALUE * fourier.BATCH + i], -batch[fourier.SCORE * fourier.BATCH + i]


def test_companion_the_complement_taken_for_the_probability_fails():
    # far below the cut, the complement is summed; the real batch gives the probability
    rates = [80.0, 150.0]
    cells = [(fourier.ABOVE, r, 90.0, 550.0) for r in rates]
    want = [exact_suppressed(90.0, 549.0, r)[0] for r in rates]
    batch = np.zeros(fourier.ROWS * fourier.BATCH)
    assert np.max(np.abs(_batch_sums(fourier.sum_batch, cells, batch) - want)) <= 3 * TOL
    # _result is the batch's last step: the planted one, on the rows the batch left
    broken = [_complement_forgotten(batch, i)[0] for i in range(len(cells))]
    assert np.min(np.abs(np.array(broken) - want)) > 1e3 * TOL


# Suppressed cells near their cut: offsets from the cut in widths sqrt(cut + sigma^2)
NEAR_OFFSETS = [-4.5, -2.0, -0.5, 0.0, 0.3, 1.0, 2.5, 4.5]


def _near(sigma, cut):
    """The positive rates at ``NEAR_OFFSETS`` from the cut, and whether each is wide."""
    rates = [cut + k * math.sqrt(cut + sigma**2) for k in NEAR_OFFSETS]
    rates = [r for r in rates if r >= 1.0]
    return rates, [1.0 / sigma**2 + 1.0 / r <= 1.0 / fourier.WIDE_NEAR**2 for r in rates]


@pytest.mark.parametrize(("sigma", "cut"), [*TIERS, (300.0, 2999.0)])
def test_suppressed_cells_near_their_cut_are_the_exact_probabilities(sigma, cut):
    rates, wide = _near(sigma, cut)
    logp, score, terms = sweep_suppressed(sigma, cut, rates)
    assert np.all(terms[wide] == NODES)  # within NEAR_CUT widths: sum_near_batch's nodes
    for i, rate in enumerate(rates):
        want, want_score = exact_suppressed(sigma, cut, rate)
        assert abs(logp[i] - want) <= 3 * TOL + 1e-13 * abs(want), rate
        assert score[i] == pytest.approx(want_score, rel=1e-6, abs=1e-9), rate


@nb.njit(error_model="numpy")
def _pole_part_on_the_real_line(batch, i, j):
    """A planted bug: the pole's part with the phase it has on the real line (b for b - ct)."""
    at = i + fourier.BATCH * np.arange(fourier.ROWS)
    u, t = j * batch[at[fourier.H]], batch[at[fourier.TAU]]
    c = batch[at[fourier.V]] + batch[at[fourier.LAM]]
    size = math.exp(-0.5 * c * u * u) / (u * u + t * t)
    phase = u * (batch[at[fourier.MU]] - batch[at[fourier.LAM]])
    batch[at[fourier.QTOT]] += size * (u * math.sin(phase) - t * math.cos(phase))
    batch[at[fourier.QMAG]] += size * (u + abs(t))


def test_companion_the_pole_part_on_the_real_line_fails_the_exact_probabilities():
    rates = [549.0, 600.0, 450.0]
    cells = [(fourier.NEAR, r, 90.0, 549.0) for r in rates]
    want = [exact_suppressed(90.0, 549.0, r)[0] for r in rates]
    for sums in (fourier.sum_near_batch, interpreted(fourier.sum_near_batch)):
        assert np.max(np.abs(_batch_sums(sums, cells) - want)) <= 3 * TOL
    broken = interpreted(fourier.sum_near_batch, _node_pole=_pole_part_on_the_real_line)
    assert np.max(np.abs(_batch_sums(broken, cells) - want)) > 1e3 * TOL
