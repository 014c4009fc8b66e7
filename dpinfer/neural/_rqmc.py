r"""Scrambled Sobol points, one independent scramble per simulated statistic.

The nested RQMC estimator of Xiong, Ju and Zhang (2023, Section 3.3) privatises
each simulated statistic ``M`` times, at the first ``M`` points of a randomised
Sobol sequence. Every statistic gets its own randomisation, drawn here for a
whole batch at once: Matousek's linear matrix scramble (a random lower
triangular binary matrix with unit diagonal per coordinate) and a random digital
shift, applied to the 30-bit digits of the unscrambled points, then a uniform
jitter inside the final 30-bit cell. Each point is then exactly ``U(0, 1)^d``,
and the ``M = 2^k`` points of one statistic keep the Sobol net property: in every
coordinate, one point in each interval ``[j / M, (j + 1) / M)``.

References
----------
.. [1] Matousek, J. (1998). On the L2-discrepancy for anchored boxes. J. Complexity 14.
.. [2] Owen, A. B. (1997). Scrambled net variance for integrals of smooth functions.
   Ann. Statist. 25(4).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import qmc

BITS = 30
_CHUNK = 2048  # statistics scrambled at once: (2048, d, 30, 30) bits of matrices


def is_power_of_two(n: int) -> bool:
    """Whether ``n`` is ``2**k`` for some ``k >= 0``."""
    return n >= 1 and n & (n - 1) == 0


def scrambled_sobol(n_sets: int, points: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``n_sets`` independently scrambled copies of the first ``points`` Sobol points.

    Parameters
    ----------
    n_sets : int
        Number of independent randomisations (one per simulated statistic).
    points : int
        Points per set, a power of two.
    dim : int
        Dimension of each point.
    rng : numpy.random.Generator
        Source of the scrambles.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_sets, points, dim)``, entries in ``(0, 1)``.
    """
    if not is_power_of_two(points):
        raise ValueError(f"points must be a power of two, got {points!r}")
    base = qmc.Sobol(dim, scramble=False, bits=BITS).random(points)
    base_bits = _to_bits((base * 2**BITS).astype(np.int64))  # (points, dim, BITS)
    out = np.empty((n_sets, points, dim))
    for lo in range(0, n_sets, _CHUNK):
        n = min(_CHUNK, n_sets - lo)
        lower = np.tril(rng.integers(0, 2, size=(n, dim, BITS, BITS), dtype=np.uint8), -1)
        lower += np.eye(BITS, dtype=np.uint8)
        shift = rng.integers(0, 2, size=(n, 1, dim, BITS), dtype=np.uint8)
        # digit a of the scrambled point: sum_b L[a, b] digit_b (mod 2), then the shift
        digits = np.einsum("ndab,mdb->nmda", lower, base_bits, dtype=np.int64) % 2
        ints = _from_bits(digits ^ shift)
        out[lo : lo + n] = (ints + rng.random(ints.shape)) / 2.0**BITS
    # the jitter can reach 0 only if both the integer and the jitter are 0 (2^-83)
    return np.clip(out, np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0))


def _to_bits(ints: np.ndarray) -> np.ndarray:
    """Binary digits, most significant first, along a new last axis of length BITS."""
    shifts = np.arange(BITS - 1, -1, -1)
    return ((ints[..., None] >> shifts) & 1).astype(np.uint8)


def _from_bits(bits: np.ndarray) -> np.ndarray:
    weights = 2 ** np.arange(BITS - 1, -1, -1, dtype=np.int64)
    return bits.astype(np.int64) @ weights
