"""xoshiro256** streams for the compiled lattice moves.

Each piece of work (a subtree's pass, a pair's pass, in a given round) draws
from its own xoshiro256** state, four 64-bit words taken from a
:class:`numpy.random.SeedSequence` spawned from the chain's by the round's
index; so a run gives the same draws with any executor and in any order.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["below", "round_states", "uniform"]


def round_states(seed: np.random.SeedSequence, parts: int) -> np.ndarray:
    """``(parts, 4)`` uint64: one xoshiro256** state per piece of work, from ``seed``."""
    words = seed.generate_state(4 * parts, dtype=np.uint64).reshape(parts, 4)
    words[:, 0] |= np.uint64(1)  # never the all-zero state
    return words


@numba.njit(cache=True, inline="always", _nrt=False)
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(cache=True, inline="always", _nrt=False)
def _next(s):
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@numba.njit(cache=True, inline="always", _nrt=False)
def uniform(s):
    """Draw a uniform double in [0, 1) (53 random bits) from the state ``s``."""
    return (_next(s) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, inline="always", _nrt=False)
def below(s, n):
    """Draw a uniform integer in ``0..n-1`` (``n`` below 2**53)."""
    return int(uniform(s) * n)
