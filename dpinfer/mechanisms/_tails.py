r"""Log CDFs of the noise laws, accurate in both tails (the terms of suppressed cells).

A thresholded release needs :math:`\log P(X \le x)` for the noise :math:`X` of
each cell, far into either tail: a cell suppressed although its confidential
value is far above the threshold has a probability of 1e-300, and one far below
has a probability within 1e-17 of 1. Each function works on the tail that keeps
its digits: the lower tail directly, the upper one as :math:`\log(1 - S)` with
the survival function :math:`S` from the lower tail by symmetry.

The continuous and discrete Laplace laws have closed forms (written once over an
array namespace ``xp`` in the families, see :func:`laplace_log_cdf`); the
discrete Gaussian one is :func:`discrete_gaussian_log_cdf`.
"""

from __future__ import annotations

import math

import numpy as np

from ._discrete_quantiles import discrete_gaussian_log_cdf as _euler_maclaurin_log_cdf

__all__ = ["discrete_gaussian_log_cdf", "discrete_laplace_log_cdf", "laplace_log_cdf"]

_LOG2 = math.log(2.0)
# Above this sigma, lower tails with m < _EM_REACH sigma^2 use the Euler-Maclaurin
# series of _discrete_quantiles: its terms fall like (m / (2 pi sigma^2))^(2j), so the
# first omitted one is below 1e-15 relative there. Everything else is summed directly.
_EM_SIGMA = 50.0
_EM_REACH = 0.1
# A direct tail sum stops where its terms fall below e^-40 of the first (1e-17 relative).
_TAIL_EXPONENT = 40.0
_CHUNK = 1 << 20  # matrix entries per block of direct sums (8 MB)


def laplace_log_cdf(xp, z):
    """``log P(X <= z)`` for the standard Laplace law, in the namespace ``xp``.

    ``z - log 2`` below 0, ``log1p(-exp(-z) / 2)`` above (evaluated at ``|z|`` in
    both branches so that neither overflows where it is not selected).
    """
    return xp.where(z < 0, z - _LOG2, xp.log1p(-0.5 * xp.exp(-xp.abs(z))))


def discrete_laplace_log_cdf(xp, k, scale, log1p_p):
    r"""``log P(X <= k)`` for ``P(x) = tanh(1/(2t)) exp(-|x|/t)``, integer ``k``.

    With :math:`p = e^{-1/t}`: :math:`F(k) = p^{-k}/(1+p)` for :math:`k < 0` and
    :math:`1 - p^{k+1}/(1+p)` for :math:`k \ge 0` (geometric sums);
    ``log1p_p`` is :math:`\log(1 + p)` per cell.
    """
    lower = k / scale - log1p_p
    upper = xp.log1p(-xp.exp(-(xp.abs(k) + 1) / scale - log1p_p))
    return xp.where(k < 0, lower, upper)


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
    from .discrete import discrete_gaussian_log_normaliser

    out = np.full(m.shape, -np.inf)
    finite = np.isfinite(m)
    use_em = finite & (sigma > _EM_SIGMA) & (m < _EM_REACH * sigma**2)
    out[use_em] = _euler_maclaurin_log_cdf(-m[use_em], sigma)
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
