"""Compiled kernels where no cache folder is writable: compiled in memory, with one warning.

dpinfer's kernels are compiled by numba with ``cache=True``: the machine code is kept
in the package's ``__pycache__`` or in numba's user cache folder and reused by later
processes. Where neither is writable (a read-only installation and no writable home,
with ``NUMBA_CACHE_DIR`` unset), numba refuses to decorate such a function ("cannot
cache function ...: no locator available"), so ``import dpinfer`` failed. :func:`install`
makes numba compile dpinfer's functions (and only those) without the cache instead, and
warns once. This module is imported first by ``dpinfer/__init__.py`` and installs it,
before any kernel module is imported, so it covers every ``cache=True`` function of
``dpinfer`` and ``dpinfer.models``.
"""

from __future__ import annotations

import threading
import warnings

from numba.core import dispatcher

__all__ = ["KernelCacheWarning", "install"]

_PACKAGE = __name__.partition(".")[0]
_LOCK = threading.Lock()
_WARNED = [False]


class KernelCacheWarning(RuntimeWarning):
    """No cache folder is writable: dpinfer's kernels are compiled anew in each process."""


def install() -> None:
    """Let dpinfer's ``cache=True`` functions compile without a cache where none is writable."""
    original = dispatcher.Dispatcher.enable_caching
    if getattr(original, "_dpinfer_fallback", False):
        return

    def enable_caching(self):
        try:
            original(self)
        except RuntimeError as err:
            if "no locator available" not in str(err) or not _ours(self.py_func):
                raise
            _warn_once()  # the dispatcher keeps its NullCache: it compiles in memory

    setattr(enable_caching, "_dpinfer_fallback", True)  # read with getattr above
    dispatcher.Dispatcher.enable_caching = enable_caching


def _ours(py_func) -> bool:
    return (getattr(py_func, "__module__", None) or "").partition(".")[0] == _PACKAGE


def _warn_once() -> None:
    with _LOCK:
        if _WARNED[0]:
            return
        _WARNED[0] = True
    warnings.warn(
        "numba cannot cache dpinfer's compiled kernels: neither the package's __pycache__ "
        "folders nor numba's user cache folder is writable (and NUMBA_CACHE_DIR is not set). "
        "They are compiled in memory instead, anew in each process (a few seconds the first "
        "time each runs); set NUMBA_CACHE_DIR to a writable folder to keep them.",
        KernelCacheWarning,
        stacklevel=2,
    )


install()
