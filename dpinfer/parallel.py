"""Chunked work over any :class:`concurrent.futures.Executor`.

A task is a function ``task(i, rng) -> result`` run once per chunk ``i``; it
gets the generator derived from the root seed by index (see :mod:`dpinfer._rng`),
so results are identical whether chunks run serially, in a process pool or on
a dask cluster. Tasks are serialised with cloudpickle, so closures and lambdas
work with process pools.

Overheads, kept per run rather than per chunk: the task is pickled once per run; a worker
process unpickles it once and keeps it (by a key of the run) for the run's later chunks;
and twice as many chunks as the executor has workers are kept in flight, so that no worker
waits while the results of another are collected. ``benchmarks/parallel.py`` measures the
speed-up and the per-chunk costs.

Faulty user code on an executor: a chunk that raises an exception the parent process
cannot unpickle (a class defined in the ``__main__`` of a spawned worker) is reported as a
:class:`ChunkError` with the original type, message and traceback; a simulator that draws
from NumPy's global random state in a worker is detected (the state changes across the
chunk) and warned about, since its results are not reproducible from ``rng``; and
:func:`with_timeout` bounds the wait for each chunk.
"""

from __future__ import annotations

import os
import pickle
import secrets
import traceback
import warnings
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from concurrent.futures import TimeoutError as FutureTimeout

import cloudpickle
import numpy as np

from ._rng import chunk_generator

__all__ = [
    "ChunkError",
    "ChunkTimeoutError",
    "GlobalRandomStateWarning",
    "iter_chunks",
    "map_chunks",
    "with_timeout",
]


class ChunkError(RuntimeError):
    """A chunk raised an exception that cannot travel back from its worker as itself."""


class ChunkTimeoutError(TimeoutError):
    """A chunk's result did not arrive within the executor's per-chunk timeout."""


class GlobalRandomStateWarning(RuntimeWarning):
    """User code drew from NumPy's global random state inside a worker."""


class _TimedExecutor:
    """An executor whose chunks must each finish within ``chunk_timeout`` seconds."""

    def __init__(self, executor: Executor, chunk_timeout: float):
        self._executor = executor
        self.chunk_timeout = chunk_timeout

    def submit(self, fn, /, *args, **kwargs):
        return self._executor.submit(fn, *args, **kwargs)

    def __getattr__(self, name):  # _max_workers, _client, shutdown, ...
        return getattr(self._executor, name)

    def __repr__(self) -> str:
        return f"with_timeout({self._executor!r}, {self.chunk_timeout:g})"


def with_timeout(executor: Executor, timeout: float):
    """Return ``executor`` with a per-chunk ``timeout`` (seconds), for a sampler's ``executor=``.

    A chunk whose result has not arrived ``timeout`` seconds after the sampler starts
    waiting for it raises :class:`ChunkTimeoutError` naming the chunk; the chunks not yet
    started are cancelled. A hung chunk keeps its worker busy: shut the pool down (for a
    process pool, ``executor.shutdown(cancel_futures=True)`` and let the worker exit, or
    terminate its processes). Serial runs (``executor=None``) cannot be timed out.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> import numpy as np
    >>> with ThreadPoolExecutor(2) as pool:
    ...     out = map_chunks(lambda i, rng: i, np.random.SeedSequence(0), 3,
    ...                      executor=with_timeout(pool, 60))
    >>> out
    [0, 1, 2]
    """
    from ._validate import executor as check_executor
    from ._validate import positive_finite

    check_executor("executor", executor)
    if executor is None:
        raise ValueError("with_timeout needs an executor (serial runs cannot be timed out)")
    return _TimedExecutor(executor, positive_finite("timeout", timeout))


#: Tasks a worker process has unpickled, by run key, most recent last.
_TASKS: OrderedDict = OrderedDict()
_TASKS_KEPT = 4


def _run_chunk(key: str, origin: int, blob: bytes, root: np.random.SeedSequence, index: int):
    """Run chunk ``index`` on the executor; return ``(result, global state was used)``."""
    task = _task(key, origin, blob)
    before = _global_state()
    try:
        result = task(index, chunk_generator(root, index))
    except Exception as err:
        if os.getpid() == origin or _travels(err):
            raise
        raise ChunkError(
            f"chunk {index} raised {type(err).__module__}.{type(err).__qualname__}: {err}\n"
            "(the exception class cannot be unpickled outside the worker, e.g. because it is "
            "defined in __main__; define it in an importable module to get it back as itself)"
            f"\n--- traceback in the worker ---\n{''.join(traceback.format_exception(err))}"
        ) from None
    return result, _global_state_changed(before)


def _travels(err: BaseException) -> bool:
    """Whether ``err`` survives the trip back to the parent (standard pickle both ways)."""
    try:
        pickle.loads(pickle.dumps(err))
    except Exception:
        return False
    return True


def _global_state():
    return np.random.get_state()  # noqa: NPY002 - reading the legacy state is the point


def _global_state_changed(before) -> bool:
    after = _global_state()
    return before[2] != after[2] or not np.array_equal(before[1], after[1])


def _task(key: str, origin: int, blob: bytes) -> Callable:
    # Threads of the submitting process get a fresh copy per chunk (no shared state between
    # concurrent chunks); a worker process keeps its copy for the run's later chunks.
    if os.getpid() == origin:
        return cloudpickle.loads(blob)
    task = _TASKS.get(key)
    if task is None:
        task = _TASKS[key] = cloudpickle.loads(blob)
        while len(_TASKS) > _TASKS_KEPT:
            _TASKS.popitem(last=False)
    return task


def iter_chunks(
    task: Callable,
    root: np.random.SeedSequence,
    *,
    executor: Executor | None = None,
    start: int = 0,
    stop: int | None = None,
    in_flight: int | None = None,
) -> Iterator:
    """Yield ``task(i, rng_i)`` for chunks ``i = start, start + 1, ...`` in index order.

    The caller may stop iterating at any time; pending chunks are cancelled.
    With ``executor=None`` chunks run serially in this process. ``in_flight``
    bounds the chunks submitted and not yet collected; default twice the
    executor's workers (at least 4).
    """
    indices = range(start, stop) if stop is not None else _count(start)
    if executor is None:
        for i in indices:
            yield task(i, chunk_generator(root, i))
        return
    _check_executor(executor)
    timeout = getattr(executor, "chunk_timeout", None)
    if in_flight is None:
        in_flight = max(4, 2 * _workers(executor))
    run = (secrets.token_hex(8), os.getpid(), cloudpickle.dumps(task))
    pending: deque = deque()
    index_iter = iter(indices)
    warned = False
    try:
        for i in index_iter:
            pending.append((i, executor.submit(_run_chunk, *run, root, i)))
            if len(pending) >= in_flight:
                break
        while pending:
            index, future = pending.popleft()
            result, used_global_state = _collect(future, index, timeout)
            if used_global_state and not warned:
                warned = True
                _warn_global_state(index)
            nxt = next(index_iter, None)
            if nxt is not None:
                pending.append((nxt, executor.submit(_run_chunk, *run, root, nxt)))
            yield result
    finally:
        for _, future in pending:
            future.cancel()


def _collect(future, index: int, timeout: float | None):
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise ChunkTimeoutError(
            f"chunk {index} did not finish within the per-chunk timeout of {timeout:g} s "
            "(a hung simulator?); its worker may still be busy, so shut the executor down"
        ) from None


def _warn_global_state(index: int) -> None:
    warnings.warn(
        f"NumPy's global random state changed while chunk {index} ran in a worker: the "
        "simulator (or prior) draws from np.random.* instead of the rng it is given, so the "
        "results are not reproducible under process or dask executors. Draw from the "
        "rng argument.",
        GlobalRandomStateWarning,
        stacklevel=3,
    )


def map_chunks(
    task: Callable,
    root: np.random.SeedSequence,
    n_chunks: int,
    *,
    executor: Executor | None = None,
    on_result: Callable | None = None,
) -> list:
    """Run ``task`` on chunks ``0 .. n_chunks - 1`` and return the results in order."""
    results = []
    for result in iter_chunks(task, root, executor=executor, stop=n_chunks, in_flight=n_chunks):
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def _count(start: int):
    i = start
    while True:
        yield i
        i += 1


def _workers(executor) -> int:
    """Return the worker count of a concurrent.futures pool or a dask executor (0: unknown)."""
    count = getattr(executor, "_max_workers", None)
    if count is None:
        client = getattr(executor, "_client", None)
        try:
            count = sum(client.nthreads().values()) if client is not None else 0
        except Exception:  # a closed or unreachable cluster: fall back to the default
            count = 0
    return int(count)


def _check_executor(executor) -> None:
    if not callable(getattr(executor, "submit", None)):
        raise TypeError(
            "executor must be a concurrent.futures.Executor (or have a submit method), "
            f"got {type(executor).__name__}: {executor!r}"
        )
