"""Numba's threading layer for the marginal sweep: TBB, safe after a fork and in many threads.

Of numba's three layers, GNU OpenMP (``omp`` on Linux) stops a process forked from
one that has used it, as PyMC's parallel chains are on Linux; ``workqueue`` stops the
process when two threads enter parallel regions at once, as nutpie's chains (threads
calling the compiled Op) do; TBB does neither. numba prefers TBB when it can load
it, but pip puts TBB's library in the environment's ``lib`` folder, which the dynamic
loader does not search: :func:`load_tbb` loads it from there by its path, so that
numba, which asks for it by name, finds it already loaded. Importing this module
calls it, and ``import dpinfer`` imports it first: numba picks its layer when it
starts its threads (its first parallel region, or ``numba.set_num_threads``). A
layer chosen with ``NUMBA_THREADING_LAYER`` is left as it is.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["load_tbb"]

#: The name numba's TBB layer asks the loader for (TBB's interface 12).
TBB = "libtbb.so.12"


def load_tbb() -> bool:
    """Load the environment's TBB library (Linux) so numba can use it: whether it is loaded."""
    path = os.path.join(sys.prefix, "lib", TBB)
    if not (sys.platform.startswith("linux") and os.path.isfile(path)):
        return False
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:  # a library for another machine: numba falls back to OpenMP
        return False
    return True


load_tbb()
