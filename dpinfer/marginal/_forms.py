"""The releases of a table's cells as one per-cell form, for the compiled kernel.

Each (mechanism, release) pair gives its form (:meth:`dpinfer.Mechanism.cell_form`,
rows following one another for releases of several rows); the forms of the pairs are joined
release after release, so that release ``m`` of cell ``j`` is record ``m n + j``
of the joined form (``n`` cells).

The marginal Op holds a joined form grouped (:func:`dpinfer.noise.form.grouped`) as
two float64 vectors (:func:`packed`): the cells' released numbers, and a *shared*
vector: the number of groups ``g`` and of group numbers ``k`` (0 when every cell is
in one group), the ``g`` group records, the ``k`` int32 group numbers (two a word,
the last word padded) and the log-CDF tables, whose places the records' ``table_start``
count from the tables' start. :func:`unpacked` gives the grouped form and the tables back.

**One layout, one compiled copy.** Numba compiles a kernel once for each combination of
its arguments' types, and a read-only array is not of a writable one's type. Every
caller of the compiled sums therefore hands them the form as :func:`unpacked` gives it
(a :class:`~dpinfer.noise.form.Grouped` form of read-only arrays, with read-only tables:
:func:`kernel_form` from a joined form), the latent parameters as writable C-contiguous
float64 vectors (:func:`parameters`), and its own writable outputs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

from .. import _validate
from ..noise.form import CELL, Grouped, as_matrix, grouped, log_cdf_tables
from ._kernels import COUNTABLE

__all__ = [
    "HEADER",
    "joined_form",
    "kernel_form",
    "packed",
    "parameters",
    "read_only",
    "release_form",
    "release_views",
    "unpacked",
]

#: The shared vector's leading words: the number of groups and of group numbers.
HEADER = 2
_WIDTH = CELL.itemsize // 8


def release_form(mechanism, released, latent_discrete: bool, name: str = "released") -> np.ndarray:
    """Return the per-cell form of ``released`` (shape ending in the event shape).

    A release of several rows (``(*rows, *event_shape)``) is checked and
    formed in one vectorised pass, its rows' forms following one another.
    ``name`` is the parameter that messages about the release name.
    """
    if mechanism.discrete and not latent_discrete:
        raise ValueError(
            f"{type(mechanism).__name__} releases integers and needs an integer confidential "
            "value; the latent distribution given is continuous"
        )
    form = mechanism.cell_form(released, rows=True, name=name)
    if form is None:
        raise ValueError(
            f"{type(mechanism).__name__} has no per-cell log-density, so its releases cannot "
            "be marginalised cell by cell"
        )
    far = ~(np.abs(form["released"]) < COUNTABLE)
    if latent_discrete and far.any():
        requirement = (
            "stay below 2**53 in magnitude, where float64 counts in steps of one (an integer "
            "confidential value is summed out one count at a time)"
        )
        raise ValueError(
            _validate.bad_entries("released", far.reshape(np.shape(released)), requirement)
        )
    return form


def joined_form(forms: list[np.ndarray], *, copy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Join the releases' forms (release after release); return it and its log-CDF tables.

    With ``copy=False`` the forms are the caller's to give up: a single form is
    joined and tabled in place, without a copy.
    """
    joined = forms[0] if len(forms) == 1 else np.concatenate(forms)
    return log_cdf_tables(joined, copy=copy and len(forms) == 1)


def release_views(form: np.ndarray, releases: int) -> list[np.ndarray]:
    """Return the forms of the releases of a joined ``form``: views of it, release by release."""
    return np.split(form, releases)


def packed(form: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(released, shared)``: a joined form and its tables as the Op holds them.

    ``released`` is a view of no other array: the form's own numbers are not kept.
    """
    cells = grouped(form)
    numbers = cells.group.size
    words = np.zeros((numbers + 1) // 2)
    words.view(np.int32)[:numbers] = cells.group
    header = np.array([cells.groups.size, numbers], dtype=float)
    shared = np.concatenate([header, as_matrix(cells.groups).ravel(), words, table])
    return cells.released, shared


def unpacked(released: np.ndarray, shared: np.ndarray) -> tuple[Grouped, np.ndarray]:
    """Return the grouped form and the tables of :func:`packed`'s vectors (read-only views)."""
    shared = read_only(shared)
    groups, numbers = int(shared[0]), int(shared[1])
    start = HEADER + groups * _WIDTH
    stop = start + (numbers + 1) // 2
    records = shared[HEADER:start].view(CELL)
    group = shared[start:stop].view(np.int32)[:numbers]
    return Grouped(read_only(released), group, records), shared[stop:]


def kernel_form(form: np.ndarray, table: np.ndarray) -> tuple[Grouped, np.ndarray]:
    """Return a joined form (records) and its tables as the compiled sums read them."""
    return unpacked(*packed(form, table))


def read_only(x: np.ndarray, dtype: DTypeLike = np.float64) -> np.ndarray:
    """``x`` as a read-only C-contiguous array of ``dtype`` (a view where it already is one)."""
    view: np.ndarray = np.ascontiguousarray(x, dtype=dtype).view()
    view.setflags(write=False)
    return view


def parameters(x: np.ndarray) -> np.ndarray:
    """``x`` as a writable C-contiguous float64 vector (itself where it already is one)."""
    if x.dtype == np.float64 and x.flags.c_contiguous and x.flags.writeable:
        return x  # an Op's usual input: np.require's checks cost microseconds each evaluation
    return np.require(x, dtype=np.float64, requirements=["C", "W"])
