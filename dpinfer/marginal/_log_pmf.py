r"""Log-pmfs of the counting families, accurate to the last digits whatever their size.

The textbook :math:`\log p(s) = s \log\lambda - \lambda - \log s!` of a Poisson
subtracts numbers of the size :math:`\lambda \log \lambda` to leave one of the
size :math:`\log\lambda`: at :math:`\lambda = 10^{12}` its rounding error is
:math:`10^{-4}`, at :math:`10^{15}` several units. Loader's saddle-point forms
(Loader 2000, as in R's ``dpois_raw`` and ``dbinom_raw``) write the same
numbers with the cancellation done exactly:

.. math:: \log p(s) = -\tfrac12 \log(2\pi s) - \delta(s) - D(s, \lambda),

with :math:`\delta(n) = \log n! - \log(\sqrt{2\pi n}\,(n/e)^n)` (Stirling's
error, a table or its series) and :math:`D(x, m) = x \log(x/m) + m - x`
(a series in :math:`(x - m)/(x + m)` where :math:`x` is near :math:`m`). The
binomial and negative binomial are written the same way; all three are within
a few units in the last place of the exact value for every count below
``2**53``. Below :data:`TEXTBOOK` (counts and means of at most a thousand) the
textbook forms are used: their terms are then below 10^4, so their rounding
error stays below 10^-11, and they cost a logarithm less.

References
----------
.. [1] Loader, C. (2000). Fast and accurate computation of binomial
   probabilities. Technical report.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

__all__ = [
    "bd0",
    "binomial_log_pmf",
    "negative_binomial_log_pmf",
    "poisson_log_pmf",
    "poisson_log_shape",
    "stirling_error",
]

_JIT = {"cache": True, "error_model": "numpy"}
#: Below this count (and mean), the textbook log-pmfs: rounding error below 1e-11.
TEXTBOOK = 1000.0
_LN_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LN_2PI = math.log(2.0 * math.pi)
# Stirling's error at n = 0, 1/2, 1, ..., 15 (exact values of lgamma, as R's sferr_halves)
_STIRLING_HALVES = np.array(
    [
        0.0,
        0.1534264097200273452913848,
        0.0810614667953272582196702,
        0.0548141210519176538961390,
        0.0413406959554092940938221,
        0.03316287351993628748511048,
        0.02767792568499833914878929,
        0.02374616365629749597132920,
        0.02079067210376509311152277,
        0.01848845053267318523077934,
        0.01664469118982119216319487,
        0.01513497322191737887351255,
        0.01387612882307074799874573,
        0.01281046524292022692424986,
        0.01189670994589177009505572,
        0.01110455975820691732662991,
        0.010411265261972096497478567,
        0.009799416126158803298389475,
        0.009255462182712732917728637,
        0.008768700134139385462952823,
        0.008330563433362871256469318,
        0.007934114564314020547248100,
        0.007573675487951840794972024,
        0.007244554301320383179543912,
        0.006942840107209529865664152,
        0.006665247032707682442354394,
        0.006408994188004207068439631,
        0.006171712263039457647532867,
        0.005951370112758847735624416,
        0.005746216513010115682023589,
        0.005554733551962801371038690,
    ]
)
_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188


@nb.njit(**_JIT)
def stirling_error(n):
    """``log n! - log(sqrt(2 pi n) (n / e)^n)`` for ``n > 0`` (Stirling's error)."""
    if n <= 15.0:
        twice = n + n
        if twice == np.floor(twice):
            return _STIRLING_HALVES[int(twice)]
        return math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - _LN_SQRT_2PI
    nn = n * n
    if n > 500.0:
        return (_S0 - _S1 / nn) / n
    if n > 80.0:
        return (_S0 - (_S1 - _S2 / nn) / nn) / n
    if n > 35.0:
        return (_S0 - (_S1 - (_S2 - _S3 / nn) / nn) / nn) / n
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / n


@nb.njit(**_JIT)
def bd0(x, m):
    """``x log(x / m) + m - x``, without cancellation where ``x`` is near ``m`` (``x, m > 0``)."""
    if abs(x - m) < 0.1 * (x + m):
        v = (x - m) / (x + m)
        total = (x - m) * v
        term = 2.0 * x * v
        v2 = v * v
        j = 1.0
        while j < 1000.0:
            term *= v2
            step = total + term / (2.0 * j + 1.0)
            if step == total:
                return step
            total = step
            j += 1.0
        return total
    return x * math.log(x / m) + m - x


@nb.njit(**_JIT)
def poisson_log_pmf(s, lam):
    """``log P(S = s)`` for ``S ~ Poisson(lam)``, integer ``s >= 0``, ``lam >= 0``."""
    if lam == 0.0:
        return 0.0 if s == 0.0 else -math.inf
    if s < TEXTBOOK:
        return s * math.log(lam) - lam - math.lgamma(s + 1.0)
    return poisson_log_shape(s) - bd0(s, lam)


@nb.njit(**_JIT)
def _negative_log_factorials(count):
    """``-log s!`` for ``s = 0, ..., count - 1``, by the compiled ``lgamma`` (libm's)."""
    out = np.empty(count)
    for s in range(count):
        out[s] = -math.lgamma(s + 1.0)
    return out


# read from a table: a mode's move (._poisson) took about a tenth of its time in lgamma
_NEGATIVE_LOG_FACTORIALS = _negative_log_factorials(int(TEXTBOOK))


@nb.njit(**_JIT)
def poisson_log_shape(s):
    """Return the part of :func:`poisson_log_pmf` that depends on ``s`` alone (integer s >= 0).

    ``-log s!`` below :data:`TEXTBOOK`, where the rest is ``s log(lam) - lam``;
    ``-log(2 pi s) / 2 - delta(s)`` above, where the rest is ``-D(s, lam)``.
    """
    if s < TEXTBOOK:
        return _NEGATIVE_LOG_FACTORIALS[int(s)] if s >= 0.0 else -math.lgamma(s + 1.0)
    return -_LN_SQRT_2PI - 0.5 * math.log(s) - stirling_error(s)


@nb.njit(**_JIT)
def binomial_log_pmf(s, n, p, q):
    """``log P(S = s)`` for ``S ~ Binomial(n, p)``, ``q = 1 - p`` given, ``0 <= s <= n``."""
    if n < TEXTBOOK:
        out = math.lgamma(n + 1.0) - math.lgamma(s + 1.0) - math.lgamma(n - s + 1.0)
        if s > 0.0:
            out += s * math.log(p) if p > 0.0 else -math.inf
        if n - s > 0.0:
            out += (n - s) * math.log1p(-p) if p < 1.0 else -math.inf
        return out
    if p == 0.0:
        return 0.0 if s == 0.0 else -math.inf
    if q == 0.0:
        return 0.0 if s == n else -math.inf
    if s == 0.0:
        return -bd0(n, n * q) - n * p if p < 0.1 else n * math.log(q)
    if s == n:
        return -bd0(n, n * p) - n * q if q < 0.1 else n * math.log(p)
    if s < 0.0 or s > n:
        return -math.inf
    lc = (
        stirling_error(n)
        - stirling_error(s)
        - stirling_error(n - s)
        - bd0(s, n * p)
        - bd0(n - s, n * q)
    )
    lf = _LN_2PI + math.log(s) + math.log1p(-s / n)
    return lc - 0.5 * lf


@nb.njit(**_JIT)
def negative_binomial_log_pmf(s, n, p):
    """``log P(S = s)``: ``s`` failures before the ``n``-th success, success probability ``p``.

    Above :data:`TEXTBOOK`, ``n / (n + s)`` times the binomial probability of ``n``
    successes in ``n + s`` trials (as R's ``dnbinom``); for ``s`` tiny next to
    ``n``, two terms of its expansion in ``s / n`` instead.
    """
    if s + n < TEXTBOOK:
        out = math.lgamma(s + n) - math.lgamma(n) - math.lgamma(s + 1.0) + n * math.log(p)
        if s > 0.0:
            out += s * math.log1p(-p) if p < 1.0 else -math.inf
        return out
    if s < 1e-10 * n:
        # lgamma(s + n) - lgamma(n) to second order in s / n
        return (
            n * math.log(p)
            + s * (math.log(n) + math.log1p(-p))
            - math.lgamma(s + 1.0)
            + math.log1p(s * (s - 1.0) / (2.0 * n))
        )
    return math.log(n / (n + s)) + binomial_log_pmf(n, n + s, p, 1.0 - p)
