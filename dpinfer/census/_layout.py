"""A release as the arrays the compiled moves read: one arena per subtree, one above them.

The *parts* of a release are its subtrees: the units of depth 1 (counties,
under a state) with everything below them, each a :class:`CensusRelease` of
its own whose root is the subtree's top (a release of one unit is one part).
:class:`Layout` holds what every part shares (the measured queries, the cells
each detailed cell counts in, the groups of cells that the invariants keep
together); :func:`static_arrays` turns one part into its arena's fixed arrays
(noise laws, paths, invariants), with units and leaves in the part's own order
(by depth then geocode; leaves by geocode).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._lattice import Arena, Tables, fenwick
from ._noise_term import NoiseLaws
from ._release import CensusRelease

__all__ = ["Layout", "Static", "chain_arena", "query_cells", "static_arrays", "top_static"]

#: Largest count or released value the int32 arrays hold.
INT32_LIMIT = 2**31 - 1


class Layout:
    """What the arenas of one release share.

    Parameters
    ----------
    axes : Axes
    query_names : sequence of str
        The measured queries, in the axes' order of queries.
    per_cell : bool
        One noise law per (unit, query cell); else one per (unit, query), when every
        measurement has one variance for all its cells.
    """

    def __init__(self, axes, query_names, *, per_cell: bool):
        self.axes = axes
        self.queries = [axes.query(n) for n in query_names]
        sizes = [q.cells for q in self.queries]
        self.qoff = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.ncell = int(sum(sizes))
        self.cidx = np.stack(
            [off + q.cell_of_detailed for q, off in zip(self.queries, self.qoff, strict=True)],
            axis=1,
        ).astype(np.int32)
        self.per_cell = per_cell
        query_of_cell = np.repeat(np.arange(len(sizes)), sizes)
        #: The column of the law numbers of each query cell, and of each detailed cell's.
        self.law_column = np.arange(self.ncell) if per_cell else query_of_cell
        self.law_col = self.law_column[self.cidx].astype(np.int32)
        self.laws = NoiseLaws()
        self._groups: dict[int, int] = {}

    def groups(self, masks: np.ndarray) -> np.ndarray:
        """Group ids of invariant-axis bitmasks (new masks get new ids, in order)."""
        for m in np.unique(masks).tolist():
            self._groups.setdefault(int(m), len(self._groups))
        return np.array([self._groups[int(m)] for m in masks.tolist()], dtype=np.int32)

    def tables(self, prior: int, pa: np.ndarray, pb: np.ndarray, top_depth: int) -> Tables:
        """Return the shared tables, for every group seen so far."""
        d = self.axes.cells
        grids = np.indices(self.axes.sizes).reshape(len(self.axes.sizes), -1)
        n = max(len(self._groups), 1)
        perm = np.tile(np.arange(d, dtype=np.int32), (n, 1))
        pos = perm.copy()
        gsize = np.full(n, d, dtype=np.int32)
        for mask, g in self._groups.items():
            key = np.zeros(d, dtype=np.int64)
            for a, size in enumerate(self.axes.sizes):
                if mask >> a & 1:
                    key = key * size + grids[a]
            perm[g] = np.argsort(key, kind="stable")
            pos[g, perm[g]] = np.arange(d)
            gsize[g] = d // (int(key.max()) + 1)
        lead = pos - pos % gsize[:, None]
        return Tables(self.cidx, self.law_col, perm, pos, gsize, lead, prior, pa, pb, top_depth)

    def measured(self, part: CensusRelease) -> np.ndarray:
        """``(units, ncell)`` int32: the part's released values (0 where not measured)."""
        y = np.zeros((len(part.units), self.ncell), dtype=np.int32)
        for q, off in zip(self.queries, self.qoff, strict=True):
            meas = part.measurements.get(q.name)
            if meas is not None:
                _check_int32("released values", meas.values)
                y[meas.units, off : off + q.cells] = meas.values
        return y

    def law_numbers(self, part: CensusRelease | None) -> np.ndarray:
        """``(units, columns)`` int32: noise law numbers (0: not measured); see ``per_cell``."""
        units = 0 if part is None else len(part.units)
        law = np.zeros((units, self.ncell if self.per_cell else len(self.queries)), np.int32)
        for j, (q, off) in enumerate(zip(self.queries, self.qoff, strict=True)):
            meas = None if part is None else part.measurements.get(q.name)
            if meas is None:
                continue
            numbers = self.laws.number(meas.variance)
            if self.per_cell:
                law[meas.units, off : off + q.cells] = numbers
            else:
                law[meas.units, j] = numbers[:, 0]
        return law


@dataclass(frozen=True, eq=False)
class Static:
    """A part's fixed arrays (see :class:`dpinfer.census._lattice.Arena`)."""

    law: np.ndarray  # (units, columns) int32 noise law numbers
    intercept: np.ndarray  # their intercepts (what the moves read)
    anc: np.ndarray
    depth: np.ndarray
    leaf_lo: np.ndarray
    leaf_hi: np.ndarray
    deepest: np.ndarray
    group: np.ndarray
    leaves: np.ndarray  # the part's unit index of each leaf, in geocode order
    offset: int  # depth of the part's root in the whole tree

    def arena(self, x: np.ndarray, fen: np.ndarray, r: np.ndarray) -> Arena:
        """Return this part's arena in the chain state ``x``, ``fen``, ``r``."""
        return Arena(
            x, fen, r, self.intercept, self.anc, self.depth, self.leaf_lo, self.leaf_hi,
            self.deepest, self.group,
        )  # fmt: skip


def static_arrays(
    part: CensusRelease, layout: Layout, *, offset: int, top_mask: int = 0, top_deepest: int = -1
) -> Static:
    """Return the fixed arrays of ``part``, whose root sits at depth ``offset`` of the tree.

    ``top_mask`` and ``top_deepest`` are the invariants above the part: the axes they
    keep (a bitmask) and the depth of the deepest (-1: none).
    """
    units = part.units
    leaves = units.leaves[np.argsort(units.geocodes[units.leaves].astype(str), kind="stable")]
    levels = offset + units.levels
    anc = np.full((leaves.size, levels), -1, dtype=np.int32)
    anc[:, :offset] = 0  # the top arena holds one unit per depth above the part: the root
    current = leaves.copy()
    for _ in range(units.levels):
        ok = current >= 0
        anc[np.flatnonzero(ok), offset + units.depth[current[ok]]] = current[ok]
        current = np.where(ok, units.parent[np.maximum(current, 0)], -1)
    leaf_lo = np.zeros(len(units), dtype=np.int32)
    leaf_hi = np.zeros(len(units), dtype=np.int32)
    for t in range(offset, levels):
        col = anc[:, t]
        rows = np.flatnonzero(col >= 0)
        u, first = np.unique(col[rows], return_index=True)
        last = np.unique(col[rows][::-1], return_index=True)[1]
        leaf_lo[u] = rows[first]
        leaf_hi[u] = rows[rows.size - 1 - last] + 1
    inv_depth = np.full(len(units), -1, dtype=np.int64)
    frozen = np.zeros(len(units), dtype=np.int64)
    for name, inv in part.invariants.items():
        inv_depth[inv.units] = offset + units.depth[inv.units]
        frozen[inv.units] |= sum(1 << k for k in part.axes.query(name).kept)
    local = anc[:, offset:]
    on_path = np.where(local >= 0, inv_depth[np.maximum(local, 0)], -1)
    deepest = np.maximum(on_path.max(axis=1), top_deepest).astype(np.int32)
    masks = np.bitwise_or.reduce(np.where(local >= 0, frozen[np.maximum(local, 0)], 0), axis=1)
    depth = (offset + units.depth[leaves]).astype(np.int32)
    groups = layout.groups(masks | top_mask)
    law = layout.law_numbers(part)
    return Static(
        law,
        layout.laws.intercepts[law],
        anc,
        depth,
        leaf_lo,
        leaf_hi,
        deepest,
        groups,
        leaves,
        offset,
    )


def top_static(top: CensusRelease | None, layout: Layout) -> Static:
    """Return the top arena's fixed arrays: the root's noise laws (none without a top)."""
    law = layout.law_numbers(top)
    none = np.zeros(0, dtype=np.int32)
    one = np.zeros(law.shape[0], dtype=np.int32)
    return Static(
        law,
        layout.laws.intercepts[law],
        np.zeros((0, 1), np.int32),
        none,
        one,
        one,
        none,
        none,
        none,
        0,
    )


def query_cells(part: CensusRelease, layout: Layout, detailed_leaves, leaves) -> np.ndarray:
    """``(units, ncell)`` int64: every unit's query cells for leaf tables ``detailed_leaves``."""
    units = part.units
    detailed = np.zeros((len(units), layout.axes.cells), dtype=np.int64)
    detailed[leaves] = detailed_leaves
    for k in range(units.levels - 1, 0, -1):
        lo, hi = units.level_start[k], units.level_start[k + 1]
        np.add.at(detailed, units.parent[lo:hi], detailed[lo:hi])
    return np.concatenate([q.project(detailed) for q in layout.queries], axis=1)


def chain_arena(static: Static, y: np.ndarray, x: np.ndarray, cells: np.ndarray) -> Arena:
    """Return an arena in the state ``x`` (leaf tables), its units' query cells ``cells``."""
    _check_int32("counts", cells)
    x32 = x.astype(np.int32)
    return static.arena(x32, fenwick(x32), (y - cells.astype(np.int32)))


def _check_int32(what: str, values: np.ndarray) -> None:
    if values.size and max(-int(values.min()), int(values.max())) > INT32_LIMIT // 2:
        raise ValueError(
            f"{what} reach {max(-int(values.min()), int(values.max()))}; the lattice sampler "
            f"holds counts and residuals as 32-bit integers (at most {INT32_LIMIT // 2})"
        )
