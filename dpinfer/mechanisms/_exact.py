"""Exact integer samplers for the discrete Laplace and discrete Gaussian.

Canonne, Kamath & Steinke (2020), Algorithms 1-3: every random decision is a
comparison of uniform random bits with a rational, so no floating-point
rounding enters the output distribution. Parameters are exact rationals (a
float converts to one exactly); all arithmetic is on Python integers.

This module is the reference: the compiled kernels of :mod:`._exact_kernels`
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

from . import _exact_kernels as kernels
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

# Largest parameters the kernels take: products stay below 2**63 (or 2**127 for the
# discrete Gaussian's acceptance denominator); larger ones run in the reference.
_KERNEL_LIMIT = 2**62
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


# --- batches: the compiled kernels, with the reference for draws they hand back -----------


def sample_discrete_laplace(scale: Fraction, size: int, source: WordSource) -> np.ndarray:
    """``size`` exact discrete Laplace draws of scale ``t / s`` from ``source``'s bits."""
    t, s = scale.numerator, scale.denominator
    kernel = None
    if t < _KERNEL_LIMIT and s < _KERNEL_LIMIT:
        args = (np.uint64(t), np.uint64(s), (t - 1).bit_length())

        def kernel(words, pos, out, start):
            return kernels.run_discrete_laplace(words, pos, *args, out, start)

    bits = 2 * (t - 1).bit_length() + 16
    return _drive(kernel, lambda r: discrete_laplace(t, s, r), size, source, bits)


def sample_discrete_gaussian(sigma2: Fraction, size: int, source: WordSource) -> np.ndarray:
    """``size`` exact discrete Gaussian draws of ``sigma^2 = n / d`` from ``source``'s bits."""
    n, d = sigma2.numerator, sigma2.denominator
    t = math.isqrt(n // d) + 1
    den = 2 * n * d * t * t
    kernel = None
    if max(n, d, t * d) < _KERNEL_LIMIT and den < _DENOMINATOR_LIMIT:
        args = (
            np.uint64(n),
            np.uint64(t),
            np.uint64(t * d),
            np.uint64(den >> 64),
            np.uint64(den & _MASK64),
            (den - 1).bit_length(),
            (t - 1).bit_length(),
        )

        def kernel(words, pos, out, start):
            return kernels.run_discrete_gaussian(words, pos, *args, out, start)

    bits = 3 * (t - 1).bit_length() + 32
    return _drive(kernel, lambda r: discrete_gaussian(n, d, r), size, source, bits)


def _drive(
    kernel: Callable | None,
    reference: Callable[[BitReader], int],
    size: int,
    source: WordSource,
    bits_per_draw: int,
) -> np.ndarray:
    """Run ``kernel`` over one word stream; replay or hand over the draws it returns.

    A draw the kernel cannot finish (out of words) restarts from its first bit
    on a longer stream; a draw that would overflow runs in ``reference`` from
    its first bit. Either way it consumes the same bits and gives the same value.
    """
    out = np.empty(size, dtype=np.int64)
    words = source.words(_words_for(size, bits_per_draw))
    pos = i = 0
    while i < size:
        status = kernels.BAIL
        if kernel is not None:
            done_before, pos_before = i, pos
            i, pos, status = kernel(words, pos, out, i)
            if i > done_before:
                bits_per_draw = max(1, (pos - pos_before) // (i - done_before) + 1)
        if status == kernels.OUT_OF_BITS:
            first = pos // 64
            more = source.words(_words_for(size - i, bits_per_draw))
            words = np.concatenate([words[first:], more])
            pos -= 64 * first
        elif status == kernels.BAIL:
            reader = BitReader(words, pos, source)
            out[i] = _as_int64(reference(reader))
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
