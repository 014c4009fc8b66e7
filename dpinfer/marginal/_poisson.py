r"""The common case: a Poisson latent whose releases are all published Gaussian ones.

A Poisson cell whose releases are all published Gaussian ones (discrete or
continuous, on the whole line) has the terms of :func:`._kernels._cell` in a
form with no transcendental function: to the right of the mode
:math:`t(s+1)/t(s) = \lambda / (s + 1) \, e^{A - Bs}`, to the left
:math:`t(s-1)/t(s) = s / \lambda \, e^{B(s-1) - A}`, and the exponentials are
updated by products with :math:`e^{-B}`. The sum, its bound and its tolerance
are those of :func:`._kernels._cell`; what differs is the order of work.

**Where the bounds are checked.** Cell :math:`j` first takes :math:`K_j`
terms on each side of its mode with no test between them, where

.. math:: K_j = \lceil z \sigma_j \rceil, \qquad
   z = \sqrt{2 \log(2 / \mathrm{tol})} - 1/2, \qquad
   \sigma_j^{-2} = B_j + 1 / \max(\mathrm{mode}_j, 1),

:math:`\sigma_j^{-2}` the curvature of :math:`\log t` at the mode: :math:`K_j` stops
half a width short of where a Gaussian-shaped :math:`t` falls to ``tol / 2`` of its
peak. Then each side's geometric bound is checked, and a side whose bound is not yet
below ``tol / 2`` of the partial sum goes on term by term until it is. :math:`K_j`
only decides where the checks start (a loop without tests runs about a fifth faster
than one that tests every term); the bound decides where the sum stops, and the
terms of a cell depend on that cell alone. With this :math:`z` the first check ends
most sums: at tol ``1e-10`` and ``sigma = 3.16`` (``benchmarks/tables.py`` at
``rho = 0.05``) a cell takes 0.3 terms after it, and 2.3 with a :math:`z` half a
width smaller, whose tested terms cost more than the untested ones they save (a
sweep along a sampler's steps took about a sixth longer).

**Every other term.** Where the noise is wide and the count not small, the terms
are smooth enough in :math:`s` that those of the mode's parity sum to half the
total within :data:`PAIRS_ERROR` of it: :func:`_pairs_suffice` bounds the
difference (the alternating sum of the terms, a contour integral as in
:mod:`._fourier`) for every rate whose mode is the cell's, from the noise's
:math:`B` and the mode alone, and marks the cell (a negative ``SD``) when its mode
moves. Such a cell is summed by :mod:`._pairs_batch` over :math:`s = \mathrm{mode} \pm 2i`,
its tails bounded as above within ``tol / 2 - PAIRS_ERROR`` a side: the sum within
``tol`` as the others, and the mean of ``s`` in the score within ``2 PAIRS_ERROR``
(relative) of the whole sum's, for half the terms. At ``sigma = 3.16`` (``B = 0.1``)
cells of modes 27 and more qualify.

**State.** The mode of each cell and the constants of its releases are kept
between evaluations (columns below), so that a cell whose mode has not moved
costs no ``exp`` and no ``lgamma`` (:func:`stays` checks it in place, which
is a third of the sweep's time saved at a sampler's usual step); any starting
point gives the same sum.

**Anchors.** The constants are those of the mode itself, but in a wide cell (``B <= 1/4``:
some 15 terms or more, to which one a side adds little) whose mode is :data:`GRID_FROM`
or more, three modes share them: the modes ``3q`` to
``3q + 2`` are summed from :func:`anchor` ``3q + 1``, one count more on each side before
the checks, and the pairs decision covers the three. A sampler's small steps move an anchor
less often than a mode: along ``benchmarks/tables.py``'s NUTS path at ``rho = 0.05``, 6.8%
of the cells a step against 16.3%, where a moved cell costs about three of the others
(its releases' constants read from the form, ``exp``, ``lgamma``, the pairs bound).
"""

from __future__ import annotations

import math

import numba as nb

from ..noise.form import size
from ..noise.terms import support
from ._kernels import _MAX_TERMS, _gaussian_ratio, _gaussian_terms
from ._log_pmf import TEXTBOOK, bd0, poisson_log_shape

# Columns of the per-cell state kept between evaluations: every entry is a function of the
# cell's releases and of the mode ``AT``, or a starting point, so no result depends on it.
# ``MODE``: last mode (NaN: unknown); ``AT``: where the constants below are, the mode's
# :func:`anchor` (NaN: nowhere, or out of the floating-point range; -inf: ._fourier's);
# ``UP``: exp(A - B AT) of the Gaussian releases' exp(A - B s); ``CONST``: mechanisms(AT) plus
# the part of log p(AT | lam) that depends on AT alone (._log_pmf.poisson_log_shape);
# ``SD``: (B + 1 / max(AT, 1))^(-1/2), the width of t at AT, negative where every other
# term suffices (:func:`_pairs_suffice`); ``STEP``: exp(-B) (NaN: not
# prepared yet, -1: the cell takes the general path). A and B are read from the form when the
# mode moves, and exp(B (AT - 1) - A) is STEP / UP: six numbers a cell.
MODE, AT, UP, CONST, SD, STEP = range(6)
STATE = 6
# the smallest rate of this path: the smallest normal float, whose reciprocal is finite (the
# sums divide by the rate; a subnormal rate, which NUTS warm-up can reach, takes _kernels._cell)
_SMALLEST = 2.0**-1022
# the largest mode of this path: its sums walk fewer than 10^8 terms, so they stay below 2**53,
# where float64 counts in steps of one (larger modes take _kernels._cell, which checks)
_LARGEST = 2.0**52
#: The modes of a wide cell (``B <= 1/4``, ``STEP >= GRID_STEP``) from ``GRID_FROM`` on share
#: their constants by threes: modes ``3q`` to ``3q + 2`` are summed from ``AT = 3q + 1``.
GRID_STEP = math.exp(-0.25)
GRID_FROM = 9.0


@nb.njit(cache=True, error_model="numpy")
def prepare(form, n, j, row):
    """Fill the constants of cell j in ``row``: this module's path, or the general one."""
    row[STEP], row[AT] = -1.0, math.nan
    gauss_a, gauss_b = _gaussian_ratio(form, n, j)
    if not math.isfinite(gauss_a):
        return
    for m in range(size(form) // n):
        lower, upper = support(form, m * n + j)
        if lower > 0.0 or upper < math.inf:
            return
    row[STEP] = math.exp(-gauss_b)


# inlined into ready, with _gaussian_terms: numba takes a reference count (an atomic update on
# entry, one on exit) of each array passed to a call, the form's three included, and of an
# inlined copy left on some paths only, which is why the callers check AT
@nb.njit(cache=True, error_model="numpy", inline="always")
def _at(form, n, j, row, s):
    """Make ``row``'s mode-dependent constants those of ``s`` (``AT`` NaN if out of range)."""
    gauss_a, gauss_b, published = _gaussian_terms(form, n, j, s)
    step = row[STEP]
    up = math.exp(gauss_a - gauss_b * s)
    sd = 1.0 / math.sqrt(gauss_b + 1.0 / max(s, 1.0))
    lowest, highest = _modes_at(s, step)
    row[UP], row[CONST] = up, published + poisson_log_shape(s)
    row[SD] = -sd if _pairs_suffice(gauss_b, lowest, highest) else sd
    row[AT] = s if _in_range(up, step) else math.nan


@nb.njit(cache=True, error_model="numpy", inline="always")
def anchor(mode, step):
    """Where a cell of ``STEP = step`` whose mode is ``mode`` keeps its constants (``AT``).

    The mode itself, but for a wide cell's modes from ``GRID_FROM`` on: ``3q + 1`` for the
    modes ``3q`` to ``3q + 2``, so that a sampler's small steps move them less often.
    """
    if step >= GRID_STEP and mode >= GRID_FROM:
        return 3.0 * math.floor(mode / 3.0) + 1.0
    return mode


@nb.njit(cache=True, error_model="numpy", inline="always")
def _modes_at(at, step):
    """Return the lowest and the highest mode whose :func:`anchor` is ``at``."""
    if step >= GRID_STEP and at >= GRID_FROM:  # the anchors 10, 13, ...; below 9, the modes
        return at - 1.0, at + 1.0
    return at, at


@nb.njit(cache=True, error_model="numpy", inline="always")
def reach(at, step):
    """How far from ``at`` its modes reach (one for a grid's anchor, else none)."""
    lowest, _ = _modes_at(at, step)
    return at - lowest


@nb.njit(cache=True, error_model="numpy")
def _walk(lam, s, up, step):
    """Walk from ``s`` (``up = exp(A - B s)``) to the first s where ``t`` stops rising.

    NaN after 8 steps.
    """
    for _ in range(8):
        if _rises(lam, up, s):
            s += 1.0
            up *= step
        elif _fell(lam, up, s, step):
            s -= 1.0
            up /= step
        else:
            return s
    return math.nan


@nb.njit(cache=True, error_model="numpy")
def _jump(lam, s, gauss_a, gauss_b):
    """Return an integer next to the mode (as a float), by Newton's method from ``s``.

    ``t`` rises at s while ``g(s) = log lam + A - B s - log(s + 1) > 0``; ``g``
    is decreasing and convex (``B > 0``), so the first Newton step from any point
    lands at or left of its root, and the following ones climb to it. The mode is
    the root rounded up: :func:`_walk` finishes from the integer below.
    """
    log_lam, x = math.log(lam), s
    for _ in range(64):
        g = log_lam + gauss_a - gauss_b * x - math.log(x + 1.0)
        if x == 0.0 and g <= 0.0:
            break
        move = g / (gauss_b + 1.0 / (x + 1.0))
        x = max(x + move, 0.0)
        if abs(move) < 0.5:
            break
    return float(math.floor(x))  # numba's floor is an int64: _walk takes floats


# inlined into the sweep's loop: as a call it takes the row's reference count (two atomic updates)
@nb.njit(cache=True, error_model="numpy", inline="always")
def stays(lam, row):
    """Tell whether cell ``row`` is :func:`ready` for ``lam`` as it stands (its mode stays).

    The answer :func:`ready` would give without its search, for the common
    step of a sampler that leaves the mode where it was; False sends the cell to
    :func:`ready` (a ``lam`` that is NaN, infinite or below ``_SMALLEST``, an unknown mode,
    no constants: :func:`_at` leaves none that are out of range).
    """
    s, up, step = row[AT], row[UP], row[STEP]
    lowest, highest = _modes_at(s, step)
    return (
        s >= 0.0
        and _SMALLEST <= lam < math.inf
        and not _rises(lam, up * step if highest > s else up, highest)
        and not _fell(lam, up, lowest, step * step if lowest < s else step)
    )


@nb.njit(cache=True, error_model="numpy", inline="always")
def _rises(lam, up, s):
    """Whether t(s + 1) > t(s), from t(s + 1) / t(s) = lam / (s + 1) exp(A - B s)."""
    return lam * up > s + 1.0


@nb.njit(cache=True, error_model="numpy", inline="always")
def _fell(lam, up, s, step):
    """Whether s > 0 and t(s) <= t(s - 1), from t(s) / t(s - 1) = lam / s exp(A - B (s - 1))."""
    return s > 0.0 and not lam * up > s * step


@nb.njit(cache=True, error_model="numpy", inline="always")
def _down(row):
    """``exp(B (AT - 1) - A)``, from the row's ``UP`` and ``STEP``."""
    return row[STEP] / row[UP]


@nb.njit(cache=True, error_model="numpy", inline="always")
def _in_range(up, step):
    """Whether the exponentials ``UP = up`` and :func:`_down` of a row are positive and finite."""
    return 0.0 < up < math.inf and 0.0 < step / up < math.inf


@nb.njit(cache=True, error_model="numpy")
def ready(lam, form, n, j, row):
    """Find cell j's mode from its last one and set its constants; False if this path cannot.

    A mode more than 8 counts away, or not known yet (the first evaluation), is
    jumped to (:func:`_jump`): whatever the row held, the cell's sum is the same.
    False, leaving the cell to :func:`._kernels._cell`, when ``lam`` is not finite and
    at least ``_SMALLEST``, the mode is not found, or ``exp(A - B s)`` leaves the
    floating-point range.
    """
    if not _SMALLEST <= lam < math.inf:
        return False
    known, mode, step = row[MODE] >= 0.0, math.nan, row[STEP]
    if known:
        last = anchor(row[MODE], step)
        if row[AT] != last:
            _at(form, n, j, row, last)
        mode = _walk(lam, row[AT], row[UP], step)
    if math.isnan(mode):  # moved more than 8 counts, or unknown: jump near it, and walk
        gauss_a, gauss_b = _gaussian_ratio(form, n, j)
        last = row[MODE] if known else min(math.floor(lam), _LARGEST)
        start = _jump(lam, last, gauss_a, gauss_b)
        if start < _LARGEST:
            mode = _walk(lam, start, math.exp(gauss_a - gauss_b * start), step)
    if not mode < _LARGEST:  # NaN: the walk did not end
        return False
    at = anchor(mode, step)
    if row[AT] != at:
        _at(form, n, j, row, at)
    if math.isnan(row[AT]):  # the constants left the floating-point range
        return False
    row[MODE] = mode
    return True


# inlined into the sweep's loop (numba IR): as a call it costs about a seventh of the sweep
@nb.njit(cache=True, error_model="numpy", inline="always")
def sum_cell(lam, row, z, half):
    """Sum a cell made :func:`ready`: (power, rest, total, score, terms).

    Not a cell that :mod:`._pairs_batch` takes (a negative ``SD``). Its log-likelihood is
    ``power log(lam) + rest + log(total)``: the sweep takes the logarithms of a batch of
    cells at once (:func:`._sweep._logs`). ``rest`` is NaN past ``_MAX_TERMS`` terms. The
    terms are counted from the row's ``AT``, the mode's :func:`anchor`.

    Each side keeps its partial sums ``S_d`` and their running total ``acc``:
    the side's moment ``sum_d d w_d`` is ``D S_D - sum_{d<D} S_d``, which costs
    an addition a term where the moment itself would cost a product.
    """
    at, step = row[AT], row[STEP]
    inv_lam = 1.0 / lam
    k = int(math.ceil(z * abs(row[SD]) + reach(at, step)))
    lift, den = lam * row[UP], at
    # at AT 0 there is no left side, and _down(row) / lam may overflow there, which would
    # make its zero terms 0 * inf
    fall, num = (inv_lam * _down(row) if at > 0.0 else 0.0), at
    w_r, sum_r, acc_r, ratio = 1.0, 1.0, 0.0, 0.0
    w_l, sum_l, acc_l, back = 1.0, 0.0, 0.0, 0.0
    # the first k terms on each side with no test between them: the bounds are checked after
    for _ in range(k):
        ratio, lift, den, w_r, sum_r, acc_r = _right(lift, den, step, w_r, sum_r, acc_r)
        back, fall, num, w_l, sum_l, acc_l = _left(fall, num, step, w_l, sum_l, acc_l)
    d_r = d_l = k
    right = not _below(w_r, ratio, half * (sum_r + sum_l))
    left = at > d_l and not _below(w_l, back, half * (sum_r + sum_l))
    while (right or left) and _count(d_r, d_l, at) < _MAX_TERMS:
        if right:
            ratio, lift, den, w_r, sum_r, acc_r = _right(lift, den, step, w_r, sum_r, acc_r)
            d_r += 1
            right = not _below(w_r, ratio, half * (sum_r + sum_l))
        if left:
            back, fall, num, w_l, sum_l, acc_l = _left(fall, num, step, w_l, sum_l, acc_l)
            d_l += 1
            left = at > d_l and not _below(w_l, back, half * (sum_r + sum_l))
    count = _count(d_r, d_l, at)
    total = sum_r + sum_l
    moment = (d_r * sum_r - acc_r) - (d_l * sum_l - acc_l)
    score = (at + moment / total) * inv_lam - 1.0
    return _result(lam, at, row[CONST], total, score, count, count)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _result(lam, at, const, total, score, count, summed):
    """:func:`sum_cell`'s tuple; ``count`` terms in the sum's window, ``summed`` of them taken.

    ``at`` and ``const`` are the row's ``AT`` and ``CONST`` (numbers: a row passed to a
    call costs its reference count, a tenth of a pairs cell's time).
    """
    if count >= _MAX_TERMS or at >= TEXTBOOK:  # rare: too wide, or a large count
        return 0.0, _rare_rest(lam, at, const, count), total, score, summed
    return at, const - lam, total, score, summed


@nb.njit(cache=True, error_model="numpy", inline="always")
def _right(lift, den, step, w, total, acc):
    """Take the next term to the right, ``lift / den`` times the last (``lift = lam up``).

    Returns (ratio, next lift, next den, term, partial sum, running total of the sums before).
    """
    den += 1.0
    ratio = lift / den
    w *= ratio
    return ratio, lift * step, den, w, total + w, acc + total


@nb.njit(cache=True, error_model="numpy", inline="always")
def _left(fall, num, step, w, total, acc):
    """Take the next term to the left, ``num fall`` times the last (0 once s is 0); as _right."""
    back = num * fall
    w *= back
    return back, fall * step, num - 1.0, w, total + w, acc + total


@nb.njit(cache=True, error_model="numpy", inline="always")
def _count(d_r, d_l, mode):
    """Count the terms: the mode, ``d_r`` to its right, ``d_l`` to its left but none below 0."""
    return 1 + d_r + (d_l if d_l <= mode else int(mode))


@nb.njit(cache=True, error_model="numpy", inline="always")
def _below(w, ratio, small):
    """Whether the geometric bound of a side's tail after term ``w`` is at most ``small``."""
    return w == 0.0 or w * ratio <= small * (1.0 - ratio)


#: What :mod:`._pairs_batch` may leave out at most, relative to a cell's sum: the terms of
#: the other parity less those of the mode's
PAIRS_ERROR = 2.0**-40
# 1/2 - pi^2 / 96: 1 - cos u >= PAIRS_CURVE u^2 on [0, pi / 2] (1 - cos u >= u^2/2 - u^4/24)
_PAIRS_CURVE = 0.5 - math.pi**2 / 96.0
_LOG_PAIRS_ERROR = math.log(PAIRS_ERROR)
_LOG_2PI, _LOG_2_OVER_PI, _LOG_2 = math.log(2.0 * math.pi), math.log(2.0 / math.pi), math.log(2.0)


@nb.njit(cache=True, error_model="numpy")
def _pairs_suffice(gauss_b, lowest, highest):
    r"""Whether the terms of either parity give the sum within ``PAIRS_ERROR`` at any rate.

    Any rate whose mode ``m`` is from ``lowest`` to ``highest``, with releases of
    ``B = gauss_b``. With :math:`v =
    1/B` and :math:`\mu = A/B + 1/2`, the cell's terms are :math:`p(s \mid \lambda)
    e^{-(s - \mu)^2 / (2v)}` times a constant, and twice those of one parity differ
    from the sum by :math:`|D|`,
    :math:`D = \sum_s (-1)^s p(s \mid \lambda) e^{-(s - \mu)^2 / (2v)}`. As in
    :mod:`._fourier` (the Gaussian as its Fourier integral, the Poisson's generating
    function under it, and :math:`-e^{-i\omega} = e^{-i(\omega + \pi)}`), on the line
    :math:`\operatorname{Im} \omega = \tau` with :math:`L = \lambda e^\tau`

    .. math:: |D| \le \sqrt{\frac{v}{2\pi}}\, e^{G(\tau)} J, \qquad
       J = \int_{\mathbb{R}} e^{-v (u - \pi)^2 / 2 - L (1 - \cos u)}\, du,

    :math:`G(\tau) = v\tau^2/2 - \tau\mu + \lambda(e^\tau - 1)`. At :math:`\tau =
    \log(m / \lambda)` (``L = m``), over the mode's term (a lower bound of the sum), with
    Stirling's :math:`\log m! \le m \log m - m + \log(2\pi m) / 2 + 1 / (12m)`:

    .. math:: \log \frac{|D|}{S} \le \tfrac12 \log(v m) + \frac{1}{12 m}
       + \frac{v}{2} \Big(\tau - \frac{\mu - m}{v}\Big)^2 + \log J,

    and the mode's conditions (``lam up`` in ``(m e^{-B}, m + 1]``) put
    :math:`\tau - (\mu - m)/v` in :math:`[-B/2 - \log(1 + 1/m), B/2]`: the bound
    depends on ``v`` and ``m`` alone. :func:`_log_pairs_integral` bounds :math:`J`.

    The score's moment :math:`\sum_s s\, p(s \mid \lambda) e^{-(s - \mu)^2 / (2v)}`
    is :math:`\lambda` times such a sum at :math:`\mu - 1`, whose mode is ``m - 1`` or
    ``m``: :func:`_log_pairs_bound` bounds both, and the mean of ``s`` that the score
    takes is within ``2 PAIRS_ERROR`` of itself, relative, besides its tails.
    """
    return (
        lowest >= 2.0
        and 0.0 < gauss_b <= 1.0
        and _log_pairs_bound(gauss_b, lowest, highest) <= _LOG_PAIRS_ERROR
    )


@nb.njit(cache=True, error_model="numpy")
def _log_pairs_bound(gauss_b, lowest, highest):
    """:func:`_pairs_suffice`'s bound of ``log(|D| / S)`` at modes ``lowest - 1`` to ``highest``.

    For ``lowest >= 2`` and ``0 < B <= 1``: every term of the bound but ``log(v m)`` falls
    as the mode ``m`` grows (``J`` with ``L``), so it takes ``lowest - 1`` there and
    ``highest`` in that one.
    """
    v, below = 1.0 / gauss_b, lowest - 1.0
    offset = 0.5 * gauss_b + 1.0 / below
    return (
        0.5 * math.log(v * highest) + 1.0 / (12.0 * below) + 0.5 * v * offset * offset
        + _log_pairs_integral(v, below)
    )  # fmt: skip


@nb.njit(cache=True, error_model="numpy")
def _log_pairs_integral(v, m):
    """Bound log J (:func:`_pairs_suffice`) from above at ``L = m``.

    The exponent is symmetric about pi; on [0, pi / 2] below the concave quadratic with
    ``1 - cos u >= _PAIRS_CURVE u^2``, on [pi / 2, pi] below the one with ``1 - cos u``
    above its chord; so on [0, 2 pi] below the larger of their maxima. Beyond, below
    ``e^{-v (u - pi)^2 / 2}``, whose two tails sum to at most ``2 e^{-v pi^2 / 2} / (v pi)``
    (``v >= 1``). The log of a sum is at most the larger log plus ``log 2``.
    """
    half_pi = 0.5 * math.pi
    u = min(v * math.pi / (v + 2.0 * _PAIRS_CURVE * m), half_pi)
    near = -0.5 * v * (u - math.pi) ** 2 - _PAIRS_CURVE * m * u * u
    u = min(max(math.pi - 2.0 * m / (math.pi * v), half_pi), math.pi)
    far = -0.5 * v * (u - math.pi) ** 2 - m * (1.0 + (u - half_pi) / half_pi)
    inside = _LOG_2PI + max(near, far)
    outside = _LOG_2_OVER_PI - 0.5 * v * math.pi * math.pi  # v >= 1
    return max(inside, outside) + _LOG_2


@nb.njit(cache=True, error_model="numpy")
def _rare_rest(lam, at, const, count):
    """:func:`sum_cell`'s ``rest`` for an ``AT`` of TEXTBOOK or more; NaN past _MAX_TERMS.

    A large mode's log-pmf is in Loader's form (see ._log_pmf), exact also where
    ``lam`` is 10^15; the textbook one would lose its last digits to cancellation.
    """
    if count >= _MAX_TERMS:
        return math.nan
    return const - bd0(at, lam)


@nb.njit(cache=True, error_model="numpy")
def width_factor(tol):
    """``z`` of :func:`sum_cell`'s first ``ceil(z sigma)`` terms a side at tolerance ``tol``."""
    return max(math.sqrt(2.0 * math.log(2.0 / tol)) - 0.5, 1.0)
