"""Chunked map over executors: order, determinism, cancellation, executor checks."""

from __future__ import annotations

import tempfile
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
    """Records submissions and cancellations; chunks in ``instant`` finish on submission.

    The others stay pending (as in a busy pool) until cancelled.
    """

    def __init__(self, instant=None):
        self.submitted, self.futures, self.lock = [], [], threading.Lock()
        self.instant = instant

    def submit(self, fn, *args):
        future = Future()
        index = args[-1]
        if self.instant is None or index in self.instant:
            future.set_result(fn(*args))
        with self.lock:
            self.submitted.append(index)
            self.futures.append(future)
        return future


def test_in_flight_bounds_submissions_and_stopping_cancels_the_rest():
    executor = RecordingExecutor(instant={0})
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
    executor = RecordingExecutor()  # every chunk finishes at once
    executor._max_workers = 3
    it = parallel.iter_chunks(_draw, ROOT, executor=executor)
    next(it)
    assert executor.submitted == list(range(7))  # six up front, one more after a result
    it.close()


class CountingExecutor:
    """A thread pool that records how many of its chunks were unfinished at each submission."""

    def __init__(self, workers):
        self.pool = ThreadPoolExecutor(workers)
        self._max_workers = workers
        self.futures, self.unfinished = [], []

    def submit(self, fn, *args):
        self.unfinished.append(1 + sum(not f.done() for f in self.futures))
        future = self.pool.submit(fn, *args)
        self.futures.append(future)
        return future


def _sleepy(i, rng):
    time.sleep(0.01)
    return i


@pytest.mark.parametrize("run", ["iter_chunks", "map_chunks"])
def test_no_more_chunks_than_workers_are_ever_unfinished_on_the_executor(run):
    # A process pool cannot cancel a chunk waiting in its queue: none may wait there.
    executor = CountingExecutor(2)
    with executor.pool:
        if run == "iter_chunks":
            out = list(parallel.iter_chunks(_sleepy, ROOT, executor=executor, stop=12))
        else:
            out = parallel.map_chunks(_sleepy, ROOT, 12, executor=executor)
    assert out == list(range(12))
    assert max(executor.unfinished) == 2
    assert len(executor.futures) == 12


#: Set by chunk 2 to let chunk 0 finish: chunk 2 must start while chunk 0 still runs.
_RELEASE = threading.Event()


def _waits_for_chunk_two(i, rng):
    if i == 0:
        return i, _RELEASE.wait(timeout=30)  # False only if chunk 2 never started meanwhile
    if i == 2:
        _RELEASE.set()
    return i, True


def test_a_free_worker_gets_the_next_chunk_while_an_earlier_one_still_runs():
    # with two workers: chunk 0 runs until chunk 2 starts, so chunk 1's worker must take
    # chunk 2 as soon as it is free, not after chunk 0 is collected
    _RELEASE.clear()
    with ThreadPoolExecutor(2) as pool:
        out = parallel.map_chunks(_waits_for_chunk_two, ROOT, 4, executor=pool)
    assert out == [(0, True), (1, True), (2, True), (3, True)]


#: Steps each chunk of ``_stepping`` ran before it returned or was stopped.
_STEPS: dict = {}
_ONE_RUNS = threading.Event()


def _stepping(i, rng):
    _STEPS[i] = 0
    if i == 0:
        return i
    _ONE_RUNS.set()
    for _ in range(500):
        parallel.check_stopped()  # a safe point
        time.sleep(0.01)
        _STEPS[i] += 1
    return i


def test_leaving_a_run_stops_its_running_chunks_and_removes_the_stop_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _STEPS.clear()
    _ONE_RUNS.clear()
    with ThreadPoolExecutor(2) as pool:
        it = parallel.iter_chunks(_stepping, ROOT, executor=pool, stop=6)
        assert next(it) == 0
        assert _ONE_RUNS.wait(timeout=60)  # chunk 1 or chunk 2 runs (both were submitted)
        it.close()
    # either may start first, and the other then stops before its body; none after them runs
    assert set(_STEPS) in ({0, 1}, {0, 2}, {0, 1, 2})
    assert all(n < 500 for n in _STEPS.values())  # the running chunks stopped part way
    assert list(tmp_path.iterdir()) == []  # the stop file is gone once they are done


def test_check_stopped_outside_a_chunk_does_nothing():
    parallel.check_stopped()
    assert list(parallel.iter_chunks(_draw, ROOT, stop=2))[1][0] == 1
