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
- rounding: a few ulps of each term, the sums', and the phase's, all relative to the
  sums of the terms' sizes (so a sum that cancels is refused).

The saddle point need not be exact (the integral is the same on every line; a line
off it only makes the bounds larger); it is found by Newton's method from the right of
the root of the convex, increasing :math:`G'`.

**Suppressed cells.** A Poisson cell with one suppressed discrete Gaussian release
(:mod:`._suppressed`'s) scores :math:`P(s + D \le r)`, ``r`` the cut less one, summed over
s: :math:`P(X + D \le r)`, the sum over the released values :math:`y \le r` of the
integral above at :math:`\mu = y` over the noise's normaliser ``Z``. Summed under the
integral on a line :math:`\tau < 0`, the geometric series gives the factor
:math:`1 / (1 - e^{-i\omega})`, whose pole at 0 the line must keep away from: with
:math:`q = e^\tau`, the real part of the integrand is
:math:`e^{E} (\cos\varphi - q \cos(\varphi + u)) / ((1 - q)^2 + 2q(1 - \cos u))`. Where the
mean is below the cut (the probability above 1/2) the complement
:math:`P(X + D \ge r + 1)` is summed instead, on a line :math:`\tau > 0`. The line is the
saddle point of the integrand with its pole factor; the step is smaller where the pole
is near (the strip of the trapezoid bound stops short of it, and the bound has the pole
factor's largest size in the strip), up to :data:`MORE_NODES` times the nodes. The score
is the noise's pmf at ``r`` over the probability (:math:`\partial_\lambda P(X + D \le r) =
-P(X + D = r)`), from the same nodes.

**Near the cut** (within :data:`NEAR_CUT` widths) the saddle point is near the pole, and
the line above would need 30 nodes or more. There :func:`sum_near_batch` takes the pole
out: with :math:`q(\omega) = -c\omega^2/2 + ib\omega`, ``g``'s quadratic at 0
(:math:`c = v + \lambda`, :math:`b = r - \lambda`),

.. math:: \int_{\mathbb{R} + i\tau} \frac{e^{g}}{1 - e^{-i\omega}}\, d\omega
   = 2\pi\, \Phi\!\left(\frac{b}{\sqrt{c}}\right)
   + \int_{\mathbb{R} + i\tau'} \left(\frac{e^{g}}{1 - e^{-i\omega}}
   - \frac{e^{q}}{i\omega}\right) d\omega,

the first term the pole's part on a line below 0 (:math:`1 / (i\omega) = \int_0^\infty
e^{-i\omega x} dx` there, and :math:`e^{q}` is the Fourier transform of a normal
density), the second entire about 0: its line may be anywhere between the poles at
:math:`\pm 2\pi` (crossing their residues, of size :math:`e^{-2\pi^2 v}`, is within the
error bound), and is taken through the saddle point, at least a width from 0. It takes the
published cell's nodes and strip; the probability is summed directly on either side of
the cut (no complement).
"""

from __future__ import annotations

import math

import numba as nb

from ..noise.form import DISCRETE_GAUSSIAN, record, released_at
from . import _vector_log, _vector_math
from ._kernels import _gaussian_ratio, _gaussian_terms
from ._poisson import AT, CONST, SD, STEP, UP
from ._suppressed import SUPPRESSED

#: the smallest width (1 / sqrt(B + 1 / max(lam, 1)), in counts) of a cell on this path:
#: about where its nodes cost what the sum over s does
WIDE = 7.5
# e^{-B} of a cell of width WIDE at any rate: a cell whose STEP is below it is not wide
STEP_WIDE = math.exp(-1.0 / (WIDE * WIDE))
#: ``AT`` of a cell whose state keeps this path's constants: v in ``SD``'s column, mu in
#: ``UP``'s, P(mu) in ``CONST``'s
KEPT = -math.inf
KEPT_V, KEPT_MU, KEPT_REST = SD, UP, CONST
#: a suppressed cell whose pole is near takes at most this many times the nodes
MORE_NODES = 5
#: the smallest width of a suppressed cell near its cut on this path (its sum over s costs
#: more than a published cell's: each term reads the noise's table). Its nodes stop at
#: u = 1, where the integrand is below e^{-v/2}: the bounds refuse a cell for which that
#: is not small enough
WIDE_NEAR = 5.0
#: a suppressed cell whose rate is fewer than this many widths from its cut goes to
#: :func:`sum_near_batch` (on :func:`sum_batch`'s line it would take some 30 nodes or more)
NEAR_CUT = 5.0
# the rows of a batch of cells (one column a cell): the cell, the rate, v, mu, P(mu) (or the
# noise's log-normaliser), the kind of cell (PUBLISHED, BELOW, ABOVE, NEAR), and the working
# rows of sum_batch and sum_near_batch
(CELL, LAM, V, MU, REST, KIND, TAU, L, GRAD, H, A, POLE, NEED, TOT, KT, MAG, VALUE, SCORE,
 OK, ZQ, PSI, QTOT, QMAG, FAR) = range(24)  # fmt: skip
ROWS = 24
#: the cells of a batch (the length of each of its rows)
BATCH = 64
#: the kinds of cell: published; suppressed, summed below the cut or above it, or near it
#: (:func:`sum_near_batch`)
PUBLISHED, BELOW, ABOVE, NEAR = 0.0, -1.0, 1.0, -2.0
#: what :func:`queue` did with a cell: nothing, or put it in batch 0 or 1 (the near batch)
NOT_QUEUED, QUEUED, QUEUED_NEAR = -1, 0, 1
# Newton steps taken by every cell, and the size of the derivative (in widths) above which
# a cell takes more, one by one, up to _NEWTON in all
_NEWTON_EVERY, _NEWTON_CLOSE, _NEWTON = 3, 0.01, 80
# Newton steps of a NEAR cell, from q's saddle point: its line need not be g's (the bounds
# hold on any line), and within NEAR_CUT widths of the cut the two are close
_NEWTON_NEAR = 2
_LOG_2PI = math.log(2.0 * math.pi)
_EPS = 2.0**-52
# the Taylor coefficients of e^t - 1 - t from t^2 / 2 to t^15 / 15!: at |t| <= 1/2 the rest
# is below 6e-18 of the sum
_SERIES = tuple(1.0 / math.factorial(k) for k in range(2, 16))
# a complement above this is refused (its logarithm loses digits)
_LARGEST_COMPLEMENT = 0.75


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


@nb.njit(cache=True, error_model="numpy", inline="always")
def unkept(lam, step, at):
    """Whether :func:`queue` needs :func:`keep` first: a wide published cell, its v, mu not kept.

    ``step`` and ``at`` are the cell's state's ``STEP`` and ``AT`` (numbers: see :func:`queue`).
    """
    return step >= STEP_WIDE and 1.0 <= lam < 2.0**52 and at != KEPT


# Every array here is read or written whatever the answer: an array that a numba function
# leaves on some paths only keeps the reference count it took on entry, two atomic updates
# an array a call (on the pageviews example, a tenth of an evaluation's time).
@nb.njit(cache=True, error_model="numpy")
def queue(form, j, lam, row, batches, queued):
    """Put cell j at ``lam`` in ``batches[k]``, column ``queued[k]``, if on this path.

    Returns ``k``, :data:`QUEUED` or :data:`QUEUED_NEAR`, or :data:`NOT_QUEUED`. The cell
    is :mod:`._poisson`'s (``row`` its state) or :mod:`._suppressed`'s (one discrete
    Gaussian release; within :data:`NEAR_CUT` widths of its cut it goes to the near
    batch), wide (at least :data:`WIDE`) at ``lam``, and ``lam`` and its mean are within
    +-2**52. A published cell's v, mu and P(mu) are kept in its state (:func:`keep`, when
    :func:`unkept`) from one evaluation to the next. A cell not queued is written to the
    first free column of :data:`QUEUED`'s batch all the same, which its count leaves out.
    """
    cell, cut = record(form, j), released_at(form, j)
    kind, scale, log_norm = cell.kind, cell.scale, cell.log_norm
    step, at, v, mu, rest = row[STEP], row[AT], row[KEPT_V], row[KEPT_MU], row[KEPT_REST]
    if step == SUPPRESSED:
        where, v, mu, rest, side = _suppressed_place(lam, kind, scale, cut, log_norm)
    else:
        where, side = _published_place(lam, step, at, v, mu), PUBLISHED
    k = QUEUED if where == NOT_QUEUED else where
    _place(batches, k, queued[k], j, lam, v, mu, rest, side)
    return where


@nb.njit(cache=True, error_model="numpy", inline="always")
def _published_place(lam, step, at, v, mu):
    """:func:`queue`'s batch for a published cell whose state holds ``at``, ``v`` and ``mu``."""
    if not (step >= STEP_WIDE and 1.0 <= lam < 2.0**52 and at == KEPT):
        return NOT_QUEUED
    if not (1.0 / v + 1.0 / lam <= 1.0 / (WIDE * WIDE) and abs(mu) < 2.0**52):
        return NOT_QUEUED
    return QUEUED


@nb.njit(cache=True, error_model="numpy", inline="always")
def _suppressed_place(lam, kind, scale, cut, log_norm):
    """:func:`queue`'s batch for a suppressed cell, and its v, mu, rest and kind there."""
    v = scale * scale
    if not (
        1.0 <= lam < 2.0**52
        and kind == DISCRETE_GAUSSIAN
        and 1.0 / v + 1.0 / lam <= 1.0 / (WIDE_NEAR * WIDE_NEAR)
        and abs(cut) < 2.0**52
    ):
        return NOT_QUEUED, v, cut, log_norm, BELOW
    if abs(lam - cut) < NEAR_CUT * math.sqrt(lam + v):
        return QUEUED_NEAR, v, cut, log_norm, NEAR
    if 1.0 / v + 1.0 / lam > 1.0 / (WIDE * WIDE):
        return NOT_QUEUED, v, cut, log_norm, BELOW
    if lam <= cut:  # the probability above about 1/2: its complement is summed
        return QUEUED, v, cut + 1.0, log_norm, ABOVE
    return QUEUED, v, cut, log_norm, BELOW


@nb.njit(cache=True, error_model="numpy", inline="always")
def _place(batches, k, i, j, lam, v, mu, rest, kind):
    """Write cell j's rate, v, mu, P(mu) or log-normaliser, and kind in column ``i`` of batch k.

    Indexed in ``batches`` itself: a view of its row ``k`` would cost two atomic updates of
    its reference count a cell.
    """
    batches[k, CELL * BATCH + i], batches[k, LAM * BATCH + i] = j, lam
    batches[k, V * BATCH + i], batches[k, MU * BATCH + i] = v, mu
    batches[k, REST * BATCH + i], batches[k, KIND * BATCH + i] = rest, kind


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

    ``batch`` holds :data:`ROWS` rows of :data:`BATCH` cells, row after row (:func:`queue`
    fills cell ``i``'s column). Returns how many were refused; their indices are moved to
    the front of row ``CELL`` (their ``logp`` untouched), for the sum over s.
    """
    # every loop below runs over the cells: LLVM vectorises such a loop when it is innermost
    # and has no branch (what differs between cells is computed, then chosen), and when it
    # can tell that the rows it writes do not overlap those it reads: so the batch is one
    # flat array of rows of BATCH cells, and the loops run over all BATCH of them (the
    # columns past ``count`` hold whatever they held, and are not read after)
    _saddle_points(batch, count)
    for i in range(BATCH):
        _set(batch, i, step, nodes)
    # nodes past ``nodes`` for the cells that need them (the others add nothing there)
    most = nodes
    for i in range(count):
        most = max(most, min(int(batch[NEED * BATCH + i]), MORE_NODES * nodes))
    for j in range(1, nodes + 1):  # each node across the batch
        for i in range(BATCH):
            _node(batch, i, j, False)
    for j in range(nodes + 1, most + 1):
        for i in range(BATCH):  # the whole batch, vectorised: _node masks the cells past NEED
            _node(batch, i, j, True)
    for i in range(BATCH):
        _finish(batch, i, nodes, tol)
    return _collect(batch, count, logp, score, score_b, terms)


@nb.njit(cache=True, error_model="numpy")
def sum_near_batch(batch, count, step, nodes, tol, logp, score, score_b, terms):
    r""":func:`sum_batch` for a batch of :data:`NEAR` cells: suppressed, near their cut.

    Their integrand :math:`f = e^{g} / (1 - e^{-i\omega})` less its pole's part,
    :math:`e^{q} / (i\omega)` with ``q`` the quadratic of ``g`` at 0, is entire about 0; the
    pole's part is :math:`2\pi \Phi(b / \sqrt{c})` (see the module's notes).
    """
    for i in range(BATCH):  # the saddle point of q, b / c, and steps towards g's
        batch[TAU * BATCH + i] = (batch[MU * BATCH + i] - batch[LAM * BATCH + i]) / (
            batch[V * BATCH + i] + batch[LAM * BATCH + i]
        )
    for _ in range(_NEWTON_NEAR):
        for i in range(BATCH):
            _newton_step(batch, i)
    for i in range(BATCH):
        _set_near(batch, i, step, nodes)
    for j in range(1, nodes + 1):  # the two parts in loops of their own: each vectorised
        for i in range(BATCH):
            _node(batch, i, j, True)
        for i in range(BATCH):
            _node_pole(batch, i, j)
    for i in range(count):  # libm's erfc: not vectorised
        c, b = (
            batch[V * BATCH + i] + batch[LAM * BATCH + i],
            batch[MU * BATCH + i] - batch[LAM * BATCH + i],
        )
        batch[VALUE * BATCH + i] = 0.5 * math.erfc(-b / math.sqrt(2.0 * c))
    for i in range(BATCH):
        _finish_near(batch, i, nodes, tol)
    return _collect(batch, count, logp, score, score_b, terms)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _saddle_points(batch, count):
    """Newton's method for every cell's saddle point (:func:`_start`)."""
    for i in range(BATCH):
        _start(batch, i)
    for _ in range(_NEWTON_EVERY):
        for i in range(BATCH):
            _newton_step(batch, i)
    for i in range(BATCH):  # which cells are not yet close, vectorised: most are
        batch[FAR * BATCH + i] = 0.0 if _close(batch, i) else 1.0
    for i in range(count):
        if batch[FAR * BATCH + i] > 0.0:
            for _ in range(_NEWTON - _NEWTON_EVERY):  # rare: a cell far from its saddle
                _newton_step(batch, i)
                if _close(batch, i):
                    break


@nb.njit(cache=True, error_model="numpy", inline="always")
def _collect(batch, count, logp, score, score_b, terms):
    """Write the batch's results; move the refused cells to the front of row ``CELL``."""
    refused = 0
    for i in range(count):
        cell = int(batch[CELL * BATCH + i])
        if batch[OK * BATCH + i] > 0.0:
            logp[cell], score[cell] = _result(batch, i)
            terms[cell] = int(batch[NEED * BATCH + i]) + 1
            score_b[cell] = 0.0  # the Poisson has one parameter
        else:
            batch[CELL * BATCH + refused] = cell
            refused += 1
    return refused


@nb.njit(cache=True, error_model="numpy", inline="always")
def _start(batch, i):
    """Start Newton's method for the saddle point, the root of H'(t).

    ``H'(t) = G'(t) = v t - mu + lam e^t`` for a published cell; a suppressed one's adds
    its pole factor's ``e^t / (1 - e^t)`` (below, ``t < 0``) or ``-1 / (e^t - 1)`` (above,
    ``t > 0``). Each is convex and increasing on its side; the steps are kept on it.
    """
    lam, v, mu, kind = (
        batch[LAM * BATCH + i],
        batch[V * BATCH + i],
        batch[MU * BATCH + i],
        batch[KIND * BATCH + i],
    )
    t = (mu - lam) / (v + lam)  # G' >= 0 here: G' is convex and this is its tangent's root
    # and here, where G'(log(mu / lam)) = v log(mu / lam), when mu > lam
    t = min(t, _vector_log.log(mu / lam)) if mu > lam else t
    width = 1.0 / math.sqrt(v + lam)
    t = min(t, -width) if kind == BELOW else t
    batch[TAU * BATCH + i] = max(t, width) if kind == ABOVE else t


@nb.njit(cache=True, error_model="numpy", inline="always")
def _derivatives(batch, i, t):
    """``(H'(t), H''(t))`` of cell ``i`` (see :func:`_start`)."""
    lam, v, mu, kind = (
        batch[LAM * BATCH + i],
        batch[V * BATCH + i],
        batch[MU * BATCH + i],
        batch[KIND * BATCH + i],
    )
    el = lam * _vector_math.exp(t)
    # the pole factor's: 1 / (e^{-t} - 1) below, -1 / (e^t - 1) above (kind -1 or 1)
    gap = _vector_math.exp(kind * t) - 1.0
    pole, bend = -kind / gap, (gap + 1.0) / (gap * gap)  # computed, then chosen: vectorised
    free = (kind == PUBLISHED) | (kind == NEAR)  # NEAR: the pole's part is taken out
    return v * t - mu + el + (0.0 if free else pole), v + el + (0.0 if free else bend)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _newton_step(batch, i):
    """Take one step of Newton's method on H', halving towards 0 a step that crosses it."""
    t = batch[TAU * BATCH + i]
    first, second = _derivatives(batch, i, t)
    moved = t - first / second
    kind = batch[KIND * BATCH + i]
    crossed = (kind * moved < 0.0) & (kind * kind == 1.0)  # BELOW or ABOVE only
    batch[TAU * BATCH + i] = 0.5 * t if crossed else moved


@nb.njit(cache=True, error_model="numpy", inline="always")
def _close(batch, i):
    """Whether H' is within _NEWTON_CLOSE widths of 0 at cell ``i``'s ``t``."""
    first, second = _derivatives(batch, i, batch[TAU * BATCH + i])
    return abs(first) <= _NEWTON_CLOSE * math.sqrt(second)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _set(batch, i, step, nodes):
    r"""Make cell ``i``'s ``t`` its line: L, G'(t), the strip, the step, and zero sums.

    The strip's half-width ``a`` is the published cell's best, :math:`2\pi / (step
    \sqrt{v + L})`, or nine tenths of the way to the pole if that is nearer; the step
    keeps :math:`2\pi a / h` at the published cell's value, and ``NEED`` nodes reach as far.
    """
    lam, v, mu, t, kind = (
        batch[LAM * BATCH + i],
        batch[V * BATCH + i],
        batch[MU * BATCH + i],
        batch[TAU * BATCH + i],
        batch[KIND * BATCH + i],
    )
    el = lam * _vector_math.exp(t)
    root = math.sqrt(v + el)
    best = 2.0 * math.pi / (step * root)
    a = min(best, 0.9 * abs(t)) if kind != PUBLISHED else best
    h = a * step * step / (2.0 * math.pi)
    batch[L * BATCH + i], batch[GRAD * BATCH + i], batch[A * BATCH + i], batch[H * BATCH + i] = (
        el,
        v * t - mu + el,
        a,
        h,
    )
    pole = _vector_math.exp(-abs(t))
    batch[POLE * BATCH + i] = 0.0 if kind == PUBLISHED else pole
    batch[NEED * BATCH + i] = nodes if a == best else math.ceil(nodes * best / a)
    batch[TOT * BATCH + i] = batch[KT * BATCH + i] = batch[MAG * BATCH + i] = 0.0


@nb.njit(cache=True, error_model="numpy", inline="always")
def _node(batch, i, j, within):
    """Add node ``j`` of cell ``i`` to its sums (no branch, no call: vectorised).

    ``within``: only if the cell needs it (other cells of the batch may need more). The
    loops read and write few rows: each more is a run-time check of their overlap, and
    past eight LLVM does not vectorise the loop.
    """
    u = j * batch[H * BATCH + i]
    v, el, kind, q = (
        batch[V * BATCH + i],
        batch[L * BATCH + i],
        batch[KIND * BATCH + i],
        batch[POLE * BATCH + i],
    )
    vers = _vector_math.versine(u)
    u_sin = _vector_math.u_minus_sine(u)
    w = _vector_math.exp(-0.5 * v * u * u - el * vers)
    if within:  # a constant of each loop
        w = w if j <= batch[NEED * BATCH + i] else 0.0
    sine, cosine = _vector_math.sincos(el * u_sin - u * batch[GRAD * BATCH + i])
    turned = sine * (u - u_sin)  # sin(phi) sin(u)
    minus_u = cosine * (1.0 - vers) + turned  # cos(phi - u)
    plus_u = cosine * (1.0 - vers) - turned  # cos(phi + u)
    den = (1.0 - q) * (1.0 - q) + 2.0 * q * vers
    below = kind < 0.0  # BELOW or NEAR: the pole factor 1 / (1 - e^{-iw}), q = e^t
    batch[TOT * BATCH + i] += w * (cosine - q * (plus_u if below else minus_u)) / den
    batch[KT * BATCH + i] += w * (cosine if below else minus_u)
    batch[MAG * BATCH + i] += w * (1.0 + q) / den


@nb.njit(cache=True, error_model="numpy", inline="always")
def _last(batch, i):
    """Bound the size of cell ``i``'s integrand at its last node: e^E over the pole factor."""
    u = batch[NEED * BATCH + i] * batch[H * BATCH + i]
    v, el, q = batch[V * BATCH + i], batch[L * BATCH + i], batch[POLE * BATCH + i]
    vers = _vector_math.versine(u)
    return _vector_math.exp(-0.5 * v * u * u - el * vers) / (
        (1.0 - q) * (1.0 - q) + 2.0 * q * vers
    )


@nb.njit(cache=True, error_model="numpy", inline="always")
def _strip(batch, i):
    """``(bound, e^a)``: the trapezoid rule's error for e^g alone on cell ``i``'s line.

    From the integrand's size on the strip ``|Im| < a`` about the line (the module's notes).
    """
    h, v, el, grad, a = (
        batch[H * BATCH + i],
        batch[V * BATCH + i],
        batch[L * BATCH + i],
        batch[GRAD * BATCH + i],
        batch[A * BATCH + i],
    )
    ratio = 2.0 * math.pi * a / h
    shift = _vector_math.exp(a)
    lift = a * abs(grad) + 0.5 * v * a * a + el * (shift - 1.0 - a)
    damp = 1.0 / (1.0 - _vector_math.exp(-ratio))
    return 2.0 * math.sqrt(2.0 * math.pi / v) * _vector_math.exp(lift - ratio) * damp, shift


@nb.njit(cache=True, error_model="numpy", inline="always")
def _past_and_rounding(batch, i):
    """``(bound, rounding, last)``: the nodes past cell ``i``'s last, rounding's factor, and u.

    The nodes past the last: to pi / 2 along E's tangent there (the pole factor's size falls
    with u), and beyond pi / 2 with E(u) <= -v u^2 / 2 and the factor at most 1 / (1 - q)^2.
    Rounding: a few ulps a term, the sums', and the phase's (its size at the last node).
    """
    h, v, el, grad, q = (
        batch[H * BATCH + i],
        batch[V * BATCH + i],
        batch[L * BATCH + i],
        batch[GRAD * BATCH + i],
        batch[POLE * BATCH + i],
    )
    need = batch[NEED * BATCH + i]
    last = need * h
    fall = h * (v * last + el * (last - _vector_math.u_minus_sine(last)))
    beyond = _vector_math.exp(-v * math.pi**2 / 8.0) / (
        1.0 - _vector_math.exp(-v * math.pi * h / 2.0)
    )
    past = beyond / ((1.0 - q) * (1.0 - q))
    tail = 2.0 * h * (_last(batch, i) / (_vector_math.exp(fall) - 1.0) + past)
    phase = last * abs(grad) + el * _vector_math.u_minus_sine(last)
    return tail, (4.0 * (need + 2) + 2.0 * phase) * _EPS, last


@nb.njit(cache=True, error_model="numpy", inline="always")
def _finish(batch, i, nodes, tol):
    """Cell ``i``'s log-likelihood, score and whether its bounds hold (1 or 0)."""
    h, v, t = batch[H * BATCH + i], batch[V * BATCH + i], batch[TAU * BATCH + i]
    lam, mu, kind, q, a = (
        batch[LAM * BATCH + i],
        batch[MU * BATCH + i],
        batch[KIND * BATCH + i],
        batch[POLE * BATCH + i],
        batch[A * BATCH + i],
    )
    need = batch[NEED * BATCH + i]
    total = h * (1.0 / (1.0 - q) + 2.0 * batch[TOT * BATCH + i])
    moment = h * (1.0 + 2.0 * batch[KT * BATCH + i])
    # the sizes of the terms: MAG's bound K's terms as well (the pole factor is at least 1)
    size = h * (1.0 / (1.0 - q) + 2.0 * batch[MAG * BATCH + i])
    strip, shift = _strip(batch, i)
    pole = 1.0 / (1.0 - _vector_math.exp(a - abs(t)))
    pole = 1.0 if kind == PUBLISHED else pole
    tail, rounding, last = _past_and_rounding(batch, i)
    error = pole * strip + tail + rounding * size
    error_k = (1.0 if kind == BELOW else shift) * strip + tail + rounding * size
    big_g = 0.5 * v * t * t - t * (mu - lam) + lam * _exp_less_two_terms(t)
    log_integral = (
        batch[REST * BATCH + i]
        + 0.5 * (_vector_log.log(v) - _LOG_2PI)
        + big_g
        + _vector_log.log(total)
    )
    complement = _vector_math.exp(log_integral)
    complement = complement if kind == ABOVE else 0.0
    ok = (
        (need <= MORE_NODES * nodes)
        & (last <= 1.0)
        & (total > 0.0)
        & (moment > 0.0)
        & (error <= 0.5 * tol * (total - error) * (1.0 - complement))
        & (error_k <= 0.5 * tol * (moment - error_k))
        & (complement <= _LARGEST_COMPLEMENT)
    )
    batch[OK * BATCH + i] = 1.0 if ok else 0.0
    batch[VALUE * BATCH + i] = log_integral
    tilt = _vector_math.exp(t)
    batch[SCORE * BATCH + i] = (1.0 if kind == BELOW else tilt) * moment / total


@nb.njit(cache=True, error_model="numpy", inline="always")
def _set_near(batch, i, step, nodes):
    r""":func:`_set` for a :data:`NEAR` cell: its line at least a width from the pole's place.

    The line is the saddle point's, moved to a width from 0 if nearer (the two parts
    are each as large as :math:`1 / |\omega|`, their difference is not); the strip is the
    published cell's. ``ZQ`` is :math:`e^{Q(t) - G(t)}`, the pole's part's size on the line
    over the integrand's, and ``PSI`` its phase's rate :math:`b - ct`.
    """
    lam, v, mu, t = (
        batch[LAM * BATCH + i],
        batch[V * BATCH + i],
        batch[MU * BATCH + i],
        batch[TAU * BATCH + i],
    )
    width = 1.0 / math.sqrt(v + lam * _vector_math.exp(t))
    t = t if abs(t) >= width else (width if t > 0.0 else -width)
    el = lam * _vector_math.exp(t)
    root = math.sqrt(v + el)
    a = 2.0 * math.pi / (step * root)
    batch[TAU * BATCH + i], batch[L * BATCH + i], batch[GRAD * BATCH + i] = t, el, v * t - mu + el
    h = step / root
    batch[A * BATCH + i], batch[H * BATCH + i] = a, h
    batch[NEED * BATCH + i] = min(nodes, math.floor(1.0 / h))  # to u = 1 (WIDE_NEAR)
    batch[POLE * BATCH + i] = _vector_math.exp(t)
    cubic = _exp_less_two_terms(t) - 0.5 * t * t  # e^t - 1 - t - t^2 / 2
    batch[ZQ * BATCH + i] = _vector_math.exp(-lam * cubic)
    batch[PSI * BATCH + i] = mu - lam - (v + lam) * t
    batch[TOT * BATCH + i] = batch[KT * BATCH + i] = batch[MAG * BATCH + i] = 0.0
    batch[QTOT * BATCH + i] = batch[QMAG * BATCH + i] = 0.0


@nb.njit(cache=True, error_model="numpy", inline="always")
def _node_pole(batch, i, j):
    r"""Add node ``j`` (up to ``NEED``) of the pole's part, :math:`e^{q - Q(t)} / (i\omega)`."""
    u, t = j * batch[H * BATCH + i], batch[TAU * BATCH + i]
    c = batch[V * BATCH + i] + batch[LAM * BATCH + i]
    size = _vector_math.exp(-0.5 * c * u * u) / (u * u + t * t)
    size = size if j <= batch[NEED * BATCH + i] else 0.0
    sine, cosine = _vector_math.sincos(u * batch[PSI * BATCH + i])
    batch[QTOT * BATCH + i] += size * (u * sine - t * cosine)
    batch[QMAG * BATCH + i] += size * (u + abs(t))


@nb.njit(cache=True, error_model="numpy", inline="always")
def _finish_near(batch, i, nodes, tol):
    r""":func:`_finish` for a :data:`NEAR` cell; ``VALUE`` holds :math:`\Phi(b / \sqrt{c})`.

    The integral over :math:`e^{G(t)}` is :math:`2\pi \Phi e^{-G} + J`, ``J`` the
    trapezoid sum of the entire part. Its error: on the strip's edges, at least
    ``gap = a - |t|`` from 0, the pole factor is at most :math:`1 / (1 - e^{-gap})` and
    :math:`1 / |\omega|` at most ``1 / gap``; the entire part's other poles, at
    :math:`2\pi k`, have residues of size :math:`e^{-2\pi^2 k^2 v}`; the pole's part
    beyond the last node is a Gaussian's tail.
    """
    h, v, t = batch[H * BATCH + i], batch[V * BATCH + i], batch[TAU * BATCH + i]
    lam, mu, q, a, zq = (
        batch[LAM * BATCH + i],
        batch[MU * BATCH + i],
        batch[POLE * BATCH + i],
        batch[A * BATCH + i],
        batch[ZQ * BATCH + i],
    )
    c, b = v + lam, mu - lam
    entire = h * (1.0 / (1.0 - q) + zq / t + 2.0 * (batch[TOT * BATCH + i] - zq * batch[
        QTOT * BATCH + i]))  # fmt: skip
    moment = h * (1.0 + 2.0 * batch[KT * BATCH + i])
    size = h * (
        1.0 / abs(1.0 - q)
        + zq / abs(t)
        + 2.0 * (batch[MAG * BATCH + i] + zq * batch[QMAG * BATCH + i])  # fmt: skip
    )
    strip_k = _strip(batch, i)[0]
    ratio = 2.0 * math.pi * a / h
    damp = 1.0 / (1.0 - _vector_math.exp(-ratio))
    gap = a - abs(t)
    lift_q = a * abs(c * t - b) + 0.5 * c * a * a
    strip = strip_k / (1.0 - _vector_math.exp(-gap)) + (
        2.0 * zq * math.sqrt(2.0 * math.pi / c) * _vector_math.exp(lift_q - ratio) * damp / gap
    )
    big_g = 0.5 * v * t * t - t * (mu - lam) + lam * _exp_less_two_terms(t)
    # the residues at 2 pi k (k != 0): crossed if t > 0, and the trapezoid rule's error
    poles = (
        4.04
        * math.pi
        * _vector_math.exp(-2.0 * math.pi**2 * v - big_g)
        / (1.0 - _vector_math.exp(-2.0 * math.pi * abs(t) / h))
    )
    tail, rounding, last = _past_and_rounding(batch, i)
    fall_q = _vector_math.exp(-c * last * h)
    tail_q = (
        2.0 * h * zq * _vector_math.exp(-0.5 * c * last * last) / last * fall_q / (1.0 - fall_q)
    )
    integral = 2.0 * math.pi * batch[VALUE * BATCH + i] * _vector_math.exp(-big_g) + entire
    error = strip + poles + tail + tail_q + rounding * size
    # K's terms have no pole factor: their sum is at most h + 2 times the integral of e^E
    error_k = strip_k + tail + rounding * (h + math.sqrt(2.0 * math.pi / v))
    ok = (
        (last <= 1.0)
        & (gap > 0.0)
        & (integral > 0.0)
        & (moment > 0.0)
        & (error <= 0.5 * tol * (integral - error))
        & (error_k <= 0.5 * tol * (moment - error_k))
    )
    batch[OK * BATCH + i] = 1.0 if ok else 0.0
    batch[VALUE * BATCH + i] = (
        batch[REST * BATCH + i]
        + 0.5 * (_vector_log.log(v) - _LOG_2PI)
        + big_g
        + _vector_log.log(integral)
    )
    batch[SCORE * BATCH + i] = moment / integral


@nb.njit(cache=True, error_model="numpy")
def _result(batch, i):
    r"""``(log-likelihood, score)`` of cell ``i`` from :func:`_finish`'s.

    Published: :math:`\log S` and :math:`e^t K / T - 1`; suppressed below the cut:
    :math:`\log P` and :math:`-K / T` (the pmf at ``r`` over P); above: :math:`\log(1 - Q)`
    and :math:`-Q e^t K / (T (1 - Q))`.
    """
    value, ratio, kind = (
        batch[VALUE * BATCH + i],
        batch[SCORE * BATCH + i],
        batch[KIND * BATCH + i],
    )
    if kind == PUBLISHED:
        return value, ratio - 1.0
    if kind < 0.0:  # BELOW or NEAR
        return value, -ratio
    complement = math.exp(value)
    return math.log1p(-complement), -complement * ratio / (1.0 - complement)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _exp_less_two_terms(t):
    """``e^t - 1 - t`` for ``t <= 709``, by its series where ``e^t - 1 - t`` would cancel."""
    p = _vector_math.polynomial14(_SERIES, t)
    direct = _vector_math.exp(t) - 1.0 - t  # computed, then chosen: vectorised
    return t * t * p if abs(t) <= 0.5 else direct
