r"""Compiled terms of the per-cell form: each noise kind's formulas, written once.

For cell ``i`` of a form (:data:`~dpinfer.noise.form.CELL` records) with its
log-CDF tables ``table`` (:func:`~dpinfer.noise.form.log_cdf_tables`, or
:data:`~dpinfer.noise.form.NO_TABLE`) and a confidential value ``s``:

- :func:`term`: the log-density of the release at ``s`` (or, for a suppressed
  cell, the log-probability of suppression), ``-inf`` outside the support;
- :func:`published_term`: :func:`term` of a published cell, without the table
  (for loops over forms without suppressed cells);
- :func:`log_ratio`: ``term(s + 1) - term(s)``, written to cancel exactly
  what cancels;
- :func:`mode`: where the term peaks in ``s`` (``-inf`` for a suppressed cell,
  whose term only falls as ``s`` grows);
- :func:`support`: the confidential values the term allows;
- :func:`log_below`: ``log P(X <= k)`` for the cell's noise ``X``, accurate in
  both tails;
- :func:`gaussian_line`: ``(A, B)`` with ``log_ratio = A - B s`` for a published
  Gaussian cell (its ratio is then updated by products), NaNs otherwise.

The per-kind formulas below them take plain numbers, for consumers that hold
their parameters elsewhere. Every formula divides by the scale before squaring,
so it overflows only where the log-density itself is beyond the float64 range,
and the difference ``r - s`` is halved first where it alone would overflow.
Everything is compiled with NumPy's error model: a division by zero gives
``inf`` or NaN, never an exception in the middle of a sum.

:func:`log_terms` evaluates :func:`term` over a matrix of values (one row per
cell), for NumPy callers.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ._special import log_ndtr
from .discrete_gaussian import compiled_log_cdf as discrete_gaussian_log_cdf
from .form import BINOMIAL, DISCRETE_GAUSSIAN, DISCRETE_LAPLACE, GAUSSIAN, LAPLACE, table_range

__all__ = [
    "binomial_log_ratio",
    "binomial_mode",
    "binomial_term",
    "discrete_laplace_log_cdf",
    "gaussian_line",
    "gaussian_log_cdf",
    "gaussian_log_ratio",
    "gaussian_term",
    "laplace_log_cdf",
    "laplace_log_ratio",
    "laplace_term",
    "log_below",
    "log_ratio",
    "log_terms",
    "mode",
    "published_term",
    "ratio_table",
    "scaled_gap",
    "support",
    "table_ratio",
    "tabled_ratio",
    "term",
]

_LOG2 = math.log(2.0)
_JIT = {"cache": True, "error_model": "numpy"}


# --- the formulas of each kind --------------------------------------------------------


@nb.njit(**_JIT)
def scaled_gap(r, s, scale):
    """``(r - s) / scale``, also where ``r - s`` alone overflows (then halved first)."""
    d = r - s
    if abs(d) < math.inf:
        return d / scale
    return (0.5 * r - 0.5 * s) / scale * 2.0


@nb.njit(**_JIT)
def laplace_term(r, s, scale, log_norm):
    """``log_norm - |r - s| / scale``: the (discrete) Laplace log-density."""
    return log_norm - abs(scaled_gap(r, s, scale))


@nb.njit(**_JIT)
def laplace_log_ratio(r, s, scale):
    """``laplace_term(s + 1) - laplace_term(s)``."""
    return (abs(r - s) - abs(r - s - 1.0)) / scale


@nb.njit(**_JIT)
def laplace_log_cdf(x, scale):
    """``log P(X <= x)`` for Laplace noise of scale ``scale``."""
    z = x / scale
    return z - _LOG2 if z < 0.0 else math.log1p(-0.5 * math.exp(-z))


@nb.njit(**_JIT)
def discrete_laplace_log_cdf(k, scale, log1p_p):
    """``log P(X <= k)`` for discrete Laplace noise, integer ``k``; ``log1p_p = log(1 + p)``."""
    if k < 0.0:
        return k / scale - log1p_p
    return math.log1p(-math.exp(-(k + 1.0) / scale - log1p_p))


@nb.njit(**_JIT)
def gaussian_term(r, s, sigma, log_norm):
    """``log_norm - z^2 / 2``, ``z = (r - s) / sigma``: the (discrete) Gaussian log-density."""
    z = scaled_gap(r, s, sigma)
    return log_norm - (0.5 * z) * z


@nb.njit(**_JIT)
def gaussian_log_ratio(r, s, sigma):
    """``gaussian_term(s + 1) - gaussian_term(s)``."""
    return ((r - s) - 0.5) / sigma / sigma


@nb.njit(**_JIT)
def gaussian_log_cdf(x, sigma):
    """``log P(X <= x)`` for Gaussian noise."""
    return log_ndtr(x / sigma)


@nb.njit(**_JIT)
def binomial_term(r, s, trials, pseudo_count, population, log_norm):
    """``log_norm + r log(s + m) + (n - r) log(K + m - s)``: the binomial release."""
    right = (population + pseudo_count) - s
    return log_norm + r * math.log(s + pseudo_count) + (trials - r) * math.log(right)


@nb.njit(**_JIT)
def binomial_log_ratio(r, s, trials, pseudo_count, population):
    """``binomial_term(s + 1) - binomial_term(s)``."""
    right = (population + pseudo_count) - s
    return r * math.log1p(1.0 / (s + pseudo_count)) + (trials - r) * math.log1p(-1.0 / right)


@nb.njit(**_JIT)
def binomial_mode(r, trials, pseudo_count, population):
    """Where the binomial release's term peaks in ``s`` (unconstrained)."""
    b, d = trials - r, population + pseudo_count
    return (r * d - b * pseudo_count) / (r + b) if r + b > 0 else -pseudo_count


# --- the form: dispatch on each cell's kind -------------------------------------------


@nb.njit(**_JIT)
def support(form, i):
    """``(lower, upper)``: the confidential values cell ``i``'s term allows."""
    cell = form[i]
    if cell.kind == BINOMIAL:
        return 0.0, cell.population
    return -math.inf, math.inf


@nb.njit(**_JIT)
def term(form, table, i, s):
    """Cell ``i``'s log-density at ``s`` (suppressed: ``log P(suppressed | s)``)."""
    cell = form[i]
    if cell.suppressed:
        if math.isnan(s):
            return -math.inf
        return log_below(form, table, i, cell.released - s)
    return published_term(form, i, s)


@nb.njit(**_JIT)
def published_term(form, i, s):
    """:func:`term` of a published cell ``i`` (no table, no call: a loop over it stays tight).

    ``-inf`` outside the support (and at NaN).
    """
    cell = form[i]
    kind, r = cell.kind, cell.released
    if kind < GAUSSIAN:  # LAPLACE, DISCRETE_LAPLACE
        return laplace_term(r, s, cell.scale, cell.log_norm) if s == s else -math.inf
    if kind < BINOMIAL:  # GAUSSIAN, DISCRETE_GAUSSIAN
        return gaussian_term(r, s, cell.scale, cell.log_norm) if s == s else -math.inf
    if not (s >= 0.0 and s <= cell.population):
        return -math.inf
    return binomial_term(r, s, cell.trials, cell.pseudo_count, cell.population, cell.log_norm)


@nb.njit(**_JIT)
def log_ratio(form, table, i, s):
    """``term(form, table, i, s + 1) - term(form, table, i, s)`` within the support."""
    cell = form[i]
    kind, r = cell.kind, cell.released
    if cell.suppressed:
        return log_below(form, table, i, r - s - 1.0) - log_below(form, table, i, r - s)
    if kind == LAPLACE or kind == DISCRETE_LAPLACE:
        return laplace_log_ratio(r, s, cell.scale)
    if kind == GAUSSIAN or kind == DISCRETE_GAUSSIAN:
        return gaussian_log_ratio(r, s, cell.scale)
    return binomial_log_ratio(r, s, cell.trials, cell.pseudo_count, cell.population)


@nb.njit(**_JIT)
def mode(form, i):
    """Where cell ``i``'s term peaks in ``s`` (a suppression term only falls: ``-inf``)."""
    cell = form[i]
    if cell.suppressed:
        return -math.inf
    if cell.kind == BINOMIAL:
        return binomial_mode(cell.released, cell.trials, cell.pseudo_count, cell.population)
    return cell.released


@nb.njit(**_JIT)
def log_below(form, table, i, k):
    """``log P(X <= k)`` for cell ``i``'s noise (``k`` real; an integer for discrete noise)."""
    cell = form[i]
    kind, scale = cell.kind, cell.scale
    if kind == DISCRETE_GAUSSIAN:
        # from the cell's table where it has one: 0 above it, a direct sum below it
        if cell.table_start >= 0.0:
            low, high = table_range(scale)
            if k > high:
                return 0.0
            if k >= low:
                return table[int(cell.table_start + k - low)]
        return discrete_gaussian_log_cdf(k, scale, -cell.log_norm)
    if kind == LAPLACE:
        return laplace_log_cdf(k, scale)
    if kind == GAUSSIAN:
        return gaussian_log_cdf(k, scale)
    return discrete_laplace_log_cdf(k, scale, cell.log1p_p)


@nb.njit(**_JIT)
def gaussian_line(form, i):
    """Return ``(A, B)`` with ``log_ratio(form, table, i, s) = A - B s`` (published Gaussians).

    NaNs for any other cell, whose log-ratio is not a line in ``s``.
    """
    cell = form[i]
    kind = cell.kind
    if cell.suppressed or not (kind == GAUSSIAN or kind == DISCRETE_GAUSSIAN):
        return math.nan, math.nan
    sigma = cell.scale
    return (cell.released - 0.5) / sigma / sigma, 1.0 / sigma / sigma


@nb.njit(**_JIT)
def ratio_table(form, i):
    """``(at, low, high)``: where ``F(k - 1) / F(k)`` at ``k = 0`` would sit in the table.

    For a suppressed discrete Gaussian cell with a table; ``(0, 0, -1)`` (an
    empty range) for any other.
    """
    cell = form[i]
    if not (cell.table_start >= 0.0 and cell.suppressed and cell.kind == DISCRETE_GAUSSIAN):
        return 0.0, 0.0, -1.0
    low, high = table_range(cell.scale)
    return cell.table_start + (high - low + 1.0) - low, low, high


@nb.njit(cache=True, error_model="numpy", inline="always")
def table_ratio(table, at, low, high, k):
    """``F(k - 1) / F(k)`` from the ratio table whose ``k = 0`` is at ``at``; -1 off it."""
    return table[int(at + k)] if low <= k <= high else -1.0


@nb.njit(**_JIT)
def tabled_ratio(form, table, i, s):
    """``exp(log_ratio(form, table, i, s))`` of a cell with a ratio table; else -1."""
    at, low, high = ratio_table(form, i)
    return table_ratio(table, at, low, high, form[i].released - s)


@nb.njit(**_JIT)
def log_terms(form, table, s):
    """``term(form, table, i, s[i, j])`` for every row ``i`` (a cell) and column ``j``."""
    out = np.empty(s.shape)
    for i in range(s.shape[0]):
        for j in range(s.shape[1]):
            out[i, j] = term(form, table, i, s[i, j])
    return out
