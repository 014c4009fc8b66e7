"""Maps between bounded supports and the real line, shared by SMC moves and MCEM.

A component with support ``(a, b)`` has unconstrained coordinate ``x`` on the
real line, ``log(x - a)`` on ``(a, inf)``, ``log(b - x)`` on ``(-inf, b)`` and
``logit((x - a) / (b - a))`` on a bounded interval. Bounds broadcast against
the values, so one call maps a vector of differently bounded components.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit


def _kinds(lo, hi, shape):
    lo = np.broadcast_to(np.asarray(lo, dtype=float), shape)
    hi = np.broadcast_to(np.asarray(hi, dtype=float), shape)
    low_only = np.isfinite(lo) & ~np.isfinite(hi)
    high_only = ~np.isfinite(lo) & np.isfinite(hi)
    both = np.isfinite(lo) & np.isfinite(hi)
    return lo, hi, low_only, high_only, both


def to_unconstrained(x, lower, upper) -> np.ndarray:
    """Map values in ``(lower, upper)`` to the real line."""
    x = np.asarray(x, dtype=float)
    lo, hi, low_only, high_only, both = _kinds(lower, upper, x.shape)
    out = x.copy()
    out[low_only] = np.log(x[low_only] - lo[low_only])
    out[high_only] = np.log(hi[high_only] - x[high_only])
    out[both] = logit((x[both] - lo[both]) / (hi[both] - lo[both]))
    return out


def to_constrained(z, lower, upper) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map real values back to ``(lower, upper)``; also return ``dx/dz`` and ``d2x/dz2``."""
    z = np.asarray(z, dtype=float)
    lo, hi, low_only, high_only, both = _kinds(lower, upper, z.shape)
    x, d1, d2 = z.copy(), np.ones_like(z), np.zeros_like(z)
    e = np.exp(z[low_only])
    x[low_only], d1[low_only], d2[low_only] = lo[low_only] + e, e, e
    e = np.exp(z[high_only])
    x[high_only], d1[high_only], d2[high_only] = hi[high_only] - e, -e, -e
    width = hi[both] - lo[both]
    u = expit(z[both])
    x[both] = lo[both] + width * u
    d1[both] = width * u * (1 - u)
    d2[both] = d1[both] * (1 - 2 * u)
    return x, d1, d2


def log_jacobian(z, lower, upper) -> np.ndarray:
    """``log |dx/dz|``, in a form that does not underflow for large ``|z|``."""
    z = np.asarray(z, dtype=float)
    lo, hi, low_only, high_only, both = _kinds(lower, upper, z.shape)
    out = np.zeros_like(z)
    out[low_only | high_only] = z[low_only | high_only]
    out[both] = np.log(hi[both] - lo[both]) - np.logaddexp(0, z[both]) - np.logaddexp(0, -z[both])
    return out
