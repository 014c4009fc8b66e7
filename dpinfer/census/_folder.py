"""The release folder: a documented layout, read and written as CSV or Parquet.

The layout (a contract)::

    release.json        {"axes": {"votingage": 2, "hispanic": 2}}   (sizes, in histogram order)
    measurements.csv    geocode, query, cell, value, variance        (or measurements.parquet)
    invariants.csv      geocode, query, cell, value                  (or invariants.parquet)

``geocode`` is text (a unit's parent is the longest other geocode that is a
proper prefix of it); ``query`` is ``"total"`` or the kept axes joined by
``" * "`` in the axes' order; ``cell`` the row-major index over the kept axes;
``value`` an integer; ``variance`` the discrete Gaussian's ``sigma**2`` (> 0).
The invariants table may be absent (no invariant).
"""

from __future__ import annotations

import functools
import io
import json
import os

import numpy as np
import pandas as pd

from .._validate import choice
from ..outputs import OutputFolder
from ._files import Folder
from ._release import CensusRelease

__all__ = ["read_release", "release_tables", "write_release"]

FORMATS = ("csv", "parquet")


def read_release(path: str | os.PathLike) -> CensusRelease:
    """Read a release folder in the documented layout (see the module docstring).

    Parameters
    ----------
    path : str or path
        The folder. Files are read through the folder's descriptor, never through
        a symbolic link.

    Returns
    -------
    CensusRelease

    Raises
    ------
    FileNotFoundError
        If ``release.json`` or the measurements table is missing.
    ValueError
        Naming the file and row of any bad entry (see :meth:`CensusRelease.from_rows`).
    """
    with Folder(path) as folder:
        try:
            meta = json.loads(folder.read_bytes("release.json").decode("utf-8"))
            axes = meta["axes"]
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(
                "path: release.json must hold {'axes': {name: size, ...}} "
                f"({type(err).__name__}: {err})"
            ) from None
        measurements = _table(folder, "measurements", required=True)
        invariants = _table(folder, "invariants", required=False)
    return CensusRelease.from_rows(axes, measurements, invariants=invariants)


def _table(folder: Folder, stem: str, *, required: bool):
    found = [f"{stem}.{ext}" for ext in FORMATS if folder.has(f"{stem}.{ext}")]
    if len(found) > 1:
        raise ValueError(f"path: {folder.path} holds both {found[0]} and {found[1]}; keep one")
    if not found:
        if required:
            raise FileNotFoundError(f"path: {folder.path} has no {stem}.csv or {stem}.parquet")
        return None
    return folder.read_table(found[0])


def release_tables(release: CensusRelease) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return the release as two tables (measurements, invariants), one row per cell."""
    geocodes = release.units.geocodes
    parts = []
    for name, meas in release.measurements.items():
        unit, cell = np.nonzero(np.isfinite(meas.variance))
        parts.append(
            pd.DataFrame(
                {
                    "geocode": geocodes[meas.units[unit]],
                    "query": name,
                    "cell": cell,
                    "value": meas.values[unit, cell],
                    "variance": meas.variance[unit, cell],
                }
            )
        )
    columns = ["geocode", "query", "cell", "value", "variance"]
    measurements = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    parts = []
    for name, inv in release.invariants.items():
        unit, cell = np.indices(inv.values.shape).reshape(2, -1)
        parts.append(
            pd.DataFrame(
                {
                    "geocode": geocodes[inv.units[unit]],
                    "query": name,
                    "cell": cell,
                    "value": inv.values[unit, cell],
                }
            )
        )
    invariants = (
        pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns[:4])
    )
    return measurements, invariants


def write_release(
    release: CensusRelease,
    path: str | os.PathLike,
    *,
    format: str = "csv",
    overwrite: bool = False,
) -> dict:
    """Write ``release`` to the folder ``path`` in the documented layout.

    Through :class:`dpinfer.outputs.OutputFolder`: the folder is locked, every file
    written atomically and ``manifest.json`` last (a folder dpinfer did not write
    is refused unless ``overwrite=True``). Returns the manifest.
    """
    format = choice("format", format, FORMATS)
    measurements, invariants = release_tables(release)
    meta = {"axes": dict(release.axes.items())}
    with OutputFolder(path, info={"census_release": True}, overwrite=overwrite) as out:
        out.write_text("release.json", json.dumps(meta, indent=2) + "\n")
        for stem, table in (("measurements", measurements), ("invariants", invariants)):
            out.write(f"{stem}.{format}", functools.partial(_save, table, format=format))
        return out.complete()


def _save(table: pd.DataFrame, path, format: str) -> None:
    if format == "parquet":
        table.to_parquet(path, index=False)
    else:
        buffer = io.StringIO()
        table.to_csv(buffer, index=False)
        path.write_text(buffer.getvalue())
