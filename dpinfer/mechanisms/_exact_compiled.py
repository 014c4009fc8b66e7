"""Compiled loops of the exact discrete samplers (the fast path of :mod:`._exact`).

Each loop runs the reference algorithm of :mod:`._exact` on the same bit
stream, bit for bit, with unsigned 64-bit integers and 128-bit pairs
``(hi, lo)`` where products need them. A loop fills ``out[start:stop]``
and stops early with a status when the words run out (the caller appends
words and replays the unfinished draw from its first bit) or when a draw's
integers would overflow (the caller runs that draw in the reference). The
stream is the same either way, so the output is the reference's output.

State ``st`` is an int64 pair: the bit position and the status.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["BAIL", "OUT_OF_BITS", "run_discrete_gaussian", "run_discrete_laplace"]

OUT_OF_BITS = 1
BAIL = 2

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_INT64_MAX = np.uint64(2**63 - 1)


@numba.njit(cache=True)
def _bitlen(x):  # pragma: no cover - compiled
    k = 0
    while x:
        x >>= _ONE
        k += 1
    return k


@numba.njit(cache=True)
def _take(words, st, k):  # pragma: no cover - compiled
    """Read the next ``k`` bits (0 <= k <= 64), most significant first."""
    if k == 0:
        return _ZERO
    pos = st[0]
    if pos + k > words.size * 64:
        st[1] = OUT_OF_BITS
        return _ZERO
    idx, off = pos >> 6, pos & 63
    st[0] = pos + k
    w = words[idx] << np.uint64(off)
    if off + k > 64:
        w |= words[idx + 1] >> np.uint64(64 - off)
    return w >> np.uint64(64 - k)


@numba.njit(cache=True)
def _bit(words, st):  # pragma: no cover - compiled
    pos = st[0]
    if pos >= words.size * 64:
        st[1] = OUT_OF_BITS
        return _ZERO
    st[0] = pos + 1
    return (words[pos >> 6] >> np.uint64(63 - (pos & 63))) & _ONE


@numba.njit(cache=True)
def _bit_of(hi, lo, j):  # pragma: no cover - compiled
    if j >= 64:
        return (hi >> np.uint64(j - 64)) & _ONE
    return (lo >> np.uint64(j)) & _ONE


@numba.njit(cache=True)
def _mul64(a, b):  # pragma: no cover - compiled
    """Multiply to a 128-bit pair ``(hi, lo)``."""
    a_lo, a_hi = a & _LOW32, a >> _SHIFT32
    b_lo, b_hi = b & _LOW32, b >> _SHIFT32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> _SHIFT32) + (p1 & _LOW32) + (p2 & _LOW32)
    lo = (p0 & _LOW32) | (mid << _SHIFT32)
    hi = p3 + (p1 >> _SHIFT32) + (p2 >> _SHIFT32) + (mid >> _SHIFT32)
    return hi, lo


@numba.njit(cache=True)
def _below(words, st, n, k):  # pragma: no cover - compiled
    """Uniform integer below ``n`` (``k = bitlen(n - 1)``), by rejection."""
    if n == _ONE:
        return _ZERO
    while True:
        x = _take(words, st, k)
        if st[1] != 0 or x < n:
            return x


@numba.njit(cache=True)
def _peek(words, pos):  # pragma: no cover - compiled
    """Return the 64 bits from ``pos`` on (zeros past the end) without consuming them."""
    idx, off = pos >> 6, pos & 63
    w = words[idx] << np.uint64(off)
    if off and idx + 1 < words.size:
        w |= words[idx + 1] >> np.uint64(64 - off)
    return w


@numba.njit(cache=True)
def _bernoulli(words, st, nhi, nlo, dhi, dlo, k):  # pragma: no cover - compiled
    """Bernoulli(num / den) for 128-bit ``num <= den``: the reference's lazy comparison.

    Bits are read from a 64-bit window and the position advanced by the bits
    used, so the consumption is the reference's, bit for bit.
    """
    if nhi == _ZERO and nlo == _ZERO:
        return False
    if nhi == dhi and nlo == dlo:
        return True
    power_of_two = (
        (dlo & (dlo - _ONE)) == _ZERO
        if dhi == _ZERO
        else (dlo == _ZERO and (dhi & (dhi - _ONE)) == _ZERO)
    )
    total = words.size * 64
    cur = st[0]
    if cur >= total:
        st[1] = OUT_OF_BITS
        return False
    start, window = cur, _peek(words, cur)
    while True:
        above_num = False
        below_den = power_of_two
        j = k - 1
        while j >= 0:
            if cur >= total:
                st[0] = cur
                st[1] = OUT_OF_BITS
                return False
            if cur - start == 64:
                start, window = cur, _peek(words, cur)
            b = (window >> np.uint64(63 - (cur - start))) & _ONE
            cur += 1
            if not above_num:
                nb = _bit_of(nhi, nlo, j)
                if b < nb:
                    st[0] = cur
                    return True
                above_num = b > nb
            if not below_den:
                db = _bit_of(dhi, dlo, j)
                if b > db:
                    break
                below_den = b < db
            if above_num and below_den:
                st[0] = cur
                return False
            j -= 1
        if j < 0 and below_den:
            st[0] = cur
            return False


@numba.njit(cache=True)
def _exp_unit(words, st, nhi, nlo, dhi, dlo, kden):  # pragma: no cover - compiled
    """Bernoulli(exp(-num / den)) for ``num <= den`` (CKS Algorithm 1)."""
    k = _ONE
    certain = nhi == dhi and nlo == dlo  # gamma = 1: Bernoulli(gamma) needs no bits
    while True:
        # Bernoulli(1 / 1) needs no bits either; skipping the calls leaves the stream as is
        if k > _ONE and not _bernoulli(words, st, _ZERO, _ONE, _ZERO, k, _bitlen(k - _ONE)):
            break
        if st[1] != 0:
            break
        if not certain and not _bernoulli(words, st, nhi, nlo, dhi, dlo, kden):
            break
        if st[1] != 0:
            break
        k += _ONE
    return (k & _ONE) == _ONE


@numba.njit(cache=True)
def _exp(words, st, nhi, nlo, dhi, dlo, kden):  # pragma: no cover - compiled
    """Bernoulli(exp(-num / den)) for any 128-bit ``num``: whole units of ``exp(-1)`` first."""
    while nhi > dhi or (nhi == dhi and nlo >= dlo):
        if not _exp_unit(words, st, _ZERO, _ONE, _ZERO, _ONE, 0) or st[1] != 0:
            return False
        borrow = _ONE if nlo < dlo else _ZERO
        nlo = nlo - dlo
        nhi = nhi - dhi - borrow
    return _exp_unit(words, st, nhi, nlo, dhi, dlo, kden)


@numba.njit(cache=True)
def _laplace(words, st, t, s, kt):  # pragma: no cover - compiled
    """CKS Algorithm 2 with scale ``t / s`` (``kt = bitlen(t - 1)``)."""
    while True:
        u = _below(words, st, t, kt)
        if st[1] != 0:
            return 0
        if not _exp_unit(words, st, _ZERO, u, _ZERO, t, kt):
            if st[1] != 0:
                return 0
            continue
        v = _ZERO
        while _exp_unit(words, st, _ZERO, _ONE, _ZERO, _ONE, 0):
            if st[1] != 0:
                return 0
            v += _ONE
        if st[1] != 0:
            return 0
        if v > _ZERO and t > (_INT64_MAX - u) // v:
            st[1] = BAIL
            return 0
        y = np.int64((u + t * v) // s)
        if _bit(words, st) == _ONE:
            if y == 0:
                continue
            return -y
        if st[1] != 0:
            return 0
        return y


@numba.njit(cache=True)
def _gaussian(words, st, n, t, td, dhi, dlo, kden, kt):  # pragma: no cover - compiled
    """CKS Algorithm 3 for ``sigma2 = n / d`` (``td = t d``, ``den = 2 n d t^2``)."""
    while True:
        y = _laplace(words, st, t, _ONE, kt)
        if st[1] != 0:
            return 0
        phi, plo = _mul64(np.uint64(abs(y)), td)
        if phi != _ZERO or plo > _INT64_MAX:
            st[1] = BAIL
            return 0
        a = plo - n if plo >= n else n - plo
        ahi, alo = _mul64(a, a)
        if _exp(words, st, ahi, alo, dhi, dlo, kden):
            if st[1] != 0:
                return 0
            return y
        if st[1] != 0:
            return 0


@numba.njit(cache=True)
def run_discrete_laplace(words, pos, t, s, kt, ok, cells, out, start):  # pragma: no cover
    """Fill ``out[start:]``; return (next index, bit position of that draw, status).

    Draw ``i`` has the scale ``t[g] / s[g]`` of group ``g = cells[i % cells.size]``
    (one group per distinct parameter); a group with ``ok[g]`` False is beyond the
    loop's integers, so its draws are handed back (status ``BAIL``) before any bit.
    """
    st = np.zeros(2, np.int64)
    st[0] = pos
    k = cells.size
    for i in range(start, out.size):
        g = cells[i % k]
        begin = st[0]
        if not ok[g]:
            return i, begin, BAIL
        y = _laplace(words, st, t[g], s[g], kt[g])
        if st[1] != 0:
            return i, begin, st[1]
        out[i] = y
    return out.size, st[0], 0


@numba.njit(cache=True)
def run_discrete_gaussian(
    words, pos, n, t, td, dhi, dlo, kden, kt, ok, cells, out, start
):  # pragma: no cover - compiled
    """Fill ``out[start:]``; return (next index, bit position of that draw, status).

    Parameters per group as in :func:`run_discrete_laplace`.
    """
    st = np.zeros(2, np.int64)
    st[0] = pos
    k = cells.size
    for i in range(start, out.size):
        g = cells[i % k]
        begin = st[0]
        if not ok[g]:
            return i, begin, BAIL
        y = _gaussian(words, st, n[g], t[g], td[g], dhi[g], dlo[g], kden[g], kt[g])
        if st[1] != 0:
            return i, begin, st[1]
        out[i] = y
    return out.size, st[0], 0
