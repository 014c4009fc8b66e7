"""One evaluation of every cell: the blocked Poisson path where it applies, else the general sum.

:func:`marginal_sweep` is what the Op calls; it keeps a per-cell state between
evaluations (:mod:`._poisson`). :func:`marginal_cells` is the same with a fresh state.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ._kernels import POISSON, _cell, _mechanisms_ratio, _scores, _support
from ._poisson import MODE, STATE, STEP, prepare, ready, stays, sum_cell, width_factor

# numba's cache of these functions holds the code of what they call, but is keyed on this
# file alone: after changing ._poisson or ._kernels, remove this folder's __pycache__.


@nb.njit(cache=True, error_model="numpy")
def marginal_cells(
    family, pa, pb, kinds, released, coef, table, tol, hints, logp, score_a, score_b, terms
):
    """Fill ``logp``, the scores and the term counts of every cell; update the mode ``hints``.

    ``hints`` are only starting points for the search of each cell's mode: the
    result does not depend on them. :func:`marginal_sweep` with a fresh state.
    """
    state = np.full((pa.size, STATE), math.nan)
    state[:, MODE] = hints
    marginal_sweep(
        family, pa, pb, kinds, released, coef, table, tol, state, logp, score_a, score_b, terms
    )
    hints[:] = state[:, MODE]


@nb.njit(cache=True, error_model="numpy")
def marginal_sweep(
    family, pa, pb, kinds, released, coef, table, tol, state, logp, score_a, score_b, terms
):
    """:func:`marginal_cells` with the per-cell ``state`` (``(n, STATE)``) of the last call.

    ``state`` must be all NaN, or left by a call with the same releases
    (``kinds``, ``released``, ``coef``, ``table``): it holds each cell's last
    mode and constants of the releases, so that a Poisson cell with Gaussian
    releases is summed by :mod:`._poisson` without recomputing them.
    """
    out = np.empty(5)
    z = width_factor(tol)
    for j in range(pa.size):
        row = state[j]
        if family == POISSON:
            if math.isnan(row[STEP]):
                prepare(kinds, released, coef, j, row)
            if row[STEP] > 0.0 and (
                stays(pa[j], row) or ready(pa[j], kinds, released, coef, table, j, row)
            ):
                logp[j], score_a[j], terms[j] = sum_cell(pa[j], row, z, 0.5 * tol)
                score_b[j] = 0.0
                continue
        _general(family, pa[j], pb[j], kinds, released, coef, table, tol, j, row, out)
        logp[j], terms[j], score_a[j], score_b[j] = out[0], out[3], out[1], out[2]


@nb.njit(cache=True, error_model="numpy")
def _general(family, a, b, kinds, released, coef, table, tol, j, row, out):
    """Sum cell j by :func:`._kernels._cell`: out = (logp, score_a, score_b, terms, mode)."""
    _cell(family, a, b, kinds, released, coef, table, j, tol, row[MODE], out)
    row[MODE] = out[4]
    if not math.isfinite(out[0]):
        out[1], out[2] = (math.nan, math.nan) if math.isnan(out[0]) else (0.0, 0.0)
    elif family == POISSON and a == 0.0:
        # the limit of E[s] / mu - 1 at mu = 0: t(1) / t(0) - 1
        lo, hi = _support(family, a, b, coef, j)
        up = _mechanisms_ratio(kinds, released, coef, table, j, 0.0) if hi >= 1.0 else 0.0
        out[1], out[2] = up - 1.0, 0.0
    else:
        out[1], out[2] = _scores(family, a, b, out[1], out[2])
