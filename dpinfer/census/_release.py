"""A release of noisy marginal queries over a tree of geographic units, with invariants.

:class:`CensusRelease` holds what a census-shaped release publishes: the
detailed histogram's axes, the units (geocodes nested by prefix), for each
query the units it was measured at with every cell's noisy integer value and
variance, and the invariants (query cells published exactly). It is built from
rows (:meth:`CensusRelease.from_rows`), checked row by row, and read or written
by :mod:`dpinfer.census._folder` and :mod:`dpinfer.census._nmf`.

The noise of a measured cell is discrete Gaussian (the Census Bureau's
mechanism): ``variance`` is its parameter ``sigma**2`` as the files publish
it (for ``sigma >= 1`` the noise's variance equals it to within ``1e-8``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._queries import Axes, Query
from ._units import Units

__all__ = ["CensusRelease", "Invariants", "Measurements"]


@dataclass(frozen=True, eq=False)
class Measurements:
    """One query's noisy measurements: the units measured and every cell's value and variance.

    ``variance`` is ``inf`` (and ``values`` 0) for a cell that was not measured.
    """

    units: np.ndarray
    values: np.ndarray
    variance: np.ndarray

    @property
    def uniform(self) -> bool:
        """Whether every measured unit has one variance for all the query's cells."""
        return bool(np.all(self.variance == self.variance[:, :1]))


@dataclass(frozen=True, eq=False)
class Invariants:
    """One query's exact values: the units where every cell is published without noise."""

    units: np.ndarray
    values: np.ndarray


@dataclass(frozen=True, eq=False)
class CensusRelease:
    """Noisy marginal queries of a detailed histogram at every unit of a geographic tree.

    Attributes
    ----------
    axes : Axes
        The detailed histogram's axes.
    units : Units
        The geographic tree (sorted by depth, then geocode).
    measurements : dict of str to Measurements
        By query name, in the axes' order of queries.
    invariants : dict of str to Invariants
        By query name.

    Examples
    --------
    >>> rows = {"geocode": ["1", "11", "12"], "query": ["total"] * 3,
    ...         "cell": [0] * 3, "value": [10, 4, 7], "variance": [4.0] * 3}
    >>> release = CensusRelease.from_rows({"sex": 2}, rows,
    ...     invariants={"geocode": ["1"], "query": ["total"], "cell": [0], "value": [11]})
    >>> len(release.units), release.queries
    (3, [Query('total')])
    """

    axes: Axes
    units: Units
    measurements: dict
    invariants: dict

    @classmethod
    def from_rows(
        cls,
        axes: Mapping[str, int] | Axes,
        measurements: pd.DataFrame | Mapping[str, ArrayLike],
        *,
        invariants: pd.DataFrame | Mapping[str, ArrayLike] | None = None,
        units: Sequence[str] | None = None,
    ) -> CensusRelease:
        """Build a release from tables of rows, checking every row.

        Parameters
        ----------
        axes : dict of str to int, or Axes
            Axis names and sizes, in histogram order.
        measurements : DataFrame or dict of columns
            ``geocode`` (text), ``query`` (a query name), ``cell`` (row-major index over
            the kept axes), ``value`` (integer), ``variance`` (float > 0).
        invariants : DataFrame or dict of columns, optional
            ``geocode``, ``query``, ``cell``, ``value`` (exact); each (unit, query) pair
            must give every cell of the query.
        units : sequence of str, optional
            Further geocodes (units without measurements); by default the units are
            those the rows name.

        Raises
        ------
        ValueError
            Naming the row: a geocode with no parent among the units (except the root),
            a query whose name does not match the axes, a cell out of range, a
            variance that is not positive and finite, a value that is not an integer,
            a repeated cell, or invariants that contradict each other.
        """
        axes = axes if isinstance(axes, Axes) else Axes(axes)
        meas = _table(
            "measurements", measurements, ("geocode", "query", "cell", "value", "variance")
        )
        inv = _table(
            "invariants",
            invariants
            if invariants is not None
            else {k: [] for k in ("geocode", "query", "cell", "value")},
            ("geocode", "query", "cell", "value"),
        )
        codes = pd.unique(
            np.concatenate(
                [
                    meas["geocode"].to_numpy(dtype=object),
                    inv["geocode"].to_numpy(dtype=object),
                    np.array([] if units is None else [str(u) for u in units], dtype=object),
                ]
            )
        )
        tree = Units.from_geocodes(codes)
        measured = _by_query("measurements", axes, tree, meas, with_variance=True)
        exact = _by_query("invariants", axes, tree, inv, with_variance=False)
        release = cls(axes, tree, measured, exact)
        release.check_invariants()
        return release

    @property
    def queries(self) -> list[Query]:
        """The queries measured or held invariant, total first."""
        names = set(self.measurements) | set(self.invariants)
        return [q for q in self.axes.every_query() if q.name in names]

    def query(self, name: str) -> Query:
        """Return the query called ``name``."""
        return self.axes.query(name)

    @property
    def n_measurements(self) -> int:
        """Number of measured cells."""
        return int(sum(np.isfinite(m.variance).sum() for m in self.measurements.values()))

    def check_invariants(self) -> None:
        """Raise ValueError if two invariants contradict each other.

        Checked: two invariants at one unit whose queries share cells (the coarser
        must be the finer summed), and an invariant at a unit whose children all have
        invariants that determine it (a county total that is not the sum of its tracts'
        invariant totals).
        """
        known = self._invariant_cells()
        for name, inv in self.invariants.items():
            query = self.axes.query(name)
            for unit, values in zip(inv.units, inv.values, strict=True):
                for other_name, other_values in known.get(int(unit), {}).items():
                    other = self.axes.query(other_name)
                    if other.refines(query) and other_name != name:
                        implied = other.coarsen(other_values, query)
                        if not np.array_equal(implied, values):
                            self._contradiction(
                                unit, name, values, f"its own {other_name!r} invariant", implied
                            )
                implied = self._children_sum(int(unit), query, known)
                if implied is not None and not np.array_equal(implied, values):
                    self._contradiction(
                        unit, name, values, "the sum of its children's invariants", implied
                    )

    def _invariant_cells(self) -> dict:
        known: dict[int, dict] = {}
        for name, inv in self.invariants.items():
            for unit, values in zip(inv.units, inv.values, strict=True):
                known.setdefault(int(unit), {})[name] = values
        return known

    def _children_sum(self, unit: int, query: Query, known: dict):
        start, count = self.units.first_child[unit], self.units.n_children[unit]
        if count == 0:
            return None
        total = np.zeros(query.cells, dtype=np.int64)
        for child in range(start, start + count):
            finer = [n for n in known.get(child, {}) if self.axes.query(n).refines(query)]
            if not finer:
                return None
            total += self.axes.query(finer[0]).coarsen(known[child][finer[0]], query)
        return total

    def _contradiction(self, unit, name, values, what, implied):
        geocode = self.units.geocodes[unit]
        raise ValueError(
            f"invariants contradict each other: the {name!r} invariant at geocode {geocode!r} "
            f"is {values.tolist()}, but {what} gives {implied.tolist()}"
        )

    def __repr__(self) -> str:
        names = ", ".join(q.name for q in self.queries)
        return (
            f"CensusRelease({len(self.units)} units over {self.units.levels} levels, "
            f"axes {dict(self.axes.items())}, queries [{names}], "
            f"{self.n_measurements} measured cells, {len(self.invariants)} invariant queries)"
        )


# --- building from rows --------------------------------------------------------------


def _table(name: str, rows, columns) -> pd.DataFrame:
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(dict(rows))
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} must have the columns {list(columns)}; missing {missing}")
    frame = frame.reset_index(drop=True)
    frame["geocode"] = frame["geocode"].astype(str)
    frame["query"] = frame["query"].astype(str)
    return frame


def _row(name: str, frame: pd.DataFrame, i: int) -> str:
    r = {k: _plain(v) for k, v in frame.iloc[int(i)].items()}
    return (
        f"{name} row {int(i)} (geocode {r['geocode']!r}, query {r['query']!r}, cell {r['cell']!r})"
    )


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _integers(name: str, frame: pd.DataFrame, column: str) -> np.ndarray:
    raw = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(raw) | (raw != np.round(raw)) | (np.abs(raw) > 2.0**53)
    if bad.any():
        i = np.flatnonzero(bad)[0]
        raise ValueError(
            f"{_row(name, frame, i)}: {column} must be an integer, "
            f"got {_plain(frame[column].iloc[i])!r}"
        )
    return raw.astype(np.int64)


def _by_query(
    name: str, axes: Axes, tree: Units, frame: pd.DataFrame, *, with_variance: bool
) -> dict:
    out: dict[str, Measurements | Invariants] = {}
    if frame.empty:
        return out
    unit = tree.index(frame["geocode"].to_numpy())
    cell = _integers(name, frame, "cell")
    value = _integers(name, frame, "value")
    if with_variance:
        variance = pd.to_numeric(frame["variance"], errors="coerce").to_numpy(dtype=float)
        bad = ~(np.isfinite(variance) & (variance > 0))
        if bad.any():
            i = np.flatnonzero(bad)[0]
            raise ValueError(
                f"{_row(name, frame, i)}: variance must be positive and finite, "
                f"got {_plain(frame['variance'].iloc[i])!r}"
            )
    codes, names = pd.factorize(frame["query"])
    for k, qname in enumerate(names):
        rows = np.flatnonzero(codes == k)
        try:
            query = axes.query(qname)
        except ValueError as err:
            raise ValueError(f"{_row(name, frame, rows[0])}: {err}") from None
        bad = (cell[rows] < 0) | (cell[rows] >= query.cells)
        if bad.any():
            i = rows[np.flatnonzero(bad)[0]]
            raise ValueError(
                f"{_row(name, frame, i)}: cell must be in 0..{query.cells - 1} for query {qname!r}"
            )
        units, slot = np.unique(unit[rows], return_inverse=True)
        flat = slot * query.cells + cell[rows]
        seen = np.bincount(flat, minlength=units.size * query.cells)
        if (seen > 1).any():
            dup = rows[np.flatnonzero(seen[flat] > 1)[1]]
            raise ValueError(f"{_row(name, frame, dup)}: this cell is given twice")
        values = np.zeros(units.size * query.cells, dtype=np.int64)
        values[flat] = value[rows]
        if with_variance:
            var = np.full(units.size * query.cells, np.inf)
            var[flat] = variance[rows]
            out[query.name] = Measurements(
                units,
                values.reshape(units.size, query.cells),
                var.reshape(units.size, query.cells),
            )
        else:
            if (seen == 0).any():
                slot_missing = np.flatnonzero(seen == 0)[0] // query.cells
                given = int(seen.reshape(units.size, -1)[slot_missing].sum())
                raise ValueError(
                    f"{name}: the {qname!r} invariant at geocode "
                    f"{tree.geocodes[units[slot_missing]]!r} gives {given} "
                    f"of its {query.cells} cells; an invariant gives every cell of its query"
                )
            out[query.name] = Invariants(units, values.reshape(units.size, query.cells))
    order = [q.name for q in axes.every_query() if q.name in out]
    return {k: out[k] for k in order}
