r"""Compiled sums over the splits of an exact total among a group of cells.

For a group of cells :math:`i = 1, \dots, n` whose latent counts add up to a
published exact total :math:`T`, each cell's factor is that of :mod:`._kernels`,
:math:`f_i(k) = p(k \mid a_i, b_i) \prod_m \eta_{im}(r_{im} \mid k)`, and the
group's likelihood sums over the splits of the total:

.. math:: L = \sum_{k_1 + \dots + k_n = T} \prod_i f_i(k_i) = (f_1 * \dots * f_n)(T).

**The tilt.** For any :math:`\lambda`, the tilted factors
:math:`t_i(k) = f_i(k) e^{\lambda k}` give :math:`L = e^{-\lambda T} (t_1 * \dots * t_n)(T)`.
The sum is taken at a :math:`\lambda` where the tilted cells' means add up to
:math:`T` within half a standard deviation (a safeguarded Newton search): the
convolution then peaks at :math:`T`, and each cell's window is where its tilted
factor has mass, wherever the parameters put the untilted factors (far from the
total during a sampler's warm-up).

**The windows and the tolerance.** Each tilted factor is summed as :mod:`._kernels`
sums a cell: from its mode outward, each side until the geometric bound on the rest
(valid for a log-concave factor; the family's ``ratio_bound`` otherwise) is below
``eps / 2`` of the partial sum. With :math:`q_i` the tilted factor normalised over
its window and :math:`\epsilon_i` the bound of its neglected mass (relative), the
neglected part of :math:`P = (q_1 * \dots * q_n)(T)` is at most
:math:`\sum_i \epsilon_i` (times :math:`1 + \sum_i \epsilon_i`), since every
convolution of the other factors is at most one. The computed :math:`P` is a lower
bound of the exact one, so the group's likelihood is exact to ``tol`` (relative,
hence within ``tol`` in the log) once :math:`\sum_i \epsilon_i \le \mathrm{tol}\,P`:
that is checked after each pass, and the windows are widened until it holds.

**The convolution.** Forward, :math:`\alpha_p`, the law of the first :math:`p`
cells' sum, each kept on the sums from which :math:`T` is still reachable through
the later windows (a restriction that drops nothing); backward, :math:`\beta_p(s)`,
the probability that the later cells add :math:`T - s`, and in the same pass
:math:`\gamma_i(k) = \sum_m \alpha_{i-1}(m) \beta_i(m + k)`, the probability that
the cells other than :math:`i` add up to :math:`T - k`. Then :math:`P = \alpha_n(T)`
and the law of cell :math:`i`'s count given the releases and the total is
:math:`q_i(k) \gamma_i(k) / P`.

**The gradient** is Fisher's identity, as for one cell: the derivative of
:math:`\log L` in cell :math:`i`'s parameters is the conditional mean of the
latent's score, which the family's ``scores`` writes from the conditional means of
:math:`s` and of its statistic.

The same forward pass, without releases, draws the latent counts given the total
(:func:`group_draws`): backward, each cell's count from its law given the sum of
the cells before it.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..noise.form import size
from ..noise.terms import support
from . import _dispatch as latent
from ._convolve import backward, domains, forward, work
from ._kernels import COUNTABLE, _gaussian_ratio, _mechanisms, _support
from ._tilt import (
    BEYOND,
    CAP,
    COLUMNS,
    EDGE,
    EPS,
    GA,
    GB,
    HI,
    INEXACT,
    LO,
    MODE,
    OFF,
    OK,
    SUM,
    UNREACHABLE,
    WIDE,
    WLEN,
    WLO,
    mech_ratio,
    search_tilt,
    walk_cells,
)

__all__ = [
    "BEYOND",
    "INEXACT",
    "OK",
    "UNREACHABLE",
    "WIDE",
    "group_draws",
    "group_sweep",
    "release_supports",
]

_JIT = {"cache": True, "error_model": "numpy"}
_MAX_WORK = 4e9  # multiply-adds of one group's convolution (a few seconds)
_RETRIES = 6
_FAR = 2.0**52  # where a factor's ratio is taken as its limit in the upper tail
# numba caches these functions keyed on this file alone, with the code of what they call
# from ._tilt, ._convolve, ._kernels, ._families and dpinfer.noise: after changing those,
# remove this folder's __pycache__


@nb.njit(**_JIT)
def _prepare(family, pa, pb, form, table, n, start, stop, total):
    """Return the group's per-cell table (supports, starting modes) and where the total lies.

    Returns ``(cells, state)``: state 0 when the total lies strictly inside the sum of
    the supports, 1 when it equals their lower end, 2 their upper end, -1 when outside
    them or some cell's parameters are invalid (a likelihood of zero).
    """
    cells = np.full((stop - start, COLUMNS), math.nan)
    sum_lo, sum_hi = 0.0, 0.0
    for c in range(stop - start):
        j = start + c
        a, b = pa[j], pb[j]
        if not latent.valid(family, a, b):
            return cells, -1
        lo, hi = _support(family, a, b, form, n, j)
        if lo > hi:
            return cells, -1
        ga, gb = _gaussian_ratio(form, n, j)
        row = cells[c]
        row[LO], row[HI], row[GA], row[GB] = lo, hi, ga, gb
        row[MODE] = latent.mode(family, a, b)
        row[EDGE] = 1.0 if latent.at_boundary(family, a, b) else 0.0
        row[CAP] = math.inf
        if hi >= COUNTABLE:
            # a tail whose ratio tends to R < 1 sums to a finite value under a tilt below 1 / R
            limit = latent.ratio(family, a, b, _FAR) * mech_ratio(form, table, n, j, _FAR, ga, gb)
            if limit > 0.0:
                row[CAP] = -math.log(limit)
        sum_lo += lo
        sum_hi += hi
    if total < sum_lo or total > sum_hi:
        return cells, -1
    if total == sum_lo:
        return cells, 1
    if total == sum_hi:
        return cells, 2
    return cells, 0


@nb.njit(**_JIT)
def _windows(family, pa, pb, form, table, n, start, cells, total, tol):
    """Windows exact to ``tol`` for the group's total, and the forward sums over them.

    Returns ``(status, log_tilt, vals, low, high, offsets, alpha, p)`` with ``p`` the
    convolution at the total, checked against the windows' bounds and the mass the
    forward sums dropped.
    """
    right, left, vals = np.empty(256), np.empty(256), np.empty(1024)
    empty = np.empty(0)
    offsets0 = np.zeros(1, dtype=np.int64)
    k = cells.shape[0]
    # the search's windows are tight enough for most groups (a sum's sd up to 30 per cell)
    eps_search = 0.5 * tol / k / (1.0 + 90.0 * math.sqrt(k)) * math.exp(-2.0)
    status, log_tilt, var, gap, vals, right, left = search_tilt(
        family, pa, pb, form, table, n, start, cells, total, eps_search, vals, right, left
    )
    if status != OK:
        return status, log_tilt, vals, empty, empty, offsets0, empty, 0.0
    # the convolution at the total, for a log-concave sum of this variance and gap; half of
    # the tolerance to the windows, half to the ends of the partial sums' laws
    peak = math.exp(-0.5 * gap * gap / var) / (1.0 + 3.0 * math.sqrt(var)) if var > 0.0 else 1.0
    eps = 0.5 * tol * peak / k
    walked, tilt = eps_search <= eps, math.exp(log_tilt)
    for _ in range(_RETRIES):
        if not walked:
            status, vals, right, left = walk_cells(
                family, pa, pb, form, table, n, start, cells, tilt, eps, True, vals, right, left
            )
            if status != OK:
                return status, log_tilt, vals, empty, empty, offsets0, empty, 0.0
        walked = False
        low, high, offsets = domains(cells, total)
        if offsets.size == 1:
            return UNREACHABLE, log_tilt, vals, empty, empty, offsets0, empty, 0.0
        if work(cells, offsets) > _MAX_WORK:
            return WIDE, log_tilt, vals, empty, empty, offsets0, empty, 0.0
        alpha, dropped = forward(cells, vals, low, high, offsets, 0.5 * eps)
        p = alpha[-1] if dropped < math.inf else 0.0
        neglected = cells[:, EPS].sum() + dropped
        if neglected * (1.0 + neglected) <= tol * p:
            return OK, log_tilt, vals, low, high, offsets, alpha, p
        eps = 0.5 * min(eps, tol * p / k) if p > 0.0 else 1e-3 * eps
    return INEXACT, log_tilt, vals, empty, empty, offsets0, empty, 0.0


@nb.njit(**_JIT)
def _edge(family, pa, pb, form, table, n, start, cells, at_upper, score_a, score_b):
    """Log-likelihood and scores of a total that only one split meets (every cell at an end)."""
    logp = 0.0
    for c in range(cells.shape[0]):
        j = start + c
        a, b = pa[j], pb[j]
        s = cells[c, HI] if at_upper else cells[c, LO]
        logp += latent.log_pmf(family, a, b, s) + _mechanisms(form, table, n, j, s)
        if latent.at_boundary(family, a, b):
            score_a[j], score_b[j] = latent.boundary_scores(family, a, b, 0.0)
        else:
            score_a[j], score_b[j] = latent.scores(
                family, a, b, s, latent.statistic(family, a, b, s)
            )
    return logp


@nb.njit(**_JIT)
def _scores(family, pa, pb, form, table, n, start, cells, vals, gamma, tilt, score_a, score_b):
    """Each cell's scores: the latent's score averaged over the count's law given the total."""
    with_t = latent.has_statistic(family)
    for c in range(cells.shape[0]):
        j = start + c
        a, b = pa[j], pb[j]
        lo_w, size, off = cells[c, WLO], int(cells[c, WLEN]), int(cells[c, OFF])
        mass, first, second = 0.0, 0.0, 0.0
        psi = latent.statistic(family, a, b, lo_w) if with_t else 0.0
        for d in range(size):
            weight = vals[off + d] * gamma[off + d]
            mass += weight
            first += d * weight
            second += psi * weight
            if with_t:
                psi += latent.statistic_step(family, a, b, lo_w + d)
        if latent.at_boundary(family, a, b):
            # the limit of the scores there: from the factor's ratio at the support's end
            up = 0.0
            if size > 1 and gamma[off] > 0.0 and lo_w == cells[c, LO]:
                mech = mech_ratio(form, table, n, j, lo_w, cells[c, GA], cells[c, GB])
                up = mech * tilt * gamma[off + 1] / gamma[off]
            score_a[j], score_b[j] = latent.boundary_scores(family, a, b, up)
        else:
            score_a[j], score_b[j] = latent.scores(
                family, a, b, lo_w + first / mass, second / mass
            )


@nb.njit(**_JIT)
def _group(family, pa, pb, form, table, n, start, stop, total, tol, score_a, score_b):
    """Return ``(log-likelihood, status)`` of one group; fill its cells' scores."""
    cells, edge = _prepare(family, pa, pb, form, table, n, start, stop, total)
    if edge == -1:
        score_a[start:stop], score_b[start:stop] = 0.0, 0.0
        return -math.inf, OK
    if edge > 0:
        logp = _edge(family, pa, pb, form, table, n, start, cells, edge == 2, score_a, score_b)
        return logp, OK
    status, log_tilt, vals, low, high, offsets, alpha, p = _windows(
        family, pa, pb, form, table, n, start, cells, total, tol
    )
    if status != OK:
        score_a[start:stop], score_b[start:stop] = math.nan, math.nan
        return math.nan, status
    logp = log_tilt * (cells[:, MODE].sum() - total) + math.log(p)
    for c in range(cells.shape[0]):
        j = start + c
        mode = cells[c, MODE]
        log_f = latent.log_pmf(family, pa[j], pb[j], mode) + _mechanisms(form, table, n, j, mode)
        logp += log_f + math.log(cells[c, SUM])
    gamma = backward(cells, vals, low, high, offsets, alpha)
    tilt = math.exp(log_tilt)
    _scores(family, pa, pb, form, table, n, start, cells, vals, gamma, tilt, score_a, score_b)
    return logp, OK


@nb.njit(**_JIT)
def group_sweep(family, pa, pb, form, table, tol, starts, totals, logp, score_a, score_b, status):
    """Fill each group's log-likelihood and status, and each cell's scores.

    ``family`` is a :class:`~dpinfer.marginal._families.LatentFamily`; ``pa, pb``
    the latent parameters of the grouped cells, group after group (group ``g`` is
    cells ``starts[g]:starts[g + 1]``); ``form`` their releases' grouped per-cell form as
    for :func:`._sweep.marginal_sweep` (release ``m`` of cell ``j`` at ``m n + j``) and
    ``table`` its log-CDF tables; ``totals`` each group's exact total. The arguments'
    types are those :mod:`._forms` names (one compiled copy).
    """
    n = pa.size
    for g in range(totals.size):
        start, stop, total = starts[g], starts[g + 1], totals[g]
        logp[g], status[g] = _group(
            family, pa, pb, form, table, n, start, stop, total, tol, score_a, score_b
        )


@nb.njit(**_JIT)
def group_draws(family, pa, pb, form, table, tol, starts, totals, uniforms, out):
    """Draw each group's counts given its total, from ``uniforms`` (one per cell).

    With an empty ``form`` (no releases) these are draws of the latent counts given
    the totals, for posterior predictive releases; the windows are exact to ``tol``.
    Returns the status of each group (``out`` NaN where it is not OK).
    """
    n = pa.size
    status = np.zeros(totals.size, dtype=np.int64)
    for g in range(totals.size):
        start, stop, total = starts[g], starts[g + 1], totals[g]
        cells, edge = _prepare(family, pa, pb, form, table, n, start, stop, total)
        if edge != 0:
            out[start:stop] = cells[:, HI] if edge == 2 else cells[:, LO]
            if edge == -1:
                out[start:stop], status[g] = math.nan, UNREACHABLE
            continue
        state, _, vals, low, high, offsets, alpha, _ = _windows(
            family, pa, pb, form, table, n, start, cells, total, tol
        )
        if state != OK:
            out[start:stop], status[g] = math.nan, state
            continue
        remaining = total
        for c in range(cells.shape[0] - 1, -1, -1):
            # P(cell c = k | the first c + 1 cells add to remaining) ~ alpha_c(remaining - k) q(k)
            lo_w, size, off = cells[c, WLO], int(cells[c, WLEN]), int(cells[c, OFF])
            mass = 0.0
            for d in range(size):
                m = remaining - (lo_w + d)
                if low[c] <= m <= high[c]:
                    mass += alpha[offsets[c] + int(m - low[c])] * vals[off + d]
            target, pick = uniforms[start + c] * mass, lo_w
            for d in range(size):
                m = remaining - (lo_w + d)
                if low[c] <= m <= high[c]:
                    target -= alpha[offsets[c] + int(m - low[c])] * vals[off + d]
                    pick = lo_w + d
                    if target <= 0.0:
                        break
            out[start + c] = pick
            remaining -= pick
    return status


@nb.njit(**_JIT)
def release_supports(form, n):
    """``(lower, upper)`` of each of ``n`` cells: the counts every release of it allows."""
    lower, upper = np.full(n, -math.inf), np.full(n, math.inf)
    for i in range(size(form)):
        lo, hi = support(form, i)
        lower[i % n] = max(lower[i % n], lo)
        upper[i % n] = min(upper[i % n], hi)
    return lower, upper
