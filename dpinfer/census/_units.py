"""Geographic units named by geocodes, nested by prefix.

A unit's parent is the longest other geocode that is a proper prefix of its
own (census geocodes nest: state ``"01"``, county ``"01001"``, tract
``"01001020100"``, block ``"010010201001000"``). Units are kept sorted by depth
and then by geocode, so that each level's units are contiguous and the children
of one parent are contiguous and in their parents' order: the passes of the
least-squares solver and of the lattice sampler sum children with
``np.add.reduceat``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["Units"]


@dataclass(frozen=True, eq=False)
class Units:
    """The tree of geographic units.

    Attributes
    ----------
    geocodes : numpy.ndarray of str
        Sorted by depth, then geocode.
    parent : numpy.ndarray of int64
        Index of each unit's parent; -1 for the root (unit 0).
    depth : numpy.ndarray of int64
        0 for the root.
    level_start : numpy.ndarray of int64
        Units of depth ``k`` are ``level_start[k]:level_start[k + 1]``.
    first_child, n_children : numpy.ndarray of int64
        The children of unit ``u`` are ``first_child[u] : first_child[u] + n_children[u]``.
    """

    geocodes: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    level_start: np.ndarray
    first_child: np.ndarray
    n_children: np.ndarray

    @classmethod
    def from_geocodes(cls, geocodes: Iterable[str], *, name: str = "geocode") -> Units:
        """Build the tree; raise naming the geocodes that have no parent (except the root)."""
        codes = [str(g) for g in geocodes]
        unique = sorted(set(codes))
        if not unique:
            raise ValueError(f"{name}: a release needs at least one unit, got none")
        parent_code = _parents(unique)
        orphans = [g for g in unique if parent_code[g] is None]
        if len(orphans) > 1:
            root = min(orphans, key=lambda g: (len(g), g))
            others = [g for g in orphans if g != root][:5]
            raise ValueError(
                f"{name}: {len(orphans) - 1} geocode(s) have no parent among the units (no "
                f"other geocode is a proper prefix of them), e.g. {others}; the only unit "
                f"without a parent must be the root (here {root!r}?)"
            )
        depth: dict[str, int] = {}
        for g in sorted(unique, key=len):
            p = parent_code[g]
            depth[g] = 0 if p is None else depth[p] + 1
        order = sorted(unique, key=lambda g: (depth[g], g))
        index = {g: i for i, g in enumerate(order)}
        parent = np.array(
            [-1 if parent_code[g] is None else index[parent_code[g]] for g in order],
            dtype=np.int64,
        )
        depths = np.array([depth[g] for g in order], dtype=np.int64)
        level_start = np.searchsorted(depths, np.arange(depths[-1] + 2)).astype(np.int64)
        n_children = np.bincount(parent[1:], minlength=len(order)).astype(np.int64)
        # children are sorted by their parents' order (see the module docstring), so
        # parent[1:] is non-decreasing and each parent's children start where it first appears
        first_child = 1 + np.searchsorted(parent[1:], np.arange(len(order))).astype(np.int64)
        geos = np.array(order, dtype=object)
        return cls(geos, parent, depths, level_start, first_child, n_children)

    def __len__(self) -> int:
        return len(self.geocodes)

    @property
    def levels(self) -> int:
        """Number of depths (1 for a lone root)."""
        return len(self.level_start) - 1

    @property
    def is_leaf(self) -> np.ndarray:
        """Whether each unit has no children."""
        return self.n_children == 0

    @property
    def leaves(self) -> np.ndarray:
        """Indices of the leaf units."""
        return np.flatnonzero(self.n_children == 0)

    def index(self, geocodes: ArrayLike) -> np.ndarray:
        """Return the indices of ``geocodes``; raise naming the first unknown ones."""
        codes = np.atleast_1d(np.asarray(geocodes, dtype=object)).astype(str)
        found = pd.Index(self.geocodes.astype(str)).get_indexer(codes)
        if (found < 0).any():
            raise KeyError(f"unknown geocode(s) {codes[found < 0][:5].tolist()}")
        return found.astype(np.int64)

    def leaf_ancestors(self) -> np.ndarray:
        """``(n_leaves, levels)``: the path of each leaf to the root, the leaf first, -1 padded."""
        leaves = self.leaves
        out = np.full((leaves.size, self.levels), -1, dtype=np.int64)
        current = leaves.copy()
        for k in range(self.levels):
            out[:, k] = current
            current = np.where(current >= 0, self.parent[np.maximum(current, 0)], -1)
            current[out[:, k] < 0] = -1
        return out

    def subtree_of(self, top: int) -> np.ndarray:
        """Return the indices of ``top`` and every unit below it, sorted."""
        found = [np.array([top])]
        frontier = np.array([top])
        while frontier.size:
            kids = np.concatenate(
                [
                    np.arange(self.first_child[u], self.first_child[u] + self.n_children[u])
                    for u in frontier
                ]
            )
            if kids.size:
                found.append(kids)
            frontier = kids
        return np.sort(np.concatenate(found))


def _parents(unique: list[str]) -> dict:
    """Map each geocode to the longest other geocode that is a proper prefix of it (or None)."""
    present = set(unique)
    lengths = sorted({len(g) for g in unique}, reverse=True)
    out = {}
    for g in unique:
        out[g] = next((g[:k] for k in lengths if k < len(g) and g[:k] in present), None)
    return out
