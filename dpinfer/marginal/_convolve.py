r"""The convolution of a group's windows at its total: forward and backward sums.

With :math:`q_i` each cell's tilted factor normalised over its window (the rows of a
group's table, :mod:`._tilt`), :func:`forward` computes :math:`\alpha_p`, the law of
the first :math:`p` cells' sum, on the sums from which the total is still reachable
through the later windows, dropping the ends that hold at most ``cut`` of mass;
:func:`backward` computes, on the same sums, :math:`\beta_p(s)`, the probability that
the later cells add up to the total less :math:`s`, and for each cell
:math:`\gamma_i(k) = \sum_m \alpha_{i-1}(m) \beta_i(m + k)`, the probability that the
other cells add up to the total less :math:`k`.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ._tilt import EDGE, OFF, WLEN, WLO

__all__ = ["backward", "domains", "forward", "work"]

_JIT = {"cache": True, "error_model": "numpy"}


@nb.njit(**_JIT)
def domains(cells, total):
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
def work(cells, offsets):
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
def forward(cells, vals, low, high, offsets, cut):
    """``(alpha, dropped)``: the law of the first p cells' sum on range p, flat.

    Range p (see :func:`domains`) is narrowed to what range p - 1 and cell p's window
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
def backward(cells, vals, low, high, offsets, alpha):
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
