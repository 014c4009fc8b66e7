"""xoshiro256** streams for the compiled lattice moves.

Each piece of work (a subtree's pass, a pair's pass, in a given round) draws
from its own xoshiro256** state, four 64-bit words taken from a
:class:`numpy.random.SeedSequence` spawned from the chain's by the round's
index; so a run gives the same draws with any executor and in any order.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

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


@intrinsic
def _wide_product(typingctx, a, b):
    """Return the 128-bit product of the uint64 ``a`` and ``b`` as (high, low) words."""
    signature = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, sig, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.trunc(builder.lshr(product, wide(64)), ir.IntType(64))
        low = builder.trunc(product, ir.IntType(64))
        return context.make_tuple(builder, sig.return_type, (high, low))

    return signature, codegen


@numba.njit(cache=True, inline="always", _nrt=False)
def below(s, n):
    """Draw a uniform integer in ``0..n-1`` (``n >= 1``), exactly uniform.

    Lemire's method: the high word of ``n`` times a random word, the few words whose
    low word falls below ``2**64 mod n`` drawn again (one multiplication, no division
    but in that rare case).
    """
    bound = np.uint64(n)
    high, low = _wide_product(_next(s), bound)
    if low < bound:
        high = _redraw(s, bound, high, low)
    return np.int64(high)


@numba.njit(cache=True, _nrt=False)
def _redraw(s, bound, high, low):
    """Lemire's rare redraws, out of line: the words whose low product is below 2**64 mod n."""
    floor = -bound % bound
    while low < floor:
        high, low = _wide_product(_next(s), bound)
    return high
