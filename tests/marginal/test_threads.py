"""The sweep over cells on several threads: the same bits as on one, in any process.

``marginal_sweep`` spreads blocks of ``CHUNK`` cells over numba's threads. Each cell's sums
depend on that cell alone, so the log-likelihoods, scores, term counts and kept states must
be the same, bit for bit, on one thread, on two, and in ``sweep_cells`` (no parallel region).
The Op takes ``sweep_cells`` in a child process (PyMC's parallel chains). dpinfer loads TBB
as numba's threading layer: GNU OpenMP cannot run in a forked child and workqueue not in two
threads at once, which the companions show.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import warnings

import numba
import numpy as np
import pytest

import dpinfer as dp
from dpinfer import _threading_layer as _layer
from dpinfer.marginal import _families as F
from dpinfer.marginal import _op
from dpinfer.marginal._forms import joined_form, packed, release_form, unpacked
from dpinfer.marginal._op import MarginalLogp
from dpinfer.marginal._poisson import STATE
from dpinfer.marginal._sweep import CHUNK, marginal_sweep, sweep_cells

TOL = 1e-10
CELLS = 3 * CHUNK + 37  # four blocks, the last one short

needs_two_threads = pytest.mark.skipif(
    numba.config.NUMBA_NUM_THREADS < 2, reason="numba has one thread here"
)


@pytest.fixture(scope="module")
def cells():
    """Rates and releases over five orders of magnitude, two releases a cell."""
    rng = np.random.default_rng(7)
    rate = np.exp(rng.uniform(-3.0, 9.0, CELLS))
    counts = rng.poisson(rate)
    pairs = [(dp.DiscreteGaussian(3.0), 1), (dp.DiscreteGaussian(1.5), 2)]
    forms = [
        release_form(m, m.release(counts, rng=seed), latent_discrete=True) for m, seed in pairs
    ]
    released, shared = packed(*joined_form(forms))
    return rate * rng.uniform(0.8, 1.25, CELLS), released, shared


def on_threads(sweep, threads):
    """``sweep`` run with numba's thread count set to ``threads`` for the calling thread."""

    def run(*args):
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            sweep(*args)
        finally:
            numba.set_num_threads(before)

    return run


def serial(family, a, *args):
    """``sweep_cells`` on every cell."""
    sweep_cells(family, a, *args, 0, a.size)


def evaluate(sweep, family, a, b, released, shared, state):
    """``sweep`` from ``state`` (updated): the outputs and the state's bits."""
    n = a.size
    logp, score_a, score_b = np.empty(n), np.empty(n), np.empty(n)
    terms = np.empty(n, dtype=np.int64)
    form, table = unpacked(released, shared)  # the Op's arguments: one compiled sweep
    sweep(family, a, b, form, table, TOL, state, logp, score_a, score_b, terms)
    return logp, score_a, score_b, terms, state.copy()


def same_bits(sweeps, family, a, b, form, table):
    """Whether the ``sweeps`` agree bit for bit over two evaluations (cold, then warm)."""
    states = [np.full((a.size, STATE), np.nan) for _ in sweeps]
    for rates in (a, a * 1.01):  # the first evaluation finds the modes, the second reuses them
        runs = [evaluate(f, family, rates, b, form, table, s) for f, s in zip(sweeps, states)]
        for outputs in zip(*runs, strict=True):
            if len({x.tobytes() for x in outputs}) > 1:  # NaN states compare by their bits
                return False
    return True


SWEEPS = [serial, on_threads(marginal_sweep, 1), on_threads(marginal_sweep, 2)]


@needs_two_threads
def test_a_poisson_sweep_gives_the_same_bits_on_any_number_of_threads(cells):
    rate, form, table = cells
    assert same_bits(SWEEPS, F.POISSON, rate, np.zeros(CELLS), form, table)


@needs_two_threads
def test_a_negative_binomial_sweep_gives_the_same_bits_on_any_number_of_threads(cells):
    rate, form, table = cells
    shape = np.linspace(0.5, 40.0, CELLS)
    assert same_bits(SWEEPS, F.NEGATIVE_BINOMIAL, shape, shape / (shape + rate), form, table)


def _sweep_with_a_total(family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms):
    # Planted bug: the sweep also reduces the cells' log-likelihoods to a total (stored in
    # cell 0) as one partial sum per thread over the thread's range of cells, the ranges
    # following numba's thread count (as a parallel reduction's would; the partial sums are
    # taken here one after the other, which changes nothing in their bits)
    n = pa.size
    sweep_cells(family, pa, pb, form, table, tol, state, logp, score_a, score_b, terms, 0, n)
    size = -(-n // numba.get_num_threads())
    partial = [sum(logp[start : start + size].tolist(), 0.0) for start in range(0, n, size)]
    logp[0] = sum(partial, 0.0)


@needs_two_threads
def test_companion_a_reduction_over_threads_is_caught(cells):
    # On one thread the total is added cell after cell; on two, as two partial sums: thousands
    # of unequal terms round differently in the two orders, so the check must fail
    rate, form, table = cells
    sweeps = [on_threads(_sweep_with_a_total, k) for k in (1, 2)]
    assert not same_bits(sweeps, F.POISSON, rate, np.zeros(CELLS), form, table)


def test_the_sweep_is_kept_in_numbas_cache(cells):
    rate, form, table = cells
    state = np.full((CELLS, STATE), np.nan)
    evaluate(marginal_sweep, F.POISSON, rate, np.zeros(CELLS), form, table, state)
    # every Poisson signature compiled in this process
    signatures = [s for s in marginal_sweep.signatures if s[0] == F.POISSON._numba_type_]
    cache, target = marginal_sweep._cache, marginal_sweep.targetctx
    assert signatures and all(cache.load_overload(s, target) is not None for s in signatures)


def test_companion_a_sweep_reading_numbas_thread_count_is_not_cached():
    # Planted bug: a parallel function that reads numba.get_num_threads() (the natural way to
    # choose a serial branch) embeds a ctypes pointer and cannot be cached: the check catches it
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


def _op_in(op, inputs, queue, calls):
    """Evaluate ``op`` (in a child process); send back its log-likelihoods and sweeps called."""
    storage = [[None] for _ in range(4)]
    op.perform(None, inputs, storage)
    queue.put((storage[0][0], calls))


def _sweep_in(inputs):
    """``marginal_sweep`` (in a child process): what the Op does not call there."""
    evaluate(marginal_sweep, F.POISSON, *inputs)


def op_inputs(cells):
    """The Op's inputs for ``cells``, from a fresh state."""
    rate, released, shared = cells
    return [rate, np.zeros(CELLS), released, shared, np.full((CELLS, STATE), np.nan)]


@pytest.fixture
def threaded_op(monkeypatch):
    """The Op, spreading tables of ``CELLS`` over threads; record which sweep it calls."""
    calls = []
    monkeypatch.setattr(_op, "THREADED_CELLS", CELLS)
    for name in ("marginal_sweep", "sweep_cells"):
        sweep = getattr(_op, name)
        monkeypatch.setattr(_op, name, lambda *args, f=sweep, k=name: calls.append(k) or f(*args))
    return MarginalLogp(F.POISSON, TOL), calls


@needs_two_threads
def test_the_op_spreads_a_large_table_over_threads_and_a_small_one_not(cells, threaded_op):
    op, calls = threaded_op
    storage = [[None] for _ in range(4)]
    for threads in (2, 1):
        on_threads(op.perform, threads)(None, op_inputs(cells), storage)
    rate, form, table = cells
    small = [
        rate[:-1],
        np.zeros(CELLS - 1),
        *op_inputs(cells)[2:4],
        np.full((CELLS - 1, STATE), np.nan),
    ]
    on_threads(op.perform, 2)(None, small, storage)
    assert calls == ["marginal_sweep", "sweep_cells", "sweep_cells"]


@needs_two_threads
def test_the_op_runs_in_a_forked_child_after_its_parent_used_two_threads(cells, threaded_op):
    # PyMC's parallel chains are forked on Linux, from a parent that has already run the sweep
    # on its threads: in the child the Op sums the cells on the calling thread
    rate, form, table = cells
    op, calls = threaded_op
    inputs = op_inputs(cells)
    sweep = on_threads(marginal_sweep, 2)
    here = evaluate(sweep, F.POISSON, rate, np.zeros(CELLS), form, table, inputs[4].copy())
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_op_in, args=(op, inputs, queue, calls))
    child.start()
    logp, called = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert called == ["sweep_cells"]
    assert logp.tobytes() == here[0].tobytes()


# A fresh interpreter loads the layer as dpinfer does (the module alone, not dpinfer's imports),
# enters a parallel region, forks a child that enters one too, then enters parallel regions
# from two threads at once, as nutpie's chains do. Exit code 0: every step ran.
LAYER_SCRIPT = """
import importlib.util, multiprocessing, sys, threading
spec = importlib.util.spec_from_file_location("layer", sys.argv[1])
layer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layer)
layer.load_tbb()
import numba, numpy as np

@numba.njit(parallel=True)
def add(x):
    for i in numba.prange(x.size):
        x[i] += i

add(np.zeros(4096))
print(numba.threading_layer(), flush=True)
child = multiprocessing.get_context("fork").Process(target=add, args=(np.zeros(4096),))
child.start()
child.join(60)
if child.exitcode != 0:
    sys.exit(3)
threads = [threading.Thread(target=lambda: [add(np.zeros(4096)) for _ in range(300)])
           for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
sys.exit(4 if any(t.is_alive() for t in threads) else 0)
"""


def run_layer_script(layer: str | None):
    """Run ``LAYER_SCRIPT`` under numba layer ``layer`` (None: the one numba picks)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    env["NUMBA_NUM_THREADS"] = "2"
    if layer is not None:
        env["NUMBA_THREADING_LAYER"] = layer
    command = [sys.executable, "-c", LAYER_SCRIPT, _layer.__file__]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.skipif(not _layer.load_tbb(), reason="TBB is not installed in this environment")
def test_the_layer_dpinfer_loads_is_tbb_and_survives_a_fork_and_two_threads_at_once():
    run = run_layer_script(None)
    assert run.stdout.split()[:1] == ["tbb"], run.stderr[-500:]
    assert run.returncode == 0, run.stderr[-500:]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="GNU OpenMP is Linux's")
@pytest.mark.parametrize("layer", ["omp", "workqueue"])
def test_companion_the_other_layers_stop_the_process(layer):
    # Planted bug: numba's other layers. GNU OpenMP stops the forked child (exit 3 here);
    # workqueue stops the whole process when the two threads enter at once (a signal)
    run = run_layer_script(layer)
    if run.stdout.split()[:1] != [layer]:
        pytest.skip(f"numba cannot load its {layer} layer here")
    assert run.returncode != 0
