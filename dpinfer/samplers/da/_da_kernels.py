r"""Numba kernels of the record updates of :func:`dpinfer.da_mcmc`.

A sweep visits the records of one chain in order. Record ``i`` is offered a
fresh record drawn from the model (its statistic ``proposals[i]``, drawn
beforehand in one vectorised call); the running sum ``total`` of the per-record
statistics becomes ``total + (proposals[i] - stats[i])`` if

.. math:: \log u_i < \log\eta(s_{dp} \mid T - t_i + t_i^*) - \log\eta(s_{dp} \mid T),

the privacy-aware Metropolis step of Ju et al. (2022). Acceptance changes the
sum that the next record is scored against, so the loop is sequential; it is
O(k) per record for a statistic of ``k`` coordinates. The mechanism's
log-density comes as a :class:`~dpinfer.mechanisms._coordinate.CoordinateForm`
(per-coordinate formulas), so no Python function is called inside the loop.
The callers validate shapes and dtypes: float64, C-contiguous.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...mechanisms._coordinate import GAUSSIAN, LAPLACE


@numba.njit(cache=True, inline="always")
def _term(kind, r, coef, lower, upper, s):  # pragma: no cover - numba
    if not (s >= lower and s <= upper):
        return -math.inf
    if kind == LAPLACE or kind == GAUSSIAN:
        d = r - s
        # (r - s) / a without overflowing where the difference alone leaves the range
        z = d / coef[0] if abs(d) < math.inf else (0.5 * r - 0.5 * s) / coef[0] * 2.0
        if kind == LAPLACE:
            return -abs(z) + coef[2]
        return -((0.5 * z) * z) + coef[2]
    return coef[2] + r * math.log(s + coef[0]) + coef[1] * math.log(coef[3] - s)


@numba.njit(cache=True)
def log_density(kind, released, coef, lower, upper, values):  # pragma: no cover - numba
    """``log eta(released | values[b])`` for every row of ``values`` (shape ``(batch, k)``)."""
    out = np.empty(values.shape[0])
    for b in range(values.shape[0]):
        total = 0.0
        for j in range(values.shape[1]):
            total += _term(kind, released[j], coef[j], lower[j], upper[j], values[b, j])
        out[b] = total
    return out


@numba.njit(cache=True)
def record_sweep(
    stats, total, proposals, log_u, kind, released, coef, lower, upper
):  # pragma: no cover - numba
    """One sequential sweep of privacy-aware Metropolis record updates, in place.

    Parameters
    ----------
    stats : (n, k) float64
        Per-record statistics of the current records; accepted rows are overwritten.
    total : (k,) float64
        Their running sum; updated on every acceptance.
    proposals : (n, k) float64
        Statistics of the offered records.
    log_u : (n,) float64
        Log uniforms of the acceptance tests.
    kind, released, coef, lower, upper
        The mechanism's :class:`CoordinateForm` at the release.

    Returns
    -------
    accepted : (n,) bool
        Which records were replaced.
    log_eta : float
        ``log eta(released | total)`` after the sweep.
    """
    n, k = stats.shape
    accepted = np.zeros(n, dtype=np.bool_)
    candidate = np.empty(k)
    current = 0.0
    for j in range(k):
        current += _term(kind, released[j], coef[j], lower[j], upper[j], total[j])
    for i in range(n):
        new = 0.0
        for j in range(k):
            candidate[j] = total[j] + (proposals[i, j] - stats[i, j])
            new += _term(kind, released[j], coef[j], lower[j], upper[j], candidate[j])
        # NaN (both densities zero) fails the test: an impossible state is never entered
        if log_u[i] < new - current:
            for j in range(k):
                total[j] = candidate[j]
                stats[i, j] = proposals[i, j]
            current = new
            accepted[i] = True
    return accepted, current


def sweep_with(form, stats, total, proposals, log_u):
    """Run :func:`record_sweep` with a :class:`CoordinateForm` unpacked."""
    return record_sweep(
        stats,
        total,
        proposals,
        log_u,
        form.kind,
        form.released,
        form.coefficients,
        form.lower,
        form.upper,
    )


def density_with(form, values):
    """Run :func:`log_density` with a :class:`CoordinateForm` unpacked."""
    return log_density(form.kind, form.released, form.coefficients, form.lower, form.upper, values)
