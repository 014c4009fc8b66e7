"""A natural logarithm that LLVM vectorises, for the sweeps' batched logs."""

from __future__ import annotations

import math

import numba as nb
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

# fdlibm's e_log.c: ln 2 in two parts and the minimax coefficients of log(1 + f) in s**2
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LG1, _LG2, _LG3, _LG4 = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
)
_LG5, _LG6, _LG7 = 1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01
# the bits of sqrt(2) / 2, of 1.0, and 2**52 + 1023 (a biased exponent read as a float)
_HALF_ROOT2, _ONE, _EXPONENT_BIAS = 0x3FE6A09E667F3BCD, 0x3FF0000000000000, 4503599627371519.0
_MANTISSA, _MAGIC = 0x000FFFFFFFFFFFFF, 0x4330000000000000
_SMALLEST_NORMAL, _LARGEST = 2.0**-1022, 1.7976931348623157e308


@intrinsic
def _bits(typingctx, x):
    """Return the bits of the float64 ``x`` as an int64."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _float(typingctx, bits):
    """Return the float64 whose bits are the int64 ``bits``."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """Return ``a * b + c`` rounded once: LLVM's ``fma``, one instruction on an x86-64 with FMA.

    A vectorised loop of it is one fused instruction a vector, where ``a * b + c`` is two
    (numba does not fuse them) and two roundings.
    """
    if (a, b, c) != (types.float64,) * 3:
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float64(types.float64, types.float64, types.float64), codegen


@nb.njit(cache=True, error_model="numpy", inline="always")
def log(x):
    """``log(x)`` for a positive, normal, finite ``x``, within 1 ulp (fdlibm's method).

    No branch and no call, so that a loop of it is vectorised (libm's ``log`` is a
    call a number, about four times slower in a loop). NaN for any other ``x``
    (zero, subnormal, negative, infinite, NaN): callers pass numbers in the domain,
    and a number outside it is refused rather than given a wrong logarithm.
    """
    # x = 2**k m with m in [sqrt(2)/2, sqrt(2)): shift sqrt(2)/2's bits to 1.0's first
    top = _bits(x) + (_ONE - _HALF_ROOT2)
    k = _float((top >> 52) | _MAGIC) - _EXPONENT_BIAS
    f = _float((top & _MANTISSA) + _HALF_ROOT2) - 1.0
    half_square = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    odd = w * (_LG2 + w * (_LG4 + w * _LG6))
    even = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    value = s * (half_square + odd + even) + k * _LN2_LO - half_square + f + k * _LN2_HI
    return value if _SMALLEST_NORMAL <= x <= _LARGEST else math.nan
