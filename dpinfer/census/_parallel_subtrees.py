"""The subtree passes of a round on an executor (dask, a process pool).

Each subtree's pass reads and writes only its own leaves and the units below
its root, so each runs on a copy of its slice and the results are written back
in order: the same tables, seed for seed, as the serial run.
"""

from __future__ import annotations

import numpy as np

__all__ = ["run_subtrees"]


def run_subtrees(problem, x, cur, per_leaf, kind, pa, pb, seeds, executor, subtree_pass):
    """Run ``subtree_pass`` for every subtree on ``executor``; update ``x`` and ``cur``."""
    futures = []
    for i, (lo, hi) in enumerate(problem.subtrees):
        futures.append(
            executor.submit(
                _one,
                problem,
                x[lo:hi].copy(),
                cur.copy(),
                int(lo),
                int(hi),
                per_leaf,
                kind,
                pa,
                pb,
                seeds[i],
                subtree_pass,
            )  # fmt: skip
        )
    counts = np.zeros(2, dtype=np.int64)
    ncell = problem.ncell
    for (lo, hi), future in zip(problem.subtrees, futures, strict=True):
        x_part, cur_part, units, part_counts = future.result()
        x[lo:hi] = x_part
        cells = cur.reshape(-1, ncell)
        cells[units] = cur_part.reshape(-1, ncell)[units]
        counts += part_counts
    return counts


def _one(problem, x_part, cur, lo, hi, per_leaf, kind, pa, pb, seed, subtree_pass):
    x = np.zeros((problem.leaves.size, x_part.shape[1]), dtype=x_part.dtype)
    x[lo:hi] = x_part
    counts = subtree_pass(problem, x, cur, lo, hi, per_leaf, kind, pa, pb, seed)
    below = np.unique(problem.anc[lo:hi][problem.anc[lo:hi] >= 0])
    top_depth = 1 if problem.anc.shape[1] > 2 else 0
    units = below[problem.release.units.depth[below] > top_depth]
    return x[lo:hi], cur, units, counts
