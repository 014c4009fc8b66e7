"""Chunked map over executors: order, determinism, cancellation, executor checks."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from dpinfer import parallel
from dpinfer._rng import chunk_generator

ROOT = np.random.SeedSequence(12345)


def _draw(i, rng):
    return i, rng.random(3)


def _slow_first(i, rng):
    # Earlier chunks finish later, so completion order is the reverse of index order.
    time.sleep(0.02 * (5 - i) if i < 5 else 0)
    return i, rng.integers(0, 2**31, size=2)


def _expected(n, task=_draw, start=0):
    return [task(i, chunk_generator(ROOT, i)) for i in range(start, start + n)]


def _same(a, b):
    return len(a) == len(b) and all(
        x[0] == y[0] and np.array_equal(x[1], y[1]) for x, y in zip(a, b, strict=True)
    )


def test_chunk_generators_match_seed_sequence_spawn():
    children = np.random.SeedSequence(12345).spawn(4)
    for i, child in enumerate(children):
        assert np.array_equal(
            chunk_generator(ROOT, i).random(4), np.random.default_rng(child).random(4)
        )


def test_map_chunks_serial_order_and_determinism():
    first = parallel.map_chunks(_draw, ROOT, 6)
    assert [i for i, _ in first] == list(range(6))
    assert _same(first, parallel.map_chunks(_draw, ROOT, 6))
    assert _same(first, _expected(6))
    other = parallel.map_chunks(_draw, np.random.SeedSequence(54321), 6)
    assert not any(np.array_equal(a[1], b[1]) for a, b in zip(first, other, strict=True))


def test_map_chunks_in_index_order_with_threads_finishing_out_of_order():
    with ThreadPoolExecutor(4) as pool:
        seen = []
        result = parallel.map_chunks(_slow_first, ROOT, 7, executor=pool, on_result=seen.append)
    assert _same(result, _expected(7, _slow_first))
    assert [i for i, _ in seen] == list(range(7))


def test_iter_chunks_in_index_order_with_threads_finishing_out_of_order():
    with ThreadPoolExecutor(3) as pool:
        result = list(parallel.iter_chunks(_slow_first, ROOT, executor=pool, stop=8, in_flight=3))
    assert _same(result, _expected(8, _slow_first))


def test_process_pool_with_a_closure():
    offset = 1000  # captured by the lambda: needs cloudpickle to reach the workers

    def task(i, rng):
        return i + offset, rng.random(3)

    with ProcessPoolExecutor(2) as pool:
        result = parallel.map_chunks(lambda i, rng: task(i, rng), ROOT, 5, executor=pool)
    expected = [(i + offset, chunk_generator(ROOT, i).random(3)) for i in range(5)]
    assert _same(result, expected)


def test_iter_chunks_start_and_stop():
    got = list(parallel.iter_chunks(_draw, ROOT, start=3, stop=6))
    assert _same(got, _expected(3, start=3))
    assert list(parallel.iter_chunks(_draw, ROOT, start=4, stop=4)) == []


def test_iter_chunks_without_stop_is_unbounded_and_lazy():
    calls = []

    def task(i, rng):
        calls.append(i)
        return i

    it = parallel.iter_chunks(task, ROOT)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    assert calls == [0, 1, 2, 3, 4]
    it.close()


class RecordingExecutor:
    """Runs nothing until a result is asked for; records submissions and cancellations."""

    def __init__(self):
        self.submitted, self.futures, self.lock = [], [], threading.Lock()

    def submit(self, fn, *args):
        future = _LazyFuture(fn, args)
        with self.lock:
            self.submitted.append(args[-1])
            self.futures.append(future)
        return future


class _LazyFuture(Future):
    def __init__(self, fn, args):
        super().__init__()
        self._call = (fn, args)

    def result(self, timeout=None):
        if not self.done():
            fn, args = self._call
            self.set_result(fn(*args))
        return super().result(timeout)


def test_in_flight_bounds_submissions_and_stopping_cancels_the_rest():
    executor = RecordingExecutor()
    it = parallel.iter_chunks(_draw, ROOT, executor=executor, in_flight=3)
    first = next(it)
    # Three submitted up front, one more after the first result is taken.
    assert executor.submitted == [0, 1, 2, 3]
    assert first[0] == 0 and np.array_equal(first[1], _expected(1)[0][1])
    it.close()
    assert [f.cancelled() for f in executor.futures] == [False, True, True, True]


def test_executor_without_submit_raises_type_error():
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor"):
        parallel.map_chunks(_draw, ROOT, 2, executor=object())
    with pytest.raises(TypeError, match="got int: 4"):
        next(parallel.iter_chunks(_draw, ROOT, executor=4))


def test_task_errors_propagate():
    def task(i, rng):
        if i == 2:
            raise ZeroDivisionError("chunk 2")
        return i

    with pytest.raises(ZeroDivisionError, match="chunk 2"):
        parallel.map_chunks(task, ROOT, 4)
    with ThreadPoolExecutor(2) as pool, pytest.raises(ZeroDivisionError, match="chunk 2"):
        parallel.map_chunks(task, ROOT, 4, executor=pool)


class _Counting:
    """A stateful task: how many chunks this copy of the task has run."""

    def __init__(self):
        self.calls = 0

    def __call__(self, i, rng):
        self.calls += 1
        return self.calls


def test_a_worker_process_unpickles_the_task_once_per_run():
    with ProcessPoolExecutor(1) as pool:
        first = parallel.map_chunks(_Counting(), ROOT, 5, executor=pool)
        second = parallel.map_chunks(_Counting(), ROOT, 3, executor=pool)
    assert first == [1, 2, 3, 4, 5]  # one copy kept for the run's chunks
    assert second == [1, 2, 3]  # a new run is a new task


def test_threads_get_a_fresh_copy_of_the_task_per_chunk():
    with ThreadPoolExecutor(2) as pool:
        assert parallel.map_chunks(_Counting(), ROOT, 4, executor=pool) == [1, 1, 1, 1]


def test_twice_the_workers_are_kept_in_flight_by_default():
    executor = RecordingExecutor()
    executor._max_workers = 3
    it = parallel.iter_chunks(_draw, ROOT, executor=executor)
    next(it)
    assert executor.submitted == list(range(7))  # six up front, one more after a result
    it.close()
