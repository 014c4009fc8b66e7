"""Streaming summaries of every unit's query cells over the draws of the lattice chains.

Each recorded round adds every query cell's deviation from its *center* (its
value at the end of the first chain's tuning) to running sums and squares, and
to a histogram over a window of ``2 * WINDOW + 1`` values around the center
with one bin for each side beyond it; memory does not grow with the number of
draws. Means, sds and central (mid-quantile) intervals come from these at the end
(:func:`finish`); an interval end that falls beyond its window is NaN (counted
as clipped). The chains' residuals ``r = released - current`` are recorded as
``center - r``, the deviation of the current value.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["Summary", "finish", "query_frame", "record", "summary_rows"]

#: Half-width of the histogram window of each cell's streaming summary.
WINDOW = 24
#: Interval level of the summaries: each interval holds at least this share of the draws.
LEVEL = 0.90


class Summary:
    """Running sums of one arena's cells (``center`` is the residuals at the reference round)."""

    def __init__(self, center: np.ndarray, *, intervals: bool, recorded: int):
        self.center = center.copy()
        self.sums = np.zeros(center.shape)
        self.sumsq = np.zeros(center.shape)
        dtype = np.uint16 if recorded < 2**16 else np.uint32
        self.hist = np.zeros((*center.shape, 2 * WINDOW + 3 if intervals else 0), dtype=dtype)

    def add(self, r: np.ndarray) -> None:
        """Record the residuals ``r`` of one round."""
        record(r, self.center, self.sums, self.sumsq, self.hist)


@numba.njit(cache=True)
def record(r, center, sums, sumsq, hist):
    """Add ``center - r`` to the running sums and the window histograms (``(units, cells)``)."""
    width = hist.shape[2]
    for u in range(r.shape[0]):
        for i in range(r.shape[1]):
            v = center[u, i] - r[u, i]
            sums[u, i] += v
            sumsq[u, i] += float(v) * float(v)
            if width:
                b = min(max(v + WINDOW + 1, 0), width - 1)
                hist[u, i, b] += 1


def finish(summary: Summary, y: np.ndarray, n: int, cells=slice(None)):
    """Mean, sd, lower and upper (``(units, cells)`` each) of the current values, and clipped.

    ``y`` is the released values (``current = y - r``), ``n`` the draws recorded;
    ``cells`` selects query cells (columns).
    """
    base = (y[:, cells] - summary.center[:, cells]).astype(float)
    mean_dev = summary.sums[:, cells] / n
    var = summary.sumsq[:, cells] / n - mean_dev * mean_dev
    var = np.maximum(var, 0.0) * n / max(n - 1, 1)
    lower = upper = np.broadcast_to(np.nan, base.shape)  # without histograms: no intervals
    clipped = 0
    if summary.hist.shape[-1]:
        hist = summary.hist[:, cells].reshape(-1, summary.hist.shape[-1])
        ends = central_interval(hist, LEVEL) - (WINDOW + 1)
        clipped = int(np.isnan(ends).sum())
        lower = base + ends[:, 0].reshape(base.shape)
        upper = base + ends[:, 1].reshape(base.shape)
    return base + mean_dev, np.sqrt(var), lower, upper, clipped


def query_frame(geocodes, name: str, estimate, sd, lower, upper):
    """Rows ``geocode, query, cell, estimate, sd, lower, upper`` of one query's cells.

    The statistics are ``(units, cells)``; ``geocodes`` name the units.
    """
    import pandas as pd

    unit, cell = np.indices(estimate.shape).reshape(2, -1)
    return pd.DataFrame(
        {
            "geocode": pd.Categorical.from_codes(unit, categories=pd.Index(geocodes)),
            "query": name,
            "cell": cell,
            "estimate": estimate.ravel(),
            "sd": sd.ravel(),
            "lower": lower.ravel(),
            "upper": upper.ravel(),
        }
    )


def summary_rows(geocodes, layout, summary: Summary, y: np.ndarray, n: int, *, rows: int):
    """Yield the rows of every query's cells, at most about ``rows`` at a time, and clipped.

    Yields ``(frame, clipped)`` pairs; one query's statistics are in memory at a time.
    """
    for q, off in zip(layout.queries, layout.qoff, strict=True):
        *stats, clipped = finish(summary, y, n, slice(off, off + q.cells))
        step = max(1, rows // q.cells)
        for lo in range(0, len(geocodes), step):
            piece = [s[lo : lo + step] for s in stats]
            yield query_frame(geocodes[lo : lo + step], q.name, *piece), clipped if lo == 0 else 0


@numba.njit(cache=True)
def central_interval(hist, level):
    """Each row's central ``level`` interval, in bin coordinates (NaN where it leaves the window).

    Counts are integers, so no interval of whole values holds exactly ``level`` of the
    draws: the one from the 5% to the 95% quantile holds about 95% of a block cell's
    posterior. These are the mid-quantiles instead: the quantiles of the count with
    each value's draws spread evenly over its unit bin ``[v - 1/2, v + 1/2]``, so that
    exactly ``(1 - level) / 2`` of the draws lie below the lower end and as many above
    the upper one. The ends are real numbers; an integer inside holds at least half of
    its bin's draws within the interval. An end that falls in a bin beyond the window
    (the first or last), or a row without draws, is NaN.
    """
    out = np.full((hist.shape[0], 2), np.nan)
    width = hist.shape[1]
    for i in range(hist.shape[0]):
        total = 0.0
        for j in range(width):
            total += hist[i, j]
        if total == 0:
            continue
        for end, share in enumerate(((1 - level) / 2, (1 + level) / 2)):
            need, below = share * total, 0.0
            for j in range(width):
                if below + hist[i, j] >= need:  # hist[i, j] > 0: the quantile is in bin j
                    if 0 < j < width - 1:
                        out[i, end] = j - 0.5 + (need - below) / hist[i, j]
                    break
                below += hist[i, j]
    return out
