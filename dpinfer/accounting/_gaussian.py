"""The Gaussian mechanism's exact delta(epsilon) and its calibrations (Balle & Wang 2018)."""

from __future__ import annotations

import math

import numpy as np
import scipy.optimize as so
import scipy.special as sc

from .. import _validate
from .._numbers import FLOAT_SCALE_MAX as _SIGMA_MAX
from .._numbers import FLOAT_SCALE_MIN as _SIGMA_MIN
from .._numbers import bracket
from ._zcdp import zcdp_gaussian, zcdp_to_approx

__all__ = [
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classical",
]


def gaussian_sigma_classical(epsilon: float, delta: float, sensitivity: float) -> float:
    """Classical calibration ``sigma = sensitivity * sqrt(2 log(1.25/delta)) / epsilon``.

    Valid only for ``epsilon < 1`` (Dwork & Roth 2014, Theorem A.1); larger
    epsilons are refused rather than silently mis-calibrated.
    """
    eps = _validate.positive_finite("epsilon", epsilon)
    dlt = _validate.probability_open("delta", delta)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    if not eps < 1:
        raise ValueError(
            f"epsilon must be < 1 for the classical Gaussian calibration, got {epsilon!r}; "
            "use calibration='analytic'"
        )
    return sens * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps


def gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    ``delta = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)``
    with ``D`` the l2 sensitivity; evaluated in log space.
    """
    eps = _validate.non_negative("epsilon", epsilon)
    sig = _validate.positive_finite("sigma", sigma)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    a = sens / (2 * sig) - eps * sig / sens
    b = -sens / (2 * sig) - eps * sig / sens
    log_first, log_second = sc.log_ndtr(a), eps + sc.log_ndtr(b)
    if log_second >= log_first:
        return 0.0
    return float(np.exp(log_first) * -np.expm1(log_second - log_first))


def gaussian_sigma_analytic(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with ``gaussian_delta(epsilon, sigma) <= delta`` (Balle & Wang 2018).

    Solved by root finding on the exact delta(epsilon) curve, which decreases in sigma.
    """
    eps = _validate.positive_finite("epsilon", epsilon)
    dlt = _validate.probability_open("delta", delta)
    sens = _validate.positive_finite("sensitivity", sensitivity)

    def gap(log_sigma):
        return math.log(max(gaussian_delta(eps, math.exp(log_sigma), sens), 1e-320)) - math.log(
            dlt
        )

    # the search stays within the normal float64 sigmas the Gaussian mechanism takes
    start = math.log(sens)
    lo, hi = bracket(
        gap, start - 10.0, start + 10.0, math.log(_SIGMA_MIN), math.log(_SIGMA_MAX), 10.0
    )
    if gap(hi) > 0 or gap(lo) < 0:
        side = "above" if gap(hi) > 0 else "below"
        raise ValueError(
            f"epsilon={epsilon!r} with delta={delta!r} at sensitivity={sensitivity!r} needs a "
            f"Gaussian sigma {side} the float64 range the mechanism supports "
            f"[{_SIGMA_MIN:.6g}, {_SIGMA_MAX:.6g}]"
        )
    # nudge the root outward so that rounding never lands on the unsafe side
    return math.exp(so.brentq(gap, lo, hi, xtol=1e-14, rtol=1e-15)) * (1 + 1e-12)


def gaussian_epsilon(delta: float, sigma: float, sensitivity: float) -> float:
    """Smallest epsilon with ``gaussian_delta(epsilon, sigma) <= delta``."""
    dlt = _validate.probability_open("delta", delta)
    sig = _validate.positive_finite("sigma", sigma)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    if gaussian_delta(0.0, sig, sens) <= dlt:
        return 0.0
    # the zCDP conversion bounds epsilon from above; inf when rho leaves the float range
    cap = zcdp_to_approx(zcdp_gaussian(sig, sens), dlt)
    if not math.isfinite(cap):
        return math.inf
    hi = 1.0
    while hi < cap and gaussian_delta(hi, sig, sens) > dlt:
        hi *= 2.0
    hi = min(hi, cap)
    if gaussian_delta(hi, sig, sens) > dlt:  # rounding at the bound itself
        return hi
    return so.brentq(lambda e: gaussian_delta(e, sig, sens) - dlt, 0.0, hi, xtol=1e-14)
