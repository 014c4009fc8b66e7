r"""The discrete Gaussian law on the integers: its normaliser, CDF and tail.

:math:`P(X = k) = e^{-k^2 / (2\sigma^2)} / Z(\sigma)` on the integers. The
mechanism (:class:`dpinfer.DiscreteGaussian`), its privacy maps
(:mod:`dpinfer.accounting`) and the compiled kernels all read these functions.

Work and memory stay bounded whatever sigma: tail sums run over at most a few
times sigma terms (far fewer in the far tail), and above :data:`EM_SIGMA` the
part of the CDF near the bulk comes from the midpoint Euler-Maclaurin series.
"""

from __future__ import annotations

import math
from typing import TypeVar

import numba as nb
import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from .._numbers import INTEGER_SCALE_MAX, check_range
from ._special import log_ndtr

__all__ = [
    "SIGMA_MIN",
    "check_sigma",
    "compiled_log_cdf",
    "deep_log_cdf",
    "discrete_gaussian_log_cdf",
    "discrete_gaussian_log_normaliser",
    "discrete_gaussian_sf",
    "euler_maclaurin_log_cdf",
]

#: sigma**2 must be a normal float64: the exact sampler draws with its rational value and
#: the accounting squares sigma. Below it, noise other than 0 has probability < exp(-1e307).
SIGMA_MIN = math.sqrt(float(np.finfo(float).tiny))

# Above this sigma the tail comes from the Euler-Maclaurin CDF: its first omitted term is
# (y / sigma)^8 relative, below 1e-25 at the y <= 39 that a probability above 1e-324 needs,
# and the direct sum would hold 40 sigma terms.
_DIRECT_SIGMA = 1e4
# Above this sigma, lower tails with m < _EM_REACH sigma^2 use the Euler-Maclaurin
# series: its terms fall like (m / (2 pi sigma^2))^(2j), so the first omitted one is
# below 1e-15 relative there. Everything else is summed directly.
EM_SIGMA = 50.0
_EM_REACH = 0.1
# A direct tail sum stops at the first term below 1e-17 of the partial sum.
_TAIL_STOP = 1e-17
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_JIT = {"cache": True, "error_model": "numpy"}


_Sigma = TypeVar("_Sigma", float, np.ndarray)  # one sigma, or one per cell


def check_sigma(sigma: _Sigma) -> _Sigma:
    """Refuse a discrete Gaussian sigma outside ``[SIGMA_MIN, 2**53]``, saying why."""
    return check_range(
        "sigma",
        sigma,
        SIGMA_MIN,
        INTEGER_SCALE_MAX,
        why_low="sigma**2 underflows float64 (the exact sampler and the accounting use it), and "
        "such noise is 0 with probability above 1 - exp(-1e307)",
        why_high="draws of larger noise can leave the int64 range of the releases",
    )


def discrete_gaussian_log_normaliser(sigma: float) -> float:
    """``log sum_k exp(-k^2 / (2 sigma^2))`` to double precision.

    A direct sum for small sigma; for ``sigma >= 1`` the Poisson-summation
    dual ``sqrt(2 pi) sigma sum_k exp(-2 pi^2 sigma^2 k^2)``, which converges
    in a handful of terms.
    """
    if sigma < 1:
        z = np.arange(-40, 41) / sigma
        with np.errstate(over="ignore"):  # z^2 = inf: a term exp(-inf) = 0
            return float(logsumexp(-(0.5 * z) * z))
    k = np.arange(-5, 6)
    return (
        0.5 * math.log(2 * math.pi)
        + math.log(sigma)
        + float(logsumexp(-2 * math.pi**2 * sigma**2 * k**2))
    )


def discrete_gaussian_sf(x: float, sigma: float) -> float:
    """``P[Y > x]`` for ``Y ~ N_Z(0, sigma^2)``.

    Summing the pmf over the tail up to 40 sigma beyond 0 or ``x`` (at most
    81 sigma + 52 terms: beyond 40 sigma from 0 the answer is 0 or 1); above
    sigma = 1e4, ``F(-floor(x) - 1)`` by the Euler-Maclaurin CDF (symmetry).
    """
    if not abs(x) < 40 * sigma + 1:  # beyond 40 sigma the far tail is below exp(-800)
        return 0.0 if x > 0 else 1.0
    if sigma > _DIRECT_SIGMA:
        return math.exp(compiled_euler_maclaurin(-math.floor(x) - 1.0, sigma))
    start = math.floor(x) + 1
    stop = max(start, 0) + math.ceil(40 * sigma) + 50
    z = np.arange(start, stop, dtype=float) / sigma
    with np.errstate(over="ignore"):
        log_terms = -(0.5 * z) * z - discrete_gaussian_log_normaliser(sigma)
    return float(np.exp(logsumexp(log_terms))) if z.size else 0.0


@nb.njit(**_JIT)
def compiled_log_cdf(k, sigma, log_z):
    r"""``log P(X <= k)`` for :math:`X \sim N_{\mathbb Z}(0, \sigma^2)`, integer ``k`` (compiled).

    ``log_z`` is :func:`discrete_gaussian_log_normaliser` of ``sigma``. For
    ``k < 0`` the lower tail :func:`log_lower_tail` at ``m = -k``; for
    ``k >= 0``, ``log(1 - T(k + 1))`` with ``T`` that tail (symmetry).
    """
    if k < 0.0:
        return log_lower_tail(-k, sigma, log_z)
    return math.log1p(-math.exp(log_lower_tail(k + 1.0, sigma, log_z)))


@nb.njit(**_JIT)
def log_lower_tail(m, sigma, log_z):
    r"""``log P(X <= -m)`` for ``m >= 1`` (``-inf`` where ``m`` is not finite).

    Above :data:`EM_SIGMA`, for :math:`m < 0.1\sigma^2`, the Euler-Maclaurin
    series; elsewhere :math:`T(m) = \sum_{j \ge m} e^{-j^2/(2\sigma^2)}` as
    :math:`e^{-m^2/(2\sigma^2)} \sum_{i \ge 0} e^{-(m i + i^2/2)/\sigma^2}`, a sum
    of terms at most 1 cut at the first below ``1e-17`` of the partial sum (at
    most about :math:`9\sigma` terms, and a handful far out).
    """
    if not math.isfinite(m):
        return -math.inf
    if sigma > EM_SIGMA and m < _EM_REACH * sigma * sigma:
        return compiled_euler_maclaurin(-m, sigma)
    inv = 1.0 / (sigma * sigma)
    return -0.5 * m * m * inv + math.log(_tail_over_first(m, inv)) - log_z


@nb.njit(**_JIT)
def _tail_over_first(m, inv):
    r"""Return the tail from ``m`` over its first term: :math:`\sum_{i \ge 0} e^{-(mi + i^2/2) v}`.

    ``v`` is ``inv``, :math:`1/\sigma^2`; the sum stops at the first term below ``1e-17`` of it.
    """
    total, i = 0.0, 0.0
    while True:
        term = math.exp(-(m * i + 0.5 * i * i) * inv)
        total += term
        if term < _TAIL_STOP * total:
            break
        i += 1.0
    return total


@nb.njit(**_JIT)
def deep_log_cdf(first, sigma, log_z, log_cdf, ratio):
    r"""Fill ``log F(k)`` and ``F(k - 1) / F(k)`` at ``k = -m``, ``m = first + n - 1, ..., first``.

    ``n`` is the vectors' size; entry ``i`` is ``k = -(first + n - 1) + i`` (``first >= 1``).
    The tail from ``m`` over its first term, ``S(m)``, is summed once at the deepest
    ``m`` and then follows :math:`S(m) = 1 + q(m) S(m + 1)`, :math:`q(m) =
    e^{-(2m + 1) / (2\sigma^2)}`, so that :math:`\log F(-m) = -m^2 / (2\sigma^2) + \log S(m)
    - \log Z` and :math:`F(-m - 1) / F(-m) = q(m) S(m + 1) / S(m)`: an ``exp`` and a ``log``
    an entry, where :func:`log_lower_tail` sums up to about :math:`39 \sigma^2 / m` terms
    (hundreds, for a sigma in the hundreds and more, 40 to 200 sigma out). The step
    multiplies the error of ``S(m + 1)`` by ``q < 1``: errors do not grow.
    """
    n = log_cdf.size
    inv = 1.0 / (sigma * sigma)
    after = _tail_over_first(first + n, inv)
    for i in range(n):
        m = first + n - 1 - i
        q = math.exp(-(m + 0.5) * inv)
        tail = 1.0 + q * after
        log_cdf[i] = -0.5 * m * m * inv + math.log(tail) - log_z
        ratio[i] = q * after / tail
        after = tail


@nb.njit(**_JIT)
def compiled_euler_maclaurin(k, sigma):
    r"""``log F(k)`` for ``sigma > 50`` by the midpoint Euler-Maclaurin series.

    With :math:`y = (k + 1/2)/\sigma`,
    :math:`F(k) = \Phi(y) + \varphi(y)[y/(24\sigma^2) - 7(y^3 - 3y)/(5760\sigma^4)
    + 31(y^5 - 10y^3 + 15y)/(967680\sigma^6)]`, whose omitted terms are below
    :math:`10^{-18}` relative in the bulk.
    """
    y = (k + 0.5) / sigma
    s2 = sigma * sigma
    y2 = y * y
    series = (
        y / (24.0 * s2)
        - 7.0 * y * (y2 - 3.0) / (5760.0 * (s2 * s2))
        + 31.0 * y * (y2 * y2 - 10.0 * y2 + 15.0) / (967680.0 * (s2 * s2 * s2))
    )
    log_phi = -0.5 * y2 - _HALF_LOG_2PI
    log_big_phi = log_ndtr(y)
    # F = Phi (1 + series * phi / Phi); the ratio phi / Phi stays finite in the far tail
    return log_big_phi + math.log1p(series * math.exp(log_phi - log_big_phi))


@nb.njit(**_JIT)
def _euler_maclaurin_many(k, sigma):
    out = np.empty(k.size)
    for j in range(k.size):
        out[j] = compiled_euler_maclaurin(k[j], sigma)
    return out


@nb.njit(**_JIT)
def _log_cdf_many(k, sigma, log_z):
    out = np.empty(k.size)
    for j in range(k.size):
        out[j] = compiled_log_cdf(k[j], sigma, log_z)
    return out


def euler_maclaurin_log_cdf(k: ArrayLike, sigma: float) -> np.ndarray:
    """``log F(k)`` for ``sigma > 50`` by the midpoint Euler-Maclaurin series, elementwise."""
    k = np.asarray(k, dtype=float)
    flat = np.ascontiguousarray(k.reshape(-1))
    return _euler_maclaurin_many(flat, float(sigma)).reshape(k.shape)


def discrete_gaussian_log_cdf(x: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    r"""``log P(X <= x)`` for :math:`X \sim N_{\mathbb Z}(0, \sigma^2)`, elementwise.

    Parameters
    ----------
    x : array_like
        Where to evaluate (``P(X <= x) = F(floor(x))``); any real, inf allowed.
    sigma : array_like
        Scales, broadcasting against ``x`` (one per cell); grouped by value.

    Returns
    -------
    numpy.ndarray
        Float log-probabilities of the broadcast shape.

    Notes
    -----
    :func:`compiled_log_cdf` at each distinct ``floor(x)`` of each distinct sigma
    (a batch of counts holds few distinct cuts: each is computed once). It works
    on the tail that keeps its digits: a probability of 1e-300 far in the lower
    tail, one within 1e-17 of 1 far in the upper.
    """
    x = np.asarray(x, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    shape = np.broadcast_shapes(x.shape, sigma.shape)
    x, sigma = np.broadcast_to(x, shape).reshape(-1), np.broadcast_to(sigma, shape).reshape(-1)
    out = np.empty(x.size)
    with np.errstate(invalid="ignore"):
        k = np.floor(x)
    if sigma.size and sigma.min() == sigma.max():
        values, groups = sigma[:1], np.zeros(sigma.size, dtype=np.int64)
    else:
        values, groups = np.unique(sigma, return_inverse=True)
    for g, s in enumerate(values.tolist()):
        at = np.flatnonzero(groups == g) if len(values) > 1 else np.arange(sigma.size)
        distinct, where = np.unique(k[at], return_inverse=True)
        log_z = discrete_gaussian_log_normaliser(s)
        out[at] = _log_cdf_many(np.ascontiguousarray(distinct), s, log_z)[where]
    return out.reshape(shape)
