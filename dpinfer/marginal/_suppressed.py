r"""A Poisson latent with one suppressed discrete Gaussian release: Wikimedia's hidden cells.

A cell suppressed by a :class:`~dpinfer.Thresholded` discrete Gaussian release
scores :math:`t(s) = p(s \mid \lambda) F(c - s)`, :math:`F` the noise's CDF and
:math:`c` the cut. Its terms have a form with no transcendental function: to
the right of the mode :math:`t(s+1)/t(s) = \lambda R(c - s) / (s + 1)`, to the
left :math:`t(s-1)/t(s) = s / (\lambda R(c - s + 1))`, where
:math:`R(k) = F(k - 1) / F(k)` is read from the cell's ratio table
(:func:`dpinfer.noise.form.log_cdf_tables`) at an index that moves by one a term.
The general sum (:func:`._kernels._cell`) takes the same terms with a table
lookup through the cell's record, the latent's ratio and a bound a term; here
the first ``ceil(z sigma)`` terms a side are taken with no test between them,
as in :mod:`._poisson`, whose notes on the bounds apply unchanged: :math:`t` is
log-concave (both factors are), so each side's geometric bound after the ratio
just taken bounds its tail, and each side goes on until that bound is below
``tol / 2`` of the partial sum.

**State.** The cell's row of the sweep's state (:mod:`._poisson`'s columns,
``STEP`` set to :data:`SUPPRESSED`) holds the table's place and the mode with its
constants, so that a cell whose mode has not moved costs no ``lgamma`` and no table
search. The functions below read a working row of :data:`ROW` columns: the state's,
then the cut and the table's range, which :func:`place` reads from the form. A wide cell
whose rate is more than a few widths from its cut is summed as a contour integral instead
(:mod:`._fourier`: a fixed number of nodes, where the table's sum takes twelve widths of
terms). A cell
whose window would leave the table (a mode some 200 sigma above the cut, fewer for a
sigma above 819: :func:`dpinfer.noise.form.table_range`; or a cut beyond the table's upper
end) is left to the general sum, which reads ``F`` beyond it.
"""

from __future__ import annotations

import math

import numba as nb

from ..noise.form import DISCRETE_GAUSSIAN, record, released_at, size, table_range
from ..noise.terms import log_below, ratio_table
from ._kernels import _MAX_TERMS
from ._log_pmf import TEXTBOOK, bd0, poisson_log_shape
from ._poisson import _LARGEST, _SMALLEST, AT, CONST, MODE, SD, STATE, STEP, UP, _below, _count

#: ``STEP`` of a cell on this path (``._poisson``'s own cells have ``STEP > 0``, the general
#: path's -1).
SUPPRESSED = -2.0
# this path's columns besides MODE, AT, CONST and SD: where R(0) sits in the table (kept in
# the state, in the column of ._poisson's UP), and in the working row after the state's, the
# cut and the table's range of k
AT_ZERO = UP
CUT, LOW, HIGH = STATE, STATE + 1, STATE + 2
ROW = STATE + 3


@nb.njit(cache=True, error_model="numpy")
def prepare(form, n, j, row):
    """Mark cell j for this path when its one release is suppressed, tabled discrete Gaussian."""
    if size(form) != n:
        return
    cell = record(form, j)
    if not (cell.suppressed != 0.0 and cell.kind == DISCRETE_GAUSSIAN):
        return
    at_zero, low, high = ratio_table(form, j)
    if high < low:  # no table
        return
    row[AT_ZERO], row[STEP], row[AT] = at_zero, SUPPRESSED, math.nan


@nb.njit(cache=True, error_model="numpy")
def place(form, j, work):
    """Fill a working row's cut and table range (its first STATE columns are the state's)."""
    work[CUT] = released_at(form, j)
    work[LOW], work[HIGH] = table_range(record(form, j).scale)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _ratio(table, row, k):
    """``R(k) = F(k - 1) / F(k)`` from the table; -1 off it."""
    return table[int(row[AT_ZERO] + k)] if row[LOW] <= k <= row[HIGH] else -1.0


@nb.njit(cache=True, error_model="numpy")
def _walk(lam, table, row, s):
    """Walk from ``s`` to the first s where ``t`` stops rising; NaN after 8 steps or off the table.

    ``t(s + 1) > t(s)`` when ``lam R(c - s) > s + 1``.
    """
    cut = row[CUT]
    for _ in range(8):
        up = _ratio(table, row, cut - s)
        if up < 0.0:
            return math.nan
        if lam * up > s + 1.0:
            s += 1.0
            continue
        if s > 0.0:
            back = _ratio(table, row, cut - s + 1.0)
            if back < 0.0:
                return math.nan
            if not lam * back > s:  # t(s) <= t(s - 1)
                s -= 1.0
                continue
        return s
    return math.nan


@nb.njit(cache=True, error_model="numpy")
def _search(lam, table, row):
    """Bisect for the first s where ``t`` stops rising, among the s whose k is on the table.

    ``t`` is log-concave, so it rises, then does not; it rises only where ``lam > s + 1``
    (``R <= 1``). A mode off the table comes out at the range's end, which :func:`ready`'s
    check of the window then refuses.
    """
    cut = row[CUT]
    left = max(0.0, cut - row[HIGH])
    right = min(math.ceil(lam), cut - row[LOW])
    if not left <= right:
        return math.nan
    while left < right:
        mid = left + math.floor(0.5 * (right - left))  # in [left, right): never stalls
        if lam * _ratio(table, row, cut - mid) > mid + 1.0:
            left = mid + 1.0
        else:
            right = mid
    return left


@nb.njit(cache=True, error_model="numpy")
def _at(form, table, j, row, s):
    """Make ``row``'s mode-dependent constants those of ``s``."""
    if row[AT] != s:
        k = row[CUT] - s
        row[CONST] = poisson_log_shape(s) + log_below(form, table, j, k)
        # the curvature of log F(c - s) at s, from two ratios (0 where the table ends)
        bend = 0.0
        if row[LOW] <= k and k + 1.0 <= row[HIGH]:
            bend = max(math.log(_ratio(table, row, k + 1.0) / _ratio(table, row, k)), 0.0)
        row[SD] = 1.0 / math.sqrt(bend + 1.0 / max(s, 1.0))
        row[AT] = s


@nb.njit(cache=True, error_model="numpy")
def ready(lam, form, table, j, row, z):
    """Find cell j's mode from its last one and set its constants; False if this path cannot.

    The mode is walked to from the last one, or bisected for when it moved more
    than 8 counts or is not known yet (the first evaluation): whatever the row held,
    the cell's sum is the same. False, leaving the cell to :func:`._kernels._cell`,
    when ``lam`` is not finite and at least ``_SMALLEST``, or the first
    ``ceil(z sigma)`` terms a side would leave the table.
    """
    if not _SMALLEST <= lam < math.inf:
        return False
    mode = _walk(lam, table, row, row[MODE])
    if math.isnan(mode):  # more than 8 steps away, unknown (NaN), or off the table
        mode = _search(lam, table, row)
    if not mode < _LARGEST:
        return False
    _at(form, table, j, row, mode)
    k, reach = row[CUT] - mode, math.ceil(z * row[SD]) + 1.0
    if not (row[LOW] <= k - reach and k + reach <= row[HIGH]):
        return False
    # the left side divides by R(k + 1), R(k + 2), ...: R rises with k, so none is 0 after it
    if not _ratio(table, row, k + 1.0) > 0.0:
        return False
    row[MODE] = mode
    return True


# inlined into the sweep's loop, as ._poisson.sum_cell is
@nb.njit(cache=True, error_model="numpy", inline="always")
def sum_cell(lam, table, row, z, half):
    """Sum a cell made :func:`ready`: (logp, score, terms); terms -1 when it left the table.

    Each side keeps its partial sum and its moment ``sum s t(s)`` (not
    :func:`._poisson.sum_cell`'s running totals, which lose the moment of a
    rate far below 1 to cancellation: its terms after the mode are below the
    last digit of the sum).
    """
    mode = row[AT]
    k = int(math.ceil(z * row[SD]))
    # table positions of R(c - mode) (the first step right) and R(c - mode + 1) (left)
    right_at = int(row[AT_ZERO] + (row[CUT] - mode))
    first, last = int(row[AT_ZERO] + row[LOW]), int(row[AT_ZERO] + row[HIGH])
    left_at = right_at + 1
    den, num, inv_lam = mode, mode, 1.0 / lam
    w_r, sum_r, moment_r, ratio = 1.0, 1.0, mode, 0.0
    w_l, sum_l, moment_l, back = 1.0, 0.0, 0.0, 0.0
    # the first k terms on each side with no test between them (ready checked the table's range)
    paired = _pairs_fit(lam, table, left_at, mode)
    if k % 2 == 1 or not paired:
        ratio, den, right_at, w_r, sum_r, moment_r = _right(
            lam, table, right_at, den, w_r, sum_r, moment_r
        )
        back, num, left_at, w_l, sum_l, moment_l = _left(
            inv_lam, table, left_at, num, w_l, sum_l, moment_l
        )
    for _ in range((k - 1) * (not paired)):
        ratio, den, right_at, w_r, sum_r, moment_r = _right(
            lam, table, right_at, den, w_r, sum_r, moment_r
        )
        back, num, left_at, w_l, sum_l, moment_l = _left(
            inv_lam, table, left_at, num, w_l, sum_l, moment_l
        )
    for _ in range((k // 2) * paired):
        ratio, den, right_at, w_r, sum_r, moment_r = _right_pair(
            lam, table, right_at, den, w_r, sum_r, moment_r
        )
        back, num, left_at, w_l, sum_l, moment_l = _left_pair(
            inv_lam, table, left_at, num, w_l, sum_l, moment_l
        )
    d_r = d_l = k
    right = not _below(w_r, ratio, half * (sum_r + sum_l))
    left = mode > d_l and not _below(w_l, back, half * (sum_r + sum_l))
    while (right or left) and _count(d_r, d_l, mode) < _MAX_TERMS:
        if right:
            if right_at < first:
                return math.nan, math.nan, -1
            ratio, den, right_at, w_r, sum_r, moment_r = _right(
                lam, table, right_at, den, w_r, sum_r, moment_r
            )
            d_r += 1
            right = not _below(w_r, ratio, half * (sum_r + sum_l))
        if left:
            if left_at > last:
                return math.nan, math.nan, -1
            back, num, left_at, w_l, sum_l, moment_l = _left(
                inv_lam, table, left_at, num, w_l, sum_l, moment_l
            )
            d_l += 1
            left = mode > d_l and not _below(w_l, back, half * (sum_r + sum_l))
    count = _count(d_r, d_l, mode)
    total = sum_r + sum_l
    if count >= _MAX_TERMS:
        return math.nan, math.nan, count
    if mode < TEXTBOOK:
        logp = mode * math.log(lam) - lam + row[CONST] + math.log(total)
    else:  # Loader's form, as in ._poisson
        logp = row[CONST] - bd0(mode, lam) + math.log(total)
    return logp, (moment_r + moment_l) / total * inv_lam - 1.0, count


@nb.njit(cache=True, error_model="numpy", inline="always")
def _right(lam, table, at, den, w, total, moment):
    """Take the next term to the right, ``lam R / (s + 1)`` times the last (R at ``at``).

    ``den`` is the last term's s. Returns (ratio, its s, the next place, term, partial sum,
    partial moment).
    """
    den += 1.0
    ratio = lam * table[at] / den
    w *= ratio
    return ratio, den, at - 1, w, total + w, moment + w * den


@nb.njit(cache=True, error_model="numpy", inline="always")
def _left(inv_lam, table, at, num, w, total, moment):
    """Take the next term to the left, ``s / (lam R)`` times the last (0 once s is 0).

    ``num`` is the last term's s; returns as :func:`_right`.
    """
    back = num * inv_lam / table[at]
    w *= back
    num -= 1.0
    return back, num, at + 1, w, total + w, moment + w * num


# the smallest rate and table ratio of the paired steps: their shared quotients
# lam / ((s + 1) (s + 2)) and 1 / (lam R R') stay normal and finite floats
_PAIRED = 2.0**-400


@nb.njit(cache=True, error_model="numpy", inline="always")
def _pairs_fit(lam, table, left_at, mode):
    """Whether :func:`_right_pair` and :func:`_left_pair` may take the first terms.

    The left side's ratios ``R`` only rise from ``table[left_at]`` on, and at a
    mode above 0 ``lam R >= mode >= 1`` there, so ``1 / (lam R R')`` is at most
    ``1 / R^2``; at mode 0 the left side has only zero terms, which the pair
    would make ``0 * inf``.
    """
    return lam >= _PAIRED and mode > 0.0 and table[left_at] >= _PAIRED


@nb.njit(cache=True, error_model="numpy", inline="always")
def _right_pair(lam, table, at, den, w, total, moment):
    """Take the next two terms to the right with one division for both; returns as _right."""
    near, far = den + 1.0, den + 2.0
    share = lam / (near * far)
    first = share * far * table[at]
    second = share * near * table[at - 1]
    w_near = w * first
    w_far = w_near * second
    return (
        second,
        far,
        at - 2,
        w_far,
        total + (w_near + w_far),
        moment + (w_near * near + w_far * far),
    )


@nb.njit(cache=True, error_model="numpy", inline="always")
def _left_pair(inv_lam, table, at, num, w, total, moment):
    """Take the next two terms to the left with one division for both; returns as _left."""
    near, far = table[at], table[at + 1]
    share = inv_lam / (near * far)
    first = num * share * far
    second = (num - 1.0) * share * near
    w_near = w * first
    w_far = w_near * second
    num -= 2.0
    return (
        second,
        num,
        at + 2,
        w_far,
        total + (w_near + w_far),
        moment + (w_near * (num + 1.0) + w_far * num),
    )
