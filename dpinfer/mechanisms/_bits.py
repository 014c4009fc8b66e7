"""Sources of uniform random bits for the exact samplers, and a reader over them.

The exact discrete samplers consume a stream of 64-bit words, most significant
bit first. The stream comes either from the operating system's cryptographic
generator (``os.urandom``: the curator's default, as in OpenDP) or, for tests
and reproducible research, from a numpy ``Generator``.
"""

from __future__ import annotations

import os

import numpy as np

from .._rng import RNGLike, as_generator

__all__ = ["BitReader", "GeneratorWords", "OSWords", "word_source"]


class OSWords:
    """64-bit words from the operating system's CSPRNG (``os.urandom``), every bit fresh."""

    label = "os-csprng"

    def words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words."""
        return np.frombuffer(bytearray(os.urandom(8 * n)), dtype=np.uint64)

    def __repr__(self) -> str:
        return "OSWords()"


class GeneratorWords:
    """64-bit words from a numpy ``Generator`` (reproducible; not for real releases)."""

    label = "seeded"

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words."""
        return self.rng.integers(0, 2**64, size=n, dtype=np.uint64)

    def __repr__(self) -> str:
        return f"GeneratorWords({self.rng!r})"


WordSource = OSWords | GeneratorWords


def word_source(rng: RNGLike | WordSource) -> WordSource:
    """Return the word source for ``rng``: the OS CSPRNG for None, else its Generator."""
    if isinstance(rng, OSWords | GeneratorWords):
        return rng
    if rng is None:
        return OSWords()
    return GeneratorWords(as_generator(rng))


class BitReader:
    """Bits of a word stream, most significant first, from bit position ``pos``.

    ``words`` is extended from ``source`` when the reader runs past its end, so
    a reader started where a compiled kernel stopped continues the very same
    stream.
    """

    def __init__(self, words: np.ndarray, pos: int, source: WordSource):
        self.words, self.pos, self.source = words, int(pos), source

    def _ensure(self, nbits: int) -> None:
        missing = self.pos + nbits - 64 * self.words.size
        if missing > 0:
            more = self.source.words(max(-(-missing // 64), 1024))
            self.words = np.concatenate([self.words, more])

    def bits(self, k: int) -> int:
        """Read the next ``k >= 0`` bits as a non-negative integer."""
        if k == 0:
            return 0
        self._ensure(k)
        first, last = self.pos // 64, (self.pos + k - 1) // 64
        chunk = 0
        for w in self.words[first : last + 1].tolist():
            chunk = (chunk << 64) | w
        span = 64 * (last - first + 1)
        offset = self.pos - 64 * first
        self.pos += k
        return (chunk >> (span - offset - k)) & ((1 << k) - 1)

    def bit(self) -> int:
        """Read the next bit."""
        return self.bits(1)
