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

from ...noise.form import NO_TABLE
from ...noise.terms import published_term, term

# A loop whose terms may call a cell's tail (a suppressed cell) runs slower than one whose
# terms are all inlined, even where no cell is suppressed: each kernel below has two
# compiled copies of its loop, the second for forms without suppressed cells. The copy is
# chosen in Python, so that a release without suppressed cells never compiles the tails.


@numba.njit(cache=True, inline="always")
def _score(form, table, j, s, published):  # pragma: no cover - numba
    if published:  # a constant of each copy of a loop
        return published_term(form, j, s)
    return term(form, table, j, s)


def _published(form: np.ndarray) -> bool:
    return not form["suppressed"].any()


def log_density(form, values):
    """``log eta(released | values[b])`` for every row of ``values`` (shape ``(batch, k)``).

    A suppressed cell's tail is summed (the form has no log-CDF tables).
    """
    out = np.empty(values.shape[0])
    if _published(form):
        _log_density_published(form, NO_TABLE, values, out)
    else:
        _log_density_any(form, NO_TABLE, values, out)
    return out


@numba.njit(cache=True, inline="always")
def _log_density(form, table, values, out, published):  # pragma: no cover - numba
    for b in range(values.shape[0]):
        total = 0.0
        for j in range(values.shape[1]):
            total += _score(form, table, j, values[b, j], published)
        out[b] = total


@numba.njit(cache=True)
def _log_density_any(form, table, values, out):  # pragma: no cover - numba
    _log_density(form, table, values, out, False)


@numba.njit(cache=True)
def _log_density_published(form, table, values, out):  # pragma: no cover - numba
    _log_density(form, table, values, out, True)


def record_sweep(stats, total, proposals, log_u, form):
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
    accepted = np.zeros(stats.shape[0], dtype=np.bool_)
    sweep = _sweep_published if _published(form) else _sweep_any
    current = sweep(stats, total, proposals, log_u, form, NO_TABLE, accepted)
    return accepted, float(current)


@numba.njit(cache=True, inline="always")
def _sweep(stats, total, proposals, log_u, form, table, accepted, published):  # pragma: no cover
    n, k = stats.shape
    candidate = np.empty(k)
    current = 0.0
    for j in range(k):
        current += _score(form, table, j, total[j], published)
    for i in range(n):
        new = 0.0
        for j in range(k):
            candidate[j] = total[j] + (proposals[i, j] - stats[i, j])
            new += _score(form, table, j, candidate[j], published)
        # NaN (both densities zero) fails the test: an impossible state is never entered
        if log_u[i] < new - current:
            for j in range(k):
                total[j] = candidate[j]
                stats[i, j] = proposals[i, j]
            current = new
            accepted[i] = True
    return current


@numba.njit(cache=True)
def _sweep_any(stats, total, proposals, log_u, form, table, accepted):  # pragma: no cover
    return _sweep(stats, total, proposals, log_u, form, table, accepted, False)


@numba.njit(cache=True)
def _sweep_published(stats, total, proposals, log_u, form, table, accepted):  # pragma: no cover
    return _sweep(stats, total, proposals, log_u, form, table, accepted, True)
