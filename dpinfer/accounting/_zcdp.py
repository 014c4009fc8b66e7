"""Zero-concentrated and Renyi DP: the Gaussian's rho and conversions to (epsilon, delta)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from .._numbers import FLOAT_SCALE_MIN

__all__ = ["rdp_to_approx", "zcdp_gaussian", "zcdp_to_approx"]


def zcdp_gaussian(sigma: float, sensitivity: float) -> float:
    """Return the zCDP parameter of a Gaussian: ``rho = D^2 / (2 sigma^2)``.

    ``inf`` where rho exceeds the float64 range (a sigma tiny next to ``D``).
    Where a square would under- or overflow, ``(D / sigma)^2 / 2`` is used instead.
    """
    sig = _validate.positive_finite("sigma", sigma)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    square, top = sig * sig, sens * sens
    if FLOAT_SCALE_MIN <= square < math.inf and top < math.inf:
        return top / (2 * square)
    ratio = sens / sig
    return 0.5 * ratio * ratio


def zcdp_to_approx(rho: float, delta: float) -> float:
    """Epsilon of a rho-zCDP mechanism at ``delta``: ``rho + 2 sqrt(rho log(1/delta))``.

    Bun & Steinke (2016), Proposition 1.3; ``inf`` for ``rho = inf`` or beyond the
    float64 range.
    """
    r = _validate.positive_or_inf("rho", rho)
    dlt = _validate.probability_open("delta", delta)
    return r + 2 * math.sqrt(r * math.log(1 / dlt))


def rdp_to_approx(orders: ArrayLike, rdp_epsilons: ArrayLike, delta: float) -> float:
    """Convert Renyi-DP curves to (epsilon, delta)-DP.

    ``eps = min_alpha rdp(alpha) + log(1/delta) / (alpha - 1)`` (Mironov 2017,
    Proposition 3).

    Parameters
    ----------
    orders : array_like
        Renyi orders ``alpha > 1``.
    rdp_epsilons : array_like
        ``rdp(alpha)`` at each order (already composed).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        The smallest epsilon over the given orders.
    """
    alphas = _validate.finite_array("orders", orders).ravel()
    rdp = _validate.numeric_array("rdp_epsilons", rdp_epsilons).astype(float).ravel()
    dlt = _validate.probability_open("delta", delta)
    if alphas.size == 0 or alphas.shape != rdp.shape:
        raise ValueError(
            f"orders and rdp_epsilons must be non-empty and of equal length, got "
            f"{alphas.size} and {rdp.size}"
        )
    if not np.all(alphas > 1):
        raise ValueError(f"orders must all exceed 1, got {alphas}")
    if np.any(np.isnan(rdp)) or np.any(rdp < 0):
        raise ValueError(f"rdp_epsilons must be non-negative, got {rdp}")
    return float(np.min(rdp + math.log(1 / dlt) / (alphas - 1)))
