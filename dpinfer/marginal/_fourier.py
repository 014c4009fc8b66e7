r"""Wide Poisson cells with Gaussian releases: the sum as a contour integral, by trapezoids.

A Poisson cell whose releases are all published Gaussian ones (:mod:`._poisson`'s cells)
has :math:`\prod_m \eta_m(r_m \mid s) = e^{P(\mu)} e^{-(s - \mu)^2 / (2v)}`, with
:math:`1 / v = B` and :math:`\mu = A / B + 1/2` (the ``A`` and ``B`` of
:func:`._kernels._gaussian_ratio`). Writing the Gaussian as its Fourier integral and
summing the Poisson's terms under it (its generating function),

.. math:: S = \sum_{s \ge 0} p(s \mid \lambda)\, e^{-(s - \mu)^2 / (2v)}
   = \sqrt{\frac{v}{2\pi}} \int_{\mathbb{R} + i\tau} e^{g(\omega)}\, d\omega, \qquad
   g(\omega) = -\frac{v \omega^2}{2} + i \omega \mu + \lambda (e^{-i\omega} - 1),

on every horizontal line :math:`\operatorname{Im} \omega = \tau` (the integrand is entire
and Gaussian at both ends). On the line through the saddle point of
:math:`G(\tau) = g(i\tau) = v\tau^2/2 - \tau\mu + \lambda(e^\tau - 1)`, with
:math:`\omega = u + i\tau` and :math:`L = \lambda e^\tau`, the integrand is

.. math:: e^{G(\tau)} e^{E(u) + i\varphi(u)}, \qquad E(u) = -\frac{v u^2}{2} - L (1 - \cos u),
   \qquad \varphi(u) = u (\mu - v\tau - L) + L (u - \sin u),

a bump of width :math:`(v + L)^{-1/2}` whose phase is stationary at its top. Its
trapezoid sums with a step of ``step`` widths converge like :math:`e^{-2\pi^2 /
\mathrm{step}^2}`, so a cell takes ``nodes`` values of the integrand (:func:`plan`: 10 at
``tol = 1e-10``, by symmetry one side of the line) whatever its width, where the sum over
:math:`s` takes about twelve widths of terms: a cell of width 38 (a pageviews cell), 10
nodes against 460 terms. The score is the same integral with the factor
:math:`e^{-i\omega} - 1`: :math:`\partial_\lambda \log S = e^\tau K / T - 1`, ``T`` and
``K`` the integrals of :math:`e^{E} \cos \varphi` and :math:`e^{E} \cos(\varphi - u)`.

**Error.** Each cell's error is bounded where it is summed, and a cell whose bound is
not below ``tol / 2`` of its integral goes to the sum over :math:`s`
(:func:`._poisson.sum_cell`):

- the trapezoid rule with step ``h`` on the whole line is within
  :math:`2M / (e^{2\pi a / h} - 1)` of the integral (Trefethen and Weideman, SIAM Review
  56, 2014, theorem 5.1), :math:`M = \sqrt{2\pi / v}\, e^{\Delta(a)}` bounding the
  integrand's absolute integral on the lines within ``a`` of the contour,
  :math:`\Delta(a) = a |G'(\tau)| + v a^2 / 2 + L (e^a - 1 - a)`; for ``K`` times
  :math:`e^a`;
- the nodes beyond the last: :math:`E` is concave on :math:`[0, \pi/2]`
  (:math:`E'' = -v - L \cos u`), so its tangent at the last node bounds them there, and
  :math:`E(u) \le -v u^2 / 2` beyond;
- rounding: the sums' terms are at most 1 in size, and the integrals are refused below
  ``1 / 64`` of the sums of their terms' sizes.

The saddle point need not be exact (the integral is the same on every line; a line
off it only makes the bounds larger); it is found by Newton's method from the right of
the root of the convex, increasing :math:`G'`.
"""

from __future__ import annotations

import math

import numba as nb

from . import _vector_log, _vector_math
from ._kernels import _gaussian_ratio, _gaussian_terms
from ._poisson import AT, CONST, SD, STEP, UP

#: the smallest width (1 / sqrt(B + 1 / max(lam, 1)), in counts) of a cell on this path:
#: about where its nodes cost what the sum over s does
WIDE = 7.5
# e^{-B} of a cell of width WIDE at any rate: a cell whose STEP is below it is not wide
STEP_WIDE = math.exp(-1.0 / (WIDE * WIDE))
#: ``AT`` of a cell whose state keeps this path's constants: v in ``SD``'s column, mu in
#: ``UP``'s, P(mu) in ``CONST``'s
KEPT = -math.inf
KEPT_V, KEPT_MU, KEPT_REST = SD, UP, CONST
# the rows of a batch of cells (one column a cell): the cell, the rate, v, mu, P(mu), and
# the working rows of sum_batch
CELL, LAM, V, MU, REST, TAU, L, GRAD, H, TOT, KT, MAG, LAST, VALUE, SCORE, OK = range(16)
ROWS = 16
# Newton steps taken by every cell, and the size of G' (in widths sqrt(v + L)) above which
# a cell takes more, one by one, up to _NEWTON in all
_NEWTON_EVERY, _NEWTON_CLOSE, _NEWTON = 4, 0.01, 60
_LOG_2PI = math.log(2.0 * math.pi)
# the integrals are refused below this fraction of the sums of their terms' sizes
_CANCELLATION = 1.0 / 64.0
_EPS = 2.0**-52
# the Taylor coefficients of e^t - 1 - t from t^2 / 2 to t^15 / 15!: at |t| <= 1/2 the rest
# is below 6e-18 of the sum
_SERIES = tuple(1.0 / math.factorial(k) for k in range(2, 16))


@nb.njit(cache=True, error_model="numpy")
def plan(tol):
    r"""``(step, nodes)`` for a tolerance: the step in widths, and the nodes on each side.

    The step makes the trapezoid bound about ``e^-12 tol`` (:math:`e^{-2\pi^2 /
    \mathrm{step}^2}`); ``nodes`` steps reach where :math:`e^{E}` is below about
    ``(tol / 8)^1.1``.
    """
    log_tol = math.log(1.0 / tol)
    step = math.pi * math.sqrt(2.0 / (log_tol + 12.0))
    return step, int(math.ceil(math.sqrt(2.2 * (log_tol + math.log(8.0))) / step))


@nb.njit(cache=True, error_model="numpy")
def queue(form, n, j, lam, row, batch, i):
    """Put cell j at ``lam`` in column ``i`` of ``batch`` if it is this path's; tell whether.

    The cell is :mod:`._poisson`'s (``row`` its state), wide (at least :data:`WIDE`) at
    ``lam``, and ``lam`` and its mean are within +-2**52. Its v, mu and P(mu) are kept in
    its state (:func:`keep`) from one evaluation to the next.
    """
    if not (row[STEP] >= STEP_WIDE and 1.0 <= lam < 2.0**52):
        return False
    if row[AT] != KEPT:
        keep(form, n, j, row)
    v = row[KEPT_V]
    if not (1.0 / v + 1.0 / lam <= 1.0 / (WIDE * WIDE) and abs(row[KEPT_MU]) < 2.0**52):
        return False
    batch[CELL, i], batch[LAM, i], batch[V, i] = j, lam, v
    batch[MU, i], batch[REST, i] = row[KEPT_MU], row[KEPT_REST]
    return True


@nb.njit(cache=True, error_model="numpy")
def keep(form, n, j, row):
    """Keep cell j's v, mu and P(mu) in its state, in place of :mod:`._poisson`'s constants.

    ``AT`` becomes :data:`KEPT`, which is no count: :func:`._poisson.ready` then sets the
    constants of its own path anew, as for a cell whose mode moved.
    """
    big_a, big_b = _gaussian_ratio(form, n, j)
    mu = big_a / big_b + 0.5
    at = math.floor(mu) if abs(mu) < 2.0**52 else 0.0
    row[AT], row[KEPT_V], row[KEPT_MU] = KEPT, 1.0 / big_b, mu
    row[KEPT_REST] = _gaussian_terms(form, n, j, at)[2] + 0.5 * big_b * (at - mu) ** 2


@nb.njit(cache=True, error_model="numpy")
def sum_batch(batch, count, step, nodes, tol, logp, score, score_b, terms):
    """Sum the first ``count`` cells of ``batch`` into ``logp``, the scores and ``terms``.

    Returns how many were refused; their indices are moved to the front of
    ``batch[CELL]`` (their ``logp`` untouched), for the sum over s.
    """
    # every loop below runs over the cells: LLVM vectorises such a loop when it is innermost
    for i in range(count):
        _start(batch, i)
    for _ in range(_NEWTON_EVERY):
        for i in range(count):
            _newton_step(batch, i)
    for i in range(count):
        if not _close(batch, i):
            for _ in range(_NEWTON - _NEWTON_EVERY):  # rare: a cell far from its saddle
                _newton_step(batch, i)
                if _close(batch, i):
                    break
    for i in range(count):
        _set(batch, i, step)
    for j in range(1, nodes + 1):  # each node across the batch
        for i in range(count):
            _node(batch, i, j)
    for i in range(count):
        _finish(batch, i, nodes, tol)
    refused = 0
    for i in range(count):
        cell = int(batch[CELL, i])
        if batch[OK, i] > 0.0:
            logp[cell], score[cell], terms[cell] = batch[VALUE, i], batch[SCORE, i], nodes + 1
            score_b[cell] = 0.0  # the Poisson has one parameter
        else:
            batch[CELL, refused] = cell
            refused += 1
    return refused


@nb.njit(cache=True, error_model="numpy", inline="always")
def _start(batch, i):
    """Start Newton's method for the saddle point, the root of G'(t) = v t - mu + lam e^t.

    From the right of the root of the convex, increasing G', where every step stays.
    """
    lam, v, mu = batch[LAM, i], batch[V, i], batch[MU, i]
    t = (mu - lam) / (v + lam)  # G' >= 0 here: G' is convex and this is its tangent's root
    # and here, where G'(log(mu / lam)) = v log(mu / lam), when mu > lam
    batch[TAU, i] = min(t, _vector_log.log(mu / lam)) if mu > lam else t


@nb.njit(cache=True, error_model="numpy", inline="always")
def _newton_step(batch, i):
    """Take one step of Newton's method on G'."""
    lam, v, mu, t = batch[LAM, i], batch[V, i], batch[MU, i], batch[TAU, i]
    el = lam * _vector_math.exp(t)
    batch[TAU, i] = t - (v * t - mu + el) / (v + el)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _close(batch, i):
    """Whether G' is within _NEWTON_CLOSE widths of 0 at cell ``i``'s ``t``."""
    lam, v, mu, t = batch[LAM, i], batch[V, i], batch[MU, i], batch[TAU, i]
    el = lam * _vector_math.exp(t)
    return abs(v * t - mu + el) <= _NEWTON_CLOSE * math.sqrt(v + el)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _set(batch, i, step):
    """Make cell ``i``'s ``t`` its line: L, G'(t), the step, and zero sums."""
    lam, v, mu, t = batch[LAM, i], batch[V, i], batch[MU, i], batch[TAU, i]
    el = lam * _vector_math.exp(t)
    batch[L, i], batch[GRAD, i] = el, v * t - mu + el
    batch[H, i] = step / math.sqrt(v + el)
    batch[TOT, i] = batch[KT, i] = batch[MAG, i] = 0.0


@nb.njit(cache=True, error_model="numpy", inline="always")
def _node(batch, i, j):
    """Add node ``j`` of cell ``i`` to its sums (no branch, no call: vectorised)."""
    u = j * batch[H, i]
    v, el = batch[V, i], batch[L, i]
    vers = _vector_math.versine(u)
    u_sin = _vector_math.u_minus_sine(u)
    w = _vector_math.exp(-0.5 * v * u * u - el * vers)
    sine, cosine = _vector_math.sincos(el * u_sin - u * batch[GRAD, i])
    batch[TOT, i] += w * cosine
    batch[KT, i] += w * (cosine * (1.0 - vers) + sine * (u - u_sin))
    batch[MAG, i] += w
    batch[LAST, i] = w


@nb.njit(cache=True, error_model="numpy", inline="always")
def _finish(batch, i, nodes, tol):
    """Cell ``i``'s log S, score and whether its bounds hold (1 or 0), from its sums."""
    h, v, el, grad, t = batch[H, i], batch[V, i], batch[L, i], batch[GRAD, i], batch[TAU, i]
    lam, mu = batch[LAM, i], batch[MU, i]
    total = h * (1.0 + 2.0 * batch[TOT, i])
    moment = h * (1.0 + 2.0 * batch[KT, i])
    size = h * (1.0 + 2.0 * batch[MAG, i])
    # the trapezoid rule's error on lines within a of the contour, a near its best
    a = min((2.0 * math.pi / h - abs(grad)) / (v + el), 1.0)
    ratio = 2.0 * math.pi * a / h
    shift = _vector_math.exp(a)
    lift = a * abs(grad) + 0.5 * v * a * a + el * (shift - 1.0 - a)
    trapezoid = (
        2.0
        * math.sqrt(2.0 * math.pi / v)
        * _vector_math.exp(lift - ratio)
        / (1.0 - _vector_math.exp(-ratio))
    )
    # the nodes past the last, to pi / 2 along E's tangent there, and beyond pi / 2
    last = nodes * h
    fall = h * (v * last + el * (last - _vector_math.u_minus_sine(last)))
    beyond = _vector_math.exp(-v * math.pi**2 / 8.0) / (
        1.0 - _vector_math.exp(-v * math.pi * h / 2.0)
    )
    tail = 2.0 * h * (batch[LAST, i] / (_vector_math.exp(fall) - 1.0) + beyond)
    rounding = 4.0 * (nodes + 2) * _EPS * size
    error = trapezoid + tail + rounding
    error_k = shift * trapezoid + tail + rounding
    ok = (
        (a > 0.0)
        & (last <= 1.0)
        & (total >= _CANCELLATION * size)
        & (moment >= _CANCELLATION * size)
        & (error <= 0.5 * tol * (total - error))
        & (error_k <= 0.5 * tol * (moment - error_k))
    )
    batch[OK, i] = 1.0 if ok else 0.0
    big_g = 0.5 * v * t * t - t * (mu - lam) + lam * _exp_less_two_terms(t)
    log_prefactor = 0.5 * (_vector_log.log(v) - _LOG_2PI)
    batch[VALUE, i] = batch[REST, i] + log_prefactor + big_g + _vector_log.log(total)
    batch[SCORE, i] = _vector_math.exp(t) * moment / total - 1.0


@nb.njit(cache=True, error_model="numpy", inline="always")
def _exp_less_two_terms(t):
    """``e^t - 1 - t`` for ``t <= 709``, by its series where ``e^t - 1 - t`` would cancel."""
    c = _SERIES
    p = c[13]
    p = c[12] + t * p
    p = c[11] + t * p
    p = c[10] + t * p
    p = c[9] + t * p
    p = c[8] + t * p
    p = c[7] + t * p
    p = c[6] + t * p
    p = c[5] + t * p
    p = c[4] + t * p
    p = c[3] + t * p
    p = c[2] + t * p
    p = c[1] + t * p
    p = c[0] + t * p
    return t * t * p if abs(t) <= 0.5 else _vector_math.exp(t) - 1.0 - t
