"""Chunked work over any :class:`concurrent.futures.Executor`.

A task is a function ``task(i, rng) -> result`` run once per chunk ``i``; it
gets the generator derived from the root seed by index (see :mod:`dpinfer._rng`),
so results are identical whether chunks run serially, in a process pool or on
a dask cluster. Tasks are serialised with cloudpickle, so closures and lambdas
work with process pools.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor

import cloudpickle
import numpy as np

from ._rng import chunk_generator

__all__ = ["iter_chunks", "map_chunks"]


def _run_chunk(blob: bytes, root: np.random.SeedSequence, index: int):
    task = cloudpickle.loads(blob)
    return task(index, chunk_generator(root, index))


def iter_chunks(
    task: Callable,
    root: np.random.SeedSequence,
    *,
    executor: Executor | None = None,
    start: int = 0,
    stop: int | None = None,
    in_flight: int = 4,
) -> Iterator:
    """Yield ``task(i, rng_i)`` for chunks ``i = start, start + 1, ...`` in index order.

    The caller may stop iterating at any time; pending chunks are cancelled.
    With ``executor=None`` chunks run serially in this process.
    """
    indices = range(start, stop) if stop is not None else _count(start)
    if executor is None:
        for i in indices:
            yield task(i, chunk_generator(root, i))
        return
    _check_executor(executor)
    blob = cloudpickle.dumps(task)
    pending: deque = deque()
    index_iter = iter(indices)
    try:
        for i in index_iter:
            pending.append(executor.submit(_run_chunk, blob, root, i))
            if len(pending) >= in_flight:
                break
        while pending:
            result = pending.popleft().result()
            nxt = next(index_iter, None)
            if nxt is not None:
                pending.append(executor.submit(_run_chunk, blob, root, nxt))
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


def _check_executor(executor) -> None:
    if not callable(getattr(executor, "submit", None)):
        raise TypeError(
            "executor must be a concurrent.futures.Executor (or have a submit method), "
            f"got {type(executor).__name__}: {executor!r}"
        )
