"""Compiled special functions of the noise laws."""

from __future__ import annotations

import math

import numba as nb

__all__ = ["log_ndtr"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@nb.njit(cache=True, error_model="numpy")
def log_ndtr(z):
    """``log Phi(z)``, accurate in both tails."""
    if z > 0.0:
        return math.log1p(-0.5 * math.erfc(z / math.sqrt(2.0)))
    if z > -37.0:
        return math.log(0.5 * math.erfc(-z / math.sqrt(2.0)))
    z2 = z * z  # asymptotic series; its first omitted term is below 1e-13 relative here
    series = 1.0 - 1.0 / z2 + 3.0 / z2**2 - 15.0 / z2**3 + 105.0 / z2**4
    return -0.5 * z2 - _HALF_LOG_2PI - math.log(-z) + math.log(series)
