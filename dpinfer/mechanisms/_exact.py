"""Exact integer samplers for the discrete Laplace and discrete Gaussian.

Canonne, Kamath & Steinke (2020), Algorithms 1-3: every random decision is a
comparison of a uniform integer with a rational, so no floating-point rounding
enters the output distribution. Rationals are :class:`fractions.Fraction`
(floats convert to them exactly); uniform integers come from a buffer of
64-bit words drawn from the caller's Generator, with rejection for exactness.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_WORDS_PER_REFILL = 4096


class RandomBits:
    """Exact uniform integers from a numpy Generator, buffered."""

    def __init__(self, rng: np.random.Generator):
        self._rng = rng
        self._words: list[int] = []

    def _word(self) -> int:
        if not self._words:
            draw = self._rng.integers(0, 2**64, size=_WORDS_PER_REFILL, dtype=np.uint64)
            self._words = draw.tolist()
        return self._words.pop()

    def below(self, n: int) -> int:
        """Uniform integer in ``{0, ..., n - 1}`` (rejection sampling, exact)."""
        nbits = (n - 1).bit_length()
        nwords = max(1, -(-nbits // 64))
        while True:
            x = 0
            for _ in range(nwords):
                x = (x << 64) | self._word()
            x >>= 64 * nwords - nbits
            if x < n:
                return x

    def bernoulli(self, p: Fraction) -> bool:
        """Exact Bernoulli(p) for a rational ``0 <= p <= 1``."""
        return self.below(p.denominator) < p.numerator

    def bernoulli_exp(self, gamma: Fraction) -> bool:
        """Exact Bernoulli(exp(-gamma)) for a rational ``gamma >= 0`` (CKS Algorithm 1)."""
        whole = math.floor(gamma)
        for _ in range(whole):
            if not self._bernoulli_exp_unit(Fraction(1)):
                return False
        return self._bernoulli_exp_unit(gamma - whole)

    def _bernoulli_exp_unit(self, gamma: Fraction) -> bool:
        k = 1
        while self.bernoulli(gamma / k):
            k += 1
        return k % 2 == 1


def discrete_laplace(scale: Fraction, bits: RandomBits) -> int:
    """One draw of the discrete Laplace with ``P(x) ∝ exp(-|x| / scale)`` (CKS Algorithm 2)."""
    t, s = scale.numerator, scale.denominator
    while True:
        u = bits.below(t)
        if not bits.bernoulli_exp(Fraction(u, t)):
            continue
        v = 0
        while bits.bernoulli_exp(Fraction(1)):
            v += 1
        y = (u + t * v) // s
        negative = bits.below(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma2: Fraction, bits: RandomBits) -> int:
    """One draw of the discrete Gaussian ``P(x) ∝ exp(-x^2 / (2 sigma2))`` (CKS Algorithm 3)."""
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    while True:
        y = discrete_laplace(Fraction(t), bits)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if bits.bernoulli_exp(gamma):
            return y


def sample_many(draw, param: Fraction, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent draws of ``draw(param, bits)`` as an int64 array."""
    bits = RandomBits(rng)
    return np.fromiter((draw(param, bits) for _ in range(size)), dtype=np.int64, count=size)
