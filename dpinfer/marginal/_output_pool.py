"""Output arrays that an Op fills again once nothing else holds them."""

from __future__ import annotations

import os
import sys
import threading
import weakref

import numpy as np

__all__ = ["OutputPool", "new_set"]


def _references(arrays: tuple[np.ndarray, ...]) -> int:
    """Return the most references any of ``arrays`` has, counted from in here."""
    return max(sys.getrefcount(x) for x in arrays)


#: What :func:`_references` counts for arrays that only their tuple holds.
_ALONE = _references((np.empty(0),))


class OutputPool:
    """Sets of an Op's output arrays, handed out again once no one holds them.

    A large new array costs its page faults as it is first written: at 10**6 cells,
    about 6 ms for the four 8 MB arrays of one :class:`._op.MarginalLogp` evaluation,
    an eighth of it, and they are the part of it that does not spread over threads.
    A set is handed out again only when the pool's own references are the only ones
    to each of its arrays (``sys.getrefcount``): an array that a graph's storage, a
    view, a caller's result or anything else still holds is never written again.

    The pool keeps at most ``sets`` sets, the newest (two serve an Op whose outputs
    PyTensor keeps until its next evaluation, ``allow_gc=False``), and lives as long
    as its owner. Threads may share it; a forked child starts with an empty one, and
    a pickled one arrives empty.
    """

    def __init__(self, *, sets: int = 2):
        self._most = sets
        self._forget()
        _POOLS.add(self)

    def _forget(self) -> None:
        self._sets: list[tuple[np.ndarray, ...]] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {"_most": self._most}

    def __setstate__(self, state: dict) -> None:
        self._most = state["_most"]
        self._forget()
        _POOLS.add(self)

    def take(self, n: int, dtypes: tuple[type, ...]) -> tuple[np.ndarray, ...]:
        """Return vectors of ``n`` entries of ``dtypes``: a free set of the pool, or a new one."""
        with self._lock:
            # the newest set first: the last one put back, whose pages are the warmest
            for k in range(len(self._sets) - 1, -1, -1):
                if _fits(self._sets[k], n, dtypes) and _references(self._sets[k]) == _ALONE:
                    return self._sets.pop(k)
        return new_set(n, dtypes)

    def keep(self, arrays: tuple[np.ndarray, ...]) -> None:
        """Put a set handed out by :meth:`take` back, to be taken once no one holds it."""
        with self._lock:
            self._sets.append(arrays)
            del self._sets[: -self._most]


def new_set(n: int, dtypes: tuple[type, ...]) -> tuple[np.ndarray, ...]:
    """Return new vectors of ``n`` entries of ``dtypes``."""
    return tuple(np.empty(n, dtype=dtype) for dtype in dtypes)


def _fits(arrays: tuple[np.ndarray, ...], n: int, dtypes: tuple[type, ...]) -> bool:
    return all(
        x.shape == (n,) and x.dtype == dtype for x, dtype in zip(arrays, dtypes, strict=True)
    )


_POOLS: weakref.WeakSet[OutputPool] = weakref.WeakSet()


def _forget_all() -> None:
    # a child forked while another thread held a pool's lock would wait on it for ever
    for pool in list(_POOLS):
        pool._forget()


os.register_at_fork(after_in_child=_forget_all)
