"""The Census Bureau's noisy measurement file (NMF) layout, as BlueDown and dpvalue read it.

The 2020 files, as distributed in Parquet, hold one folder per geographic level
and kind of row, partitioned by state (Hive style)::

    <product>/                       e.g. US_Person_PL_PROD
      State.parquet/DPQuery/State=<id>/part-*.parquet
      State.parquet/Constraint/State=<id>/part-*.parquet
      County.parquet/DPQuery/State=<id>/...
      ... Tract, Block_Group, Block

``<id>`` names one tree: in the Bureau's files the state's FIPS code led by
``0`` (the state outside American Indian and Alaska Native areas) or ``1``
(inside), e.g. ``State=001`` and ``State=101`` for Alabama. Each row of a
``DPQuery`` file is one unit's noisy query:

============ ================================================================
geocode      text; a unit's parent is the longest other geocode that is a
             proper prefix of it (the Bureau's geocodes nest this way)
query_name   ``total_dpq``, ``detailed_dpq`` or the kept axes joined by
             ``" * "`` in any order, then ``_dpq`` (``votingage * hispanic_dpq``)
query_shape  one entry per histogram axis: the axis's size if kept, 1 if summed
value        the noisy integer counts, row-major over ``query_shape``
variance     one number: the discrete Gaussian's ``sigma**2`` for every cell
============ ================================================================

A ``Constraint`` row has the same columns plus ``sign`` (``"="``, ``"<="`` or
``">="``); its ``value`` is exact. Other columns (the axes' binning columns,
``State``) may be present; a column named after an axis is checked (``"*"`` for
a summed axis, the axis's name or ``"detailed"`` for a kept one).
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .._validate import choice
from ._files import Folder
from ._queries import SEPARATOR, TOTAL, Axes
from ._release import CensusRelease
from ._synthetic import PL94_AXES

__all__ = ["NMF_LEVELS", "nmf_query_name", "read_nmf"]

#: The Bureau's geographic levels below the nation, from the state down.
NMF_LEVELS = ("State", "County", "Tract", "Block_Group", "Block")
#: Suffixes of the query names in the two kinds of file.
SUFFIX = {"DPQuery": "_dpq", "Constraint": "_con"}
DETAILED = "detailed"
EQUAL, INEQUAL = ("=", "=="), ("<=", ">=")
UNSUPPORTED = ("raise", "skip")


def nmf_query_name(query, kind: str = "DPQuery") -> str:
    """Return the NMF name of a :class:`~dpinfer.census.Query` (``total_dpq``, ...)."""
    base = DETAILED if len(query.kept) == len(query.axes.sizes) else query.name
    return base + SUFFIX[kind]


def read_nmf(
    path: str | os.PathLike,
    *,
    state: str | None = None,
    axes: Mapping[str, int] | Axes | None = None,
    levels: Sequence[str] = NMF_LEVELS,
    unsupported: str = "raise",
) -> CensusRelease:
    """Read one state's tree from noisy measurement files in the Bureau's layout.

    Parameters
    ----------
    path : str or path
        The product folder holding ``<Level>.parquet`` folders (the module
        docstring's layout). Files are read through the folder's descriptor, never
        through a symbolic link.
    state : str, optional
        The partition to read (``"001"`` for ``State=001``). By default the only
        partition found; several found is an error naming them.
    axes : dict or Axes, optional
        The detailed histogram's axes in the files' order; by default the PL94
        persons histogram (``hhgq 8, votingage 2, hispanic 2, cenrace 63``).
    levels : sequence of str, default ``NMF_LEVELS``
        Level folders to read, from the top of the tree down; a level without a
        folder for ``state`` is skipped.
    unsupported : {"raise", "skip"}, default "raise"
        What to do with rows a :class:`~dpinfer.census.CensusRelease` cannot hold:
        queries that group an axis's values instead of keeping or summing them
        (``hhinstlevels_dpq``), inequality constraints (``hhgq_total_lb_con``,
        ``hhgq_total_ub_con``) and equality constraints on a part of the histogram
        that is not a whole query (``nurse_nva_0_con``). ``"skip"`` leaves them out
        with a warning that names them and counts their rows.

    Returns
    -------
    CensusRelease
        ``DPQuery`` rows as measurements (variance as published), ``Constraint``
        rows with sign ``"="`` on a whole query as invariants.

    Raises
    ------
    ValueError
        Naming the file (relative to ``path``) and row: a missing column, a
        geocode that is not text, a query whose shape does not match its name and
        the axes, a value array of the wrong length or not integer, a variance
        that is not one positive finite number, an unknown sign, a unit's query
        given twice; and, with ``unsupported="raise"``, the first row it cannot
        hold. Then the checks of :meth:`CensusRelease.from_rows` (a geocode with no
        parent, contradicting invariants).

    Notes
    -----
    Tested on synthetic files only, as this machine holds none of the published ones:
    files written by :func:`write_nmf`, and files written row by row with pyarrow the
    way the published ones are described (Hive ``State=<id>`` folders, Spark part names
    and ``_SUCCESS`` markers, the axes' binning columns, ``query_shape`` as int32 lists,
    ``variance`` as float32, axes named out of the histogram's order). Not tested: the
    published files themselves and their sizes (a state's rows are read into memory at
    once; from about 25,000 blocks in a small state to over 500,000 in California);
    variances published in another encoding than a number (decimals and numeric text are
    cast to float64, untested; anything else is refused); ``large_list`` columns; the
    nation level ``US.parquet``, which is not partitioned by state and is not read (a
    tree here is one state partition, so a state's AIAN and non-AIAN partitions are two
    trees); the housing-unit and DHC products (their own ``axes``); that the published
    geocodes of all five levels nest by prefix (BlueDown's passes assume they do). By
    design a release cannot hold the grouping queries (``hhinstlevels_dpq``), the
    inequality constraints (``hhgq_total_lb_con``, ``hhgq_total_ub_con``) or the
    structural zero ``nurse_nva_0_con``: they are refused or, with
    ``unsupported="skip"``, left out with a warning, and the analyses then ignore them.

    Examples
    --------
    >>> from dpinfer import census
    >>> import tempfile, pathlib
    >>> axes = {"votingage": 2, "hispanic": 2}
    >>> truth = census.synthetic_state(axes, shape=(2, 2, 2, 3), rng=1)
    >>> release = census.synthetic_release(truth, census.pl94_variances(axes), rng=2)
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "US_Person_PL_PROD"
    >>> files = census.write_nmf(release, folder)
    >>> census.read_nmf(folder, axes=axes).n_measurements == release.n_measurements
    True
    """
    axes = Axes(PL94_AXES if axes is None else axes)
    unsupported = choice("unsupported", unsupported, UNSUPPORTED)
    reader = _Reader(axes, unsupported)
    with Folder(path) as top:
        state = _state(top, levels, state)
        for level in levels:
            for kind in SUFFIX:
                for name, table in _partition_files(top, level, kind, state):
                    reader.add(name, table, kind)
    reader.check_unique()
    if not reader.measurements:
        raise ValueError(f"path: no DPQuery rows for State={state} under {path}")
    if reader.skipped:
        shown = ", ".join(f"{q!r} ({n} rows)" for q, n in sorted(reader.skipped.items()))
        warnings.warn(f"read_nmf left out rows it cannot hold: {shown}", stacklevel=2)
    return CensusRelease.from_rows(
        axes,
        pd.concat(reader.measurements, ignore_index=True),
        invariants=pd.concat(reader.invariants, ignore_index=True) if reader.invariants else None,
    )


def _state(top: Folder, levels, state) -> str:
    found = sorted(
        {
            entry.partition("=")[2]
            for level in levels
            for kind in SUFFIX
            for entry in _entries(top, (f"{level}.parquet", kind))
            if entry.startswith("State=")
        }
    )
    if state is None:
        if len(found) != 1:
            raise ValueError(
                f"state: give the partition to read; found {len(found)} ({found[:10]}) "
                f"under {top.path} for levels {list(levels)}"
            )
        return found[0]
    if str(state) not in found:
        raise ValueError(f"state: no State={state} partition under {top.path}; found {found[:10]}")
    return str(state)


def _entries(top: Folder, parts) -> list[str]:
    folder, opened = top, []
    try:
        for part in parts:
            if not folder.is_folder(part):
                return []
            folder = folder.folder(part)
            opened.append(folder)
        return folder.entries()
    finally:
        for f in opened:
            f.close()


def _partition_files(top: Folder, level: str, kind: str, state: str):
    """``(name relative to the top, table)`` of each Parquet file of one partition."""
    import pyarrow.parquet as pq

    parts = (f"{level}.parquet", kind, f"State={state}")
    names = [n for n in _entries(top, parts) if not n.startswith((".", "_"))]
    if not names:
        return
    folder, opened = top, []
    try:
        for part in parts:
            folder = folder.folder(part)
            opened.append(folder)
        for name in names:
            where = "/".join((*parts, name))
            try:
                table = pq.read_table(io.BytesIO(folder.read_bytes(name)))
            except (OSError, ValueError) as err:
                raise ValueError(f"{where}: not a Parquet file ({err})") from None
            yield where, table
    finally:
        for f in reversed(opened):
            f.close()


class _Reader:
    """Collects the cell rows of every file, checking each NMF row."""

    def __init__(self, axes: Axes, unsupported: str):
        self.axes = axes
        self.unsupported = unsupported
        self.measurements: list[pd.DataFrame] = []
        self.invariants: list[pd.DataFrame] = []
        self.skipped: dict[str, int] = {}
        self.seen: dict[tuple, list] = {}

    def add(self, where: str, table, kind: str) -> None:
        """Check and collect the rows of one file."""
        columns = ["geocode", "query_name", "query_shape", "value"]
        columns += ["variance"] if kind == "DPQuery" else ["sign"]
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise ValueError(
                f"{where}: missing column(s) {missing}; an NMF {kind} file has {columns}"
            )
        file = _File(where, table, self.axes)
        names, group = np.unique(file.text("query_name"), return_inverse=True)
        for k, qname in enumerate(names):
            self._query(file, kind, str(qname), np.flatnonzero(group == k))

    def _query(self, file: _File, kind: str, qname: str, rows: np.ndarray) -> None:
        place = f"{file.where} row {int(rows[0])} (query_name {qname!r})"
        if kind == "Constraint":
            signs = np.char.strip(file.text("sign")[rows].astype(str))
            unknown = ~np.isin(signs, EQUAL + INEQUAL)
            if unknown.any():
                raise ValueError(
                    f"{file.where} row {int(rows[unknown][0])} (query_name {qname!r}): sign "
                    f"must be one of {EQUAL + INEQUAL}, got {signs[unknown][0]!r}"
                )
            if np.isin(signs, INEQUAL).any():
                return self._cannot(place, qname, rows.size, "is an inequality constraint")
        query, why = self._parse(qname, SUFFIX[kind])
        if query is None:
            return self._cannot(place, qname, rows.size, why)
        file.check_specs(qname, query, rows)
        want = [n if a in query.kept else 1 for a, n in enumerate(self.axes.sizes)]
        file.check_shapes(qname, rows, want)
        values = file.values(qname, rows, query.cells)
        geocodes = file.text("geocode")[rows]
        self.seen.setdefault((kind, query.name), []).append((file.where, qname, geocodes, rows))
        cells = query.cells
        out = pd.DataFrame(
            {
                "geocode": np.repeat(geocodes, cells),
                "query": query.name,
                "cell": np.tile(np.arange(cells), rows.size),
                "value": values.ravel(),
            }
        )
        if kind == "DPQuery":
            out["variance"] = np.repeat(file.variances(qname, rows), cells)
            self.measurements.append(out)
        else:
            self.invariants.append(out)

    def _parse(self, qname: str, suffix: str):
        if not qname.endswith(suffix):
            return None, f"does not end with {suffix!r}"
        base = qname[: -len(suffix)].strip()
        if base == DETAILED:
            return self.axes.query(SEPARATOR.join(self.axes.names)), ""
        if base == TOTAL:
            return self.axes.query(TOTAL), ""
        parts = [p.strip() for p in base.split("*")]
        if not set(parts) <= set(self.axes.names) or len(set(parts)) != len(parts):
            return None, (
                f"is not a marginal of the axes {list(self.axes.names)} (a grouping of an "
                "axis's values, or a part of the histogram)"
            )
        ordered = [n for n in self.axes.names if n in parts]
        return self.axes.query(SEPARATOR.join(ordered)), ""

    def check_unique(self) -> None:
        """Raise naming the files and rows if a unit has one query's row of one kind twice."""
        for (kind, name), parts in self.seen.items():
            codes = pd.Index(np.concatenate([p[2] for p in parts]))
            again = np.flatnonzero(codes.duplicated())
            if again.size:
                rows = [(w, q, int(r)) for w, q, _, rs in parts for r in rs]
                second = again[0]
                first = int(np.flatnonzero(codes == codes[second])[0])
                where, qname, row = rows[second]
                raise ValueError(
                    f"{where} row {row} (query_name {qname!r}): geocode {codes[second]!r} has "
                    f"its {name!r} {kind} row twice (also at {rows[first][0]} row "
                    f"{rows[first][2]})"
                )

    def _cannot(self, place: str, qname: str, count: int, why: str) -> None:
        if self.unsupported == "raise":
            raise ValueError(
                f"{place}: {qname!r} {why}; a CensusRelease holds whole marginal queries and "
                "equality invariants only (pass unsupported='skip' to leave such rows out)"
            )
        self.skipped[qname] = self.skipped.get(qname, 0) + count


class _File:
    """One file's columns as numpy arrays, with the row checks that name the file and row."""

    def __init__(self, where: str, table, axes: Axes):
        import pyarrow as pa

        self.where, self.table, self.axes = where, table, axes
        self._cache: dict = {}
        kind = table.schema.field("geocode").type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise ValueError(
                f"{where}: geocode must be text (geocodes keep their leading zeros), got {kind}"
            )

    def text(self, column: str) -> np.ndarray:
        """Return a text column as an object array (missing entries as None)."""
        if ("text", column) not in self._cache:
            values = self.table.column(column).to_pylist()
            self._cache["text", column] = np.asarray(values, dtype=object)
        return self._cache["text", column]

    def _lists(self, column: str):
        """Return a list column as (flat numbers, offsets, lengths); a missing list is empty."""
        if ("list", column) not in self._cache:
            self._cache["list", column] = self._read_list(column)
        return self._cache["list", column]

    def _read_list(self, column: str):
        import pyarrow as pa
        import pyarrow.compute as pc

        col = self.table.column(column).combine_chunks()
        if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)):
            raise ValueError(f"{self.where}: {column} must be a list column, got {col.type}")
        lengths = pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        flat = pc.cast(col.flatten(), pa.float64()).to_numpy(zero_copy_only=False)
        return flat, offsets, lengths

    def _gather(self, column, qname, rows, length, what):
        flat, offsets, lengths = self._lists(column)
        bad = rows[lengths[rows] != length]
        if bad.size:
            raise ValueError(
                f"{self.where} row {int(bad[0])} (query_name {qname!r}): {column} must hold "
                f"{length} numbers ({what}), got {int(lengths[bad[0]])}"
            )
        return flat[offsets[rows][:, None] + np.arange(length)]

    def check_shapes(self, qname, rows, want) -> None:
        """Raise unless every row's ``query_shape`` is ``want``."""
        shapes = self._gather("query_shape", qname, rows, len(want), "one size per axis")
        bad = np.flatnonzero((shapes != np.asarray(want)).any(axis=1))
        if bad.size:
            raise ValueError(
                f"{self.where} row {int(rows[bad[0]])} (query_name {qname!r}): query_shape "
                f"{_listed(shapes[bad[0]].astype(np.int64))} does not match the query's axes; "
                f"expected {want} for axes {dict(self.axes.items())}"
            )

    def values(self, qname, rows, cells) -> np.ndarray:
        """``(rows, cells)`` int64: the rows' values, checked to be integers."""
        flat = self._gather("value", qname, rows, cells, "the product of query_shape")
        with np.errstate(invalid="ignore"):
            wrong = ~np.isfinite(flat) | (flat != np.round(flat)) | (np.abs(flat) > 2.0**53)
        if wrong.any():
            r, c = np.argwhere(wrong)[0]
            raise ValueError(
                f"{self.where} row {int(rows[r])} (query_name {qname!r}): value must hold "
                f"integers; entry {int(c)} is {float(flat[r, c])!r}"
            )
        return flat.astype(np.int64)

    def variances(self, qname, rows) -> np.ndarray:
        """Return the rows' variances, checked to be one positive finite number each."""
        import pyarrow as pa
        import pyarrow.compute as pc

        col = self.table.column("variance")
        try:
            numbers = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            numbers = np.full(len(col), np.nan)
        out = np.asarray(numbers, dtype=float)[rows]
        bad = rows[~(np.isfinite(out) & (out > 0))]
        if bad.size:
            raise ValueError(
                f"{self.where} row {int(bad[0])} (query_name {qname!r}): variance must be one "
                f"positive finite number, got {_listed(col[int(bad[0])].as_py())}"
            )
        return out

    def check_specs(self, qname, query, rows) -> None:
        """Raise if an axis's binning column disagrees with what the query name keeps."""
        for a, name in enumerate(self.axes.names):
            if name not in self.table.column_names:
                continue
            allowed = [name, DETAILED] if a in query.kept else ["*"]
            column = self.text(name)[rows]
            bad = np.flatnonzero(~np.isin(column, allowed))
            if bad.size:
                raise ValueError(
                    f"{self.where} row {int(rows[bad[0]])} (query_name {qname!r}): column "
                    f"{name!r} is {column[bad[0]]!r}, but the query name "
                    f"{'keeps' if a in query.kept else 'sums'} that axis (expected one of "
                    f"{allowed})"
                )


def _listed(value) -> str:
    return repr(value.tolist() if hasattr(value, "tolist") else value)
