"""The detailed histogram's axes and the marginal queries measured on it.

A release counts people (or housing units) of every geographic unit in a
*detailed histogram*: a table with named axes (``hhgq 8 x votingage 2 x
hispanic 2 x cenrace 63`` for the PL94 persons file), flattened row-major. A
*query* is a marginal of it: the axes it keeps, the others summed. Its name is
``"total"`` (no axis kept) or the kept axes joined by ``" * "`` in the axes'
order (``"votingage * hispanic"``); its cells are row-major over the kept axes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["Axes", "Query"]

TOTAL = "total"
SEPARATOR = " * "


@dataclass(frozen=True)
class Axes:
    """Names and sizes of the detailed histogram's axes, in histogram order.

    Examples
    --------
    >>> axes = Axes({"votingage": 2, "hispanic": 2})
    >>> axes.cells, axes.query("hispanic").cells
    (4, 2)
    >>> axes.query("hispanic").cell_of_detailed.tolist()  # detailed cell -> query cell
    [0, 1, 0, 1]
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    def __init__(self, sizes: Mapping[str, int] | Axes) -> None:
        items = list(dict(sizes).items()) if not isinstance(sizes, Axes) else list(sizes.items())
        if not items:
            raise ValueError("axes must name at least one axis, got none")
        for name, size in items:
            if not isinstance(name, str) or not name or SEPARATOR.strip() in name:
                raise ValueError(
                    f"axes: axis names must be non-empty text without '*', got {name!r}"
                )
            if name == TOTAL:
                raise ValueError(f"axes: {TOTAL!r} is the name of the total query, not an axis")
            if isinstance(size, bool) or not float(size).is_integer() or not size >= 1:
                raise ValueError(
                    f"axes: the size of axis {name!r} must be an integer >= 1, got {size!r}"
                )
        object.__setattr__(self, "names", tuple(n for n, _ in items))
        object.__setattr__(self, "sizes", tuple(int(s) for _, s in items))

    def items(self) -> Iterator[tuple[str, int]]:
        """``(name, size)`` pairs in histogram order."""
        return zip(self.names, self.sizes, strict=True)

    @property
    def cells(self) -> int:
        """Number of detailed cells."""
        return math.prod(self.sizes)

    def query(self, name: str) -> Query:
        """Return the query called ``name`` (``"total"`` or kept axes joined by ``" * "``)."""
        if not isinstance(name, str):
            raise TypeError(f"query must be a name (text), got {name!r}")
        if name.strip() == TOTAL:
            return Query(self, ())
        parts = [p.strip() for p in name.split("*")]
        unknown = [p for p in parts if p not in self.names]
        if unknown or len(set(parts)) != len(parts):
            raise ValueError(
                f"query {name!r} does not match the axes {list(self.names)}: a query is "
                f"{TOTAL!r} or kept axes joined by ' * ', each named once"
            )
        kept = tuple(self.names.index(p) for p in parts)
        if list(kept) != sorted(kept):
            order = SEPARATOR.join(self.names[k] for k in sorted(kept))
            raise ValueError(
                f"query {name!r} names its axes out of the histogram's order: {order!r}"
            )
        return Query(self, kept)

    def every_query(self) -> list[Query]:
        """Every marginal, from the total to the detailed cells."""
        axes = range(len(self.names))
        return [
            Query(self, kept)
            for r in range(len(self.names) + 1)
            for kept in itertools.combinations(axes, r)
        ]


@dataclass(frozen=True)
class Query:
    """A marginal of the detailed histogram: the axes it keeps (indices, ascending)."""

    axes: Axes
    kept: tuple[int, ...]

    @property
    def name(self) -> str:
        """``"total"`` or the kept axes joined by ``" * "``."""
        return SEPARATOR.join(self.axes.names[k] for k in self.kept) if self.kept else TOTAL

    @property
    def shape(self) -> tuple[int, ...]:
        """Sizes of the kept axes."""
        return tuple(self.axes.sizes[k] for k in self.kept)

    @property
    def cells(self) -> int:
        """Number of query cells."""
        return math.prod(self.shape)

    @property
    def summed(self) -> tuple[int, ...]:
        """Indices of the axes the query sums over."""
        return tuple(a for a in range(len(self.axes.sizes)) if a not in self.kept)

    @property
    def summed_size(self) -> int:
        """Number of detailed cells in each query cell."""
        return math.prod(self.axes.sizes[a] for a in self.summed)

    @property
    def cell_of_detailed(self) -> np.ndarray:
        """The query cell of each detailed cell, shape ``(axes.cells,)``."""
        index = np.arange(self.axes.cells).reshape(self.axes.sizes)
        grids = np.unravel_index(index, self.axes.sizes)
        out = np.zeros(self.axes.sizes, dtype=np.int64)
        for k in self.kept:
            out = out * self.axes.sizes[k] + grids[k]
        return out.reshape(-1)

    @property
    def design(self) -> np.ndarray:
        """``(cells, axes.cells)`` of 0 and 1: the detailed cells each query cell sums."""
        return (self.cell_of_detailed[None, :] == np.arange(self.cells)[:, None]).astype(float)

    def project(self, detailed: np.ndarray) -> np.ndarray:
        """Sum ``detailed`` (``(..., axes.cells)``) to this query's cells (``(..., cells)``)."""
        arr = np.asarray(detailed)
        lead = arr.shape[:-1]
        full = arr.reshape((*lead, *self.axes.sizes))
        summed = tuple(len(lead) + a for a in self.summed)
        return full.sum(axis=summed).reshape((*lead, self.cells))

    def refines(self, other: Query) -> bool:
        """Whether this query's cells determine ``other``'s (it keeps all of its axes)."""
        return set(other.kept) <= set(self.kept)

    def coarsen(self, values: np.ndarray, other: Query) -> np.ndarray:
        """Sum this query's cell ``values`` (``(..., cells)``) to the cells of ``other``."""
        arr = np.asarray(values)
        lead = arr.shape[:-1]
        full = arr.reshape((*lead, *self.shape))
        dropped = tuple(len(lead) + i for i, k in enumerate(self.kept) if k not in other.kept)
        return full.sum(axis=dropped).reshape((*lead, other.cells))

    def __repr__(self) -> str:
        return f"Query({self.name!r})"
