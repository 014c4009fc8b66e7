r"""Privacy maps of the discrete Gaussian mechanism (Canonne, Kamath & Steinke 2020).

The exact delta(epsilon) of Theorem 7, the smallest epsilon at a delta, and the
smallest sigma meeting a target, for every supported sigma: the searches stay
within :data:`~dpinfer.noise.discrete_gaussian.SIGMA_MIN` to ``2**53`` and refuse
targets outside it with the reason.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.optimize as so
from scipy.special import logsumexp

from .. import _validate
from .._numbers import INTEGER_SCALE_MAX, bracket
from ..noise.discrete_gaussian import (
    SIGMA_MIN,
    check_sigma,
    discrete_gaussian_log_normaliser,
    discrete_gaussian_sf,
)
from ._zcdp import zcdp_gaussian, zcdp_to_approx

__all__ = ["discrete_gaussian_delta", "discrete_gaussian_epsilon", "discrete_gaussian_sigma"]


def discrete_gaussian_delta(epsilon: float, sigma: float, sensitivity: int = 1) -> float:
    """Exact delta(epsilon) of the discrete Gaussian mechanism.

    Canonne, Kamath & Steinke (2020), Theorem 7: with ``Y ~ N_Z(0, sigma^2)``
    and integer sensitivity ``D``,
    ``delta = P[Y > eps sigma^2/D - D/2] - e^eps P[Y > eps sigma^2/D + D/2]``,
    evaluated as ``P[a < Y <= b] - (e^eps - 1) P[Y > b]`` (``a``, ``b`` the two
    thresholds), which does not cancel when epsilon is small.
    """
    eps = _validate.non_negative("epsilon", epsilon)
    sig = check_sigma(_validate.positive_finite("sigma", sigma))
    sens = _validate.integer_sensitivity(sensitivity)
    return _exact_delta(eps, sig, sens)


def _exact_delta(eps: float, sigma: float, sens: int) -> float:
    """CKS Theorem 7's delta(epsilon), as ``P[a < Y <= b] - (e^eps - 1) P[Y > b]``.

    With ``a, b = eps sigma^2 / D -+ D / 2``. The two tails of the theorem are each
    near 1/2 at a small epsilon and a large sigma, where their difference (delta, say
    1e-6) would keep only a few digits; the mass between the thresholds (``D``
    lattice points) and ``e^eps - 1`` are computed directly instead.
    """
    centre = eps * sigma * sigma / sens
    a, b = centre - sens / 2, centre + sens / 2
    if not a / sigma < 40:  # both tails below exp(-800): zero in float64
        return 0.0
    tail = discrete_gaussian_sf(b, sigma)
    between = _mass_between(a, b, sigma)
    if eps == 0.0 or tail == 0.0 or between == 0.0:
        return between
    log_excess = math.log(tail) + _log_expm1(eps)
    log_between = math.log(between)
    return 0.0 if log_excess >= log_between else between * -math.expm1(log_excess - log_between)


def _log_expm1(x: float) -> float:
    """``log(e^x - 1)`` for ``x > 0``, without overflowing ``e^x`` from ``x = 710`` on."""
    return math.log(math.expm1(x)) if x < 1 else x + math.log1p(-math.exp(-x))


def _mass_between(a: float, b: float, sigma: float) -> float:
    """``P[a < Y <= b]``: the pmf summed over the lattice points, or a difference of tails."""
    first, last = math.floor(a) + 1, math.floor(b)
    if last < first:
        return 0.0
    if last - first > 10_000:
        return discrete_gaussian_sf(a, sigma) - discrete_gaussian_sf(b, sigma)
    z = np.arange(first, last + 1, dtype=float) / sigma
    with np.errstate(over="ignore"):
        log_pmf = -(0.5 * z) * z - discrete_gaussian_log_normaliser(sigma)
    return float(np.exp(logsumexp(log_pmf)))


def discrete_gaussian_epsilon(sigma: float, delta: float, sens: int, dim: int) -> float:
    """Smallest epsilon of the discrete Gaussian at ``delta`` (``inf`` beyond the float range).

    The mechanism is D^2/(2 sigma^2)-zCDP (CKS 2020), whose conversion (Bun &
    Steinke 2016, Proposition 1.3) bounds it from above: the search stops there.
    A release of ``dim > 1`` cells gets that bound (Theorem 7 is one-dimensional).
    """
    cap = zcdp_to_approx(zcdp_gaussian(sigma, sens), delta)
    if dim > 1 or not math.isfinite(cap) or not _exact_at(sens, sigma):
        return cap

    def excess(eps):
        return _exact_delta(eps, sigma, sens) - delta

    if excess(1e-12) <= 0:
        return 1e-12
    hi = 1.0
    while hi < min(cap, 2.0**30) and excess(hi) > 0:
        hi *= 2
    if hi >= 2.0**30 and excess(hi) > 0:  # a tiny sigma: search up to the bound, log scale
        top = math.log(cap)
        if excess(cap) > 0:  # rounding at the zCDP bound itself
            return cap
        # exp(top) may round below cap, where a huge sensitivity's step function is still > 0;
        # the root is at most cap, which the search's own rounding may pass
        root = so.brentq(
            lambda t: excess(cap if t >= top else math.exp(t)), math.log(hi), top, xtol=1e-15
        )
        return min(math.exp(root), cap)
    return so.brentq(excess, 0, hi, xtol=1e-13)


def _exact_at(sens: int, sigma: float) -> bool:
    """Whether float64 holds Theorem 7's thresholds ``eps sigma^2 / D -+ D / 2`` well enough.

    Each is a difference of numbers near ``D / 2``, off by up to ``D 2**-52``: the
    exact delta needs that below 1/1000 of a lattice step and of sigma (so not from
    ``D`` of about ``2**42`` on at sigma 1). Beyond, the zCDP conversion is the
    answer: valid, and within a relative ``5 sigma / D`` of the exact epsilon there.
    """
    return sens * 2.0**-52 <= 1e-3 * min(sigma, 1.0)


def discrete_gaussian_sigma(epsilon: float, delta: float, sens: int, dim: int) -> float:
    """Smallest sigma whose exact delta(epsilon) is at most ``delta`` (the zCDP one for vectors).

    Refuses targets that need a sigma outside ``[SIGMA_MIN, 2**53]``.
    """
    if dim > 1:
        # rho + 2 sqrt(rho log(1/delta)) = epsilon  =>  sqrt(rho) = -L + sqrt(L^2 + epsilon),
        # written as epsilon / (sqrt(L^2 + epsilon) + L), which does not cancel for tiny epsilon
        root_log = math.sqrt(math.log(1 / delta))
        root_rho = epsilon / (math.sqrt(root_log**2 + epsilon) + root_log)
        return sens / (math.sqrt(2) * root_rho)

    def excess(log_sigma):
        return _exact_delta(epsilon, math.exp(log_sigma), sens) - delta

    start = math.log(sens)
    lo, hi = bracket(
        excess, start - 5, start + 5, math.log(SIGMA_MIN), math.log(INTEGER_SCALE_MAX), 5
    )
    if excess(hi) > 0:
        raise ValueError(
            f"epsilon={epsilon!r} with delta={delta!r} at sensitivity {sens} needs a discrete "
            f"Gaussian sigma above 2**53 = {INTEGER_SCALE_MAX:.6g}, whose draws can leave the "
            "int64 range of the releases; ask for a larger epsilon or delta"
        )
    if excess(lo) < 0:
        return SIGMA_MIN  # every supported sigma meets the target; the smallest adds least noise
    # the root's upper end, so the guarantee holds at the returned sigma
    return math.exp(so.brentq(excess, lo, hi, xtol=1e-13)) * (1 + 1e-12)
