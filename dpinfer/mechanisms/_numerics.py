r"""Exact arithmetic on user numbers: differences, checked integer sums, float resolution.

A release and a confidential value may be int64 or float64 of any magnitude.
Their difference in int64 overflows (``2**62 - (-2**62)``), its square sooner
(``4e9 ** 2``), and converting both to float64 first loses the low bits of
integers beyond ``2**53``. :func:`difference` returns the difference as a
float64 within two units in the last place of the exact value, for every
combination of int64 and float64 operands, in NumPy and in PyTensor alike; the
families then scale it (``d / sigma``) before squaring, so nothing overflows
unless the exact log-density itself is beyond the float64 range.

:func:`checked_add` adds integer noise to int64 values and refuses a sum that
leaves the int64 range instead of wrapping around.
"""

from __future__ import annotations

import numpy as np

from .._validate import bad_entries

__all__ = [
    "scaled_difference",
    "beyond_float",
    "checked_add",
    "difference",
    "float_spacing",
]

_TWO_53 = 2.0**53
_TWO_62 = 2.0**62
# integers are split as high + low with low in [0, 2048): high is a multiple of 2**11,
# so it has at most 52 significant bits and converts to float64 exactly
_LOW_MODULUS = 2048


def difference(xp, a, b):
    """Return ``a - b`` as float64 within 2 ulp of the exact value, for int64 or float64 inputs.

    ``xp`` is the NumPy or PyTensor namespace of :mod:`dpinfer.mechanisms.base`.
    """
    a_int, b_int = xp.is_integer(a), xp.is_integer(b)
    if a_int and b_int:
        wide = xp.as_float(a) - xp.as_float(b)
        # the int64 difference is exact wherever |a - b| < 2**63, which |wide| < 2**62
        # guarantees (each conversion errs by at most 2**9); elsewhere it wraps, and
        # the float difference of same-sign magnitudes is within 2 ulp
        with np.errstate(over="ignore"):
            narrow = xp.as_float(a - b)
        return xp.where(xp.abs(wide) < _TWO_62, narrow, wide)
    if b_int:
        return _float_minus_int(xp, a, b)
    if a_int:
        return -_float_minus_int(xp, b, a)
    return a - b


def scaled_difference(xp, a, b, scale):
    """Return ``(a - b) / scale`` within 3 ulp, also where ``a - b`` alone overflows.

    Only two float64 operands can overflow their difference (int64 ones stay below
    2**64); there the halves ``a / 2 - b / 2`` are taken, exactly halved, instead.
    """
    d = difference(xp, a, b)
    if xp.is_integer(a) or xp.is_integer(b):
        return d / scale
    with np.errstate(over="ignore"):
        halves = (0.5 * a - 0.5 * b) / scale * 2.0
        return xp.where(xp.abs(d) < np.inf, d / scale, halves)


def _float_minus_int(xp, x, n):
    """``x - n`` for float64 ``x`` and int64 ``n``.

    Below ``2**53`` ``n`` converts exactly: one rounding. Above, ``n = high + low``
    with both parts exact floats; when ``x`` is near ``n`` (within a factor of 2 of
    ``high``) ``x - high`` is exact (Sterbenz) and only the last step rounds, and
    otherwise ``|x - high| >= |high| / 2`` dwarfs ``low``: within 2 ulp either way.
    """
    small = xp.abs(xp.as_float(n)) < _TWO_53
    low = n % _LOW_MODULUS
    high = n - low  # moves towards -inf by less than 2**11: never overflows
    split = (x - xp.as_float(high)) - xp.as_float(low)
    return xp.where(small, x - xp.as_float(n), split)


def checked_add(name: str, value: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``value + noise`` for int64 arrays, refusing entries whose sum leaves the int64 range.

    The message gives the entries' count and positions, never the (confidential) values.
    """
    value = np.asarray(value, dtype=np.int64)
    noise = np.asarray(noise, dtype=np.int64)
    with np.errstate(over="ignore"):
        total = value + noise
    # two's complement: the sum overflowed exactly where its sign differs from both operands'
    wrapped = ((value ^ total) & (noise ^ total)) < 0
    if np.any(wrapped):
        left = bad_entries(name, wrapped, "stay in the int64 range once the noise is added")
        raise OverflowError(f"{left}: values that close to -2**63 or 2**63 - 1 leave no room")
    return total


def float_spacing(x) -> np.ndarray:
    """Return the gap between ``|x|`` and the next float64: the resolution near ``x``."""
    return np.spacing(np.abs(np.asarray(x, dtype=float)))


def beyond_float(arr: np.ndarray) -> bool:
    """Whether an integer array holds a value that float64 cannot represent exactly."""
    return bool(arr.size) and bool(np.any(np.abs(arr.astype(float)) >= _TWO_53))
