"""Dynamic programming over the runs of a sparse vector technique that redraws its threshold.

With the threshold redrawn after each positive, an output sequence splits into
runs (negatives then a positive, each with its own threshold draw, and a final
run of negatives), and its log-probability, or log-ratio between two streams,
is a sum over its runs. The best (or total) over all output sequences is then a
dynamic program over the positions of the positives.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["best_runs", "runs_log_probability"]


def best_runs(pos, tail, c: int, halts: bool, reduce=None):
    """Best (or, with ``reduce=logsumexp``, total) of the run sums over every output sequence.

    ``score[n, j]``: outputs whose ``n + 1``-th positive is at ``j``. Without halting the
    count of positives does not matter and one level is kept.
    Returns (value, positions of the positives of the best output, halted).
    """
    m = tail.size - 1
    levels = c if halts else 1
    score = np.full((levels, m), -np.inf)
    came_from = np.full((levels, m), -1)
    score[0] = pos[0]
    for j in range(1, m):
        for n in range(levels):
            if n == 0 and halts:
                continue  # the first positive: nothing before it
            # the previous positive at i < j, then negatives to j - 1 and a positive at j
            cand = score[max(n - 1, 0), :j] + pos[1 : j + 1, j]
            if reduce is not None:
                score[n, j] = np.logaddexp(score[n, j], reduce(cand))
            elif cand.max() > score[n, j]:
                score[n, j], came_from[n, j] = cand.max(), int(np.argmax(cand))
    # finals: no positive at all; the c-th positive (halted); or fewer, then negatives to the end
    finals = [(tail[0], -1, 0, False)]
    for n in range(levels):
        halted = halts and n == c - 1
        for j in range(m):
            finals.append((score[n, j] + (0.0 if halted else tail[j + 1]), j, n, halted))
    if reduce is not None:
        return float(reduce(np.array([f[0] for f in finals]))), [], False
    value, j, n, halted = max(finals, key=lambda f: f[0])
    positives = []
    while j >= 0:
        positives.append(j)
        j, n = came_from[n, j], (n - 1 if halts else 0)
    return float(value), positives[::-1], halted


def runs_log_probability(pos, tail, positives: list[int], halted: bool) -> float:
    """Log-probability of the output with these positives, from the run tables."""
    starts = [0, *(j + 1 for j in positives)][: len(positives)]
    total = math.fsum(pos[i, j] for i, j in zip(starts, positives, strict=True))
    return total if halted else total + tail[positives[-1] + 1 if positives else 0]
