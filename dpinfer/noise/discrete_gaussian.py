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

import numpy as np
from scipy.special import log_ndtr, logsumexp

from .._numbers import INTEGER_SCALE_MAX, check_range

__all__ = [
    "SIGMA_MIN",
    "check_sigma",
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
# A direct tail sum stops where its terms fall below e^-40 of the first (1e-17 relative).
_TAIL_EXPONENT = 40.0
_CHUNK = 1 << 20  # matrix entries per block of direct sums (8 MB)


def check_sigma(sigma: float) -> float:
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

    Summing the pmf over the tail up to 40 sigma beyond 0 or ``x``; above
    sigma = 1e4, ``F(-floor(x) - 1)`` by the Euler-Maclaurin CDF (symmetry).
    """
    if not math.isfinite(x):
        return 0.0 if x > 0 else 1.0
    if sigma > _DIRECT_SIGMA:
        return float(np.exp(euler_maclaurin_log_cdf(-math.floor(x) - 1.0, sigma)))
    start = math.floor(x) + 1
    stop = max(start, 0) + math.ceil(40 * sigma) + 50
    z = np.arange(start, stop, dtype=float) / sigma
    with np.errstate(over="ignore"):
        log_terms = -(0.5 * z) * z - discrete_gaussian_log_normaliser(sigma)
    return float(np.exp(logsumexp(log_terms))) if z.size else 0.0


def euler_maclaurin_log_cdf(k, sigma: float) -> np.ndarray:
    """``log F(k)`` for ``sigma > 50`` by the midpoint Euler-Maclaurin series."""
    y = (np.asarray(k, dtype=float) + 0.5) / sigma
    s2 = sigma**2
    y2 = y * y
    series = (
        y / (24 * s2)
        - 7 * y * (y2 - 3) / (5760 * s2**2)
        + 31 * y * (y2 * y2 - 10 * y2 + 15) / (967680 * s2**3)
    )
    log_phi = -0.5 * y2 - 0.5 * math.log(2 * math.pi)
    log_big_phi = log_ndtr(y)
    # F = Phi (1 + series * phi / Phi); the ratio phi / Phi stays finite in the far tail
    return log_big_phi + np.log1p(series * np.exp(log_phi - log_big_phi))


def discrete_gaussian_log_cdf(x, sigma) -> np.ndarray:
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
    For :math:`k = \lfloor x \rfloor < 0` the lower tail
    :math:`T(m) = \sum_{j \ge m} e^{-j^2/(2\sigma^2)}`, :math:`m = -k`, is
    :math:`e^{-m^2/(2\sigma^2)} \sum_{i \ge 0} e^{-(m i + i^2/2)/\sigma^2}`, a sum of
    terms at most 1 that is cut where they fall below :math:`e^{-40}` (at most
    about :math:`9\sigma` terms, and few far out); above :math:`\sigma = 50` the
    part :math:`m < 0.1\sigma^2` uses the midpoint Euler-Maclaurin series instead.
    For :math:`k \ge 0`, :math:`\log F(k) = \log(1 - T(k+1)/Z)`.
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
        # a batch of counts holds few distinct cuts: each is computed once
        distinct, where = np.unique(k[at], return_inverse=True)
        out[at] = _log_cdf_one_sigma(distinct, s)[where]
    return out.reshape(shape)


def _log_cdf_one_sigma(k: np.ndarray, sigma: float) -> np.ndarray:
    lower = k < 0
    # the lower tail at m = -k below 0, the survival function's S(k) = F(-k-1) above
    log_tail = _log_lower_tail(np.where(lower, -k, k + 1), sigma)
    with np.errstate(divide="ignore"):
        upper = np.log1p(-np.exp(log_tail))
    return np.where(lower, log_tail, upper)


def _log_lower_tail(m: np.ndarray, sigma: float) -> np.ndarray:
    """``log P(X <= -m)`` for ``m >= 1`` (inf where ``m`` is inf: probability 0)."""
    out = np.full(m.shape, -np.inf)
    finite = np.isfinite(m)
    use_em = finite & (sigma > EM_SIGMA) & (m < _EM_REACH * sigma**2)
    out[use_em] = euler_maclaurin_log_cdf(-m[use_em], sigma)
    direct = np.flatnonzero(finite & ~use_em)
    if direct.size:
        log_z = discrete_gaussian_log_normaliser(sigma)
        out[direct] = _log_direct_tail(m[direct], sigma) - log_z
    return out


def _log_direct_tail(m: np.ndarray, sigma: float) -> np.ndarray:
    """``log sum_{j >= m} exp(-j^2 / (2 sigma^2))`` by the shifted sum of terms <= 1.

    Values are bucketed by the number of terms they need, so that far-tail
    values (a handful of terms) do not pay for the ones near the bulk.
    """
    a = m / sigma**2
    b = 0.5 / sigma**2
    # smallest n with a n + b n^2 >= 40: the terms from n on are below e^-40
    need = np.ceil((-a + np.sqrt(a * a + 4 * b * _TAIL_EXPONENT)) / (2 * b)) + 1
    out = np.empty(m.shape)
    bounds = [0, 8, 32, 128, 512, np.inf]
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        at = np.flatnonzero((need > lo) & (need <= hi))
        if at.size == 0:
            continue
        n_terms = int(min(need[at].max(), 20.0 * sigma + 64))
        i = np.arange(n_terms, dtype=float)
        step = max(1, _CHUNK // n_terms)
        for start in range(0, at.size, step):
            idx = at[start : start + step]
            terms = np.exp(-np.outer(a[idx], i) - b * i * i)
            out[idx] = np.log(terms.sum(axis=1))
    return out - 0.5 * (m / sigma) ** 2
