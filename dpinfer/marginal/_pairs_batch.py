r"""Wide Poisson cells summed over every other term, their first terms in SIMD lanes.

A cell of :mod:`._poisson` whose ``SD`` is negative (:func:`._poisson._pairs_suffice`)
is summed over :math:`s = \mathrm{AT} \pm 2i`, twice: the terms of either parity sum to
half the cell's total within :data:`._poisson.PAIRS_ERROR` of it. The sweep queues such
cells (:func:`queue`) and sums :data:`LANES` of them at once (:func:`sum_batch`): first
the ``k`` pairs of each side that a cell takes with no test between them
(:func:`._poisson.sum_cell`'s ``k``, halved), across the batch in loops that LLVM
vectorises; then the test of each side's bound, across the batch, the tails of the cells
whose bound is not yet small enough, each on its own, term by term until the ratio of a term
to the one two before bounds the side within ``tol / 2 - PAIRS_ERROR``, and the scores and
counts across the batch again. A cell's terms, and the order of the operations on them, are
those of the cell summed alone: its sum does not depend on the batch.

The cells of a batch share their noise's width, so their ``k`` differ by a count or two:
the fewest of them, less one, run for every cell with no mask and keep only what the next
pair needs (``(s + 1)(s + 2)`` from its first value and the count, exact in float64 below
:data:`._poisson._LARGEST`); the rest run masked, each cell stopping at its own ``k``.
Against the cells summed one by one this takes about a fifth off their time.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from . import _vector_log
from ._kernels import _MAX_TERMS
from ._poisson import AT, CONST, PAIRS_ERROR, SD, STEP, UP, _below, _count, _result, reach

#: Cells a batch.
LANES = 64

# Rows of a batch, each of LANES cells, row after row: the cell, its rate and 1 / rate, its
# k, e^{-4B}, its AT and CONST; to the right the product lam^2 up^2 e^{-B} e^{-4Bi},
# (s + 1)(s + 2) and its difference, the last term, the partial sum, the running total of the
# sums before, the last ratio, the pairs taken; to the left the same with s (s - 1); whether
# a side's tail is still open after the k pairs; after the sums, the score, the terms counted
# and those taken, and log p's power and rest and the total (:func:`._poisson._result`).
(
    CELL, LAM, INV, K, STEP4, ANCHOR, CONSTANT,
    LIFT2, DEN, DEN_STEP, W_R, SUM_R, ACC_R, RATIO, D_R,
    FALL2, NUM, NUM_STEP, W_L, SUM_L, ACC_L, BACK, D_L,
    OPEN, SCORE, COUNT, SUMMED, POWER, REST, TOTAL,
) = range(30)  # fmt: skip
ROWS = 30
# a side's rows, from its first (LIFT2 or FALL2) on
_QUADRATIC, _DIFFERENCE, _TERM, _PARTIAL, _BEFORE, _RATIO, _TAKEN = range(1, 8)


@nb.njit(cache=True, error_model="numpy", inline="always")
def takes(row, half):
    """Whether a cell made :func:`._poisson.ready` is summed here (``half``: tol / 2)."""
    return row[SD] < 0.0 and half > PAIRS_ERROR


# inlined into the sweep's loop: as a call, its arrays' reference counts cost what it does
@nb.njit(cache=True, error_model="numpy", inline="always")
def queue(batch, i, j, lam, row, z):
    """Put cell ``j`` (its state ``row``, rate ``lam``) in lane ``i`` of ``batch``."""
    at, step, up = row[AT], row[STEP], row[UP]
    inv_lam = 1.0 / lam
    lift = lam * up
    fall = inv_lam * (step / up)  # AT is above 0 (_pairs_suffice)
    batch[CELL * LANES + i], batch[LAM * LANES + i], batch[INV * LANES + i] = j, lam, inv_lam
    batch[K * LANES + i] = math.ceil(0.5 * (z * -row[SD] + reach(at, step)))
    batch[STEP4 * LANES + i] = step * step * step * step
    batch[ANCHOR * LANES + i], batch[CONSTANT * LANES + i] = at, row[CONST]
    _start(batch, LIFT2, i, lift * lift * step, (at + 1.0) * (at + 2.0), 4.0 * at + 10.0)
    batch[SUM_R * LANES + i] = 1.0  # AT's term
    _start(batch, FALL2, i, fall * fall * step, at * (at - 1.0), 6.0 - 4.0 * at)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _start(batch, first, i, product, quadratic, difference):
    """Lane ``i``'s side whose rows start at ``first``: no term yet past AT's."""
    for r, value in enumerate((product, quadratic, difference, 1.0, 0.0, 0.0, 0.0, 0.0)):
        batch[(first + r) * LANES + i] = value


@nb.njit(cache=True, error_model="numpy")
def sum_batch(batch, count, half, logp, score_a, score_b, terms):
    """Sum the first ``count`` cells of ``batch`` into ``logp``, the scores and ``terms``.

    ``half`` is tol / 2. The lanes' tests and sums run across the batch in loops that LLVM
    vectorises; only the tails of the lanes whose bounds are not yet small enough, and the
    writes to the cells, run lane by lane.
    """
    if count == 0:
        return
    # the loops over the lanes run over all LANES of them, with no branch, so that LLVM
    # vectorises them; the lanes past count hold lane 0's cell, whose results are not read
    for r in range(ROWS):
        for i in range(count, LANES):
            batch[r * LANES + i] = batch[r * LANES]
    fewest, most = math.inf, 0.0
    for i in range(count):
        fewest, most = min(fewest, batch[K * LANES + i]), max(most, batch[K * LANES + i])
    unmasked = int(fewest) - 1  # k >= 1: the last pair of every cell runs masked
    for it in range(unmasked):
        for i in range(LANES):
            _pairs(batch, i, 8.0 * it)
    for i in range(LANES):
        batch[DEN_STEP * LANES + i] += 8.0 * unmasked
        batch[NUM_STEP * LANES + i] += 8.0 * unmasked
    for it in range(unmasked, int(most)):
        for i in range(LANES):
            _masked_pairs(batch, i, it < batch[K * LANES + i])
    bound = half - PAIRS_ERROR
    for i in range(LANES):
        batch[OPEN * LANES + i] = 1.0 if _open(batch, i, bound) else 0.0
    for i in range(count):  # the lanes whose bounds are not yet below bound, one by one
        if batch[OPEN * LANES + i] > 0.0:
            _tails(batch, i, bound)
    for i in range(LANES):
        _sums(batch, i)
    for i in range(count):
        _finish(batch, i, score_a, score_b, terms)
    for i in range(count):
        batch[REST * LANES + i] += batch[POWER * LANES + i] * _vector_log.log(
            batch[LAM * LANES + i]
        ) + _vector_log.log(batch[TOTAL * LANES + i])
    for i in range(count):
        logp[int(batch[CELL * LANES + i])] = batch[REST * LANES + i]


@nb.njit(cache=True, error_model="numpy", inline="always")
def _pairs(batch, i, eight_it):
    """Lane ``i``'s next pair on each side, as :func:`_pair` gives it, less the last ratios.

    ``eight_it`` is 8 times the pairs taken since the differences were last stored.
    """
    right = batch[LIFT2 * LANES + i] / batch[DEN * LANES + i]
    _unmasked_side(batch, LIFT2, i, right, eight_it)
    _unmasked_side(batch, FALL2, i, batch[NUM * LANES + i] * batch[FALL2 * LANES + i], eight_it)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _unmasked_side(batch, first, i, ratio, eight_it):
    """:func:`_pairs` on the side whose rows start at ``first``, whose next ratio is ``ratio``."""
    w = batch[(first + _TERM) * LANES + i] * ratio
    batch[(first + _BEFORE) * LANES + i] += batch[(first + _PARTIAL) * LANES + i]
    batch[(first + _PARTIAL) * LANES + i] += w
    batch[(first + _TERM) * LANES + i] = w
    batch[first * LANES + i] *= batch[STEP4 * LANES + i]
    difference = batch[(first + _DIFFERENCE) * LANES + i] + eight_it
    batch[(first + _QUADRATIC) * LANES + i] += difference


@nb.njit(cache=True, error_model="numpy", inline="always")
def _masked_pairs(batch, i, on):
    """Lane ``i``'s next pair on each side (:func:`_pair`) where ``on``; else nothing."""
    _masked_side(batch, LIFT2, i, on, True)
    _masked_side(batch, FALL2, i, on, False)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _masked_side(batch, first, i, on, right):
    """:func:`_masked_pairs` on the side whose rows start at ``first``.

    Every row is written in full, an idle lane's as it was (:func:`_pair`): a store kept
    for the running lanes alone compiles to a masked store, which costs several plain ones
    on AMD's processors.
    """
    product, quadratic, difference, w, total, acc, last = _side(batch, first, i)
    ratio, product, quadratic, difference, w, total, acc = _pair(
        product, quadratic, difference, batch[STEP4 * LANES + i], w, total, acc, right, on
    )
    batch[first * LANES + i] = product
    batch[(first + _QUADRATIC) * LANES + i] = quadratic
    batch[(first + _DIFFERENCE) * LANES + i] = difference
    batch[(first + _TERM) * LANES + i] = w
    batch[(first + _PARTIAL) * LANES + i] = total
    batch[(first + _BEFORE) * LANES + i] = acc
    batch[(first + _RATIO) * LANES + i] = ratio if on else last


@nb.njit(cache=True, error_model="numpy", inline="always")
def _side(batch, first, i):
    """Read lane ``i``'s side whose rows start at ``first``.

    Returns (product, quadratic, difference, term, partial sum, running total of the sums
    before, last ratio).
    """
    return (
        batch[first * LANES + i], batch[(first + _QUADRATIC) * LANES + i],
        batch[(first + _DIFFERENCE) * LANES + i], batch[(first + _TERM) * LANES + i],
        batch[(first + _PARTIAL) * LANES + i], batch[(first + _BEFORE) * LANES + i],
        batch[(first + _RATIO) * LANES + i],
    )  # fmt: skip


@nb.njit(cache=True, error_model="numpy", inline="always")
def _pair(product, quadratic, difference, step4, w, total, acc, right, on):
    """Take the term two steps on, and update the products that give the next one.

    To the right the term is ``product / quadratic`` times the last (``product =
    lift lift e^{-B}``, ``quadratic = (s + 1)(s + 2)``), to the left ``quadratic
    product`` (``s (s - 1)`` and ``fall fall e^{-B}``). Returns (ratio, next product,
    next quadratic, next difference, term, partial sum, running total of the sums before),
    ``total`` the partial sum before the term. Where ``on`` is False each update is its
    identity (a product by 1, a sum with 0), which returns the numbers as they were, bit
    for bit (none is -0.0), and the ratio that would have been taken.
    """
    ratio = product / quadratic if right else quadratic * product
    w *= ratio if on else 1.0
    return (
        ratio, product * (step4 if on else 1.0), quadratic + (difference if on else 0.0),
        difference + (8.0 if on else 0.0), w, total + (w if on else 0.0),
        acc + (total if on else 0.0),
    )  # fmt: skip


@nb.njit(cache=True, error_model="numpy", inline="always")
def _open(batch, i, half):
    """Whether lane ``i`` has a side whose bound is not below ``half`` of its sum (no branch).

    Each side has taken the lane's ``k`` pairs: :func:`_tails` takes the rest.
    """
    k, at = batch[K * LANES + i], batch[ANCHOR * LANES + i]
    small = half * (batch[SUM_R * LANES + i] + batch[SUM_L * LANES + i])
    right = _above(batch[W_R * LANES + i], batch[RATIO * LANES + i], small)
    left = (at > 2.0 * k + 1.0) & _above(batch[W_L * LANES + i], batch[BACK * LANES + i], small)
    return right | left


@nb.njit(cache=True, error_model="numpy", inline="always")
def _above(w, ratio, small):
    """Not :func:`._poisson._below` (NaN included), with no branch."""
    return not ((w == 0.0) | (w * ratio <= small * (1.0 - ratio)))


@nb.njit(cache=True, error_model="numpy", inline="always")
def _tails(batch, i, half):
    """Lane ``i``'s tails, term by term until each side's bound is below ``half``.

    As :func:`._poisson.sum_cell`'s: the pairs taken past ``k`` are counted in the
    sides' ``_TAKEN`` rows.
    """
    step4, at = batch[STEP4 * LANES + i], batch[ANCHOR * LANES + i]
    lift2, den, den_step, w_r, sum_r, acc_r, ratio = _side(batch, LIFT2, i)
    fall2, num, num_step, w_l, sum_l, acc_l, back = _side(batch, FALL2, i)
    d_r = d_l = int(batch[K * LANES + i])
    right = not _below(w_r, ratio, half * (sum_r + sum_l))
    left = at > 2 * d_l + 1 and not _below(w_l, back, half * (sum_r + sum_l))
    while (right or left) and _count(2 * d_r, 2 * d_l, at) < _MAX_TERMS:
        if right:
            ratio, lift2, den, den_step, w_r, sum_r, acc_r = _pair(
                lift2, den, den_step, step4, w_r, sum_r, acc_r, True, True
            )
            d_r += 1
            right = not _below(w_r, ratio, half * (sum_r + sum_l))
        if left:
            back, fall2, num, num_step, w_l, sum_l, acc_l = _pair(
                fall2, num, num_step, step4, w_l, sum_l, acc_l, False, True
            )
            d_l += 1
            left = at > 2 * d_l + 1 and not _below(w_l, back, half * (sum_r + sum_l))
    k = batch[K * LANES + i]
    for first, partial, before, taken in ((LIFT2, sum_r, acc_r, d_r), (FALL2, sum_l, acc_l, d_l)):
        batch[(first + _PARTIAL) * LANES + i] = partial
        batch[(first + _BEFORE) * LANES + i] = before
        batch[(first + _TAKEN) * LANES + i] = taken - k


@nb.njit(cache=True, error_model="numpy", inline="always")
def _sums(batch, i):
    """Lane ``i``'s score and its counts of terms, from its sides' sums (no branch).

    As :func:`._poisson.sum_cell`'s, in floats (exact: the counts are below 2**53):
    :func:`._poisson._count`'s terms and those taken, ``1 + d_r + min(d_l, AT // 2)``.
    """
    at, k = batch[ANCHOR * LANES + i], batch[K * LANES + i]
    d_r, d_l = k + batch[D_R * LANES + i], k + batch[D_L * LANES + i]
    sum_r, sum_l = batch[SUM_R * LANES + i], batch[SUM_L * LANES + i]
    total = sum_r + sum_l
    moment = 2.0 * ((d_r * sum_r - batch[ACC_R * LANES + i]) - (d_l * sum_l - batch[
        ACC_L * LANES + i]))  # fmt: skip
    batch[SCORE * LANES + i] = (at + moment / total) * batch[INV * LANES + i] - 1.0
    batch[COUNT * LANES + i] = 1.0 + 2.0 * d_r + min(2.0 * d_l, at)
    batch[SUMMED * LANES + i] = 1.0 + d_r + min(d_l, np.floor(0.5 * at))
    batch[TOTAL * LANES + i] = 2.0 * total


@nb.njit(cache=True, error_model="numpy", inline="always")
def _finish(batch, i, score_a, score_b, terms):
    """Lane ``i``'s results: its score and terms to its cell, the power, rest and total to rows.

    By :func:`._poisson._result`, which takes the rare lanes' rest its own way.
    """
    j, lam = int(batch[CELL * LANES + i]), batch[LAM * LANES + i]
    power, rest, total, score_a[j], terms[j] = _result(
        lam,
        batch[ANCHOR * LANES + i],
        batch[CONSTANT * LANES + i],
        batch[TOTAL * LANES + i],
        batch[SCORE * LANES + i],
        int(batch[COUNT * LANES + i]),
        int(batch[SUMMED * LANES + i]),
    )
    score_b[j] = 0.0
    batch[POWER * LANES + i], batch[REST * LANES + i], batch[TOTAL * LANES + i] = (
        power,
        rest,
        total,
    )
