r"""Log CDFs of the noise laws, accurate in both tails (the terms of suppressed cells).

A thresholded release needs :math:`\log P(X \le x)` for the noise :math:`X` of
each cell, far into either tail: a cell suppressed although its confidential
value is far above the threshold has a probability of 1e-300, and one far below
has a probability within 1e-17 of 1. Each function works on the tail that keeps
its digits: the lower tail directly, the upper one as :math:`\log(1 - S)` with
the survival function :math:`S` from the lower tail by symmetry.

The continuous and discrete Laplace laws have closed forms (written once over an
array namespace ``xp`` in the families, see :func:`laplace_log_cdf`); the
discrete Gaussian one is :func:`dpinfer.noise.discrete_gaussian.discrete_gaussian_log_cdf`.
"""

from __future__ import annotations

import math

__all__ = ["discrete_laplace_log_cdf", "laplace_log_cdf"]

_LOG2 = math.log(2.0)


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
