"""The discrete Gaussian's per-cell term, as the lattice sampler reads it.

The one place the sampler evaluates the noise: the log-ratio of the discrete
Gaussian pmf of a released value ``y`` when the confidential count moves from
``s`` to ``s + step``. The normaliser cancels, so with the residual ``r = y - s``
(an integer) and the weight ``w = 1 / (2 sigma**2)`` (precomputed per cell) the
ratio is exactly ``w step (2 r - step)``: integer arithmetic, then one rounding.
"""

from __future__ import annotations

import numba

__all__ = ["noise_log_ratio"]


@numba.njit(cache=True, inline="always", _nrt=False)
def noise_log_ratio(residual, step, weight):
    """``log p(y | s + step) - log p(y | s)`` (discrete Gaussian), ``residual = y - s``."""
    return weight * (step * (2 * residual - step))
