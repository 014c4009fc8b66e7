"""Exact integer samplers for the discrete Laplace and discrete Gaussian.

Canonne, Kamath & Steinke (2020), Algorithms 1-3: every random decision is a
comparison of uniform random bits with a rational, so no floating-point
rounding enters the output distribution. Parameters are exact rationals (a
float converts to one exactly); all arithmetic is on Python integers.

This module is the reference: the compiled loops of :mod:`._exact_compiled`
run the same algorithm on the same bit stream, consuming the same bits, and
hand a draw back here when its integers outgrow 64/128 bits. A Bernoulli of
a rational ``num / den`` is decided lazily: the bits of a uniform integer
below ``den`` (by rejection from ``k = bitlen(den - 1)`` bits) are drawn most
significant first until the comparisons with ``num`` and ``den`` are settled,
about two bits per decision instead of ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from . import _exact_compiled as compiled
from ._bits import BitReader, WordSource

__all__ = [
    "bernoulli",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "uniform_below",
]

# Largest parameters the compiled loops take: products stay below 2**63 (or 2**127 for the
# discrete Gaussian's acceptance denominator); larger ones run in the reference.
_COMPILED_LIMIT = 2**62
_DENOMINATOR_LIMIT = 2**126
_MASK64 = 2**64 - 1
_MAX_WORDS = 1 << 20  # words of random bits held at once


def uniform_below(n: int, r: BitReader) -> int:
    """Draw a uniform integer below ``n``: ``bitlen(n - 1)`` bits until below ``n``."""
    if n == 1:
        return 0
    k = (n - 1).bit_length()
    while True:
        x = r.bits(k)
        if x < n:
            return x


def bernoulli(num: int, den: int, r: BitReader) -> bool:
    """Exact Bernoulli(``num / den``) for integers ``0 <= num <= den``, ``den >= 1``."""
    if num == 0:
        return False
    if num == den:
        return True
    k = (den - 1).bit_length()
    while True:
        outcome = _lazy_compare(num, den, k, r)
        if outcome is not None:
            return outcome


def _lazy_compare(num: int, den: int, k: int, r: BitReader) -> bool | None:
    """``x < num`` for ``x`` of ``k`` fresh bits, or None when ``x >= den`` (reject).

    Bits are drawn until the answer no longer depends on the rest of ``x``. When
    ``den = 2**k`` every ``x`` is below it.
    """
    above_num, below_den = False, den == 1 << k
    for j in range(k - 1, -1, -1):
        b = r.bit()
        if not above_num:
            nb = (num >> j) & 1
            if b < nb:
                return True
            above_num = b > nb
        if not below_den:
            db = (den >> j) & 1
            if b > db:
                return None
            below_den = b < db
        if above_num and below_den:
            return False
    return False if below_den else None


def bernoulli_exp(num: int, den: int, r: BitReader) -> bool:
    """Exact Bernoulli(``exp(-num / den)``) (CKS Algorithm 1, any ``num / den >= 0``).

    One factor ``exp(-1)`` per whole unit of ``gamma``, then the fraction.
    """
    while num >= den:
        if not _bernoulli_exp_unit(1, 1, r):
            return False
        num -= den
    return _bernoulli_exp_unit(num, den, r)


def _bernoulli_exp_unit(num: int, den: int, r: BitReader) -> bool:
    """Bernoulli(``exp(-gamma)``), ``gamma = num / den`` in [0, 1].

    CKS Algorithm 1: ``K`` counts successes of Bernoulli(``gamma / K``); the
    result is whether ``K`` is odd. Bernoulli(``gamma / K``) is drawn as the
    conjunction of independent Bernoulli(``1 / K``) and Bernoulli(``gamma``).
    """
    k = 1
    while bernoulli(1, k, r) and bernoulli(num, den, r):
        k += 1
    return k % 2 == 1


def discrete_laplace(t: int, s: int, r: BitReader) -> int:
    """One draw with ``P(x) ∝ exp(-|x| s / t)``: scale ``t / s`` (CKS Algorithm 2)."""
    while True:
        u = uniform_below(t, r)
        if not bernoulli_exp(u, t, r):
            continue
        v = 0
        while _bernoulli_exp_unit(1, 1, r):
            v += 1
        y = (u + t * v) // s
        if r.bit():
            if y == 0:
                continue
            return -y
        return y


def discrete_gaussian(n: int, d: int, r: BitReader) -> int:
    """One draw with ``P(x) ∝ exp(-x^2 / (2 sigma2))``, ``sigma2 = n / d`` (CKS Algorithm 3).

    The acceptance exponent ``(|y| - sigma2/t)^2 / (2 sigma2)`` is the integer ratio
    ``(|y| t d - n)^2 / (2 n d t^2)``.
    """
    t = math.isqrt(n // d) + 1
    den = 2 * n * d * t * t
    while True:
        y = discrete_laplace(t, 1, r)
        a = abs(y) * t * d - n
        if bernoulli_exp(a * a, den, r):
            return y


# --- batches: the compiled loops, with the reference for draws they hand back -----------


def sample_discrete_laplace(scale, size: int, source: WordSource, cells=None) -> np.ndarray:
    """``size`` exact discrete Laplace draws from ``source``'s bits.

    ``scale`` is a rational ``t / s``, or a sequence of them with ``cells``, the
    group of each of ``k`` cells: draw ``i`` then has the scale
    ``scale[cells[i % k]]`` (a batch of releases of ``k`` cells, flattened in C
    order). Real tables have few distinct scales; a group is one of them.
    """
    scales, cells = _groups(scale, cells)
    ts = [(f.numerator, f.denominator) for f in scales]
    ok = np.array([t < _COMPILED_LIMIT and s < _COMPILED_LIMIT for t, s in ts])
    t_arr = np.array([t if good else 0 for (t, _), good in zip(ts, ok, strict=True)], np.uint64)
    s_arr = np.array([s if good else 1 for (_, s), good in zip(ts, ok, strict=True)], np.uint64)
    kt = np.array([(t - 1).bit_length() for t, _ in ts], np.int64)

    def loop(words, pos, out, start):
        return compiled.run_discrete_laplace(words, pos, t_arr, s_arr, kt, ok, cells, out, start)

    def reference(i, r):
        t, s = ts[cells[i % cells.size]]
        return discrete_laplace(t, s, r)

    bits = max(2 * (t - 1).bit_length() + 16 for t, _ in ts)
    return _drive(loop if ok.any() else None, reference, size, source, bits)


def sample_discrete_gaussian(sigma2, size: int, source: WordSource, cells=None) -> np.ndarray:
    """``size`` exact discrete Gaussian draws of ``sigma^2 = n / d`` from ``source``'s bits.

    ``sigma2`` is one rational, or a sequence of them with ``cells`` as in
    :func:`sample_discrete_laplace`.
    """
    variances, cells = _groups(sigma2, cells)
    nds = [(f.numerator, f.denominator) for f in variances]
    columns = [_gaussian_loop_args(n, d) for n, d in nds]
    ok = np.array([c is not None for c in columns])
    filler = (0, 1, 1, 0, 1, 0, 0)  # parameters of a group the loop hands back unread
    rows = [c if c is not None else filler for c in columns]
    n_arr, t_arr, td, dhi, dlo = (np.array(col, np.uint64) for col in list(zip(*rows))[:5])
    kden, kt = (np.array(col, np.int64) for col in list(zip(*rows))[5:])

    def loop(words, pos, out, start):
        return compiled.run_discrete_gaussian(
            words, pos, n_arr, t_arr, td, dhi, dlo, kden, kt, ok, cells, out, start
        )

    def reference(i, r):
        n, d = nds[cells[i % cells.size]]
        return discrete_gaussian(n, d, r)

    bits = max(3 * math.isqrt(n // d).bit_length() + 32 for n, d in nds)
    return _drive(loop if ok.any() else None, reference, size, source, bits)


def _gaussian_loop_args(n: int, d: int) -> tuple | None:
    """Return the loop's integers for ``sigma^2 = n / d``, or None if they would overflow."""
    t = math.isqrt(n // d) + 1
    den = 2 * n * d * t * t
    if max(n, d, t * d) >= _COMPILED_LIMIT or den >= _DENOMINATOR_LIMIT:
        return None
    return (n, t, t * d, den >> 64, den & _MASK64, (den - 1).bit_length(), (t - 1).bit_length())


def _groups(param, cells) -> tuple[list[Fraction], np.ndarray]:
    """Return the distinct rational parameters and the group index of each cell (int64)."""
    if cells is None:
        return [Fraction(param)], np.zeros(1, np.int64)
    params = [Fraction(p) for p in param]
    cells = np.ascontiguousarray(cells, dtype=np.int64).reshape(-1)
    if cells.size == 0 or cells.min() < 0 or cells.max() >= len(params):
        raise ValueError(f"cells must index the {len(params)} parameters, got {cells!r}")
    return params, cells


def _drive(
    loop: Callable | None,
    reference: Callable[[int, BitReader], int],
    size: int,
    source: WordSource,
    bits_per_draw: int,
) -> np.ndarray:
    """Run ``loop`` over one word stream; replay or hand over the draws it returns.

    A draw the loop cannot finish (out of words) restarts from its first bit
    on a longer stream; a draw that would overflow runs in ``reference(i, reader)``
    (``i`` the draw's index) from its first bit. Either way it consumes the same
    bits and gives the same value.
    """
    out = np.empty(size, dtype=np.int64)
    words = source.words(_words_for(size, bits_per_draw))
    pos = i = 0
    while i < size:
        status = compiled.BAIL
        if loop is not None:
            done_before, pos_before = i, pos
            i, pos, status = loop(words, pos, out, i)
            if i > done_before:
                bits_per_draw = max(1, (pos - pos_before) // (i - done_before) + 1)
        if status == compiled.OUT_OF_BITS:
            first = pos // 64
            more = source.words(_words_for(size - i, bits_per_draw))
            words = np.concatenate([words[first:], more])
            pos -= 64 * first
        elif status == compiled.BAIL:
            reader = BitReader(words, pos, source)
            out[i] = _as_int64(reference(i, reader))
            words, pos, i = reader.words, reader.pos, i + 1
    return out


def _words_for(draws: int, bits_per_draw: int) -> int:
    """Words to request for ``draws`` more draws: the expected need, at most 8 MB at once."""
    return min(draws * bits_per_draw // 64 + 16, _MAX_WORDS)


def _as_int64(draw: int) -> int:
    if not -(2**63) < draw < 2**63:
        raise OverflowError(
            f"an exact noise draw ({draw}) does not fit in a 64-bit integer; the noise "
            "parameter is too large for integer releases"
        )
    return draw
