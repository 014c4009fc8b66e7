"""Float64 facts shared below the mechanisms: supported noise scales, exact sums, brackets.

The accounting (:mod:`dpinfer.accounting`) and the mechanisms both search,
validate and add noise parameters within the ranges float64 and int64 can
carry; these helpers are written here once so that neither layer imports the
other's internals.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "FLOAT_SCALE_MAX",
    "FLOAT_SCALE_MIN",
    "INTEGER_SCALE_MAX",
    "bracket",
    "check_range",
    "fsum_or_inf",
]

#: Float noise scales must be normal float64 numbers: a subnormal scale keeps fewer than
#: 53 significant bits, so its noise can be neither drawn nor scored faithfully.
FLOAT_SCALE_MIN = float(np.finfo(float).tiny)
#: Laplace draws reach 745 scales (inverse CDF at the smallest double), Gaussian ones 39;
#: below this bound 1024 scales stay finite.
FLOAT_SCALE_MAX = float(np.finfo(float).max) / 1024
#: Integer noise of a larger scale can leave the int64 range of the releases: discrete
#: Laplace draws beyond 2**63 have probability exp(-2**63 / scale), under exp(-1024) here.
INTEGER_SCALE_MAX = 2.0**53


def fsum_or_inf(values) -> float:
    """Return the exact sum of non-negative floats, rounded once (``inf`` beyond the range).

    ``math.fsum`` raises OverflowError where the sum leaves the range; for
    non-negative terms the exact sum then exceeds every float, so ``inf`` is its rounding.
    """
    values = [float(v) for v in values]
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


def bracket(fn, lo: float, hi: float, floor: float, ceiling: float, step: float):
    """Widen ``[lo, hi]`` by ``step`` within ``[floor, ceiling]`` until ``fn(lo) >= 0 >= fn(hi)``.

    For a decreasing ``fn`` (a delta against the log of a noise scale). Where the range
    ends first, ``fn(lo) < 0`` or ``fn(hi) > 0`` remain for the caller to report.
    """
    lo = max(floor, lo)
    hi = min(ceiling, max(lo, hi))
    while fn(lo) < 0 and lo > floor:
        lo = max(floor, lo - step)
    while fn(hi) > 0 and hi < ceiling:
        hi = min(ceiling, hi + step)
    return lo, hi


def check_range(name: str, arr, lower: float, upper: float, *, why_low: str = "", why_high: str):
    """Refuse a noise parameter below ``lower`` or above ``upper``, saying why."""
    values = np.asarray(arr, dtype=float)
    low, high = values < lower, values > upper
    if np.any(low):
        raise ValueError(
            f"{name}={_shown(values[low])} is below {lower:.6g}, the smallest {name} "
            f"supported: {why_low}"
        )
    if np.any(high):
        raise ValueError(
            f"{name}={_shown(values[high])} is above {upper:.6g}, the largest {name} "
            f"supported: {why_high}"
        )
    return arr


def _shown(values: np.ndarray):
    return values[0].item() if values.size == 1 else values.tolist()
