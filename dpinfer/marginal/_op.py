"""A PyTensor Op: the per-cell marginal log-likelihood of releases and its gradient."""

from __future__ import annotations

import math
import multiprocessing
import os

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type, grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ._families import LatentFamily
from ._forms import parameters
from ._kernels import BEYOND
from ._poisson import STATE
from ._recent import recent_of
from ._sweep import marginal_sweep, sweep_cells

__all__ = ["STATE", "MarginalLogp", "sweep"]

#: The fewest cells whose sums the Op spreads over threads. Each evaluation wakes the other
#: threads, which takes microseconds on an idle machine but up to a scheduler's time slice
#: (milliseconds) on a busy one: only a large table gains from them whatever the load.
THREADED_CELLS = 2**17


class MarginalLogp(Op):
    """``log sum_s p(s | a, b) prod_m eta_m(r_m | s)`` per cell, with its gradient in ``a, b``.

    ``p`` is the pmf of ``family`` (a :class:`~dpinfer.marginal._families.LatentFamily`).

    Inputs:

    - ``a``, ``b``: flat float64 vectors of the latent parameters, one entry per cell;
    - ``form`` and ``table``: the releases' joined per-cell form, grouped, as the two
      float64 vectors of :func:`dpinfer.marginal._forms.packed` (constants): the
      released numbers (release ``m`` of cell ``j`` at ``m n + j``), and the groups'
      records, the cells' group numbers and the log-CDF tables;
    - ``state``: ``(n, STATE)``, each cell's last mode and the constants of its
      releases (:mod:`dpinfer.marginal._poisson`): hints that make the next
      evaluation cheaper and never change its result (all NaN: none yet).

    Outputs: the log-likelihood per cell, the two scores ``d logp / da`` and
    ``d logp / db`` that its gradient uses, and the state after the evaluation
    (the input's array, updated in place: a view of it). A state must come with
    the form that left it; a new form starts from an all-NaN state.

    A compiled implementation of this Op (PyTensor's numba backend) calls
    :func:`dpinfer.marginal._sweep.marginal_sweep` (on numba's threads) or
    :func:`~dpinfer.marginal._sweep.sweep_cells` (on the calling thread) with the
    same arrays, the form and its tables unpacked
    (:func:`dpinfer.marginal._forms.unpacked`). The numba one
    (:mod:`dpinfer.marginal._numba_op`) keeps a state per thread in place of
    ``state``, which nutpie shares read-only between chains running at once.

    **Evaluations again.** A node (of a compiled function) answers parameters it
    evaluated lately from its last results, without a sweep
    (:mod:`dpinfer.marginal._recent`): PyMC's NUTS evaluates each iteration's
    starting point a second time.

    **Threads.** The sweep spreads the cells of a table of ``THREADED_CELLS`` or
    more over numba's threads (``numba.set_num_threads``, ``NUMBA_NUM_THREADS``),
    except in a child process (``pm.sample(cores=...)`` runs each chain in one),
    where it runs on one thread: the chains already take the cores, and GNU
    OpenMP, numba's threading layer on Linux when TBB is missing
    (:mod:`dpinfer._threading_layer`), cannot run in a process forked from one
    that used it. The results do not depend on the number of threads. Only the
    sweep is threaded: the rest of a model's log-density and gradient (its
    elementwise ops, indexing and sums) runs on the calling thread, except the
    elementwise loops of PyTensor's C backend compiled with ``pytensor.config.openmp``,
    which take OpenMP's threads (``omp_set_num_threads``, ``OMP_NUM_THREADS``).
    """

    __props__ = ("family", "tol")
    view_map = {3: [4]}

    def __init__(self, family: LatentFamily, tol: float):
        self.family = family
        self.tol = float(tol)

    # PyTensor's Ops name their inputs (the base class takes *inputs)
    def make_node(self, a, b, form, table, state):  # type: ignore[override]
        a = pt.as_tensor_variable(a).astype("float64")
        b = pt.as_tensor_variable(b).astype("float64")
        form, table, state = (pt.as_tensor_variable(x) for x in (form, table, state))
        outputs = [pt.dvector(), pt.dvector(), pt.dvector(), state.type()]
        return Apply(self, [a, b, form, table, state], outputs)

    def perform(self, node, inputs, output_storage):
        a, b, form, table, state = inputs
        a, b = parameters(a), parameters(b)
        recent = recent_of(node, form, table)
        found = recent.find(a, b)
        if found is not None:
            for storage, value in zip(output_storage, (*found, state), strict=True):
                storage[0] = value
            return
        n = a.size
        # new arrays each time: reusing the last ones saves their page faults (6 ms of 48 at
        # 10**6 cells) but holds 32 bytes a cell between evaluations, which took a model's
        # resident memory from 1.4x to 1.9x naive's at 10**7 cells (the limit is 1.5x)
        logp, score_a, score_b = np.empty(n), np.empty(n), np.empty(n)
        terms = np.empty(n, dtype=np.int64)
        cells, tables = recent.unpacked
        outputs = (logp, score_a, score_b, terms)
        sweep(self.family, a, b, cells, tables, self.tol, state, *outputs)
        if math.isnan(np.add.reduce(logp)):  # NaN if any is: one pass, no array made
            _refuse(np.isnan(logp), terms == BEYOND)
        recent.keep(a, b, (logp, score_a, score_b))
        for storage, value in zip(output_storage, (logp, score_a, score_b, state), strict=True):
            storage[0] = value

    def infer_shape(self, fgraph, node, shapes):
        return [shapes[0]] * 3 + [shapes[4]]

    def connection_pattern(self, node):
        return [[True, True, True, False]] * 2 + [[False] * 4] * 3

    def grad(self, inputs, output_grads):
        # an Op's outputs are a list, which the stubs leave a union
        _, score_a, score_b, _ = self(*inputs)  # type: ignore[misc]
        constants = [disconnected_type() for _ in inputs[2:]]
        for name, extra in zip(("score_a", "score_b"), output_grads[1:3], strict=True):
            if not isinstance(extra.type, DisconnectedType):
                note = f"second derivatives ({name})"
                own = [grad_not_implemented(self, i, x, note) for i, x in enumerate(inputs[:2])]
                return own + constants
        g = output_grads[0]
        return [g * score_a, g * score_b, *constants]


def sweep(family, a, b, form, table, tol, state, logp, score_a, score_b, terms) -> None:
    """Sum every cell, on numba's threads for a table of ``THREADED_CELLS`` or more.

    The arguments are :func:`._sweep.marginal_sweep`'s, of the types :mod:`._forms`
    names; a table of fewer cells, or any table in a child process, is summed by
    :func:`._sweep.sweep_cells` on the calling thread (the threaded sweep is compiled
    only when a table needs it).
    """
    arrays = (a, b, form, table, tol, state, logp, score_a, score_b, terms)
    if a.size >= THREADED_CELLS and _threads() > 1:
        marginal_sweep(family, *arrays)
    else:
        sweep_cells(family, *arrays, 0, a.size)


_HOME = os.getpid()


def _home() -> int:
    """Return the id of the process whose sweeps may use threads (-1 in a child process)."""
    return _HOME if multiprocessing.parent_process() is None else -1


def _threads() -> int:
    """Numba's thread count for the calling thread; 1 in a child process (a fork or a spawn)."""
    return numba.get_num_threads() if os.getpid() == _home() else 1


def _refuse(failed: np.ndarray, beyond: np.ndarray) -> None:
    """Raise for the cells whose sums could not be completed, naming their positions."""
    far = np.flatnonzero(failed & beyond)
    if far.size:
        raise FloatingPointError(
            f"the marginal likelihood of {far.size} cell(s) (first at position "
            f"{far[:5].tolist()}) would sum the confidential count beyond 2**53 in magnitude, "
            "where float64 cannot count in steps of one: the latent parameters there put the "
            "count that far; check the model's priors"
        )
    wide = np.flatnonzero(failed)
    raise FloatingPointError(
        f"the marginal likelihood of {wide.size} cell(s) (first at position "
        f"{wide[:5].tolist()}) needs more than 10^8 terms of the latent sum: the latent "
        "parameters there make the posterior of the confidential count wider than can be "
        "summed; check the model's priors"
    )
