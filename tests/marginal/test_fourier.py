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
import types

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
    """A planted plan: steps of 3 widths, half the nodes."""
    step, nodes = fourier.plan(tol)
    return 4 * step, max(nodes // 4, 1)


def _with(function, **replaced):
    """``function`` (a numba dispatcher) recompiled with some of its globals replaced."""
    code = function.py_func
    namespace = {**code.__globals__, **replaced}
    return nb.njit(error_model="numpy")(types.FunctionType(code.__code__, namespace))


def _module_with(**replaced):
    """A copy of ``._fourier`` with some of its functions replaced."""
    module = types.ModuleType("planted_fourier")
    module.__dict__.update({**vars(fourier), **replaced})
    return module


def test_the_bounds_refuse_a_coarse_plan_and_the_sum_over_s_takes_those_cells():
    # planted: a step four times too coarse and a quarter of the nodes. The bounds refuse
    # every cell, and the sweep sums them over s: still the exact values.
    broken_sweep = _with(sweep_cells, fourier=_module_with(plan=nb.njit(_coarse_plan)))
    logp, _, terms = sweep("sigma 90", [1500.0, 4e5], [0.0, 4.0], cells=broken_sweep)
    assert np.all(terms != NODES) and np.all(terms > 100)
    for i, (rate, offset) in enumerate([(1500.0, 0.0), (4e5, 4.0)]):
        assert abs(logp[i] - exact("sigma 90", rate, offset)[0]) <= TOL


def test_companion_the_coarse_plan_is_wrong_where_not_refused():
    # the same plan with its refusals ignored: values off by far more than tol, so the
    # bounds above refused cells that needed refusing
    batch = np.empty((fourier.ROWS, 1))
    step, nodes = _coarse_plan(TOL)
    pairs = _releases("sigma 90", 1500.0, 4.0)
    batch[fourier.CELL, 0], batch[fourier.LAM, 0] = 0, 1500.0
    batch[fourier.V, 0], batch[fourier.MU, 0] = 90.0**2, pairs[0][1]
    batch[fourier.REST, 0] = float(_log_term(pairs, mp.mpf(1500.0), mp.mpf(pairs[0][1]))) - float(
        mp.mpf(pairs[0][1]) * mp.log(1500.0) - 1500.0 - mp.loggamma(pairs[0][1] + 1)
    )
    out = [np.full(1, np.nan) for _ in range(3)]
    refused = fourier.sum_batch(batch, 1, step, nodes, TOL, *out, np.empty(1, np.int64))
    assert refused == 1
    assert abs(batch[fourier.VALUE, 0] - exact("sigma 90", 1500.0, 4.0)[0]) > 1e3 * TOL


@nb.njit(cache=False)
def _no_cubic_node(batch, i, j):
    """A planted bug: the phase without its L (u - sin u) term."""
    u = j * batch[fourier.H, i]
    v, el = batch[fourier.V, i], batch[fourier.L, i]
    vers = 1.0 - math.cos(u)
    w = math.exp(-0.5 * v * u * u - el * vers)
    phase = -u * batch[fourier.GRAD, i]
    batch[fourier.TOT, i] += w * math.cos(phase)
    batch[fourier.KT, i] += w * math.cos(phase - u)
    batch[fourier.MAG, i] += w
    batch[fourier.LAST, i] = w


def test_companion_a_phase_without_its_cubic_term_fails_the_exact_sums():
    broken = _module_with(sum_batch=_with(fourier.sum_batch, _node=_no_cubic_node))
    broken_sweep = _with(sweep_cells, fourier=broken)
    rates, offsets = [1500.0, 4e5], [4.0, 30.0]
    logp, _, terms = sweep("sigma 90", rates, offsets, cells=broken_sweep)
    errors = [
        abs(logp[i] - exact("sigma 90", r, o)[0])
        for i, (r, o) in enumerate(zip(rates, offsets, strict=True))
    ]
    assert np.any(terms == NODES) and max(errors) > 1e3 * TOL


def test_a_cell_gets_the_same_value_in_any_batch():
    rates, offsets = zip(*_cases(), strict=True)
    together = sweep("sigma 18.3", rates, offsets)[0]
    alone = [sweep("sigma 18.3", [r], [o])[0][0] for r, o in _cases()]
    np.testing.assert_array_equal(together, alone)
