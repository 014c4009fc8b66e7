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

from dataclasses import dataclass

import numpy as np

from ._release import CensusRelease, Invariants, Measurements
from ._units import Units

__all__ = ["Partition", "ReleaseParts"]


@dataclass(frozen=True, eq=False)
class Partition:
    """Which part each unit of a tree belongs to.

    Attributes
    ----------
    units : Units
    roots : numpy.ndarray
        The unit at the root of each part: depth 1, or the root of a one-unit tree.
    part_of : numpy.ndarray
        Each unit's part (-1: the top).
    members : list of numpy.ndarray
        Each part's units, in the part's own order (by depth, then geocode).
    top : numpy.ndarray
        The units above the parts (the root; none for a one-unit tree).
    local : numpy.ndarray
        Each unit's index within its part (or the top).
    """

    units: Units
    roots: np.ndarray
    part_of: np.ndarray
    members: list
    top: np.ndarray
    local: np.ndarray

    @classmethod
    def of(cls, units: Units) -> Partition:
        """Split ``units`` into the subtrees of the units of depth 1."""
        if units.levels < 2:
            roots = np.array([0], dtype=np.int64)
        else:
            roots = np.arange(units.level_start[1], units.level_start[2], dtype=np.int64)
        part_of = np.full(len(units), -1, dtype=np.int64)
        part_of[roots] = np.arange(roots.size)
        for k in range(2, units.levels):
            lo, hi = units.level_start[k], units.level_start[k + 1]
            part_of[lo:hi] = part_of[units.parent[lo:hi]]
        order = np.argsort(part_of, kind="stable")
        bounds = np.searchsorted(part_of[order], np.arange(-1, roots.size + 1))
        members = [order[bounds[i + 1] : bounds[i + 2]] for i in range(roots.size)]
        top = order[bounds[0] : bounds[1]]
        local = np.empty(len(units), dtype=np.int64)
        for group in [top, *members]:
            local[group] = np.arange(group.size)
        return cls(units, roots, part_of, members, top, local)

    def tree(self, index: int) -> Units:
        """Return the units of part ``index`` (-1: the top) as a tree of their own."""
        units = self.units
        members = self.top if index < 0 else self.members[index]
        parent = units.parent[members]
        inside = parent >= 0
        inside[inside] = self.part_of[parent[inside]] == index
        local_parent = np.where(inside, self.local[np.maximum(parent, 0)], -1)
        depth = units.depth[members] - units.depth[members[0]]
        level_start = np.searchsorted(depth, np.arange(depth[-1] + 2)).astype(np.int64)
        n_children = np.bincount(local_parent[1:], minlength=members.size).astype(np.int64)
        first_child = 1 + np.searchsorted(local_parent[1:], np.arange(members.size))
        return Units(
            units.geocodes[members], local_parent, depth, level_start,
            first_child.astype(np.int64), n_children,
        )  # fmt: skip


class ReleaseParts:
    """The parts of an in-memory release.

    Attributes
    ----------
    axes : Axes
    units : Units
        The whole tree.
    query_names : list of str
        The measured queries.
    uniform : bool
        Whether every measurement has one variance for all its cells.
    partition : Partition
    """

    def __init__(self, release: CensusRelease):
        self.release = release
        self.axes = release.axes
        self.units = release.units
        self.query_names = list(release.measurements)
        self.uniform = all(m.uniform for m in release.measurements.values())
        self.partition = Partition.of(release.units)

    def __len__(self) -> int:
        return self.partition.roots.size

    def part(self, i: int) -> CensusRelease:
        """Return the ``i``-th part as a release of its own."""
        return self._cut(i)

    def top(self) -> CensusRelease | None:
        """Return the units above the parts (the root), or None for a one-unit release."""
        return self._cut(-1) if self.partition.top.size else None

    def _cut(self, index: int) -> CensusRelease:
        p = self.partition
        measured = {}
        for name, meas in self.release.measurements.items():
            rows = np.flatnonzero(p.part_of[meas.units] == index)
            if rows.size:
                measured[name] = Measurements(
                    p.local[meas.units[rows]], meas.values[rows], meas.variance[rows]
                )
        exact = {}
        for name, inv in self.release.invariants.items():
            rows = np.flatnonzero(p.part_of[inv.units] == index)
            if rows.size:
                exact[name] = Invariants(p.local[inv.units[rows]], inv.values[rows])
        return CensusRelease(self.axes, p.tree(index), measured, exact)
