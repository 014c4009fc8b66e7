"""A release folder read one part (county) at a time, so memory follows the largest part.

:class:`StreamedRelease` reads the folder's ``measurements`` and ``invariants``
tables (the layout of :mod:`dpinfer.census._folder`) in chunks (Parquet record
batches, CSV chunks): a first pass collects the geocodes and builds the tree,
a second checks every row and writes each part's rows (as arrays) to a
private temporary folder, one file per part. :meth:`StreamedRelease.part` reads
one part back as a :class:`CensusRelease`; the whole release is never in memory.
Errors name the row of the file. Left to each part's check: invariants that
contradict each other across parts (a state total against its counties').
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile

import numpy as np
import pandas as pd

from .._validate import size
from ._files import Folder
from ._parts import Partition
from ._queries import Axes
from ._release import CensusRelease, Invariants, Measurements
from ._units import Units

__all__ = ["StreamedRelease"]

#: Rows read at a time. A chunk in pandas costs about 200 bytes a row (geocode and query
#: strings as objects, the checked arrays beside them), so 20,000 rows stay within a few
#: MB, below a county's arrays; 250,000 rows took 200 MB, 30 times a county of the
#: benchmark's state, and set the streamed run's peak.
CHUNK_ROWS = 20_000
_FILE_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
_TABLES = {"measurements": True, "invariants": False}  # stem: required


class StreamedRelease(contextlib.AbstractContextManager):
    """A release folder, read part by part (use it as a context manager).

    Parameters
    ----------
    path : str or path
        A release folder in the documented layout (``release.json``, the
        ``measurements`` and ``invariants`` tables as ``.csv`` or ``.parquet``). Files
        are read through the folder's descriptor, never through a symbolic link.
    chunk_rows : int, default 20,000
        Rows read at a time (about 200 bytes a row while a chunk is checked).

    Attributes
    ----------
    axes : Axes
    units : Units
        The whole tree (geocodes and links; no measurements).
    query_names : list of str
        The measured queries.
    uniform : bool
        Whether every measured (unit, query) gives all its cells one variance.
    partition : Partition

    Examples
    --------
    >>> with StreamedRelease("release_dir") as release:  # doctest: +SKIP
    ...     county = release.part(0)
    """

    def __init__(self, path: str | os.PathLike, *, chunk_rows: int = CHUNK_ROWS) -> None:
        self._chunk = size("chunk_rows", chunk_rows)
        self._spill = tempfile.mkdtemp(prefix="dpinfer-census-")
        self._written: set[str] = set()
        try:
            with Folder(path) as folder:
                self.axes = _axes(folder)
                found = {stem: _table_name(folder, stem, required) for stem, required in
                         _TABLES.items()}  # fmt: skip
                self.units = Units.from_geocodes(_geocodes(folder, found, self._chunk))
                self.partition = Partition.of(self.units)
                self.uniform, measured = self._split(folder, found)
                every = self.axes.every_query()
                self.query_names = [every[k].name for k in sorted(measured)]
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return self.partition.roots.size

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Remove the temporary files this release wrote (and their folder)."""
        for name in sorted(self._written):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self._spill, name))
        self._written.clear()
        with contextlib.suppress(OSError):
            os.rmdir(self._spill)

    def part(self, i: int) -> CensusRelease:
        """Read the ``i``-th part back as a release of its own."""
        return self._read(i)

    def top(self) -> CensusRelease | None:
        """Read the units above the parts (the root), or None for a one-unit release."""
        return self._read(-1) if self.partition.top.size else None

    def temporary_file(self, name: str) -> str:
        """Return a path in this release's private temporary folder (:meth:`close` removes it)."""
        self._written.add(name)
        return os.path.join(self._spill, name)

    # --- the second pass: check every row, write each part's rows -------------------

    def _split(self, folder: Folder, found: dict) -> tuple[bool, set]:
        """Check and write every row.

        Return whether each measured (unit, query) gives all its cells one variance,
        and the measured queries (indices in ``axes.every_query()``).
        """
        queries = self.axes.every_query()
        keys = len(self.units) * len(queries)
        vmin, vmax = np.full(keys, np.inf), np.full(keys, -np.inf)
        count = np.zeros(keys, dtype=np.int64)
        for stem, name in found.items():
            if name is None:
                continue
            measured = stem == "measurements"
            start = 0
            for frame in _chunks(folder, name, self._chunk):
                rows = _check(stem, frame, start, self.axes, self.units, measured)
                start += len(frame)
                if measured:
                    key = rows["unit"] * len(queries) + rows["query"]
                    np.minimum.at(vmin, key, rows["variance"])
                    np.maximum.at(vmax, key, rows["variance"])
                    np.add.at(count, key, 1)
                self._append(stem, rows, self.partition)
        cells = np.tile([q.cells for q in queries], len(self.units))
        seen = count > 0
        uniform = bool(np.all((vmin[seen] == vmax[seen]) & (count[seen] == cells[seen])))
        return uniform, set((np.flatnonzero(seen) % len(queries)).tolist())

    def _append(self, stem: str, rows: dict, p: Partition) -> None:
        """Append a chunk's rows to the files of their (part, query)."""
        n_q = len(self.axes.every_query())
        key = (p.part_of[rows["unit"]] + 1) * n_q + rows["query"]
        order = np.argsort(key, kind="stable")
        bounds = np.searchsorted(key[order], np.arange((p.roots.size + 1) * n_q + 1))
        for k in np.flatnonzero(np.diff(bounds)):
            take = order[bounds[k] : bounds[k + 1]]
            piece = {name: rows[name][take] for name in ("cell", "value", "variance")
                     if name in rows}  # fmt: skip
            piece["unit"] = p.local[rows["unit"][take]]
            with open(
                self.temporary_file(_file(stem, int(k // n_q - 1), int(k % n_q))), "ab"
            ) as out:
                np.save(out, _pack(piece), allow_pickle=False)

    def _read(self, index: int) -> CensusRelease:
        tree = self.partition.tree(index)
        every = self.axes.every_query()
        tables: dict[str, dict] = {}
        for stem, names in (("measurements", self.query_names),
                            ("invariants", [q.name for q in every])):  # fmt: skip
            tables[stem] = {}
            for k, q in enumerate(every):
                path = os.path.join(self._spill, _file(stem, index, k))
                if q.name in names and os.path.exists(path):
                    tables[stem][q.name] = _load(path)
        return CensusRelease(
            self.axes, tree,
            _build(self.axes, tree, tables["measurements"], measured=True),
            _build(self.axes, tree, tables["invariants"], measured=False),
        )  # fmt: skip


def _file(stem: str, part: int, query: int) -> str:
    return f"{stem}-{part}-{query}.npy"


def _load(path: str) -> np.ndarray:
    pieces = []
    with open(path, "rb") as source:
        while source.peek(1):
            pieces.append(np.load(source, allow_pickle=False))
    return np.concatenate(pieces)


#: A row as written to the temporary files (those of one part's query).
_FIELDS = [("unit", "<i4"), ("cell", "<i4"), ("value", "<i8"), ("variance", "<f8")]


def _pack(rows) -> np.ndarray:
    out = np.zeros(len(rows["unit"]), dtype=_FIELDS)
    for name, _ in _FIELDS:
        out[name] = rows.get(name, np.inf)
    return out


def _build(axes: Axes, tree: Units, tables: dict, *, measured: bool) -> dict:
    """Rebuild the part's measurements (or invariants) by query from its packed rows."""
    out: dict[str, Measurements | Invariants] = {}
    for name, rows in tables.items():
        q = axes.query(name)
        units, slot = np.unique(rows["unit"], return_inverse=True)
        flat = slot * q.cells + rows["cell"]
        seen = np.bincount(flat, minlength=units.size * q.cells)
        if (seen > 1).any():
            dup = int(np.flatnonzero(seen > 1)[0])
            raise ValueError(
                f"{'measurements' if measured else 'invariants'}: the cell {dup % q.cells} of "
                f"query {name!r} at geocode {tree.geocodes[units[dup // q.cells]]!r} is given "
                "twice"
            )
        flat_values = np.zeros(units.size * q.cells, dtype=np.int64)
        flat_values[flat] = rows["value"]
        values = flat_values.reshape(units.size, q.cells)
        if measured:
            variance = np.full(units.size * q.cells, np.inf)
            variance[flat] = rows["variance"]
            out[name] = Measurements(units, values, variance.reshape(units.size, q.cells))
        else:
            missing = seen.reshape(units.size, q.cells).sum(axis=1) < q.cells
            if missing.any():
                raise ValueError(
                    f"invariants: the {name!r} invariant at geocode "
                    f"{tree.geocodes[units[np.flatnonzero(missing)[0]]]!r} does not give every "
                    f"cell of its query ({q.cells})"
                )
            out[name] = Invariants(units, values)
    return out


# --- reading the folder ----------------------------------------------------------------


def _axes(folder: Folder) -> Axes:
    try:
        return Axes(json.loads(folder.read_bytes("release.json").decode("utf-8"))["axes"])
    except (KeyError, TypeError, json.JSONDecodeError) as err:
        raise ValueError(
            "path: release.json must hold {'axes': {name: size, ...}} "
            f"({type(err).__name__}: {err})"
        ) from None


def _table_name(folder: Folder, stem: str, required: bool) -> str | None:
    found = [f"{stem}.{ext}" for ext in ("csv", "parquet") if folder.has(f"{stem}.{ext}")]
    if len(found) > 1:
        raise ValueError(f"path: {folder.path} holds both {found[0]} and {found[1]}; keep one")
    if not found and required:
        raise FileNotFoundError(f"path: {folder.path} has no {stem}.csv or {stem}.parquet")
    return found[0] if found else None


@contextlib.contextmanager
def _open(folder: Folder, name: str):
    """Open a file of ``folder`` through its descriptor (a regular file, never a link)."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=folder.fd)
    except OSError as err:
        raise ValueError(
            f"path: cannot open {str(folder.path / name)!r} ({err.strerror})"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"path: {str(folder.path / name)!r} is not a regular file")
        yield handle


def _chunks(folder: Folder, name: str, rows: int, columns=None):
    """Yield the table ``name`` as DataFrames of at most ``rows`` rows."""
    with _open(folder, name) as handle:
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            for batch in pq.ParquetFile(handle).iter_batches(batch_size=rows, columns=columns):
                yield batch.to_pandas()
        else:
            text = {"geocode": str, "query": str}
            yield from pd.read_csv(handle, chunksize=rows, usecols=columns, dtype=text,
                                   keep_default_na=False)  # fmt: skip


def _geocodes(folder: Folder, found: dict, rows: int) -> list[str]:
    codes = set()
    for name in found.values():
        if name is not None:
            for frame in _chunks(folder, name, rows, columns=["geocode"]):
                codes.update(frame["geocode"].astype(str).unique().tolist())
    return sorted(codes)


def _check(stem: str, frame: pd.DataFrame, start: int, axes: Axes, units: Units, measured):
    """Check a chunk's rows (errors name the file's row); return them as arrays."""
    columns = ["geocode", "query", "cell", "value"] + (["variance"] if measured else [])
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{stem} must have the columns {columns}; missing {missing}")
    geo = frame["geocode"].astype(str).to_numpy()
    codes, uniques = pd.factorize(geo)
    unit = units.index(uniques)[codes]
    query = frame["query"].astype(str).to_numpy()
    q_codes, q_names = pd.factorize(query)
    every = {q.name: k for k, q in enumerate(axes.every_query())}
    sizes = np.empty(len(q_names), dtype=np.int64)
    ids = np.empty(len(q_names), dtype=np.int64)
    for k, name in enumerate(q_names):
        try:
            q = axes.query(name)
        except ValueError as err:
            _bad(stem, frame, start, int(np.flatnonzero(q_codes == k)[0]), str(err))
        sizes[k], ids[k] = q.cells, every[q.name]
    cell = _integers(stem, frame, start, "cell")
    bad = (cell < 0) | (cell >= sizes[q_codes])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        _bad(stem, frame, start, i, f"cell must be in 0..{sizes[q_codes[i]] - 1}")
    rows = {"unit": unit, "query": ids[q_codes], "cell": cell,
            "value": _integers(stem, frame, start, "value")}  # fmt: skip
    if measured:
        variance = pd.to_numeric(frame["variance"], errors="coerce").to_numpy(dtype=float)
        bad = ~(np.isfinite(variance) & (variance > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            _bad(stem, frame, start, i, "variance must be positive and finite, got "
                 f"{frame['variance'].iloc[i]!r}")  # fmt: skip
        rows["variance"] = variance
    return rows


def _integers(stem, frame, start, column) -> np.ndarray:
    raw = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(raw) | (raw != np.round(raw)) | (np.abs(raw) > 2.0**53)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        _bad(stem, frame, start, i, f"{column} must be an integer, got {frame[column].iloc[i]!r}")
    return raw.astype(np.int64)


def _bad(stem, frame, start, i, message):
    row = frame.iloc[i]
    raise ValueError(
        f"{stem} row {start + i} (geocode {row['geocode']!r}, query {row['query']!r}, "
        f"cell {row['cell']!r}): {message}"
    )
