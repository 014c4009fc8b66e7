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

from ..noise.terms import support
from . import _dispatch as latent
from ._kernels import COUNTABLE, _bound, _gaussian_ratio, _mechanisms, _mechanisms_ratio, _support

__all__ = [
    "BEYOND",
    "INEXACT",
    "OK",
    "UNREACHABLE",
    "WIDE",
    "group_draws",
    "group_sweep",
    "release_supports",
    "writable",
]

#: Status of a group: summed; its total out of reach of the windows; a window beyond
#: +-(2**53 - 1); a convolution too large; not exact to ``tol`` after the retries.
OK, UNREACHABLE, BEYOND, WIDE, INEXACT = 0, 1, 2, 3, 4

_JIT = {"cache": True, "error_model": "numpy"}
_MAX_WINDOW = 1 << 24  # terms of one cell's window
_MAX_WORK = 4e9  # multiply-adds of one group's convolution (a few seconds)
_NEWTON_STEPS = 200
_MAX_TILT = 700.0  # e^700 is finite
_RETRIES = 6

# columns of a group's per-cell table: support, mode, the Gaussian line of the releases'
# ratio, the window (first value, length, offset in the values), the window's sum relative
# to the mode, its neglected-mass bound, the tilted mean and variance, and the largest
# log-tilt whose tilted factor still has a finite sum; 1 where the latent's parameters are
# at the boundary where its scores are limits (its window then ends in a zero, kept)
LO, HI, MODE, GA, GB, WLO, WLEN, OFF, SUM, EPS, MEAN, VAR, CAP, EDGE = range(14)
_COLUMNS = 14
_FAR = 2.0**52  # where a factor's ratio is taken as its limit in the upper tail
_FULL = -1  # a walk that ran out of buffer
_TOO_WIDE = -2


@nb.njit(**_JIT)
def _mech_ratio(form, table, n, j, s, ga, gb):
    """``prod_m eta_m(s + 1) / eta_m(s)`` (through ``exp(A - B s)`` for Gaussian releases)."""
    if math.isfinite(ga):
        return math.exp(ga - gb * s)
    return _mechanisms_ratio(form, table, n, j, s)


@nb.njit(**_JIT)
def _rising(family, a, b, form, table, n, j, s, tilt, ga, gb):
    """Whether the tilted factor rises from ``s`` to ``s + 1``."""
    return latent.ratio(family, a, b, s) * _mech_ratio(form, table, n, j, s, ga, gb) * tilt > 1.0


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
def _pass(family, pa, pb, form, table, n, start, cells, tilt, eps, store, vals, right, left):
    """Walk every cell of a group at ``tilt``; with ``store``, keep the normalised windows.

    Fills each row's mode, window, sum, bound, tilted mean and variance. Returns
    ``(status, vals, right, left)`` (the buffers, grown where they had to be).
    """
    used = 0
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
def _search_tilt(family, pa, pb, form, table, n, start, cells, total, eps, vals, right, left):
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
        status, vals, right, left = _pass(
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


@nb.njit(**_JIT)
def _domains(cells, total):
    """Return the sums of the first p cells from which ``total`` stays reachable.

    Returns ``(low, high, offsets)`` for p = 0..n (offsets of each range in a flat
    array, the last entry its length), or empty arrays when some range is empty.
    """
    k = cells.shape[0]
    low, high, offsets = np.empty(k + 1), np.empty(k + 1), np.zeros(k + 2, dtype=np.int64)
    rest_lo = cells[:, WLO].sum()
    rest_hi = (cells[:, WLO] + cells[:, WLEN] - 1.0).sum()
    before_lo, before_hi = 0.0, 0.0
    for p in range(k + 1):
        low[p] = max(before_lo, total - rest_hi)
        high[p] = min(before_hi, total - rest_lo)
        if low[p] > high[p]:
            return np.empty(0), np.empty(0), np.zeros(1, dtype=np.int64)
        offsets[p + 1] = offsets[p] + int(high[p] - low[p]) + 1
        if p < k:
            w_lo, w_hi = cells[p, WLO], cells[p, WLO] + cells[p, WLEN] - 1.0
            before_lo, before_hi = before_lo + w_lo, before_hi + w_hi
            rest_lo, rest_hi = rest_lo - w_lo, rest_hi - w_hi
    return low, high, offsets


@nb.njit(**_JIT)
def _work(cells, offsets):
    """Multiply-adds of one pass of the convolution."""
    work = 0.0
    for c in range(cells.shape[0]):
        work += (offsets[c + 1] - offsets[c]) * cells[c, WLEN]
    return work


@nb.njit(**_JIT)
def _overlap(low, high, p, k):
    """``(i, j, count)``: the sums m of range p - 1 with ``m + k`` in range p.

    They are entries ``i, ..., i + count - 1`` of range p - 1, and ``m + k`` are entries
    ``j, ..., j + count - 1`` of range p.
    """
    first = max(low[p - 1], low[p] - k)
    last = min(high[p - 1], high[p] - k)
    return int(first - low[p - 1]), int(first + k - low[p]), int(last - first) + 1


# the convolutions loop over a cell's window outside and over the sums inside: the inner
# loops are then long and contiguous (a window is tens of values, a range of sums up to the
# group's size times that), and run over views, which the compiler vectorises where it would
# not over offsets into one array (6x faster); reassociation lets the dot products vectorise
@nb.njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _forward(cells, vals, low, high, offsets, cut):
    """``(alpha, dropped)``: the law of the first p cells' sum on range p, flat.

    Range p (see :func:`_domains`) is narrowed to what range p - 1 and cell p's window
    reach, and after the sum its ends holding at most ``cut`` of mass each are dropped
    (the total dropped is returned): ``low`` and ``high`` are updated in place, and
    range p's values start at ``offsets[p]``.
    """
    alpha = np.zeros(offsets[-1])
    alpha[0] = 1.0
    k = cells.shape[0]
    dropped = 0.0
    for p in range(1, k + 1):
        c = p - 1
        before, after = offsets[p - 1], offsets[p]
        off, lo_w = int(cells[c, OFF]), cells[c, WLO]
        low[p] = max(low[p], low[p - 1] + lo_w)
        high[p] = min(high[p], high[p - 1] + lo_w + cells[c, WLEN] - 1.0)
        if low[p] > high[p]:
            return alpha, math.inf
        for d in range(int(cells[c, WLEN])):
            q = vals[off + d]
            i, j, count = _overlap(low, high, p, lo_w + d)
            source = alpha[before + i : before + i + count]
            target = alpha[after + j : after + j + count]
            for t in range(count):
                target[t] += q * source[t]
        if p < k and cells[c, EDGE] == 0.0:  # a boundary score reads the sums beyond a zero
            dropped += _trim(alpha, after, low, high, p, cut)
    return alpha, dropped


@nb.njit(**_JIT)
def _trim(alpha, at, low, high, p, cut):
    """Drop the ends of range p (values from ``alpha[at]``) holding at most ``cut`` each."""
    size = int(high[p] - low[p]) + 1
    first, mass_first = 0, 0.0
    while first < size - 1 and mass_first + alpha[at + first] <= cut:
        mass_first += alpha[at + first]
        first += 1
    last, mass_last = size - 1, 0.0
    while last > first and mass_last + alpha[at + last] <= cut:
        mass_last += alpha[at + last]
        last -= 1
    for t in range(last - first + 1):
        alpha[at + t] = alpha[at + first + t]
    low[p], high[p] = low[p] + first, low[p] + last
    return mass_first + mass_last


@nb.njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _backward(cells, vals, low, high, offsets, alpha):
    """``gamma`` (laid out as ``vals``): for each cell, P(the others add total - k)."""
    beta = np.zeros(offsets[-1])
    gamma = np.zeros(vals.size)
    beta[offsets[-2]] = 1.0
    for p in range(cells.shape[0], 0, -1):
        c = p - 1
        before, after = offsets[p - 1], offsets[p]
        off, lo_w = int(cells[c, OFF]), cells[c, WLO]
        for d in range(int(cells[c, WLEN])):
            q = vals[off + d]
            i, j, count = _overlap(low, high, p, lo_w + d)
            later = beta[after + j : after + j + count]
            target = beta[before + i : before + i + count]
            prefix = alpha[before + i : before + i + count]
            acc = 0.0
            for t in range(count):
                target[t] += q * later[t]
                acc += prefix[t] * later[t]
            gamma[off + d] = acc
    return gamma


@nb.njit(**_JIT)
def _prepare(family, pa, pb, form, table, n, start, stop, total):
    """Return the group's per-cell table (supports, starting modes) and where the total lies.

    Returns ``(cells, state)``: state 0 when the total lies strictly inside the sum of
    the supports, 1 when it equals their lower end, 2 their upper end, -1 when outside
    them or some cell's parameters are invalid (a likelihood of zero).
    """
    cells = np.full((stop - start, _COLUMNS), math.nan)
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
            limit = latent.ratio(family, a, b, _FAR) * _mech_ratio(form, table, n, j, _FAR, ga, gb)
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
    status, log_tilt, var, gap, vals, right, left = _search_tilt(
        family, pa, pb, form, table, n, start, cells, total, eps_search, vals, right, left
    )
    if status != OK:
        return status, log_tilt, vals, empty, empty, offsets0, empty, 0.0
    # the convolution at the total, for a log-concave sum of this variance and gap; half of
    # the tolerance to the windows, half to the ends of the partial sums' laws
    peak = math.exp(-0.5 * gap * gap / var) / (1.0 + 3.0 * math.sqrt(var)) if var > 0.0 else 1.0
    eps = 0.5 * tol * peak / k
    walked = eps_search <= eps
    for _ in range(_RETRIES):
        if not walked:
            status, vals, right, left = _pass(
                family,
                pa,
                pb,
                form,
                table,
                n,
                start,
                cells,
                math.exp(log_tilt),
                eps,
                True,
                vals,
                right,
                left,
            )
            if status != OK:
                return status, log_tilt, vals, empty, empty, offsets0, empty, 0.0
        walked = False
        low, high, offsets = _domains(cells, total)
        if offsets.size == 1:
            return UNREACHABLE, log_tilt, vals, empty, empty, offsets0, empty, 0.0
        if _work(cells, offsets) > _MAX_WORK:
            return WIDE, log_tilt, vals, empty, empty, offsets0, empty, 0.0
        alpha, dropped = _forward(cells, vals, low, high, offsets, 0.5 * eps)
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
                mech = _mech_ratio(form, table, n, j, lo_w, cells[c, GA], cells[c, GB])
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
    gamma = _backward(cells, vals, low, high, offsets, alpha)
    _scores(
        family,
        pa,
        pb,
        form,
        table,
        n,
        start,
        cells,
        vals,
        gamma,
        math.exp(log_tilt),
        score_a,
        score_b,
    )
    return logp, OK


@nb.njit(**_JIT)
def group_sweep(family, pa, pb, form, table, tol, starts, totals, logp, score_a, score_b, status):
    """Fill each group's log-likelihood and status, and each cell's scores.

    ``family`` is a :class:`~dpinfer.marginal._families.LatentFamily`; ``pa, pb``
    the latent parameters of the grouped cells, group after group (group ``g`` is
    cells ``starts[g]:starts[g + 1]``); ``form`` their releases' per-cell form as for
    :func:`._sweep.marginal_sweep` (release ``m`` of cell ``j`` at ``m n + j``) and
    ``table`` its log-CDF tables; ``totals`` each group's exact total.
    """
    n = pa.size
    for g in range(totals.size):
        logp[g], status[g] = _group(
            family,
            pa,
            pb,
            form,
            table,
            n,
            starts[g],
            starts[g + 1],
            totals[g],
            tol,
            score_a,
            score_b,
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
    for i in range(form.shape[0]):
        lo, hi = support(form, i)
        lower[i % n] = max(lower[i % n], lo)
        upper[i % n] = min(upper[i % n], hi)
    return lower, upper


def writable(table: np.ndarray) -> np.ndarray:
    """``table`` as a writable contiguous float64 array (a copy only where it is read-only).

    The compiled functions are specialised once, for writable tables; a read-only one
    (the empty :data:`~dpinfer.noise.form.NO_TABLE`) would compile them all again.
    """
    table = np.ascontiguousarray(table, dtype=float)
    return table if table.flags.writeable else table.copy()
