r"""Compiled sums of a discrete latent against the mechanism densities of its releases.

For one cell, with latent pmf :math:`p(s \mid \theta)` and the log-densities
:math:`\ell_m(s)` of the cell's releases :math:`m = 1, \dots, M` (one release in
the common case, several when a cell is measured more than once), the kernel
returns

.. math:: \log \sum_s t(s), \qquad t(s) = p(s \mid \theta) \prod_m e^{\ell_m(s)},

and the posterior expectations :math:`E[g(s)]` under :math:`t / \sum t` of the
scores :math:`g = \partial \log p(s \mid \theta) / \partial \theta_k`, which are
the gradients of the log-sum (Fisher's identity).

**How the sum is truncated.** Every mechanism term is log-concave in
:math:`s`, and so is every latent family below except the negative binomial
with ``n < 1``. The kernel finds the mode of :math:`t` by bisection on the sign
of :math:`\log t(s+1) - \log t(s)` between the modes of the factors, then adds
terms outward. After adding :math:`t(u)` on the right, the rest is bounded by
the geometric series :math:`t(u) R / (1 - R)`, where :math:`R` bounds every
later ratio :math:`t(s+1)/t(s)`: for a log-concave :math:`t` the ratio just
taken; for the negative binomial with ``n < 1``, the mechanisms' ratio times
the latent's supremum ratio ``1 - p``. The left side is the same mirrored (or
ends at the support). The two sides are walked in turn, each until its bound
is below ``tol / 2`` times the partial sum, which is itself a lower bound of
the total, so the neglected mass is at most ``tol`` relative to the result: the
log-likelihood is within ``tol`` (absolute) of the exact value, wherever the
parameters are.

**The common case.** A Poisson latent whose releases are all published Gaussian
ones (discrete or continuous) is summed by :mod:`._poisson` once the cell's
mode is known from an earlier evaluation (:func:`._sweep.marginal_sweep` keeps
it, with the constants of the releases, in a per-cell state): the same terms
and the same geometric bounds, with fewer operations a term.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

# latent families
POISSON = 0
BINOMIAL_LATENT = 1
NEGATIVE_BINOMIAL = 2
GEOMETRIC = 3
DISCRETE_UNIFORM = 4

# mechanism terms of a cell: a published release, as dpinfer.mechanisms._coordinate (0, 1, 2),
# or a suppressed one, log P(noise <= cut - s) (3 to 6)
LAPLACE = 0
GAUSSIAN = 1
BINOMIAL_RELEASE = 2
LAPLACE_BELOW = 3
GAUSSIAN_BELOW = 4
DISCRETE_LAPLACE_BELOW = 5
DISCRETE_GAUSSIAN_BELOW = 6
# coefficient columns: a, b, c, d, e, f of the term's formula, then the support of s
LOWER, UPPER = 6, 7
_LOG2 = math.log(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

_MAX_TERMS = 100_000_000
# Every function below is compiled with NumPy's error model: a division by zero gives inf or
# NaN (a probability of zero on a boundary), never an exception in the middle of a sum.


@nb.njit(cache=True, error_model="numpy")
def _digamma(x):
    # x > 0: recurrence up to 6, then the asymptotic series
    result = 0.0
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return (
        result
        + math.log(x)
        - 0.5 * inv
        - inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240))))
    )


@nb.njit(cache=True, error_model="numpy")
def _latent_support(family, a, b):
    if family == BINOMIAL_LATENT:
        return 0.0, a
    if family == GEOMETRIC:
        return 1.0, math.inf
    if family == DISCRETE_UNIFORM:
        return a, b
    return 0.0, math.inf


@nb.njit(cache=True, error_model="numpy")
def _latent_valid(family, a, b):
    if family == POISSON:
        return a >= 0.0 and math.isfinite(a)
    if family == BINOMIAL_LATENT:
        return a >= 0.0 and a == np.floor(a) and 0.0 <= b <= 1.0
    if family == NEGATIVE_BINOMIAL:
        return a > 0.0 and math.isfinite(a) and 0.0 < b <= 1.0
    if family == GEOMETRIC:
        return 0.0 < a <= 1.0
    return a <= b and a == np.floor(a) and b == np.floor(b)


@nb.njit(cache=True, error_model="numpy")
def _latent_logp(family, a, b, s):
    if family == POISSON:
        if a == 0.0:
            return 0.0 if s == 0.0 else -math.inf
        return s * math.log(a) - a - math.lgamma(s + 1.0)
    if family == BINOMIAL_LATENT:
        out = math.lgamma(a + 1.0) - math.lgamma(s + 1.0) - math.lgamma(a - s + 1.0)
        if s > 0.0:
            out += s * math.log(b) if b > 0.0 else -math.inf
        if a - s > 0.0:
            out += (a - s) * math.log1p(-b) if b < 1.0 else -math.inf
        return out
    if family == NEGATIVE_BINOMIAL:
        out = math.lgamma(s + a) - math.lgamma(a) - math.lgamma(s + 1.0) + a * math.log(b)
        if s > 0.0:
            out += s * math.log1p(-b) if b < 1.0 else -math.inf
        return out
    if family == GEOMETRIC:
        out = math.log(a)
        if s > 1.0:
            out += (s - 1.0) * math.log1p(-a) if a < 1.0 else -math.inf
        return out
    return -math.log(b - a + 1.0)


@nb.njit(cache=True, error_model="numpy")
def _latent_ratio(family, a, b, s):
    """``p(s + 1) / p(s)`` for s and s + 1 in the support."""
    if family == POISSON:
        return a / (s + 1.0)
    if family == BINOMIAL_LATENT:
        return (a - s) / (s + 1.0) * (b / (1.0 - b)) if b < 1.0 else math.inf
    if family == NEGATIVE_BINOMIAL:
        return (s + a) / (s + 1.0) * (1.0 - b)
    if family == GEOMETRIC:
        return 1.0 - a
    return 1.0


@nb.njit(cache=True, error_model="numpy")
def _latent_mode(family, a, b):
    if family == POISSON:
        return np.floor(a)
    if family == BINOMIAL_LATENT:
        return min(a, np.floor((a + 1.0) * b))
    if family == NEGATIVE_BINOMIAL:
        return max(0.0, np.floor((a - 1.0) * (1.0 - b) / b)) if a > 1.0 else 0.0
    if family == GEOMETRIC:
        return 1.0
    return a


@nb.njit(cache=True, error_model="numpy")
def _log_concave(family, a):
    return not (family == NEGATIVE_BINOMIAL and a < 1.0)


@nb.njit(cache=True, error_model="numpy")
def _log_ndtr(z):
    """``log Phi(z)``, accurate in both tails."""
    if z > 0.0:
        return math.log1p(-0.5 * math.erfc(z / math.sqrt(2.0)))
    if z > -37.0:
        return math.log(0.5 * math.erfc(-z / math.sqrt(2.0)))
    z2 = z * z  # asymptotic series; its first omitted term is below 1e-13 relative here
    series = 1.0 - 1.0 / z2 + 3.0 / z2**2 - 15.0 / z2**3 + 105.0 / z2**4
    return -0.5 * z2 - _HALF_LOG_2PI - math.log(-z) + math.log(series)


@nb.njit(cache=True, error_model="numpy")
def _discrete_gaussian_lower_tail(m, sigma, log_norm):
    """``log P(X <= -m)`` for the discrete Gaussian, ``m >= 1``, by the shifted direct sum."""
    inv = 1.0 / (sigma * sigma)
    total, i = 0.0, 0.0
    while True:
        term = math.exp(-(m * i + 0.5 * i * i) * inv)
        total += term
        if term < 1e-17 * total:
            break
        i += 1.0
    return -0.5 * m * m * inv + math.log(total) - log_norm


@nb.njit(cache=True, error_model="numpy")
def _log_below(kind, k, coef, m, j, table):
    """``log P(X <= k)`` for the noise of a suppressed cell (``k`` real; integer if discrete)."""
    a = coef[m, j, 0]
    # the discrete Gaussian first: tested last, it cost as much as the other kinds' formulas
    if kind == DISCRETE_GAUSSIAN_BELOW:
        # a table of log F(k) on [d, e], 0 above it, a direct sum below it
        if k > coef[m, j, 4]:
            return 0.0
        if k < coef[m, j, 3]:
            return _discrete_gaussian_lower_tail(-k, a, coef[m, j, 2])
        return table[int(coef[m, j, 1] + k - coef[m, j, 3])]
    if kind == LAPLACE_BELOW:
        z = k / a
        return z - _LOG2 if z < 0.0 else math.log1p(-0.5 * math.exp(-z))
    if kind == GAUSSIAN_BELOW:
        return _log_ndtr(k / a)
    # the discrete Laplace
    log1p_p = coef[m, j, 1]
    if k < 0.0:
        return k / a - log1p_p
    return math.log1p(-math.exp(-(k + 1.0) / a - log1p_p))


@nb.njit(cache=True, error_model="numpy")
def _term(kinds, released, coef, table, m, j, s):
    """Log-density (or log-probability of suppression) of release ``m`` of cell ``j`` at ``s``."""
    kind, r = kinds[m, j], released[m, j]
    if kind == LAPLACE:
        return coef[m, j, 2] - abs(r - s) / coef[m, j, 0]
    if kind == GAUSSIAN:  # a = sigma: divided before squaring, as the mechanisms do
        z = (r - s) / coef[m, j, 0]
        return coef[m, j, 2] - (0.5 * z) * z
    if kind == BINOMIAL_RELEASE:
        a, b, c, d = coef[m, j, 0], coef[m, j, 1], coef[m, j, 2], coef[m, j, 3]
        return c + r * math.log(s + a) + b * math.log(d - s)
    return _log_below(kind, r - s, coef, m, j, table)


@nb.njit(cache=True, error_model="numpy")
def _term_log_ratio(kinds, released, coef, table, m, j, s):
    """``term(s + 1) - term(s)``, written to cancel exactly what cancels."""
    kind, r, a = kinds[m, j], released[m, j], coef[m, j, 0]
    if kind == LAPLACE:
        return (abs(r - s) - abs(r - s - 1.0)) / a
    if kind == GAUSSIAN:
        return ((r - s) - 0.5) / a / a
    if kind == BINOMIAL_RELEASE:
        b, d = coef[m, j, 1], coef[m, j, 3]
        return r * math.log1p(1.0 / (s + a)) + b * math.log1p(-1.0 / (d - s))
    upper = _log_below(kind, r - s, coef, m, j, table)
    return _log_below(kind, r - s - 1.0, coef, m, j, table) - upper


@nb.njit(cache=True, error_model="numpy")
def _term_mode(kinds, released, coef, m, j):
    """Where the term peaks in s (suppression terms only fall with s: minus infinity)."""
    kind, r = kinds[m, j], released[m, j]
    if kind == BINOMIAL_RELEASE:
        a, b, d = coef[m, j, 0], coef[m, j, 1], coef[m, j, 3]
        return (r * d - b * a) / (r + b) if r + b > 0 else -a
    if kind >= LAPLACE_BELOW:
        return -math.inf
    return r


@nb.njit(cache=True, error_model="numpy")
def _mechanisms(kinds, released, coef, table, j, s):
    total = 0.0
    for m in range(kinds.shape[0]):
        total += _term(kinds, released, coef, table, m, j, s)
    return total


@nb.njit(cache=True, error_model="numpy")
def _mechanisms_ratio(kinds, released, coef, table, j, s):
    """``prod_m eta_m(s + 1) / eta_m(s)``."""
    total, product = 0.0, 1.0
    for m in range(kinds.shape[0]):
        tabled = _tabled_ratio(kinds, released, coef, table, m, j, s)
        if tabled >= 0.0:
            product *= tabled
        else:
            total += _term_log_ratio(kinds, released, coef, table, m, j, s)
    return product if total == 0.0 else product * math.exp(total)


@nb.njit(cache=True, error_model="numpy")
def _tabled_ratio(kinds, released, coef, table, m, j, s):
    """``eta_m(s + 1) / eta_m(s)`` of a suppressed discrete Gaussian release, from its table.

    ``F(k - 1) / F(k)`` at ``k = cut - s``, stored after the log-CDF table
    (:func:`._cells._log_cdf_tables`); -1 for any other release, or ``k`` outside the table.
    """
    if kinds[m, j] != DISCRETE_GAUSSIAN_BELOW:
        return -1.0
    ratios, low, high = _ratios_at(coef, m, j), coef[m, j, 3], coef[m, j, 4]
    return _table_ratio(table, ratios, low, high, released[m, j] - s)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _table_ratio(table, ratios, low, high, k):
    """``F(k - 1) / F(k)`` from the ratio table whose ``k = 0`` is at ``ratios``; -1 off it."""
    return table[int(ratios + k)] if low <= k <= high else -1.0


@nb.njit(cache=True, error_model="numpy")
def _ratios_at(coef, m, j):
    """Where ``F(k - 1) / F(k)`` at ``k = 0`` would sit in the table (after the log-CDF table)."""
    low, high = coef[m, j, 3], coef[m, j, 4]
    return coef[m, j, 1] + (high - low + 1.0) - low


@nb.njit(cache=True, error_model="numpy")
def _gaussian_ratio(kinds, released, coef, j):
    """Return ``(A, B)``: ``prod_m eta_m(s + 1) / eta_m(s) = exp(A - B s)``, or NaNs.

    Only when every release of the cell is a published Gaussian one (continuous or discrete).
    """
    big_a, big_b = 0.0, 0.0
    for m in range(kinds.shape[0]):
        if kinds[m, j] != GAUSSIAN:
            return math.nan, math.nan
        big_a += (released[m, j] - 0.5) / coef[m, j, 0] / coef[m, j, 0]
        big_b += 1.0 / coef[m, j, 0] / coef[m, j, 0]
    return big_a, big_b


@nb.njit(cache=True, error_model="numpy")
def _support(family, a, b, coef, j):
    # the latent's support within every release's support
    lo, hi = _latent_support(family, a, b)
    for m in range(coef.shape[0]):
        lo = max(lo, np.ceil(coef[m, j, LOWER]))
        hi = min(hi, np.floor(coef[m, j, UPPER]))
    return lo, hi


@nb.njit(cache=True, error_model="numpy")
def _rising(family, a, b, kinds, released, coef, table, j, s, gauss_a, gauss_b):
    """Whether ``t(s + 1) > t(s)`` (through ``exp(A - B s)`` when the releases are Gaussian)."""
    if math.isfinite(gauss_a):
        mech = math.exp(gauss_a - gauss_b * s)
    else:
        mech = _mechanisms_ratio(kinds, released, coef, table, j, s)
    return _latent_ratio(family, a, b, s) * mech > 1.0


@nb.njit(cache=True, error_model="numpy")
def _find_mode(family, a, b, kinds, released, coef, table, j, lo, hi, hint, gauss_a, gauss_b):
    """Return the first s in [lo, hi] where t stops rising (walk from ``hint``, else bisect).

    For a log-concave t both give the same s (its first maximum); the walk is
    the fast path when consecutive calls move the parameters a little.
    """
    if _log_concave(family, a) and lo <= hint <= hi:
        s = hint
        for _ in range(8):
            if s < hi and _rising(
                family, a, b, kinds, released, coef, table, j, s, gauss_a, gauss_b
            ):
                s += 1.0
            elif s > lo and not _rising(
                family, a, b, kinds, released, coef, table, j, s - 1.0, gauss_a, gauss_b
            ):
                s -= 1.0
            else:
                return s
    left = _latent_mode(family, a, b)
    right = left
    for m in range(kinds.shape[0]):
        mode = _term_mode(kinds, released, coef, m, j)
        left = min(left, np.floor(mode))
        right = max(right, np.ceil(mode))
    left = min(max(left, lo), hi)
    right = min(max(right, lo), hi)
    while left < right:
        mid = np.floor(0.5 * (left + right))
        if _rising(family, a, b, kinds, released, coef, table, j, mid, gauss_a, gauss_b):
            left = mid + 1.0
        else:
            right = mid
    return left


@nb.njit(cache=True, error_model="numpy")
def _walk_gaussian(family, a, b, lo, hi, hint, gauss_a, gauss_b, step):
    """Walk from the hint as :func:`_find_mode` does, for Gaussian releases: one ``exp``.

    Returns ``(mode, exp(A - B mode))``, or NaNs when the walk does not end within 8 steps.
    """
    s, ratio = hint, math.exp(gauss_a - gauss_b * hint)
    for _ in range(8):
        if s < hi and _latent_ratio(family, a, b, s) * ratio > 1.0:
            s += 1.0
            ratio *= step
        elif s > lo and not _latent_ratio(family, a, b, s - 1.0) * (ratio / step) > 1.0:
            s -= 1.0
            ratio /= step
        else:
            return s, ratio
    return math.nan, math.nan


@nb.njit(cache=True, error_model="numpy")
def _bound(w, ratio):
    """Bound of the geometric tail ``w (ratio + ratio^2 + ...)``."""
    return w * ratio / (1.0 - ratio) if ratio < 1.0 else math.inf


@nb.njit(cache=True, error_model="numpy")
def _cell(family, a, b, kinds, released, coef, table, j, tol, hint, out):
    """Sum cell j: out = (log-likelihood, E[s], E[digamma(s + a)], terms, mode)."""
    out[1], out[2], out[3], out[4] = 0.0, 0.0, 0.0, hint
    if not _latent_valid(family, a, b):
        out[0] = -math.inf
        return
    lo, hi = _support(family, a, b, coef, j)
    if lo > hi:
        out[0] = -math.inf
        return
    gauss_a, gauss_b = _gaussian_ratio(kinds, released, coef, j)
    step = math.exp(-gauss_b)
    mode, up = math.nan, math.nan
    if math.isfinite(gauss_a) and _log_concave(family, a) and lo <= hint <= hi:
        mode, up = _walk_gaussian(family, a, b, lo, hi, hint, gauss_a, gauss_b, step)
    if math.isnan(mode):
        mode = _find_mode(
            family, a, b, kinds, released, coef, table, j, lo, hi, hint, gauss_a, gauss_b
        )
        up = math.exp(gauss_a - gauss_b * mode)
    out[4] = mode
    log_peak = _latent_logp(family, a, b, mode) + _mechanisms(
        kinds, released, coef, table, j, mode
    )
    out[3] = 1.0
    if not math.isfinite(log_peak):
        out[0] = log_peak
        return
    concave = _log_concave(family, a)
    negbin = family == NEGATIVE_BINOMIAL
    psi_mode = _digamma(mode + a) if negbin else 0.0
    # each side keeps its own sums, so that the two walks are independent chains of work
    total_r, sum_s_r, sum_psi_r = 1.0, mode, psi_mode
    total_l, sum_s_l, sum_psi_l = 0.0, 0.0, 0.0
    # Gaussian releases only: the mechanisms' ratio is exp(A - B s), updated by a product
    down = step / up  # exp(B (mode - 1) - A)
    fast = math.isfinite(gauss_a) and 0.0 < up < math.inf and 0.0 < down < math.inf
    # right: t(s + 1) = t(s) ratio(s); left: t(s - 1) = t(s) back(s), back(s) = 1 / ratio(s - 1)
    s, w, psi = mode, 1.0, psi_mode
    bound_right = 0.0 if s >= hi else math.inf
    s_left, w_left, psi_left = mode, 1.0, psi_mode
    bound_left = 0.0 if s_left <= lo else math.inf
    count = 1
    half = 0.5 * tol
    # one suppressed discrete Gaussian release (Wikimedia's tables): its ratios are read here,
    # with the table's place found once (through _mechanisms_ratio a term cost 40 ns, here 7)
    cut, low, high, ratios = 0.0, 0.0, -1.0, 0.0  # an empty range: no table
    if kinds.shape[0] == 1 and kinds[0, j] == DISCRETE_GAUSSIAN_BELOW:
        cut, low, high = released[0, j], coef[0, j, 3], coef[0, j, 4]
        ratios = _ratios_at(coef, 0, j)
    while count < _MAX_TERMS:
        small = half * (total_r + total_l)
        right, left = bound_right > small, bound_left > small
        if not (right or left):
            break
        if right:
            if fast:
                mech = up
                up *= step
            else:
                mech = _table_ratio(table, ratios, low, high, cut - s)
                if mech < 0.0:
                    mech = _mechanisms_ratio(kinds, released, coef, table, j, s)
            ratio = _latent_ratio(family, a, b, s) * mech
            if negbin:
                psi += 1.0 / (s + a)
            s += 1.0
            w *= ratio
            total_r += w
            sum_s_r += w * s
            sum_psi_r += w * psi
            later = ratio if concave else mech * (1.0 - b)
            bound_right = 0.0 if (s >= hi or w == 0.0) else _bound(w, later)
            count += 1
        if left:
            if fast:
                mech_back = down
                down *= step
            else:
                mech_back = _table_ratio(table, ratios, low, high, cut - s_left + 1.0)
                if mech_back < 0.0:
                    mech_back = _mechanisms_ratio(kinds, released, coef, table, j, s_left - 1.0)
                mech_back = 1.0 / mech_back
            back = mech_back / _latent_ratio(family, a, b, s_left - 1.0)
            s_left -= 1.0
            if negbin:
                psi_left -= 1.0 / (s_left + a)
            w_left *= back
            total_l += w_left
            sum_s_l += w_left * s_left
            sum_psi_l += w_left * psi_left
            later = back if concave else math.inf
            bound_left = 0.0 if (s_left <= lo or w_left == 0.0) else _bound(w_left, later)
            count += 1
    out[3] = count
    if count >= _MAX_TERMS:
        out[0] = math.nan
        return
    total = total_r + total_l
    out[0] = log_peak + math.log(total)
    out[1] = (sum_s_r + sum_s_l) / total
    out[2] = (sum_psi_r + sum_psi_l) / total


@nb.njit(cache=True, error_model="numpy")
def _scores(family, a, b, mean_s, mean_psi):
    if family == POISSON:
        return mean_s / a - 1.0, 0.0
    if family == BINOMIAL_LATENT:
        return 0.0, mean_s / b - (a - mean_s) / (1.0 - b)
    if family == NEGATIVE_BINOMIAL:
        return mean_psi - _digamma(a) + math.log(b), a / b - mean_s / (1.0 - b)
    if family == GEOMETRIC:
        return 1.0 / a - (mean_s - 1.0) / (1.0 - a), 0.0
    return 0.0, 0.0
