"""The discrete Gaussian's per-cell term, as the lattice sampler reads it.

The one place the sampler evaluates the noise: the log-ratio of the discrete
Gaussian pmf of a released value ``y`` when the confidential count moves from
``s`` to ``s + step``. The normaliser cancels, so with ``h = 1 / (2 sigma**2)``
the ratio is exactly ``h step (2 (y - s) - step)``.
"""

from __future__ import annotations

import numba

__all__ = ["noise_log_ratio"]


@numba.njit(cache=True, inline="always")
def noise_log_ratio(released, value, step, h):
    """``log p(released | value + step) - log p(released | value)`` (discrete Gaussian)."""
    return h * step * (2.0 * (released - value) - step)
