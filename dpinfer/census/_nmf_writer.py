"""Writing a release in the Census Bureau's noisy measurement file layout (see ``_nmf``).

The files are written into a new private folder beside ``path`` (created with
an unpredictable name, readable by its owner only), which is then renamed to
``path``: a reader never sees a partial layout, and nothing outside the new
folder is written or removed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..outputs import OutputPathError, check_output_path
from ._nmf import NMF_LEVELS, nmf_query_name
from ._release import CensusRelease

__all__ = ["write_nmf"]


def write_nmf(
    release: CensusRelease,
    path: str | os.PathLike,
    *,
    state: str | None = None,
    levels: Sequence[str] = NMF_LEVELS,
) -> list[str]:
    """Write ``release`` in the noisy measurement file layout (:func:`read_nmf`).

    Parameters
    ----------
    release : CensusRelease
        Every measured (unit, query) must have one variance for all its cells
        (the layout has one per row).
    path : str or path
        The product folder to create; it must not exist.
    state : str, optional
        The partition name (``State=<state>``); by default the root's geocode.
    levels : sequence of str, default ``NMF_LEVELS``
        The level folder of each depth, from the root down: the tree may have at
        most as many levels; a shallower tree uses the last ones.

    Returns
    -------
    list of str
        The files written, relative to ``path``: one ``part-0.parquet`` per level
        and kind (a ``Constraint`` file where the level has invariants), as
        BlueDown's reader expects (one file per partition).

    Notes
    -----
    Columns: ``geocode``, ``query_name`` (``total_dpq``, ``detailed_dpq``, kept
    axes joined by ``" * "``), one column per axis (``"*"`` if summed, else the
    axis's name), ``query_shape``, ``value``, ``variance`` (float64); constraint
    rows add ``sign`` (``"="``) and have variance 0.
    """
    import pyarrow.parquet as pq

    target = check_output_path(path)
    if target.exists():
        raise OutputPathError(f"path: {str(target)!r} exists; write_nmf creates a new folder")
    units = release.units
    if units.levels > len(levels):
        raise ValueError(
            f"levels: the tree has {units.levels} levels but levels names {len(levels)}"
        )
    names = list(levels)[len(levels) - units.levels :]
    state = str(units.geocodes[0] if state is None else state)
    tables = _tables(release, names)
    target.parent.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix=".dpinfer-nmf-", dir=target.parent))
    written: list[str] = []
    try:
        for (level, kind), columns in tables.items():
            name = f"{level}.parquet/{kind}/State={state}/part-0.parquet"
            (private / name).parent.mkdir(parents=True)
            written.append(name)
            pq.write_table(columns, private / name)
        os.rename(private, target)
    except BaseException:
        _remove(private, written)
        raise
    return written


def _tables(release: CensusRelease, names: list[str]) -> dict:
    """``{(level, kind): columns}`` for every level with rows of that kind."""
    import pyarrow as pa

    axes, units = release.axes, release.units
    rows: dict[tuple, list] = {}
    for kind, parts in (("DPQuery", release.measurements), ("Constraint", release.invariants)):
        for name, part in parts.items():
            q = release.query(name)
            if kind == "DPQuery":
                variance = _one_variance(release, name, part)
            shape = [n if a in q.kept else 1 for a, n in enumerate(axes.sizes)]
            depth = units.depth[part.units]
            for k in np.unique(depth):
                at = np.flatnonzero(depth == k)
                columns = {
                    "geocode": pa.array(units.geocodes[part.units[at]].astype(str)),
                    "query_name": [nmf_query_name(q, kind)] * at.size,
                    **{
                        axis: [axis if a in q.kept else "*"] * at.size
                        for a, axis in enumerate(axes.names)
                    },
                    "query_shape": _lists(np.tile(shape, (at.size, 1))),
                    "value": _lists(part.values[at]),
                    "variance": variance[at] if kind == "DPQuery" else np.zeros(at.size),
                }
                if kind == "Constraint":
                    columns["sign"] = ["="] * at.size
                rows.setdefault((names[int(k)], kind), []).append(pa.table(columns))
    return {key: pa.concat_tables(parts) for key, parts in sorted(rows.items())}


def _lists(rows: np.ndarray):
    """Return a list<int64> column holding the rows of a 2-d integer array."""
    import pyarrow as pa

    offsets = np.arange(rows.shape[0] + 1, dtype=np.int32) * rows.shape[1]
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(rows.ravel().astype(np.int64)))


def _one_variance(release, name, part) -> np.ndarray:
    same = (part.variance == part.variance[:, :1]).all(axis=1)
    if not same.all():
        unit = release.units.geocodes[part.units[np.flatnonzero(~same)[0]]]
        raise ValueError(
            f"release: the {name!r} cells at geocode {unit!r} have different variances (or "
            "some are not measured); an NMF row has one variance for all its cells"
        )
    return part.variance[:, 0]


def _remove(private: Path, written: list[str]) -> None:
    """Remove what this call wrote in its private folder, then the emptied folders."""
    for name in written:
        with contextlib.suppress(FileNotFoundError):
            (private / name).unlink()
    for folder in sorted(private.rglob("*"), key=lambda p: -len(p.parts)):
        if folder.is_dir() and not folder.is_symlink():
            with contextlib.suppress(OSError):
                folder.rmdir()
    with contextlib.suppress(OSError):
        private.rmdir()
