"""An exponential, a sine and a cosine that LLVM vectorises, for :mod:`._fourier`'s nodes.

Like :func:`._vector_log.log`, each is straight-line code with no call, so that a loop
over a batch of cells runs four at a time; libm's functions are a call a number.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ._vector_log import _bits, _float, fma

# exp: x = k ln 2 + r with |r| <= ln 2 / 2 (k rounded by adding and taking away 1.5 * 2**52),
# e^r by its Taylor polynomial of degree 13 (remainder below 5e-18), then 2**k from its bits
_INV_LN2, _ROUND = 1.0 / math.log(2.0), 6755399441055744.0
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_EXP = tuple(1.0 / math.factorial(i) for i in range(14))
# below it e^x is subnormal, or 0, and exp returns 0
_EXP_LOWEST = -708.0

# sin and cos: x = k pi/2 + r with |r| <= pi/4, pi/2 in three parts (fdlibm's), then the
# Taylor polynomials of degree 17 and 18 in r (remainders below 1e-19)
_INV_PIO2 = 6.36619772367581382433e-01
_PIO2_1, _PIO2_2, _PIO2_3 = (
    1.57079632673412561417e00,
    6.07710050630396597660e-11,
    (2.02226624879595063154e-21),
)
_SIN = tuple((-1.0) ** i / math.factorial(2 * i + 3) for i in range(8))
_COS = tuple((-1.0) ** i / math.factorial(2 * i + 4) for i in range(8))
#: beyond it the reduction by pi/2 in three parts loses digits: callers keep within
LARGEST_ANGLE = 1e5


@nb.njit(cache=True, error_model="numpy", inline="always")
def exp(x):
    """``exp(x)`` for ``x <= 709``, within 2 ulp; 0 below -708 (and NaN for NaN)."""
    shifted = x * _INV_LN2 + _ROUND
    k = shifted - _ROUND
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = polynomial14(_EXP, r)
    # 2**k from k's bits in shifted's last ones: a float-to-integer conversion of k would be
    # four scalar instructions a vector on AVX2, which has no packed one
    scale = _float((_bits(shifted) + 1023) << 52)
    return p * scale if x >= _EXP_LOWEST else 0.0 * abs(x)


@nb.njit(cache=True, error_model="numpy", inline="always")
def sincos(x):
    """``(sin x, cos x)`` within 1e-16 for ``|x| <= LARGEST_ANGLE``."""
    k = (x * _INV_PIO2 + _ROUND) - _ROUND
    r = ((x - k * _PIO2_1) - k * _PIO2_2) - k * _PIO2_3
    z = r * r
    ps, pc = polynomial8(_SIN, z), polynomial8(_COS, z)
    sin_r = r - r * z * ps
    cos_r = 1.0 - z * (0.5 - z * pc)
    quadrant = k - 4.0 * np.floor(0.25 * k)  # 0, 1, 2 or 3 (math.floor's is an int)
    odd = quadrant == 1.0 or quadrant == 3.0
    sine = cos_r if odd else sin_r
    cosine = sin_r if odd else cos_r
    return (-sine if quadrant >= 2.0 else sine), (
        -cosine if (quadrant == 1.0 or quadrant == 2.0) else cosine
    )


@nb.njit(cache=True, error_model="numpy", inline="always")
def versine(u):
    """``1 - cos u`` for ``|u| <= 1`` within 1e-16 relative (no cancellation near 0)."""
    z = u * u
    p = polynomial8(_COS, z)
    return z * (0.5 - z * p)


@nb.njit(cache=True, error_model="numpy", inline="always")
def u_minus_sine(u):
    """``u - sin u`` for ``|u| <= 1`` within 1e-16 relative (no cancellation near 0)."""
    z = u * u
    p = polynomial8(_SIN, z)
    return u * z * p


# The polynomials are ordinary compiled functions, which LLVM inlines (scalars in and out:
# no reference counting, no call left in the vectorised loops). Inlined by numba instead,
# every call site runs their untyped passes again, within every inlined exp, sine and cosine:
# ._fourier's batch sums then took 22 of the Poisson sweep's 44 s to compile (now 12 of 34).
# Their steps are fused (fma): half the instructions of a multiply and an add, one rounding.
# The terms past x^3 are summed in pairs (Estrin's scheme), whose chain of dependent steps
# is shorter than Horner's: a vectorised loop of ._fourier's nodes waits on these chains.
# The last steps, which set the rounding of the value, are Horner's.
@nb.njit(cache=True, error_model="numpy")
def polynomial8(c, x):
    """``c[0] + c[1] x + ... + c[7] x^7``: the terms past x^3 in pairs, then Horner's rule."""
    return _horner4(c, x, _cubic(x, x * x, c[4], c[5], c[6], c[7]))


@nb.njit(cache=True, error_model="numpy")
def polynomial14(c, x):
    """``c[0] + c[1] x + ... + c[13] x^13``, the same way."""
    x2 = x * x
    top = _cubic(x, x2, c[10], c[11], c[12], c[13])  # x^10 to x^13, over x^10
    upper = fma(x2, top, fma(x, c[9], c[8]))  # x^8 to x^13, over x^8
    lower = _cubic(x, x2, c[4], c[5], c[6], c[7])  # x^4 to x^7, over x^4
    return _horner4(c, x, fma(x2 * x2, upper, lower))


@nb.njit(cache=True, error_model="numpy")
def _cubic(x, x2, c0, c1, c2, c3):
    """``c0 + c1 x + c2 x^2 + c3 x^3`` in two pairs (``x2 = x * x``)."""
    return fma(x2, fma(x, c3, c2), fma(x, c1, c0))


@nb.njit(cache=True, error_model="numpy")
def _horner4(c, x, p):
    """``c[0] + c[1] x + c[2] x^2 + c[3] x^3 + p x^4``: the last four steps of Horner's rule."""
    p = fma(x, p, c[3])
    p = fma(x, p, c[2])
    p = fma(x, p, c[1])
    return fma(x, p, c[0])
