r"""Inverse CDFs of the discrete Laplace and discrete Gaussian noise.

The quantile of a symmetric integer law is :math:`Q(u) = \min\{k : F(k) \ge u\}`.
Both functions work on the tail that keeps precision: for :math:`u \le 1/2`
they compare :math:`\log u` with :math:`\log F(k)`, above it they compare
:math:`\log(1 - u)` (exact in floating point for :math:`u \ge 1/2`) with
:math:`\log S(k)`, :math:`S(k) = P(X > k) = F(-k - 1)`. A quantile can differ
from the exact one only when ``u`` lies within the stated relative error of
the CDF from one of its jumps.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp, ndtri

from ..noise.discrete_gaussian import euler_maclaurin_log_cdf

# Below this sigma the discrete Gaussian CDF is tabulated; above it the midpoint
# Euler-Maclaurin series is used (its first omitted term is below 1e-18 there).
_TABLE_SIGMA = 50.0
# log u >= log(5e-324) > -745: the table reaches where log F(k) < -745.
_TAIL_LOG = 745.0


def discrete_laplace_quantile(u: np.ndarray, scale: float) -> np.ndarray:
    r"""``Q(u)`` of ``P(x) = tanh(1/(2t)) exp(-|x|/t)`` on the integers.

    With :math:`p = e^{-1/t}`, :math:`F(k) = p^{-k}/(1 + p)` for :math:`k < 0` and
    :math:`S(k) = p^{k+1}/(1 + p)` for :math:`k \ge 0`, so the quantile is
    :math:`-\lfloor t(-\log u - \log(1 + p)) \rfloor` in the lower tail and
    :math:`\lceil t(-\log(1 - u) - \log(1 + p)) \rceil - 1` in the upper one
    (0 in between): closed forms, with the rounding error of one logarithm.
    """
    u = np.asarray(u, dtype=float)
    log1p_p = math.log1p(math.exp(-1.0 / scale))
    lower = u <= 0.5
    tail = np.where(lower, u, 1.0 - u)
    depth = scale * (-np.log(tail) - log1p_p)  # >= 1 exactly where the tail is reached
    below = -np.floor(depth)
    above = np.ceil(depth) - 1.0
    k = np.where(lower, np.minimum(below, 0.0), np.maximum(above, 0.0))
    return k.astype(np.int64)


def discrete_gaussian_quantile(u: np.ndarray, sigma: float) -> np.ndarray:
    r"""``Q(u)`` of ``P(x) ∝ exp(-x^2 / (2 sigma^2))`` on the integers.

    For :math:`\sigma \le 50` the log-CDF is tabulated over
    :math:`|k| \le 39\sigma + 2` (the log-pmf summed by ``logaddexp``, relative
    error below :math:`10^{-12}`) and inverted by binary search. Above, the
    midpoint Euler-Maclaurin formula gives :math:`F(k)` with :math:`y =
    (k + 1/2)/\sigma`:

    .. math:: F(k) = \Phi(y) + \varphi(y)\Big[\frac{y}{24\sigma^2}
              - \frac{7 (y^3 - 3y)}{5760\sigma^4}
              + \frac{31 (y^5 - 10y^3 + 15y)}{967680\sigma^6}\Big],

    whose omitted terms are below :math:`10^{-18}` relative in the bulk (the
    Poisson-summation error :math:`e^{-2\pi^2\sigma^2}` vanishes in double
    precision); the quantile is found from the normal one by at most a few
    integer steps.
    """
    u = np.asarray(u, dtype=float)
    lower = u <= 0.5
    log_tail = np.log(np.where(lower, u, 1.0 - u))
    if sigma <= _TABLE_SIGMA:
        support, log_cdf = _discrete_gaussian_table(sigma)
        # smallest k with log F(k) >= log u; by symmetry the upper tail is its mirror image
        j = np.searchsorted(log_cdf, log_tail, side="left")
        k_low = support[np.minimum(j, support.size - 1)]
        # smallest k with log S(k) = log F(-k-1) <= log(1 - u): k = -m - 1 for the
        # largest m with log F(m) <= log(1 - u)
        m = support[np.searchsorted(log_cdf, log_tail, side="right") - 1]
        k_high = -m - 1
    else:
        k_low = _asymptotic_lower_quantile(log_tail, sigma)
        k_high = -_largest_at_most(log_tail, sigma) - 1
    return np.where(lower, k_low, k_high).astype(np.int64)


def _discrete_gaussian_table(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    half = math.ceil(math.sqrt(2 * _TAIL_LOG) * sigma) + 2
    support = np.arange(-half, half + 1)
    log_pmf = -(support.astype(float) ** 2) / (2 * sigma**2)
    log_pmf -= logsumexp(log_pmf)
    return support, np.logaddexp.accumulate(log_pmf)


def _asymptotic_lower_quantile(log_u: np.ndarray, sigma: float) -> np.ndarray:
    """Smallest ``k`` with ``log F(k) >= log u``, stepping from the normal quantile."""
    k = np.ceil(sigma * ndtri(np.exp(log_u)) - 0.5)
    for _ in range(8):
        down = euler_maclaurin_log_cdf(k - 1, sigma) >= log_u
        up = euler_maclaurin_log_cdf(k, sigma) < log_u
        if not (down.any() or up.any()):
            return k
        k = k - down + up
    raise RuntimeError("discrete Gaussian quantile did not converge")  # pragma: no cover


def _largest_at_most(log_v: np.ndarray, sigma: float) -> np.ndarray:
    """Largest ``m`` with ``log F(m) <= log v``: one below the smallest with ``F > v``."""
    m = np.floor(sigma * ndtri(np.exp(log_v)) - 0.5)
    for _ in range(8):
        up = euler_maclaurin_log_cdf(m + 1, sigma) <= log_v
        down = euler_maclaurin_log_cdf(m, sigma) > log_v
        if not (down.any() or up.any()):
            return m
        m = m + up - down
    raise RuntimeError("discrete Gaussian quantile did not converge")  # pragma: no cover
