"""CPU time of compiling the county model for nutpie, exact (dpinfer) against naive.

Each measurement is a fresh Python process that imports PyMC, nutpie and dpinfer,
builds the county model of ``tables.py`` (discrete Gaussian releases, hierarchical
Poisson rates) and times ``nutpie.compile_pymc_model`` with ``time.process_time``:
PyTensor's rewrites and numba's compiling of the whole log-density graph. numba's
cache holds dpinfer's kernels after the first process, so the figures are medians
over the later processes: what a user meets from their second session on. The
naive model (the release taken as the count) is the baseline.

Usage: ``python benchmarks/nutpie_compile.py [--cells 1000] [--processes 4]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {folder!r})
import nutpie, pymc  # noqa: F401  (imported before timing)
import dpinfer  # noqa: F401
from tables import model, table

built = model({kind!r}, *table({cells}, 0.5))
start = time.process_time()
nutpie.compile_pymc_model(built)
print(time.process_time() - start)
"""


def compile_cpu(kind: str, cells: int) -> float:
    """Return the CPU seconds of one process's ``compile_pymc_model`` of the ``kind`` model."""
    code = CHILD.format(folder=str(Path(__file__).parent), kind=kind, cells=cells)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=4)
    args = parser.parse_args()
    processes = max(2, args.processes)
    medians = {}
    for kind in ("naive", "dpinfer"):
        times = [compile_cpu(kind, args.cells) for _ in range(processes)]
        medians[kind] = statistics.median(times[1:])  # the first may fill numba's cache
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(f"{kind:>8}: compile CPU {medians[kind]:6.2f} s (median of later; all: {shown})")
    print(f"dpinfer / naive: {medians['dpinfer'] / medians['naive']:.2f}x")


if __name__ == "__main__":
    main()
