"""Privacy maps of the Laplace, sparse vector, binomial release and ABCDP mechanisms."""

from __future__ import annotations

import math

import numpy as np
import scipy.optimize as so
import scipy.special as sc
from numpy.typing import ArrayLike

from .. import _validate

__all__ = [
    "abcdp_gaussian_epsilon",
    "abcdp_gaussian_sigma",
    "binomial_release_epsilon",
    "laplace_epsilon",
    "soft_abcdp_epsilon",
    "soft_abcdp_rdp",
    "soft_abcdp_sigma",
    "svt_epsilon",
    "svt_scale",
]


def laplace_epsilon(scale: float, sensitivity: float) -> float:
    """Epsilon of the Laplace mechanism: ``sensitivity / scale`` (l1 sensitivity)."""
    return _validate.positive_finite("sensitivity", sensitivity) / _validate.positive_finite(
        "scale", scale
    )


# --- Sparse vector technique -----------------------------------------------------------


def svt_epsilon(scale: float, sensitivity: float, c: int, *, resample: bool) -> float:
    """Epsilon of ABCDP's sparse vector run (Park et al. 2021, Theorem 1).

    Threshold noise ``Lap(b)``, query noise ``Lap(2b)``; halting after ``c``
    positives gives ``(c + 1) D / b`` when the threshold is drawn once and
    ``2 c D / b`` when it is redrawn after each positive.
    """
    b = _validate.positive_finite("scale", scale)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    c = _validate.positive_int("c", c)
    return (2 * c if _validate.flag("resample", resample) else c + 1) * sens / b


def svt_scale(epsilon: float, sensitivity: float, c: int, *, resample: bool) -> float:
    """Noise scale ``b`` giving ``epsilon`` in :func:`svt_epsilon` (Theorem 1 inverted)."""
    eps = _validate.positive_finite("epsilon", epsilon)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    c = _validate.positive_int("c", c)
    return (2 * c if _validate.flag("resample", resample) else c + 1) * sens / eps


# --- Binomial release ------------------------------------------------------------------


def binomial_release_epsilon(n: int, m: float, length: int) -> float:
    """Epsilon of Xiong et al.'s binomial release: ``n L / m`` (Proposition 4)."""
    return (
        _validate.positive_int("n", n)
        * _validate.positive_int("length", length)
        / _validate.positive_finite("m", m)
    )


# --- ABCDP, arXiv version (Park & Jitkrittum, ABCDP meets DP), Theorems 3.1-3.3 ------


def abcdp_gaussian_epsilon(
    sigma: float, *, sensitivity: float, distance_bound: float, epsilon_abc: float
) -> float:
    """Per-step epsilon ``h(sigma)`` of rejection ABCDP with Gaussian noise (Theorem 3.1).

    ``h(sigma) = min(1, D / sqrt(2 pi sigma^2)) / Phi(min(eps_abc - B, -eps_abc) / sigma)``
    with ``D`` the distance's sensitivity and ``B`` its upper bound; ``inf`` where it
    exceeds the float range (a tiny sigma against a large bound).
    """
    log_h = _abcdp_gaussian_log_h(
        _validate.positive_finite("sigma", sigma),
        _validate.positive_finite("sensitivity", sensitivity),
        _validate.positive_finite("distance_bound", distance_bound),
        _validate.non_negative("epsilon_abc", epsilon_abc),
    )
    with np.errstate(over="ignore"):
        return float(np.exp(log_h))


def _abcdp_gaussian_log_h(sigma, sensitivity, bound, epsilon_abc) -> float:
    log_num = math.log(min(1.0, sensitivity / math.sqrt(2 * math.pi * sigma**2)))
    return log_num - float(sc.log_ndtr(min(epsilon_abc - bound, -epsilon_abc) / sigma))


def abcdp_gaussian_sigma(
    epsilon: float, *, sensitivity: float, distance_bound: float, epsilon_abc: float
) -> float:
    """Return ``h^{-1}(epsilon)`` by root finding; ``h`` decreases strictly in sigma."""
    eps = _validate.positive_finite("epsilon", epsilon)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    bound = _validate.positive_finite("distance_bound", distance_bound)
    eps_abc = _validate.non_negative("epsilon_abc", epsilon_abc)

    def gap(log_sigma):
        return _abcdp_gaussian_log_h(math.exp(log_sigma), sens, bound, eps_abc) - math.log(eps)

    lo, hi = -5.0, 5.0
    while gap(lo) < 0:
        lo -= 5.0
    while gap(hi) > 0:
        hi += 5.0
    return math.exp(so.brentq(gap, lo, hi, xtol=1e-13))


def soft_abcdp_rdp(
    alpha: ArrayLike, sigma: float, *, sensitivity: float, epsilon_abc: float, steps: int
) -> np.ndarray:
    """RDP of ``steps`` soft-ABCDP weights (Theorems 3.2-3.3).

    ``rdp(alpha) = alpha D^2 T / (2 sigma^2 eps_abc^2)``.
    """
    sig = _validate.positive_finite("sigma", sigma)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    eps_abc = _validate.positive_finite("epsilon_abc", epsilon_abc)
    t = _validate.positive_int("steps", steps)
    orders = _validate.non_empty("alpha", _validate.finite_array("alpha", alpha))
    if not np.all(orders >= 1):
        raise ValueError(f"alpha (Renyi orders) must all be at least 1, got {alpha!r}")
    return orders * sens**2 * t / (2 * sig**2 * eps_abc**2)


def soft_abcdp_epsilon(
    sigma: float, delta: float, *, sensitivity: float, epsilon_abc: float, steps: int
) -> float:
    """(epsilon, delta)-DP of soft ABCDP, optimising the Renyi order in closed form.

    With ``rdp(alpha) = alpha K``, ``min_alpha alpha K + log(1/delta)/(alpha - 1)``
    is ``K + 2 sqrt(K log(1/delta))`` at ``alpha = 1 + sqrt(log(1/delta) / K)``.
    """
    k = float(
        soft_abcdp_rdp(1.0, sigma, sensitivity=sensitivity, epsilon_abc=epsilon_abc, steps=steps)
    )
    log_inv_delta = math.log(1 / _validate.probability_open("delta", delta))
    return k + 2 * math.sqrt(k * log_inv_delta)


def soft_abcdp_sigma(
    epsilon: float, delta: float, *, sensitivity: float, epsilon_abc: float, steps: int
) -> float:
    """Noise ``sigma_soft`` giving ``(epsilon, delta)``: inverts :func:`soft_abcdp_epsilon`."""
    eps = _validate.positive_finite("epsilon", epsilon)
    log_inv_delta = math.log(1 / _validate.probability_open("delta", delta))
    root_k = math.sqrt(log_inv_delta + eps) - math.sqrt(log_inv_delta)
    unit = float(
        soft_abcdp_rdp(1.0, 1.0, sensitivity=sensitivity, epsilon_abc=epsilon_abc, steps=steps)
    )
    return math.sqrt(unit) / root_k
