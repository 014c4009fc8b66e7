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
"""

from __future__ import annotations

import os
import secrets
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor

import cloudpickle
import numpy as np

from ._rng import chunk_generator

__all__ = ["iter_chunks", "map_chunks"]


#: Tasks a worker process has unpickled, by run key, most recent last.
_TASKS: OrderedDict = OrderedDict()
_TASKS_KEPT = 4


def _run_chunk(key: str, origin: int, blob: bytes, root: np.random.SeedSequence, index: int):
    return _task(key, origin, blob)(index, chunk_generator(root, index))


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
    if in_flight is None:
        in_flight = max(4, 2 * _workers(executor))
    run = (secrets.token_hex(8), os.getpid(), cloudpickle.dumps(task))
    pending: deque = deque()
    index_iter = iter(indices)
    try:
        for i in index_iter:
            pending.append(executor.submit(_run_chunk, *run, root, i))
            if len(pending) >= in_flight:
                break
        while pending:
            result = pending.popleft().result()
            nxt = next(index_iter, None)
            if nxt is not None:
                pending.append(executor.submit(_run_chunk, *run, root, nxt))
            yield result
    finally:
        for future in pending:
            future.cancel()


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
