r"""Numba kernels of the record updates of :func:`dpinfer.da_mcmc`.

A sweep visits the records of one chain in order. Record ``i`` is offered a
fresh record drawn from the model (its statistic ``proposals[i]``, drawn
beforehand in one vectorised call); the running sum ``total`` of the per-record
statistics becomes ``total + (proposals[i] - stats[i])`` if

.. math:: \log u_i < \log\eta(s_{dp} \mid T - t_i + t_i^*) - \log\eta(s_{dp} \mid T),

the privacy-aware Metropolis step of Ju et al. (2022). Acceptance changes the
sum that the next record is scored against, so the loop is sequential; it is
O(k) per record for a statistic of ``k`` coordinates. The mechanism's
log-density comes as its per-cell form (:meth:`dpinfer.Mechanism.cell_form`,
scored by :func:`dpinfer.noise.terms.term`), so no Python function is called
inside the loop. The callers validate shapes and dtypes: float64, C-contiguous.
"""

from __future__ import annotations

import numba
import numpy as np

from ..noise.form import NO_TABLE
from ..noise.terms import term


@numba.njit(cache=True)
def log_density(form, values):  # pragma: no cover - numba
    """``log eta(released | values[b])`` for every row of ``values`` (shape ``(batch, k)``)."""
    out = np.empty(values.shape[0])
    for b in range(values.shape[0]):
        total = 0.0
        for j in range(values.shape[1]):
            total += term(form, NO_TABLE, j, values[b, j])
        out[b] = total
    return out


@numba.njit(cache=True)
def record_sweep(stats, total, proposals, log_u, form):  # pragma: no cover - numba
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
    form : numpy.ndarray
        The mechanism's per-cell form at the release (:meth:`dpinfer.Mechanism.cell_form`).

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
        current += term(form, NO_TABLE, j, total[j])
    for i in range(n):
        new = 0.0
        for j in range(k):
            candidate[j] = total[j] + (proposals[i, j] - stats[i, j])
            new += term(form, NO_TABLE, j, candidate[j])
        # NaN (both densities zero) fails the test: an impossible state is never entered
        if log_u[i] < new - current:
            for j in range(k):
                total[j] = candidate[j]
                stats[i, j] = proposals[i, j]
            current = new
            accepted[i] = True
    return accepted, current
