"""The lattice posterior of a release folder, one county in memory at a time.

:func:`stream_posterior` reads the folder part by part
(:class:`dpinfer.census.StreamedRelease`), keeps every part's chain state and
summaries on disk between uses (:class:`DiskStore`, in the release's private
temporary folder), runs the same rounds as :func:`dpinfer.census.sample_posterior`
(the same draws, seed for seed, from the same folder) with two parts in memory
at a time, and writes every unit's summaries to ``summary.csv`` (or
``.parquet``) in an output folder, part by part.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._rng import RNGLike
from .._validate import choice
from ..outputs import OutputFolder
from ._plan import make_plan, run_chains
from ._posterior import check_options, check_trace, draws_data
from ._streamed import CHUNK_ROWS, StreamedRelease
from ._summaries import summary_rows

__all__ = ["DiskStore", "StreamedPosterior", "stream_posterior"]

#: Rows of the summary table written at a time.
ROWS_PER_WRITE = 500_000


class DiskStore:
    """Values kept in files of a :class:`StreamedRelease`'s private temporary folder."""

    def __init__(self, release: StreamedRelease):
        self._release = release
        self._names: dict = {}
        self._made = 0

    def _path(self, key) -> str:
        if key not in self._names:
            self._names[key] = f"state-{self._made}.pickle"
            self._made += 1
        return self._release.temporary_file(self._names[key])

    def put(self, key, value) -> None:
        """Write ``value`` under ``key`` (None forgets it)."""
        path = self._path(key)
        if value is None:
            del self._names[key]
            os.unlink(path)
            return
        with open(path, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)

    def get(self, key, default=None):
        """Read what was written under ``key`` (``default`` if nothing)."""
        if key not in self._names:
            return default
        with open(self._path(key), "rb") as source:
            return pickle.load(source)  # noqa: S301 (our own file, in our private folder)


@dataclass(frozen=True, eq=False)
class StreamedPosterior:
    """The lattice posterior of a streamed release: draws in memory, summaries on disk.

    Attributes
    ----------
    idata : arviz.InferenceData
        As :attr:`dpinfer.census.CensusPosterior.idata`.
    summary : pathlib.Path
        The table of every unit's query cells (``geocode, query, cell, estimate, sd,
        lower, upper``), written part by part.
    manifest : dict
        The output folder's manifest.
    clipped : int
    rate : float
        Cell updates per CPU second of the chains.
    """

    idata: object
    summary: object
    manifest: dict
    clipped: int
    rate: float


def stream_posterior(
    path: str | os.PathLike,
    out: str | os.PathLike,
    *,
    draws: int = 500,
    tune: int = 200,
    chains: int = 4,
    prior: str = "flat",
    prior_params: Sequence[float] | None = None,
    per_leaf: int | None = None,
    intervals: bool = True,
    trace: Sequence[str] = (),
    format: str = "csv",
    overwrite: bool = False,
    chunk_rows: int = CHUNK_ROWS,
    rng: RNGLike = None,
    progressbar: bool = True,
) -> StreamedPosterior:
    """Sample the lattice posterior of the release folder ``path``, a county at a time.

    Parameters
    ----------
    path : str or path
        A release folder (see :func:`dpinfer.census.read_release`).
    out : str or path
        The output folder (an :class:`dpinfer.outputs.OutputFolder`).
    draws, tune, chains, prior, prior_params, per_leaf, intervals, trace, rng
        As :func:`dpinfer.census.sample_posterior`.
    format : {"csv", "parquet"}, default "csv"
        Of ``summary``.
    overwrite : bool, default False
        Passed to :class:`dpinfer.outputs.OutputFolder`.
    chunk_rows : int, default 20,000
        Rows of the release's tables read at a time.
    progressbar : bool, default True

    Returns
    -------
    StreamedPosterior

    Notes
    -----
    In memory at a time: one chunk of rows while the folder is read; then the
    tree's units (geocodes and links), two parts' chain states and summaries, and
    the root's. The least-squares start is the tree passes' (part by part); when
    they do not apply (cells of one query with different variances, a leaf not
    measured in every component) the chains start from empty tables made to meet
    the invariants. Same draws, seed for seed, as :func:`sample_posterior` on
    :func:`read_release` of the same folder when the tree passes apply.
    """
    format = choice("format", format, ("csv", "parquet"))
    with StreamedRelease(path, chunk_rows=chunk_rows) as release:
        options, prior_parts, root = check_options(
            draws, tune, chains, per_leaf, prior, prior_params, release.axes.cells, rng,
            progressbar,
        )  # fmt: skip
        units = release.units
        options.update(intervals=intervals, store_leaves=False, executor=None)
        options["trace"] = check_trace(trace, units)
        inner = units.geocodes[units.n_children > 0]
        plan = make_plan(
            release, DiskStore(release), inner_geocodes=inner,
            fallback_start=lambda i: _empty(release, i), prior=prior_parts, options=options,
        )  # fmt: skip
        outputs, seconds, summaries = run_chains(plan, root, progressbar=progressbar)
        info = {"census_posterior": True, "draws": plan.draws, "chains": plan.chains}
        with OutputFolder(out, info=info, overwrite=overwrite) as folder:
            clipped = []
            name = f"summary.{format}"
            written = folder.write(name, lambda p: clipped.append(_write(plan, summaries, p)))
            manifest = folder.complete()
        idata = draws_data(plan, outputs, seconds, root, prior, inner, options["trace"])
    rate = plan.counts[0] / max(seconds, 1e-9)
    return StreamedPosterior(idata, written, manifest, clipped[0], rate)


def _empty(release, i):
    part = release.part(i)
    return np.zeros((part.units.leaves.size, release.axes.cells))


def _write(plan, summaries, path) -> int:
    """Write every unit's summaries to ``path``, part by part; return the clipped ends."""
    parts, layout = plan.parts, plan.layout
    n = plan.draws * plan.chains
    pieces = [(-1, summaries.get("top"))] + [(i, None) for i in range(len(parts))]
    clipped = 0
    writer = None
    try:
        for i, summary in pieces:
            part = parts.top() if i < 0 else parts.part(i)
            if part is None:
                continue
            summary = summary if i < 0 else plan.store.get(i).summary
            rows = summary_rows(part.units.geocodes, layout, summary, layout.measured(part), n,
                                rows=ROWS_PER_WRITE)  # fmt: skip
            for frame, n_clipped in rows:
                clipped += n_clipped
                writer = _append(writer, frame, path)
    finally:
        if writer is not None and hasattr(writer, "close"):
            writer.close()
    return clipped


def _append(writer, frame, path):
    if str(path).endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema(
            [("geocode", pa.dictionary(pa.int32(), pa.string())), ("query", pa.string()),
             ("cell", pa.int64())] + [(k, pa.float64()) for k in ("estimate", "sd", "lower",
                                                                  "upper")]
        )  # fmt: skip
        table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
        table = table.replace_schema_metadata(None)
        writer = writer or pq.ParquetWriter(str(path), schema)
        writer.write_table(table)
        return writer
    frame.to_csv(path, mode="a" if writer else "w", header=writer is None, index=False)
    return writer or True
