"""Streaming summaries of every unit's query cells over the draws of the lattice chains.

Each recorded round adds every query cell's deviation from its *center* (its
value at the end of the first chain's tuning) to running sums and squares, and
to a histogram over a window of ``2 * WINDOW + 1`` values around the center
with one bin for each side beyond it; memory does not grow with the number of
draws. Means, sds and highest-density intervals come from these at the end
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
        ends = highest_density(hist, LEVEL * n)
        inside = (ends > 0) & (ends < hist.shape[1] - 1)
        clipped = int((~inside).sum())
        lower = base + np.where(inside[:, 0], ends[:, 0] - WINDOW - 1, np.nan).reshape(base.shape)
        upper = base + np.where(inside[:, 1], ends[:, 1] - WINDOW - 1, np.nan).reshape(base.shape)
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
def highest_density(hist, need):
    """For each row, the shortest run of bins holding at least ``need`` counts: ``(first, last)``.

    The counts are integers, so no interval holds exactly 90% of the draws: a central
    one (from the 5% to the 95% quantile) wastes the tail that an atom at a small count
    leaves empty, and holds about 95% of a block cell's posterior. The shortest
    interval holding at least ``need`` is the highest-density one (ArviZ's default);
    among runs of equal length, the one holding the most counts.
    """
    out = np.empty((hist.shape[0], 2), dtype=np.int64)
    width = hist.shape[1]
    for i in range(hist.shape[0]):
        best_len, best_mass = width + 1, -1
        last, mass = -1, 0
        for first in range(width):
            while last + 1 < width and mass < need:
                last += 1
                mass += hist[i, last]
            if mass < need:
                break
            length = last - first
            if length < best_len or (length == best_len and mass > best_mass):
                best_len, best_mass = length, mass
                out[i, 0], out[i, 1] = first, last
            mass -= hist[i, first]
        if best_mass < 0:  # no draws recorded: both ends beyond the window
            out[i, 0], out[i, 1] = 0, width - 1
    return out
