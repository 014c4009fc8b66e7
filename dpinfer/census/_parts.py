"""A release seen part by part: its subtrees, and the units above them.

A *part* is a unit of depth 1 (a county, under a state) with every unit below
it, as a :class:`CensusRelease` of its own (its root the county); the *top* is
the root with its own measurements and invariants. A release of one unit is
one part and has no top. Given the parts' detailed counts the parts are
independent, so the sampler and the least-squares passes go part by part;
:class:`ReleaseParts` cuts an in-memory release, and
:class:`dpinfer.census.StreamedRelease` reads a release folder one part at a time.
"""

from __future__ import annotations

import numpy as np

from ._release import CensusRelease, Invariants, Measurements
from ._units import Units

__all__ = ["ReleaseParts", "part_roots"]


def part_roots(units: Units) -> np.ndarray:
    """Return the units whose subtrees are the parts: depth 1 (the root if it is alone)."""
    if units.levels < 2:
        return np.array([0], dtype=np.int64)
    return np.arange(units.level_start[1], units.level_start[2], dtype=np.int64)


class ReleaseParts:
    """The parts of an in-memory release.

    Attributes
    ----------
    axes : Axes
    units : Units
        The whole tree.
    query_names : list of str
        The measured queries.
    roots : numpy.ndarray
        The unit at the root of each part.
    part_units : list of numpy.ndarray
        Each part's units (indices into ``units``), in the part's own order.
    uniform : bool
        Whether every measurement has one variance for all its cells.
    """

    def __init__(self, release: CensusRelease):
        self.release = release
        self.axes = release.axes
        self.units = units = release.units
        self.query_names = list(release.measurements)
        self.uniform = all(m.uniform for m in release.measurements.values())
        self.roots = part_roots(units)
        part_of = np.full(len(units), -1, dtype=np.int64)
        part_of[self.roots] = np.arange(self.roots.size)
        for k in range(2, units.levels):
            lo, hi = units.level_start[k], units.level_start[k + 1]
            part_of[lo:hi] = part_of[units.parent[lo:hi]]
        order = np.argsort(part_of, kind="stable")
        bounds = np.searchsorted(part_of[order], np.arange(-1, self.roots.size + 1))
        self._part_of = part_of
        self.part_units = [order[bounds[i + 1] : bounds[i + 2]] for i in range(self.roots.size)]
        self.top_units = order[bounds[0] : bounds[1]]
        self._local = np.empty(len(units), dtype=np.int64)
        for members in [self.top_units, *self.part_units]:
            self._local[members] = np.arange(members.size)

    def __len__(self) -> int:
        return self.roots.size

    def part(self, i: int) -> CensusRelease:
        """Return the ``i``-th part as a release of its own."""
        return self._cut(self.part_units[i], i)

    def top(self) -> CensusRelease | None:
        """Return the units above the parts (the root), or None for a one-unit release."""
        return self._cut(self.top_units, -1) if self.top_units.size else None

    def _cut(self, members: np.ndarray, index: int) -> CensusRelease:
        tree = Units.from_geocodes(self.units.geocodes[members])
        measured = {}
        for name, meas in self.release.measurements.items():
            rows = np.flatnonzero(self._part_of[meas.units] == index)
            if rows.size:
                measured[name] = Measurements(
                    self._local[meas.units[rows]], meas.values[rows], meas.variance[rows]
                )
        exact = {}
        for name, inv in self.release.invariants.items():
            rows = np.flatnonzero(self._part_of[inv.units] == index)
            if rows.size:
                exact[name] = Invariants(self._local[inv.units[rows]], inv.values[rows])
        return CensusRelease(self.axes, tree, measured, exact)
