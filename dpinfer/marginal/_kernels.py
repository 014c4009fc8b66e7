r"""Compiled sums of a discrete latent against the mechanism densities of its releases.

For one cell, with latent pmf :math:`p(s \mid \theta)` and the log-densities
:math:`\ell_m(s)` of the cell's releases :math:`m = 1, \dots, M` (one release in
the common case, several when a cell is measured more than once), the kernel
returns

.. math:: \log \sum_s t(s), \qquad t(s) = p(s \mid \theta) \prod_m e^{\ell_m(s)},

and the posterior expectations :math:`E[g(s)]` under :math:`t / \sum t` of the
scores :math:`g = \partial \log p(s \mid \theta) / \partial \theta_k`, which are
the gradients of the log-sum (Fisher's identity).

**The family.** The latent family is a record of :mod:`._families`; the kernel
is compiled once per family, its members resolved while it compiles
(:mod:`._dispatch`), so no loop branches on the family.

**How the sum is truncated.** Every mechanism term is log-concave in :math:`s`, and so
is every latent family of :mod:`._families` except the negative binomial with ``n < 1``
(a record says so in ``log_concave``). The kernel finds the mode of :math:`t` by
bisection on the sign of :math:`\log t(s+1) - \log t(s)` between the modes of the
factors, then adds terms outward. After adding :math:`t(u)` on the right, the rest is
bounded by the geometric series :math:`t(u) R / (1 - R)`, where :math:`R` bounds every
later ratio :math:`t(s+1)/t(s)`: for a log-concave :math:`t` the ratio just taken; for a
pmf that is not log-concave, the mechanisms' ratio times the latent's supremum ratio
(``ratio_bound``: ``1 - p`` for the negative binomial). The left side is the same
mirrored (or ends at the support). The two sides are walked in turn, each until its
bound is below ``tol / 2`` times the partial sum, which is itself a lower bound of the
total, so the neglected mass is at most ``tol`` relative to the result: the
log-likelihood is within ``tol`` (absolute) of the exact value, wherever the parameters
are.
The windows stay within ``+-(2**53 - 1)``, where float64 counts in steps of one; a cell
whose sum would need to go beyond (a latent mean or a release near ``2**53``) is
reported, not summed approximately.

**The common case.** A Poisson latent whose releases are all published Gaussian
ones (discrete or continuous) is summed by :mod:`._poisson` once the cell's
mode is known from an earlier evaluation (:func:`._sweep.marginal_sweep` keeps
it, with the constants of the releases, in a per-cell state): the same terms
and the same geometric bounds, with fewer operations a term; such a cell wider
than :data:`._fourier.WIDE` counts is a contour integral of its Fourier transform,
ten nodes whatever its width (:mod:`._fourier`). So is a Poisson cell with one
suppressed discrete Gaussian release summed by :mod:`._suppressed`.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..noise.form import released_at, size
from ..noise.terms import (
    gaussian_line,
    log_ratio,
    published_term,
    ratio_table,
    support,
    table_ratio,
    tabled_ratio,
    term,
)
from ..noise.terms import mode as term_mode
from . import _dispatch as latent

_MAX_TERMS = 100_000_000
#: The sums count in steps of one in float64, exact for |s| <= 2**53: every window stays
#: within +-(2**53 - 1), where s + 1 and s - 1 are the next integers. A cell whose sum would
#: need more reports BEYOND as its term count (and NaN).
COUNTABLE = 2.0**53 - 1.0
BEYOND = -1
# Every function below is compiled with NumPy's error model: a division by zero gives inf or
# NaN (a probability of zero on a boundary), never an exception in the middle of a sum.


@nb.njit(cache=True, error_model="numpy")
def _mechanisms(form, table, n, j, s):
    """``sum_m log eta_m(s)`` over the releases of cell ``j`` (release ``m`` at ``m n + j``)."""
    total = 0.0
    for m in range(size(form) // n):
        total += term(form, table, m * n + j, s)
    return total


@nb.njit(cache=True, error_model="numpy")
def _mechanisms_ratio(form, table, n, j, s):
    """``prod_m eta_m(s + 1) / eta_m(s)``."""
    total, product = 0.0, 1.0
    for m in range(size(form) // n):
        i = m * n + j
        tabled = tabled_ratio(form, table, i, s)
        if tabled >= 0.0:
            product *= tabled
        else:
            total += log_ratio(form, table, i, s)
    return product if total == 0.0 else product * math.exp(total)


@nb.njit(cache=True, error_model="numpy")
def _gaussian_ratio(form, n, j):
    """Return ``(A, B)``: ``prod_m eta_m(s + 1) / eta_m(s) = exp(A - B s)``, or NaNs.

    Only when every release of the cell is a published Gaussian one (continuous or discrete).
    """
    big_a, big_b = 0.0, 0.0
    for m in range(size(form) // n):
        line_a, line_b = gaussian_line(form, m * n + j)
        if math.isnan(line_a):
            return math.nan, math.nan
        big_a += line_a
        big_b += line_b
    return big_a, big_b


# inlined (into ._poisson._at): see the note there
@nb.njit(cache=True, error_model="numpy", inline="always")
def _gaussian_terms(form, n, j, s):
    """Return ``(A, B, sum_m log eta_m(s))``: :func:`_gaussian_ratio` and :func:`_mechanisms`.

    In one pass over the releases, for a cell whose releases are all published Gaussian
    ones (:mod:`._poisson`'s cells, each time their mode moves). The same numbers as the
    two calls, which read each release's record twice and go through :func:`term`'s
    branches (about four times the time).
    """
    big_a, big_b, total = 0.0, 0.0, 0.0
    for m in range(size(form) // n):
        line_a, line_b = gaussian_line(form, m * n + j)
        big_a += line_a
        big_b += line_b
        total += published_term(form, m * n + j, s)
    return big_a, big_b, total


@nb.njit(cache=True, error_model="numpy")
def _support(family, a, b, form, n, j):
    # the latent's support within every release's support, and within +-COUNTABLE
    lo, hi = latent.support(family, a, b)
    lo, hi = max(lo, -COUNTABLE), min(hi, COUNTABLE)
    for m in range(size(form) // n):
        lower, upper = support(form, m * n + j)
        lo = max(lo, np.ceil(lower))
        hi = min(hi, np.floor(upper))
    return lo, hi


@nb.njit(cache=True, error_model="numpy")
def _rising(family, a, b, form, table, n, j, s, gauss_a, gauss_b):
    """Whether ``t(s + 1) > t(s)`` (through ``exp(A - B s)`` when the releases are Gaussian)."""
    if math.isfinite(gauss_a):
        mech = math.exp(gauss_a - gauss_b * s)
    else:
        mech = _mechanisms_ratio(form, table, n, j, s)
    return latent.ratio(family, a, b, s) * mech > 1.0


@nb.njit(cache=True, error_model="numpy")
def _find_mode(family, a, b, form, table, n, j, lo, hi, hint, gauss_a, gauss_b):
    """Return the first s in [lo, hi] where t stops rising (walk from ``hint``, else bisect).

    For a log-concave t both give the same s (its first maximum); the walk is
    the fast path when consecutive calls move the parameters a little.
    """
    if latent.log_concave(family, a, b) and lo <= hint <= hi:
        s = hint
        for _ in range(8):
            if s < hi and _rising(family, a, b, form, table, n, j, s, gauss_a, gauss_b):
                s += 1.0
            elif s > lo and not _rising(
                family, a, b, form, table, n, j, s - 1.0, gauss_a, gauss_b
            ):
                s -= 1.0
            else:
                return s
    left = latent.mode(family, a, b)
    right = left
    for m in range(size(form) // n):
        peak = term_mode(form, m * n + j)
        left = min(left, np.floor(peak))
        right = max(right, np.ceil(peak))
    left = min(max(left, lo), hi)
    right = min(max(right, lo), hi)
    while left < right:
        mid = left + np.floor(0.5 * (right - left))  # in [left, right): never stalls
        if _rising(family, a, b, form, table, n, j, mid, gauss_a, gauss_b):
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
        if s < hi and latent.ratio(family, a, b, s) * ratio > 1.0:
            s += 1.0
            ratio *= step
        elif s > lo and not latent.ratio(family, a, b, s - 1.0) * (ratio / step) > 1.0:
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
def _beyond(family, a, b, form, table, n, j, s, w, s_left, w_left, small):
    """Whether a walk stopped at +-COUNTABLE leaves more than ``small`` beyond it."""
    concave = latent.log_concave(family, a, b)
    if s >= COUNTABLE and w > 0.0:
        mech = _mechanisms_ratio(form, table, n, j, s)
        ratio = latent.ratio(family, a, b, s) * mech
        later = ratio if concave else mech * latent.ratio_bound(family, a, b)
        if _bound(w, later) > small:
            return True
    if s_left <= -COUNTABLE and w_left > 0.0:
        back = 1.0 / (_mechanisms_ratio(form, table, n, j, s_left - 1.0))
        later = back / latent.ratio(family, a, b, s_left - 1.0) if concave else math.inf
        if _bound(w_left, later) > small:
            return True
    return False


@nb.njit(cache=True, error_model="numpy")
def _cell(family, a, b, form, table, n, j, tol, hint, out):
    """Sum cell j: out = (log-likelihood, E[s], E[t(s)], terms, mode)."""
    out[1], out[2], out[3], out[4] = 0.0, 0.0, 0.0, hint
    if not latent.valid(family, a, b):
        out[0] = -math.inf
        return
    lo, hi = _support(family, a, b, form, n, j)
    if lo > hi:
        out[0] = -math.inf
        return
    gauss_a, gauss_b = _gaussian_ratio(form, n, j)
    step = math.exp(-gauss_b)
    mode, up = math.nan, math.nan
    if math.isfinite(gauss_a) and latent.log_concave(family, a, b) and lo <= hint <= hi:
        mode, up = _walk_gaussian(family, a, b, lo, hi, hint, gauss_a, gauss_b, step)
    if math.isnan(mode):
        mode = _find_mode(family, a, b, form, table, n, j, lo, hi, hint, gauss_a, gauss_b)
        up = math.exp(gauss_a - gauss_b * mode)
    out[4] = mode
    log_peak = latent.log_pmf(family, a, b, mode) + _mechanisms(form, table, n, j, mode)
    out[3] = 1.0
    if not math.isfinite(log_peak):
        out[0] = log_peak
        return
    concave = latent.log_concave(family, a, b)
    with_t = latent.has_statistic(family)
    psi_mode = latent.statistic(family, a, b, mode) if with_t else 0.0
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
    if size(form) == n:
        ratios, low, high = ratio_table(form, j)
        cut = released_at(form, j)
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
                mech = table_ratio(table, ratios, low, high, cut - s)
                if mech < 0.0:
                    mech = _mechanisms_ratio(form, table, n, j, s)
            ratio = latent.ratio(family, a, b, s) * mech
            if with_t:
                psi += latent.statistic_step(family, a, b, s)
            s += 1.0
            w *= ratio
            total_r += w
            sum_s_r += w * s
            sum_psi_r += w * psi
            later = ratio if concave else mech * latent.ratio_bound(family, a, b)
            bound_right = 0.0 if (s >= hi or w == 0.0) else _bound(w, later)
            count += 1
        if left:
            if fast:
                mech_back = down
                down *= step
            else:
                mech_back = table_ratio(table, ratios, low, high, cut - s_left + 1.0)
                if mech_back < 0.0:
                    mech_back = _mechanisms_ratio(form, table, n, j, s_left - 1.0)
                mech_back = 1.0 / mech_back
            back = mech_back / latent.ratio(family, a, b, s_left - 1.0)
            s_left -= 1.0
            if with_t:
                psi_left -= latent.statistic_step(family, a, b, s_left)
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
    if _beyond(family, a, b, form, table, n, j, s, w, s_left, w_left, half * (total_r + total_l)):
        out[0], out[3] = math.nan, BEYOND
        return
    total = total_r + total_l
    out[0] = log_peak + math.log(total)
    out[1] = (sum_s_r + sum_s_l) / total
    out[2] = (sum_psi_r + sum_psi_l) / total
