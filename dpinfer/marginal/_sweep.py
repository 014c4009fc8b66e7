"""One evaluation of every cell: the family's fast path where it applies, else the general sum.

:func:`marginal_sweep` is what the Op calls; it keeps a per-cell state between
evaluations (:mod:`._poisson`, and :mod:`._suppressed` for Poisson cells suppressed by a
discrete Gaussian threshold), and sums the wide ones of both in batches by :mod:`._fourier`
(suppressed ones near their cut in batches of their own) and those of every other term in
batches by :mod:`._pairs_batch`; :func:`sweep_cells` is the same on the calling thread,
which is all that a table of fewer than ``._op.THREADED_CELLS`` cells needs
(:func:`._op.sweep` chooses). Each is compiled once per latent family, for the argument
types that :mod:`._forms` names.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from numba.extending import overload

from . import _dispatch as latent
from . import _fourier as fourier
from . import _pairs_batch as pairs
from . import _suppressed as suppressed
from . import _vector_log
from ._kernels import _cell, _mechanisms_ratio, _support
from ._poisson import AT, MODE, STATE, STEP, prepare, ready, stays, sum_cell, width_factor

#: Cells whose logarithms :func:`sweep_cells` takes together, in one vectorised loop.
BATCH = 64

#: Cells a block of :func:`marginal_sweep`: the unit of work a thread takes.
CHUNK = 1024

# numba's cache of these functions holds the code of what they call, but is keyed on this
# file alone: after changing ._poisson, ._pairs_batch, ._suppressed, ._fourier, ._kernels,
# ._log_pmf, ._dispatch, ._families, ._vector_log, ._vector_math or dpinfer.noise, remove
# this folder's __pycache__.


@nb.njit(cache=True, error_model="numpy", parallel=True)
def marginal_sweep(family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms):
    """Fill ``logp``, the scores and the term counts of every cell; update ``state``.

    ``family`` is a :class:`~dpinfer.marginal._families.LatentFamily` (the sweep is
    compiled for each). ``form`` holds the per-cell forms of the cells' releases
    (a :class:`~dpinfer.noise.form.Grouped` form), release ``m`` of cell ``j`` at
    ``m n + j`` (``n = pa.size``), and ``table`` their log-CDF tables.
    ``state`` must be all NaN, or left by a call with the same form: it holds each
    cell's last mode and constants of the releases, so that a Poisson cell with
    Gaussian releases is summed by :mod:`._poisson` without recomputing them, and
    one with a suppressed discrete Gaussian release by :mod:`._suppressed`.

    The cells are split into blocks of ``CHUNK``, spread over numba's threads
    (``numba.get_num_threads()`` of the calling thread); a cell's sums depend on
    that cell alone, so the results do not depend on the thread count, and are
    those of :func:`sweep_cells` on all the cells. Each call enters a parallel
    region: with TBB (:mod:`dpinfer._threading_layer`) from any process and any
    number of threads at once; with GNU OpenMP not in a process forked from one
    that used it (there, call :func:`sweep_cells`).
    """
    n = pa.size
    for block in nb.prange((n + CHUNK - 1) // CHUNK):
        start = block * CHUNK
        stop = min(start + CHUNK, n)
        sweep_cells(
            family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start, stop
        )


@nb.njit(cache=True, error_model="numpy")
def sweep_cells(
    family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start, stop
):
    """:func:`marginal_sweep` of the cells ``start:stop`` on the calling thread.

    The cells that :mod:`._fourier` refuses (its bound fails) are summed over s after.
    """
    refused = np.empty(stop - start, np.int64)
    count = _family_sweep(
        family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start, stop,
        refused, True,
    )  # fmt: skip
    for i in range(count):  # rare: each alone, over s
        j = refused[i]
        _family_sweep(
            family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, j, j + 1,
            refused, False,
        )  # fmt: skip


def _family_sweep(
    family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start, stop,
    refused, contour,
):  # fmt: skip
    """:func:`_sweep` for a family with :mod:`._poisson`'s fast path, else :func:`_general_sweep`.

    Chosen as the family's sweep is compiled: a family without the fast path does not
    compile its code (some 9 of a family's 13 s of compilation).
    """
    raise NotImplementedError("_family_sweep is called in compiled code only")


@overload(_family_sweep, inline="always")
def _choose_sweep(
    family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start, stop,
    refused, contour,
):  # fmt: skip
    chosen = _sweep if latent.has_poisson_fast_path(family) else _general_sweep

    def call(
        family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start, stop,
        refused, contour,
    ):  # fmt: skip
        return chosen(
            family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start,
            stop, refused, contour,
        )  # fmt: skip

    return call


@nb.njit(cache=True, error_model="numpy")
def _general_sweep(
    family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start, stop,
    refused, contour,
):  # fmt: skip
    """:func:`_sweep` of a family without :mod:`._poisson`'s fast path: every cell by its sum.

    Refuses no cell (returns 0): ``refused`` and ``contour`` are :func:`_sweep`'s.
    """
    out, row = np.empty(5), np.empty(STATE)
    n = pa.size
    for j in range(start, stop):
        _load(state, j, row)
        _general(family, pa[j], pb[j], form, table, n, tol, j, row, out)
        _store(row, state, j)
        logp[j], terms[j], score_a[j], score_b[j] = out[0], out[3], out[1], out[2]
    return 0


@nb.njit(cache=True, error_model="numpy")
def _sweep(
    family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, start, stop,
    refused, contour,
):  # fmt: skip
    """Sum the cells ``start:stop``; with ``contour``, the wide ones by :mod:`._fourier`.

    The cells it refuses are written to ``refused``: returns their count.
    """
    out, row = np.empty(5), np.empty(STATE)
    work = np.empty(suppressed.ROW)  # a suppressed cell's row, with what the form gives
    cells, lam, power = np.empty(BATCH, np.int64), np.empty(BATCH), np.empty(BATCH)
    rest, total = np.empty(BATCH), np.empty(BATCH)
    batches = np.zeros((2, fourier.ROWS * fourier.BATCH))  # QUEUED's and QUEUED_NEAR's
    queued = np.zeros(2, np.int64)
    paired_batch = np.zeros(pairs.ROWS * pairs.LANES)
    # counts typed int64, never a literal 0: that would give their callees a second signature
    waiting = count = paired = np.int64(0)
    z = width_factor(tol)
    step, nodes = fourier.plan(tol)
    n = pa.size
    for j in range(start, stop):
        _load(state, j, row)
        if latent.poisson_fast_path(family):  # a constant of the compiled family
            if math.isnan(row[STEP]):
                prepare(form, n, j, row)
                if row[STEP] < 0.0:
                    suppressed.prepare(form, n, j, row)
                _store(row, state, j)
            if contour and (row[STEP] >= fourier.STEP_WIDE or row[STEP] == suppressed.SUPPRESSED):
                if fourier.unkept(pa[j], row[STEP], row[AT]):
                    fourier.keep(form, n, j, row)
                    _store(row, state, j)
                where = fourier.queue(form, j, pa[j], row, batches, queued)
                if where != fourier.NOT_QUEUED:
                    queued[where] += 1
                    if queued[where] == fourier.BATCH:
                        count = _sum_wide(
                            batches, queued, where, step, nodes, tol, logp, score_a, score_b,
                            terms, refused, count,
                        )  # fmt: skip
                    continue
            on_path = False
            if row[STEP] > 0.0:
                on_path = stays(pa[j], row)
                if not on_path:
                    on_path = ready(pa[j], form, n, j, row)
                    _store(row, state, j)
            if on_path:
                if pairs.takes(row, 0.5 * tol):
                    pairs.queue(paired_batch, paired, j, pa[j], row, z)
                    paired += 1
                    if paired == pairs.LANES:
                        pairs.sum_batch(
                            paired_batch, paired, 0.5 * tol, logp, score_a, score_b, terms
                        )
                        paired = np.int64(0)
                    continue
                cells[waiting], lam[waiting] = j, pa[j]
                power[waiting], rest[waiting], total[waiting], score_a[j], terms[j] = sum_cell(
                    pa[j], row, z, 0.5 * tol
                )
                score_b[j] = 0.0
                waiting += 1
                if waiting == BATCH:
                    _logs(cells, lam, power, rest, total, waiting, logp)
                    waiting = np.int64(0)
                continue
            if row[STEP] == suppressed.SUPPRESSED:
                _copy(row, work)
                suppressed.place(form, j, work)
                on_path = suppressed.ready(pa[j], form, table, j, work, z)
                _copy(work, row)
                _store(row, state, j)
                if on_path:
                    logp[j], score_a[j], terms[j] = suppressed.sum_cell(
                        pa[j], table, work, z, 0.5 * tol
                    )
                    score_b[j] = 0.0
                    if terms[j] >= 0:  # else it left the table: the general sum reads beyond
                        continue
        _general(family, pa[j], pb[j], form, table, n, tol, j, row, out)
        _store(row, state, j)
        logp[j], terms[j], score_a[j], score_b[j] = out[0], out[3], out[1], out[2]
    _logs(cells, lam, power, rest, total, waiting, logp)
    pairs.sum_batch(paired_batch, paired, 0.5 * tol, logp, score_a, score_b, terms)
    for where in (fourier.QUEUED, fourier.QUEUED_NEAR):
        count = _sum_wide(
            batches, queued, where, step, nodes, tol, logp, score_a, score_b, terms, refused,
            count,
        )  # fmt: skip
    return count


# A cell's state goes through a row of the sweep's own: a view of ``state[j]`` would cost two
# atomic updates of the state's reference count a cell, a sixth of a pairs cell's time.
@nb.njit(cache=True, error_model="numpy", inline="always")
def _load(state, j, row):
    """Copy cell j's state to ``row``."""
    for c in range(STATE):
        row[c] = state[j, c]


@nb.njit(cache=True, error_model="numpy", inline="always")
def _store(row, state, j):
    """Copy ``row`` to cell j's state."""
    for c in range(STATE):
        state[j, c] = row[c]


@nb.njit(cache=True, error_model="numpy", inline="always")
def _copy(source, target):
    """Copy a cell's state from the row ``source`` to the row ``target``."""
    for c in range(STATE):
        target[c] = source[c]


@nb.njit(cache=True, error_model="numpy")
def _sum_wide(
    batches, queued, where, step, nodes, tol, logp, score_a, score_b, terms, refused, count
):  # fmt: skip
    """Sum the ``queued[where]`` cells of ``batches[where]`` by :mod:`._fourier`; empty it.

    ``where`` is :data:`._fourier.QUEUED` or :data:`._fourier.QUEUED_NEAR` (suppressed
    cells near their cut). The cells it refuses go to ``refused`` after its first
    ``count``: returns their new count.
    """
    if queued[where] == 0:
        return count
    batch, sums = batches[where], (logp, score_a, score_b, terms)
    if where == fourier.QUEUED_NEAR:
        more = fourier.sum_near_batch(batch, queued[where], step, nodes, tol, *sums)
    else:
        more = fourier.sum_batch(batch, queued[where], step, nodes, tol, *sums)
    queued[where] = 0
    for i in range(more):
        refused[count + i] = batch[fourier.CELL * fourier.BATCH + i]
    return count + more


@nb.njit(cache=True, error_model="numpy")
def _logs(cells, lam, power, rest, total, count, logp):
    """``logp[cells[i]] = power[i] log(lam[i]) + rest[i] + log(total[i])``, ``i < count``.

    The rates are positive normal floats and the totals at least 1 (the mode's term),
    the domain of :func:`._vector_log.log`, whose loop is vectorised: about a tenth of
    a cell's time saved against libm's ``log`` called in the sweep's loop.
    """
    for i in range(count):
        rest[i] += power[i] * _vector_log.log(lam[i]) + _vector_log.log(total[i])
    for i in range(count):
        logp[cells[i]] = rest[i]


@nb.njit(cache=True, error_model="numpy")
def _general(family, a, b, form, table, n, tol, j, row, out):
    """Sum cell j by :func:`._kernels._cell`: out = (logp, score_a, score_b, terms, mode)."""
    _cell(family, a, b, form, table, n, j, tol, row[MODE], out)
    row[MODE] = out[4]
    if not math.isfinite(out[0]):
        out[1], out[2] = (math.nan, math.nan) if math.isnan(out[0]) else (0.0, 0.0)
    elif latent.at_boundary(family, a, b):
        # the scores' limit there, from the mechanisms' ratio at the support's lower end
        lo, hi = _support(family, a, b, form, n, j)
        up = _mechanisms_ratio(form, table, n, j, lo) if hi >= lo + 1.0 else 0.0
        out[1], out[2] = latent.boundary_scores(family, a, b, up)
    else:
        out[1], out[2] = latent.scores(family, a, b, out[1], out[2])
