"""Measuring helpers shared by the benchmarks (not a benchmark itself)."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable


def traced(fn: Callable, *args, **kwargs) -> tuple[object, int]:
    """``fn(*args, **kwargs)`` under ``tracemalloc``: its result and the peak traced bytes.

    Tracing slows numpy, so time a run separately from this one.
    """
    tracemalloc.start()
    try:
        out = fn(*args, **kwargs)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def cpu_timed(fn: Callable, *args, **kwargs) -> tuple[object, float, float]:
    """``fn(*args, **kwargs)``: its result, CPU seconds of this process, and wall seconds."""
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.process_time() - start_cpu, time.perf_counter() - start_wall
