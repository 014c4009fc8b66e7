"""The sweep over cells on several threads: the same bits as on one, in any process.

``marginal_sweep`` spreads blocks of ``CHUNK`` cells over numba's threads. Each cell's sums
depend on that cell alone, so the log-likelihoods, scores, term counts and kept states must
be the same, bit for bit, on one thread (the serial branch) and on two (the parallel one).
The Op runs on one thread in a child process (PyMC's parallel chains), where GNU OpenMP,
numba's threading layer on Linux, cannot run after a fork.
"""

from __future__ import annotations

import multiprocessing
import warnings

import numba
import numpy as np
import pytest

import dpinfer as dp
from dpinfer.marginal import _families as F
from dpinfer.marginal._forms import joined_form, release_form
from dpinfer.marginal._op import MarginalLogp
from dpinfer.marginal._poisson import STATE
from dpinfer.marginal._sweep import CHUNK, _sweep_cells, marginal_sweep
from dpinfer.noise.form import as_matrix

TOL = 1e-10
CELLS = 3 * CHUNK + 37  # four blocks, the last one short

needs_two_threads = pytest.mark.skipif(
    numba.config.NUMBA_NUM_THREADS < 2, reason="numba has one thread here"
)


@pytest.fixture(scope="module")
def cells():
    """Cells of many kinds: rates and releases far apart, one or two releases, NaN modes."""
    rng = np.random.default_rng(7)
    rate = np.exp(rng.uniform(-3.0, 9.0, CELLS))
    counts = rng.poisson(rate)
    first = dp.DiscreteGaussian(3.0).release(counts, rng=1)
    second = dp.DiscreteGaussian(1.5).release(counts, rng=2)
    forms = [
        release_form(dp.DiscreteGaussian(3.0), first, latent_discrete=True),
        release_form(dp.DiscreteGaussian(1.5), second, latent_discrete=True),
    ]
    form, table = joined_form(forms)
    return rate * rng.uniform(0.8, 1.25, CELLS), form, table


def evaluate(sweep, threads, family, a, b, form, table, state):
    """``sweep`` on ``threads`` threads from ``state`` (updated): the outputs and the state."""
    n = a.size
    logp, score_a, score_b = np.empty(n), np.empty(n), np.empty(n)
    terms = np.empty(n, dtype=np.int64)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        sweep(family, a, b, form, table, TOL, state, logp, score_a, score_b, terms)
    finally:
        numba.set_num_threads(before)
    return logp, score_a, score_b, terms, state.copy()


def same_bits_on_one_and_two_threads(sweep, family, a, b, form, table):
    """Whether two evaluations (cold, then warm) agree bit for bit on one and two threads."""
    states = {k: np.full((a.size, STATE), np.nan) for k in (1, 2)}
    for rates in (a, a * 1.01):  # the first evaluation finds the modes, the second reuses them
        one, two = (evaluate(sweep, k, family, rates, b, form, table, states[k]) for k in (1, 2))
        for x, y in zip(one, two, strict=True):
            if x.tobytes() != y.tobytes():  # NaN states compare by their bits
                return False
    return True


@needs_two_threads
def test_a_poisson_sweep_gives_the_same_bits_on_one_and_two_threads(cells):
    rate, form, table = cells
    assert same_bits_on_one_and_two_threads(
        marginal_sweep, F.POISSON, rate, np.zeros(CELLS), form, table
    )


@needs_two_threads
def test_a_negative_binomial_sweep_gives_the_same_bits_on_one_and_two_threads(cells):
    rate, form, table = cells
    shape = np.linspace(0.5, 40.0, CELLS)
    p = shape / (shape + rate)
    assert same_bits_on_one_and_two_threads(
        marginal_sweep, F.NEGATIVE_BINOMIAL, shape, p, form, table
    )


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _sweep_with_a_total(family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms):
    # Planted bug: the sweep also reduces the cells' log-likelihoods to a total (stored in
    # cell 0) in the parallel loop, whose order of addition follows the threads' blocks
    total = 0.0
    for j in numba.prange(pa.size):
        _sweep_cells(
            family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, j, j + 1
        )
        total += logp[j]
    logp[0] = total


@needs_two_threads
def test_companion_a_reduction_over_threads_is_caught(cells):
    # With one thread the total is added cell after cell; with two, as two partial sums:
    # thousands of unequal terms round differently in the two orders, so the check must fail.
    rate, form, table = cells
    assert not same_bits_on_one_and_two_threads(
        _sweep_with_a_total, F.POISSON, rate, np.zeros(CELLS), form, table
    )


def test_the_sweep_is_kept_in_numbas_cache(cells):
    # a parallel sweep is cacheable, unless it reads numba.get_num_threads() (a ctypes pointer)
    rate, form, table = cells
    state = np.full((CELLS, STATE), np.nan)
    evaluate(marginal_sweep, 1, F.POISSON, rate, np.zeros(CELLS), form, table, state)
    (signature,) = [s for s in marginal_sweep.signatures if s[0] == F.POISSON._numba_type_]
    assert marginal_sweep._cache.load_overload(signature, marginal_sweep.targetctx) is not None


def test_companion_a_sweep_reading_numbas_thread_count_is_not_cached():
    @numba.njit(cache=True, parallel=True)
    def blocks(x):
        if numba.get_num_threads() < 2:
            return
        for i in numba.prange(x.size):
            x[i] += 1.0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaWarning)  # "Cannot cache compiled function"
        blocks(np.zeros(3))
    (signature,) = blocks.signatures
    assert blocks._cache.load_overload(signature, blocks.targetctx) is None


def _op_in(op, inputs, queue):
    """Evaluate ``op`` in a process of ``context`` and send its log-likelihoods back."""
    storage = [[None] for _ in range(4)]
    op.perform(None, inputs, storage)
    queue.put(storage[0][0])


@needs_two_threads
def test_the_op_runs_in_a_forked_child_after_its_parent_used_two_threads(cells):
    # PyMC's parallel chains are forked on Linux, from a parent that has already run the sweep
    # on its threads: the Op runs the child's sweep on one thread, which a fork allows
    rate, form, table = cells
    op = MarginalLogp(F.POISSON, TOL)
    inputs = [rate, np.zeros(CELLS), as_matrix(form), table, np.full((CELLS, STATE), np.nan)]
    here = evaluate(marginal_sweep, 2, F.POISSON, rate, np.zeros(CELLS), form, table, inputs[4])
    inputs[4] = np.full((CELLS, STATE), np.nan)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_op_in, args=(op, inputs, queue))
    child.start()
    logp = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert logp.tobytes() == here[0].tobytes()


def _sweep_in(inputs):
    """The sweep on two threads, with no thread policy (what the Op's child process avoids)."""
    rate, b, form, table, state = inputs
    evaluate(marginal_sweep, 2, F.POISSON, rate, b, form, table, state)


@needs_two_threads
def test_companion_a_forked_child_on_two_threads_is_stopped(cells):
    # Planted bug: the child runs the sweep on two threads. GNU OpenMP's runtime stops a
    # process forked from one that used it, so without the Op's rule the chain would die.
    rate, form, table = cells
    evaluate(
        marginal_sweep,
        2,
        F.POISSON,
        rate,
        np.zeros(CELLS),
        form,
        table,
        np.full((CELLS, STATE), np.nan),
    )
    if numba.threading_layer() != "omp":
        pytest.skip("the threading layer is not GNU OpenMP, which a fork stops")
    context = multiprocessing.get_context("fork")
    inputs = (rate, np.zeros(CELLS), form, table, np.full((CELLS, STATE), np.nan))
    child = context.Process(target=_sweep_in, args=(inputs,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode not in (0, None)
