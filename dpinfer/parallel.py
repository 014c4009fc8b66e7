"""Chunked work over any :class:`concurrent.futures.Executor`.

A task is a function ``task(i, rng) -> result`` run once per chunk ``i``; it
gets the generator derived from the root seed by index (see :mod:`dpinfer._rng`),
so results are identical whether chunks run serially, in a process pool or on
a dask cluster. Tasks are serialised with cloudpickle, so closures and lambdas
work with process pools.

Overheads, kept per run rather than per chunk: the task is pickled once per run; a worker
process unpickles it once and keeps it (by a key of the run) for the run's later chunks;
and each worker gets its next chunk as soon as it finishes one, whichever chunk that was,
with up to twice as many chunks as workers held until they are collected in order.
``benchmarks/parallel.py`` measures the speed-up and the per-chunk costs.

Interrupts: no more chunks than workers are ever on the executor unfinished, so none waits
in its queue (where a process pool cannot cancel it). Stopping a run (Ctrl-C, an error,
leaving the loop) cancels what was not submitted, and tells the chunks already running to
stop: it creates an empty *stop file* (a random name in the temporary folder, created
``O_EXCL | O_NOFOLLOW``, removed once those chunks are done) that a chunk checks before it
starts and at its own safe points (:func:`check_stopped`: between the serial chunks of a
loop inside it, and between the stages of an SMC chain). So ``executor.shutdown()``
returns within about one such step. Workers on other machines (dask) do not see the file;
dask cancels their futures itself. ``benchmarks/interrupt.py`` measures the shutdown after
an interrupt of ``smc_abc`` on a process pool.

Faulty user code on an executor: a chunk that raises an exception the parent process
cannot unpickle (a class defined in the ``__main__`` of a spawned worker) is reported as a
:class:`ChunkError` with the original type, message and traceback; a simulator that draws
from NumPy's global random state in a worker is detected (the state changes across the
chunk) and warned about, since its results are not reproducible from ``rng`` (so is one
run serially, by the outermost serial loop); and
:func:`with_timeout` bounds the wait for each chunk.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import secrets
import tempfile
import threading
import time
import traceback
import warnings
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from concurrent.futures import TimeoutError as FutureTimeout

import cloudpickle
import numpy as np

from ._rng import chunk_generator
from ._user_code import outside_dpinfer
from ._validate import executor as check_executor
from ._validate import positive_finite

__all__ = [
    "ChunkError",
    "ChunkStopped",
    "ChunkTimeoutError",
    "GlobalRandomStateWarning",
    "check_stopped",
    "iter_chunks",
    "map_chunks",
    "with_timeout",
]


class ChunkError(RuntimeError):
    """A chunk raised an exception that cannot travel back from its worker as itself."""


class ChunkStopped(RuntimeError):
    """The run a chunk belongs to was stopped (interrupted, failed, or has what it needs)."""


class ChunkTimeoutError(TimeoutError):
    """A chunk's result did not arrive within the executor's per-chunk timeout."""


class GlobalRandomStateWarning(RuntimeWarning):
    """User code drew from NumPy's global random state inside a chunk (serial or in a worker)."""


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


def with_timeout(executor: Executor, timeout: float) -> _TimedExecutor:
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
    check_executor("executor", executor)
    if executor is None:
        raise ValueError("with_timeout needs an executor (serial runs cannot be timed out)")
    return _TimedExecutor(executor, positive_finite("timeout", timeout))


#: Tasks a worker process has unpickled, by run key, most recent last.
_TASKS: OrderedDict = OrderedDict()
_TASKS_KEPT = 4


def _run_chunk(
    key: str, origin: int, blob: bytes, stop: str, root: np.random.SeedSequence, index: int
):
    """Run chunk ``index`` on the executor; return ``(result, global state was used)``."""
    if os.path.exists(stop):
        raise ChunkStopped(f"chunk {index} was not started: its run was stopped")
    task = _task(key, origin, blob)
    before = _global_state()
    outer = getattr(_CURRENT, "stop", None)
    _CURRENT.stop = stop
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
    finally:
        _CURRENT.stop = outer
    return result, _global_state_changed(before)


#: The stop file of the chunk running in this thread (None outside chunks).
_CURRENT = threading.local()


def check_stopped() -> None:
    """Raise :class:`ChunkStopped` if the run of the chunk running in this thread was stopped.

    A safe point for long chunks: call it between steps (the serial chunks of a
    loop do, and so do SMC chains between stages). Outside a chunk, or serially
    in the submitting process, it does nothing.
    """
    stop = getattr(_CURRENT, "stop", None)
    if stop is not None and os.path.exists(stop):
        raise ChunkStopped("the run this chunk belongs to was stopped")


#: Stop files this process created and has not removed yet (removed at exit at the latest).
_STOP_FILES: set[str] = set()
_STOP_LOCK = threading.Lock()


def _stop_path() -> str:
    return os.path.join(tempfile.gettempdir(), f"dpinfer-stop-{secrets.token_hex(16)}")


def _signal_stop(path: str, running: list) -> None:
    """Create the stop file ``path`` and remove it once the ``running`` futures are done."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        os.close(os.open(path, flags, 0o600))
    except OSError:  # best effort: the running chunks then finish as they would have
        return
    with _STOP_LOCK:
        _STOP_FILES.add(path)
    left = [len(running)]

    def one_done(_future) -> None:
        with _STOP_LOCK:
            left[0] -= 1
            if left[0] == 0 and path in _STOP_FILES:
                _STOP_FILES.discard(path)
                _unlink(path)

    for future in running:
        future.add_done_callback(one_done)


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # unlink never follows a link: it removes the name itself


@atexit.register
def _remove_stop_files(origin: int = os.getpid()) -> None:
    if os.getpid() == origin:  # not in a forked worker that inherited the set
        for path in list(_STOP_FILES):
            _unlink(path)


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

    The caller may stop iterating at any time (or be interrupted, by Ctrl-C for
    instance); chunks not yet started are cancelled. With ``executor=None``
    chunks run serially in this process. ``in_flight`` bounds the chunks
    submitted and not yet collected (default twice the executor's workers, at
    least 4); of these, at most one per worker is unfinished on the executor
    at any time, and a worker that finishes gets the next chunk at once, whatever
    the order in which chunks finish. So no chunk waits in the executor's own
    queue, where a process pool cannot cancel it: after an interrupt, only the
    chunks already running finish, and ``executor.shutdown()`` waits for
    nothing else.
    """
    indices = range(start, stop) if stop is not None else _count(start)
    if executor is None:
        yield from _serial_chunks(task, root, indices)
        return
    _check_executor(executor)
    timeout = getattr(executor, "chunk_timeout", None)
    workers = _workers(executor)
    if in_flight is None:
        in_flight = max(4, 2 * workers)
    run = (secrets.token_hex(8), os.getpid(), cloudpickle.dumps(task), _stop_path())
    window = _Window(
        lambda i: executor.submit(_run_chunk, *run, root, i),
        iter(indices),
        size=in_flight,
        busy=min(in_flight, workers) if workers else in_flight,
    )
    warned = False
    try:
        window.fill()
        while window.pending:
            index, (result, used_global_state) = window.next_result(timeout)
            if used_global_state and not warned:
                warned = True
                _warn_global_state(index)
            yield result
    finally:
        window.stop(run[-1])


def _serial_chunks(task: Callable, root: np.random.SeedSequence, indices) -> Iterator:
    """Run chunks in this thread; warn if one changes NumPy's global random state.

    The warning is the same text from the same line of the caller for every chunk
    and chain of a run, so Python's default filter shows it once.
    """
    warned = False
    for i in indices:
        check_stopped()  # inside a chunk of a stopped run: stop here
        before = None if warned else _global_state()
        result = task(i, chunk_generator(root, i))
        if not warned and _global_state_changed(before):
            warned = True
            _warn_global_state(None)
        yield result


class _Window:
    """Chunks submitted and not yet collected, in index order, with at most ``busy`` unfinished.

    ``size`` bounds the chunks held (finished ones wait here to be collected in
    order); ``busy`` bounds those not yet finished, that is on the executor.
    """

    def __init__(self, submit: Callable, indices: Iterator, *, size: int, busy: int):
        self.submit, self.indices, self.size, self.busy = submit, indices, size, busy
        self.pending: deque = deque()
        self.exhausted = False

    def unfinished(self) -> list:
        return [future for _, future in self.pending if not future.done()]

    def fill(self) -> None:
        """Submit chunks while the window has room and a worker is free."""
        while not self.exhausted and len(self.pending) < self.size:
            if len(self.unfinished()) >= self.busy:
                return
            index = next(self.indices, None)
            if index is None:
                self.exhausted = True
                return
            self.pending.append((index, self.submit(index)))

    def next_result(self, timeout: float | None):
        """Wait for the first chunk, refilling as others finish; return ``(index, result)``."""
        index, head = self.pending[0]
        deadline = None if timeout is None else time.monotonic() + timeout
        while not head.done() and _waitable(self.unfinished()):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            wait(self.unfinished(), timeout=remaining, return_when=FIRST_COMPLETED)
            self.fill()
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        result = _collect(head, index, remaining, timeout)
        self.pending.popleft()
        self.fill()
        return index, result

    def stop(self, path: str) -> None:
        """Cancel the chunks not started; tell the running ones to stop (see the module notes)."""
        running = [f for _, f in self.pending if not f.cancel() and not f.done()]
        if running:
            _signal_stop(path, running)


def _waitable(futures) -> bool:
    """Whether ``concurrent.futures.wait`` applies (executors may return other future types)."""
    return bool(futures) and all(isinstance(f, Future) for f in futures)


def _collect(future, index: int, remaining: float | None, timeout: float | None):
    try:
        return future.result(timeout=remaining)
    except FutureTimeout:
        raise ChunkTimeoutError(
            f"chunk {index} did not finish within the per-chunk timeout of {timeout:g} s "
            "(a hung simulator?); its worker may still be busy, so shut the executor down"
        ) from None


def _warn_global_state(index: int | None) -> None:
    """Warn that chunk ``index`` (None: a chunk run serially) drew from the global state."""
    where, lost = (
        ("a chunk ran", "the same rng= does not give the same results")
        if index is None
        else (
            f"chunk {index} ran in a worker",
            "the results are not reproducible under process or dask executors",
        )
    )
    warnings.warn(
        f"NumPy's global random state changed while {where}: the "
        f"simulator (or prior) draws from np.random.* instead of the rng it is given, so {lost}. "
        "Draw from the rng argument.",
        GlobalRandomStateWarning,
        stacklevel=outside_dpinfer(),
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
