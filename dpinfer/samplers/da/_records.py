"""Record updates of :func:`dpinfer.da_mcmc`: the mechanism density at running sums.

:class:`RecordUpdater` scores running sums ``T`` of per-record statistics by
``log eta(s_dp | summary(T))`` and runs sweeps of privacy-aware Metropolis
record updates (Ju et al. 2022). Two exact routes give the same decisions for
the same proposals and uniforms:

* **compiled**: when the summary is the identity and the mechanism has a
  per-cell form (every built-in family, :meth:`dpinfer.Mechanism.cell_form`),
  the sweep is one numba loop
  (:func:`._da_kernels.record_sweep`): O(k) per record, no Python call.
* **speculative blocks**: otherwise. Scoring the next ``B`` candidates
  ``T + t*_j - t_j`` as if every earlier one were rejected is exact up to the
  first acceptance; the sweep scores a block in one vectorised
  ``mechanism.logpdf`` call, keeps the decisions up to the first acceptance,
  applies it and continues after it. The block length follows the observed
  run of rejections, so the number of calls is about the number of accepted
  records plus ``n / B``: cheap when the noise is small (few acceptances).
"""

from __future__ import annotations

import numpy as np

from . import _da_kernels

_MIN_BLOCK, _MAX_BLOCK = 8, 4096


class RecordUpdater:
    """Scores running sums and sweeps records, for one model, mechanism and release."""

    def __init__(self, record_model, mechanism, released, *, t_shape):
        self.model, self.mechanism, self.released = record_model, mechanism, released
        self.t_shape = tuple(t_shape)
        form = None
        if record_model.summary is None:
            form = mechanism.cell_form(released)
        self.form = form
        self.compiled = form is not None

    def log_density(self, totals: np.ndarray) -> np.ndarray:
        """``log eta(s_dp | summary(T))`` for sums ``totals`` of shape ``(batch, k)``."""
        totals = np.ascontiguousarray(totals, dtype=float)
        if self.compiled:
            return _da_kernels.log_density(self.form, totals)
        return self.mechanism.logpdf(self.released, self.summary(totals))

    def summary(self, totals: np.ndarray) -> np.ndarray:
        """Return the released statistic ``summary(T)`` for flat sums ``(batch, k)``."""
        shaped = totals.reshape(len(totals), *self.t_shape)
        return self.model.summarise(shaped, self.mechanism.event_shape)

    def sweep(self, stats, total, proposals, log_u):
        """One sweep over the records, in place on ``stats`` and ``total``.

        Returns the accepted mask and ``log eta`` at the final sum.
        """
        if self.compiled:
            return _da_kernels.record_sweep(stats, total, proposals, log_u, self.form)
        return speculative_sweep(self.log_density, stats, total, proposals, log_u)


def speculative_sweep(log_density, stats, total, proposals, log_u):
    """Run the sequential sweep of :func:`._da_kernels.record_sweep`, scored in blocks.

    Parameters
    ----------
    log_density : callable
        ``(batch, k)`` running sums to ``(batch,)`` log-densities.
    stats, total, proposals, log_u
        As in :func:`._da_kernels.record_sweep`; ``stats`` and ``total`` are
        updated in place.

    Notes
    -----
    An offered record with the same statistic as the one it replaces leaves
    the sum unchanged (ratio 1: always accepted); only an accepted record that
    moves the sum ends a block.
    """
    n = len(stats)
    accepted = np.zeros(n, dtype=bool)
    current = float(log_density(total[None])[0])
    i, block = 0, 32
    while i < n:
        stop = min(n, i + block)
        step = proposals[i:stop] - stats[i:stop]
        moves = np.any(step != 0, axis=1)
        new = np.full(stop - i, current)
        if moves.any():
            new[moves] = log_density(total + step[moves])
        with np.errstate(invalid="ignore"):
            ok = log_u[i:stop] < new - current
        hits = np.flatnonzero(ok & moves)
        last = stop if hits.size == 0 else i + int(hits[0]) + 1
        keep = np.flatnonzero(ok[: last - i]) + i
        stats[keep] = proposals[keep]
        accepted[keep] = True
        if hits.size == 0:
            i, block = stop, min(2 * block, _MAX_BLOCK)
            continue
        first = int(hits[0])
        total += step[first]
        current = float(new[first])
        i, block = last, int(np.clip(2 * (first + 1), _MIN_BLOCK, _MAX_BLOCK))
    return accepted, current
