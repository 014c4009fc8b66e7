r"""One cell of a group with an exact total: its factor, tilted, summed over a window.

A group's cells (:mod:`._groups`) are described by a table with one row per cell
(columns below). For a tilt :math:`e^{\lambda}`, cell :math:`i`'s tilted factor is
:math:`t_i(k) = p(k \mid a_i, b_i) \prod_m \eta_{im}(r_{im} \mid k)\, e^{\lambda k}`:
:func:`walk_cells` finds each factor's mode and walks its window outward from it, as
:func:`._kernels._cell` walks a cell, until the geometric bound on the rest is below
``eps`` of the window's sum, and records the window's tilted mean and variance;
:func:`search_tilt` finds a tilt at which the tilted means add up to the group's total.

Numba caches the functions of :mod:`._groups` keyed on that file alone, with the code
of what they call from here: after changing this module, remove this folder's
``__pycache__``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from . import _dispatch as latent
from ._kernels import COUNTABLE, _bound, _mechanisms_ratio

__all__ = [
    "BEYOND",
    "CAP",
    "COLUMNS",
    "EDGE",
    "EPS",
    "GA",
    "GB",
    "HI",
    "INEXACT",
    "LO",
    "MEAN",
    "MODE",
    "OFF",
    "OK",
    "SUM",
    "UNREACHABLE",
    "VAR",
    "WIDE",
    "WLEN",
    "WLO",
    "mech_ratio",
    "search_tilt",
    "walk_cells",
]

#: Status of a group: summed; its total out of reach of the windows; a window beyond
#: +-(2**53 - 1); a convolution too large; not exact to ``tol`` after the retries.
OK, UNREACHABLE, BEYOND, WIDE, INEXACT = 0, 1, 2, 3, 4

_JIT = {"cache": True, "error_model": "numpy"}
_MAX_WINDOW = 1 << 24  # terms of one cell's window
_NEWTON_STEPS = 200
_MAX_TILT = 700.0  # e^700 is finite

# Columns of a group's per-cell table: support, mode, the Gaussian line of the releases'
# ratio, the window (first value, length, offset in the values), the window's sum relative
# to the mode, its neglected-mass bound, the tilted mean and variance, the largest
# log-tilt whose tilted factor still has a finite sum, and 1 where the latent's parameters
# are at the boundary where its scores are limits (its window then ends in a zero, kept).
LO, HI, MODE, GA, GB, WLO, WLEN, OFF, SUM, EPS, MEAN, VAR, CAP, EDGE = range(14)
COLUMNS = 14
_FULL = -1  # a walk that ran out of buffer
_TOO_WIDE = -2


@nb.njit(**_JIT)
def mech_ratio(form, table, n, j, s, ga, gb):
    """``prod_m eta_m(s + 1) / eta_m(s)`` (through ``exp(A - B s)`` for Gaussian releases)."""
    if math.isfinite(ga):
        return math.exp(ga - gb * s)
    return _mechanisms_ratio(form, table, n, j, s)


@nb.njit(**_JIT)
def _rising(family, a, b, form, table, n, j, s, tilt, ga, gb):
    """Whether the tilted factor rises from ``s`` to ``s + 1``."""
    return latent.ratio(family, a, b, s) * mech_ratio(form, table, n, j, s, ga, gb) * tilt > 1.0


@nb.njit(**_JIT)
def _mode(family, a, b, form, table, n, j, lo, hi, hint, tilt, ga, gb):
    """Return the first ``s`` in ``[lo, hi]`` where the tilted factor stops rising.

    Doubling steps from ``hint`` bracket it, bisection finds it; for a log-concave
    factor it is the mode whatever the hint.
    """
    s = min(max(hint, lo), hi)
    if s < hi and _rising(family, a, b, form, table, n, j, s, tilt, ga, gb):
        left, right, step = s + 1.0, hi, 1.0
        while True:
            probe = s + step
            if probe >= hi:
                break
            if not _rising(family, a, b, form, table, n, j, probe, tilt, ga, gb):
                right = probe
                break
            left, step = probe + 1.0, 2.0 * step
    else:
        left, right, step = lo, s, 1.0
        while True:
            probe = s - step
            if probe <= lo:
                break
            if _rising(family, a, b, form, table, n, j, probe, tilt, ga, gb):
                left = probe + 1.0
                break
            right, step = probe, 2.0 * step
    while left < right:
        mid = left + np.floor(0.5 * (right - left))
        if _rising(family, a, b, form, table, n, j, mid, tilt, ga, gb):
            left = mid + 1.0
        else:
            right = mid
    return left


@nb.njit(**_JIT)
def _walk(family, a, b, form, table, n, j, row, tilt, eps, right, left):
    """Sum cell j's tilted factor from its mode outward, as :func:`._kernels._cell` does.

    Fills ``right[d] = t(mode + d) / t(mode)`` and ``left[d - 1] = t(mode - d) / t(mode)``.
    Returns ``(terms right, terms left, sum, bound of the rest relative to the sum)``;
    ``_FULL`` terms when a buffer is too short, ``_TOO_WIDE`` past ``_MAX_WINDOW``.
    """
    lo, hi, mode, ga, gb = row[LO], row[HI], row[MODE], row[GA], row[GB]
    concave = latent.log_concave(family, a, b)
    step, up, down = math.exp(-gb), 0.0, 0.0
    fast = False
    if math.isfinite(ga):
        up, down = math.exp(ga - gb * mode), math.exp(gb * (mode - 1.0) - ga)
        fast = 0.0 < up < math.inf and 0.0 < down < math.inf
    right[0] = 1.0
    n_r, n_l = 1, 0
    total_r, total_l = 1.0, 0.0
    s, w, s_l, w_l = mode, 1.0, mode, 1.0
    bound_r = 0.0 if s >= hi else math.inf
    bound_l = 0.0 if s_l <= lo else math.inf
    half = 0.5 * eps
    while True:
        small = half * (total_r + total_l)
        go_r, go_l = bound_r > small, bound_l > small
        if not (go_r or go_l):
            break
        if n_r + n_l >= _MAX_WINDOW:
            return _TOO_WIDE, 0, 0.0, 0.0
        if (go_r and n_r >= right.size) or (go_l and n_l >= left.size):
            return _FULL, 0, 0.0, 0.0
        if go_r:
            if fast:
                mech = up
                up *= step
            else:
                mech = _mechanisms_ratio(form, table, n, j, s)
            ratio = latent.ratio(family, a, b, s) * mech * tilt
            s += 1.0
            w *= ratio
            right[n_r] = w
            n_r += 1
            total_r += w
            later = ratio if concave else mech * latent.ratio_bound(family, a, b) * tilt
            bound_r = 0.0 if (s >= hi or w == 0.0) else _bound(w, later)
        if go_l:
            if fast:
                back = down
                down *= step
            else:
                back = 1.0 / _mechanisms_ratio(form, table, n, j, s_l - 1.0)
            back /= latent.ratio(family, a, b, s_l - 1.0) * tilt
            s_l -= 1.0
            w_l *= back
            left[n_l] = w_l
            n_l += 1
            total_l += w_l
            later = back if concave else math.inf
            bound_l = 0.0 if (s_l <= lo or w_l == 0.0) else _bound(w_l, later)
    total = total_r + total_l
    return n_r, n_l, total, (bound_r + bound_l) / total


@nb.njit(**_JIT)
def _room(buffer, used, need):
    """``buffer``, or a copy with room for ``need`` more values after the first ``used``."""
    if used + need <= buffer.size:
        return buffer
    bigger = np.empty(max(2 * buffer.size, used + need))
    bigger[:used] = buffer[:used]
    return bigger


@nb.njit(**_JIT)
def walk_cells(family, pa, pb, form, table, n, start, cells, tilt, eps, store, vals, right, left):
    """Walk every cell of a group at ``tilt``; with ``store``, keep the normalised windows.

    Fills each row's mode, window, sum, bound, tilted mean and variance. Returns
    ``(status, vals, right, left)`` (the buffers, grown where they had to be).
    """
    used = np.int64(0)  # not a literal 0, which would compile _room a second time
    for c in range(cells.shape[0]):
        row = cells[c]
        j = start + c
        a, b = pa[j], pb[j]
        row[MODE] = _mode(
            family, a, b, form, table, n, j, row[LO], row[HI], row[MODE], tilt, row[GA], row[GB]
        )
        while True:
            n_r, n_l, total, bound = _walk(
                family, a, b, form, table, n, j, row, tilt, eps, right, left
            )
            if n_r != _FULL:
                break
            right, left = np.empty(2 * right.size), np.empty(2 * left.size)
        if n_r == _TOO_WIDE:
            return WIDE, vals, right, left
        row[WLO], row[WLEN], row[SUM], row[EPS] = row[MODE] - n_l, n_l + n_r, total, bound
        if row[WLO] <= -COUNTABLE or row[WLO] + row[WLEN] - 1.0 >= COUNTABLE:
            return BEYOND, vals, right, left
        first, second = 0.0, 0.0
        for d in range(1, n_r):
            first += d * right[d]
            second += d * d * right[d]
        for d in range(1, n_l + 1):
            first -= d * left[d - 1]
            second += d * d * left[d - 1]
        shift = first / total
        row[MEAN], row[VAR] = row[MODE] + shift, max(second / total - shift * shift, 0.0)
        if store:
            vals = _room(vals, used, n_l + n_r)
            row[OFF] = used
            inv = 1.0 / total
            for d in range(n_l):
                vals[used + d] = left[n_l - 1 - d] * inv
            for d in range(n_r):
                vals[used + n_l + d] = right[d] * inv
            used += n_l + n_r
    return OK, vals, right, left


@nb.njit(**_JIT)
def search_tilt(family, pa, pb, form, table, n, start, cells, total, eps, vals, right, left):
    """Find a tilt whose tilted means add up to ``total``, walking windows at ``eps``.

    Newton steps on the sum of the tilted means (on its log where the total is far from
    it, as for a Poisson sum the mean moves as ``e^lambda``), kept inside the bracket
    that the signs found so far give, until the sum is within two standard deviations
    (where the convolution at the total is still a sizeable part of its peak). Returns
    ``(status, log tilt, variance, gap, vals, right, left)``, the windows of the last
    pass stored in ``vals``.
    """
    log_tilt, lower, upper = 0.0, -_MAX_TILT, min(_MAX_TILT, cells[:, CAP].min())
    var, gap = 0.0, 0.0
    for _ in range(_NEWTON_STEPS):
        tilt = math.exp(log_tilt)
        status, vals, right, left = walk_cells(
            family, pa, pb, form, table, n, start, cells, tilt, eps, True, vals, right, left
        )
        if status != OK:
            break
        mean, var = cells[:, MEAN].sum(), cells[:, VAR].sum()
        gap = mean - total
        if abs(gap) <= 2.0 * math.sqrt(var) + 0.5 or upper - lower < 1e-12:
            break
        if gap < 0.0:
            lower = log_tilt
        else:
            upper = log_tilt
        nxt = math.nan
        if var > 0.0:
            if total > 0.0 and mean > 0.0 and (total < 0.5 * mean or total > 2.0 * mean):
                nxt = log_tilt + (math.log(total) - math.log(mean)) * mean / var
            else:
                nxt = log_tilt - gap / var
        if not (lower < nxt < upper):
            nxt = 0.5 * (lower + upper)
        log_tilt = nxt
    return status, log_tilt, var, gap, vals, right, left
