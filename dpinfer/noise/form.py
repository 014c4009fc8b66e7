r"""The per-cell form of a release: each cell's noise law as a record of named numbers.

A release's log-density is a sum over its cells of one term per cell, and each
term is one of a few formulas in the confidential value :math:`s` of the cell
(:math:`r` the released number, :math:`c` the log-density at zero noise):

=====================  ===================================================
kind                   published term
=====================  ===================================================
``LAPLACE``            :math:`c - |r - s| / b`
``GAUSSIAN``           :math:`c - z^2/2`, :math:`z = (r - s)/\sigma`
``DISCRETE_LAPLACE``   :math:`c - |r - s| / t`
``DISCRETE_GAUSSIAN``  :math:`c - z^2/2`, :math:`z = (r - s)/\sigma`
``BINOMIAL``           :math:`c + r \log(s + m) + (n - r)\log(K + m - s)`
=====================  ===================================================

A *suppressed* cell (a :class:`~dpinfer.Thresholded` release below its
threshold) instead contributes :math:`\log P(X \le r - s)`, the noise's
log-CDF at its cut :math:`r` (the largest value that is suppressed).

:meth:`dpinfer.Mechanism.cell_form` returns the *form* of a release: a NumPy
structured array of dtype :data:`CELL`, one record per cell (flat, C order),
whose fields are named below. The compiled functions of :mod:`dpinfer.noise.terms`
evaluate the terms, their ratios, modes and tails from it (``form[i].scale`` in
compiled code, ``form["scale"]`` in NumPy). Every consumer that scores
confidential values without calling ``logpdf`` (the marginal likelihoods of
:func:`dpinfer.to_pymc`, the record updates of :func:`dpinfer.da_mcmc`, the
quadrature of continuous latents) reads this form; none writes a family's
formula again.

Every field is a float64, so that a form is also a plain ``(n, len(CELL))``
float64 matrix (:func:`as_matrix`, :func:`from_matrix`, both without a copy):
what a PyTensor graph can hold as a constant, viewed back as records in NumPy
and in compiled code alike.

===================  ==================================================================
field                meaning
===================  ==================================================================
``kind``             the noise family: ``LAPLACE``, ``GAUSSIAN``, ``DISCRETE_LAPLACE``,
                     ``DISCRETE_GAUSSIAN`` or ``BINOMIAL``
``suppressed``       1 where the cell was suppressed (its term is the noise's log-CDF),
                     else 0
``released``         the released number, or for a suppressed cell its cut
``scale``            the noise scale: ``b``, ``sigma``, ``t``, ``sigma``; NaN for the
                     binomial release
``log_norm``         the log-density at zero noise; for the binomial release
                     ``log C(n, r) - n log(K + 2m)``
``log1p_p``          discrete Laplace: ``log(1 + exp(-1/t))``, its tails' constant
``trials``           binomial release: ``n``
``pseudo_count``     binomial release: ``m``
``population``       binomial release: ``K``
``table_start``      a suppressed discrete Gaussian cell with a log-CDF table
                     (:func:`log_cdf_tables`): where its table starts; else -1
===================  ==================================================================

**Grouped forms.** Most cells of a table share every field but ``released``. A
:class:`Grouped` form (:func:`grouped`) holds each cell's released number, the
records of the distinct groups of the other fields once, and a per-cell group
number only when there is more than one group: 8 bytes a cell instead of 80.
Compiled consumers read either kind of form through :func:`record` (the cell's
fields but ``released``), :func:`released_at` and :func:`size`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numba as nb
import numpy as np
from numba import types
from numba.extending import overload
from numpy.typing import ArrayLike

from .discrete_gaussian import (
    deep_log_cdf,
    discrete_gaussian_log_cdf,
    discrete_gaussian_log_normaliser,
)

__all__ = [
    "BINOMIAL",
    "CELL",
    "DISCRETE_GAUSSIAN",
    "DISCRETE_LAPLACE",
    "GAUSSIAN",
    "KIND_NAMES",
    "LAPLACE",
    "NO_TABLE",
    "Grouped",
    "as_matrix",
    "build",
    "expanded",
    "from_matrix",
    "grouped",
    "log_cdf_tables",
    "record",
    "released_at",
    "size",
    "table_range",
]

# numbered so that kinds with one formula are neighbours (a compiled term tells them apart
# with two comparisons): Laplace's, the Gaussian's, the binomial release's
LAPLACE = 0
DISCRETE_LAPLACE = 1
GAUSSIAN = 2
DISCRETE_GAUSSIAN = 3
BINOMIAL = 4
KIND_NAMES = ("Laplace", "DiscreteLaplace", "Gaussian", "DiscreteGaussian", "BinomialRelease")

_FIELDS = (
    "kind",
    "suppressed",
    "released",
    "scale",
    "log_norm",
    "log1p_p",
    "trials",
    "pseudo_count",
    "population",
    "table_start",
)
#: The record of one cell (see the module notes).
CELL = np.dtype(
    [(name, np.float64) for name in _FIELDS],
    align=True,  # float64s at multiples of 8 bytes: compiled code reads them as aligned
)

#: The log-CDF tables of a form that has none.
NO_TABLE = np.zeros(0)
NO_TABLE.setflags(write=False)

# the discrete Gaussian's log-CDF table spans k in [-depth, TABLE_HIGH sigma]: above it log F = 0
# to double precision; below it the tail is summed directly. The depth is TABLE_LOW sigma, but at
# most TABLE_DEEPER counts more than TABLE_LEAST sigma (log F < -800 there), and no deeper than
# keeps one sigma's table within MAX_TABLE. A suppressed cell keeps its fast path (._suppressed)
# while its window is on the table, also at a rate far above its cut, where NUTS's warm-up goes:
# with tables 40 sigma deep the pageviews tiers' cells took 0.08-1.7 ms each at rates e^2.5-e^3
# times the posterior's, 1.1-1.6 us at 200 sigma.
TABLE_LOW, TABLE_HIGH = 200.0, 12.0
TABLE_LEAST, TABLE_DEEPER = 40.0, 2.0**17
MAX_TABLE = 10_000_000


def build(
    kind: int,
    released: ArrayLike,
    *,
    scale: ArrayLike = math.nan,
    log_norm: ArrayLike,
    **params: ArrayLike,
) -> np.ndarray:
    """Return the form of a release of ``kind``: per-cell numbers broadcast against it.

    ``released`` is flattened (C order); ``params`` names the family's other
    fields (``log1p_p``, ``trials``, ``pseudo_count``, ``population``), each
    broadcast against ``released`` (so a per-cell parameter of the event shape
    serves a stack of releases of shape ``(*rows, *event_shape)``). No cell is
    suppressed and none has a table.
    """
    unknown = set(params) - {"log1p_p", "trials", "pseudo_count", "population"}
    if unknown:
        raise TypeError(f"build got unknown fields {sorted(unknown)}")
    values = np.asarray(released)
    common = np.zeros(1, dtype=CELL)  # the numbers every cell shares
    common["kind"], common["table_start"] = kind, -1.0
    per_cell = {}
    for name, value in {"scale": scale, "log_norm": log_norm, **params}.items():
        value = np.asarray(value, dtype=float)
        if value.size == 1:
            common[name] = value.reshape(())
        else:
            per_cell[name] = value
    form = np.empty(values.size, dtype=CELL)
    as_matrix(form)[...] = as_matrix(common)  # one contiguous pass, not one per field
    form["released"] = values.reshape(-1)
    for name, value in per_cell.items():
        # written through the released's shape: a broadcast view, no per-cell copy
        form[name].reshape(values.shape)[...] = value
    return form


def as_matrix(form: np.ndarray) -> np.ndarray:
    """Return the form as a ``(n, len(CELL))`` float64 matrix, without a copy (C order)."""
    form = np.ascontiguousarray(form, dtype=CELL)
    return form.view(np.float64).reshape(form.size, len(_FIELDS))


def from_matrix(matrix: np.ndarray) -> np.ndarray:
    """Return the records of a matrix made by :func:`as_matrix`, without a copy."""
    return np.ascontiguousarray(matrix, dtype=np.float64).view(CELL).reshape(-1)


@nb.njit(cache=True, error_model="numpy")
def table_range(sigma):
    """``(low, high)``: the ``k`` that a discrete Gaussian's log-CDF table covers."""
    # deeper than TABLE_LEAST sigma only as far as one sigma's table stays within MAX_TABLE
    room = 0.5 * MAX_TABLE - (TABLE_LEAST + TABLE_HIGH) * sigma - 8.0
    deeper = min((TABLE_LOW - TABLE_LEAST) * sigma, TABLE_DEEPER, max(room, 0.0))
    depth = TABLE_LEAST * sigma + deeper
    return -math.ceil(depth) - 1.0, math.ceil(TABLE_HIGH * sigma) + 1.0


def log_cdf_tables(form: np.ndarray, *, copy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(form, table)``: a log-CDF table for the suppressed discrete Gaussian cells.

    One table per distinct sigma: ``log F(k)`` for ``k`` in :func:`table_range`,
    followed by ``F(k - 1) / F(k)`` over the same range (the ratio of
    consecutive terms of a suppressed cell, which a kernel then reads instead of
    taking an ``exp`` of two entries). The returned form's ``table_start``
    says where each such cell's table starts; compiled consumers look values up
    there instead of summing the tail. It is a copy, or with ``copy=False``
    ``form`` itself, written in place.
    """
    if copy:
        form = form.copy()
    at = np.flatnonzero((form["suppressed"] != 0) & (form["kind"] == DISCRETE_GAUSSIAN))
    sigmas, which = np.unique(form["scale"][at], return_inverse=True)
    tables, starts, offset = [], np.empty(sigmas.size), 0
    for i, sigma in enumerate(sigmas.tolist()):
        low, high = (int(v) for v in table_range(sigma))
        if 2 * (high - low + 1) + offset > MAX_TABLE:
            raise ValueError(
                f"suppressed cells with discrete Gaussian noise of sigma {sigma:g} need a log-CDF "
                f"table of {2 * (high - low + 1):,} entries, more than {MAX_TABLE:,}"
            )
        starts[i] = offset
        tables += _log_cdf_table(low, high, sigma)
        offset += 2 * (high - low + 1)
    form["table_start"][at] = starts[which]
    if not tables:
        return form, NO_TABLE
    # read-only like NO_TABLE: one compiled specialisation serves forms with and without tables
    table = np.concatenate(tables)
    table.setflags(write=False)
    return form, table


def _log_cdf_table(low: int, high: int, sigma: float) -> list[np.ndarray]:
    """``[log F(k), F(k - 1) / F(k)]`` for ``k`` from ``low`` to ``high`` (one sigma's table).

    Beyond ``TABLE_LEAST`` sigma below 0 by :func:`deep_log_cdf`'s recurrence, an
    ``exp`` and a ``log`` an entry; nearer 0 by :func:`discrete_gaussian_log_cdf`.
    """
    ks = np.arange(low - 1, high + 1, dtype=float)
    log_cdf, ratio = np.empty(ks.size), np.empty(ks.size)
    deep = int(np.searchsorted(ks, -math.ceil(TABLE_LEAST * sigma) - 1.0))
    if deep:
        log_z = float(discrete_gaussian_log_normaliser(sigma))
        deep_log_cdf(-ks[deep - 1], sigma, log_z, log_cdf[:deep], ratio[:deep])
    log_cdf[deep:] = discrete_gaussian_log_cdf(ks[deep:], sigma)
    near = max(deep, 1)
    ratio[near:] = np.exp(log_cdf[near - 1 : -1] - log_cdf[near:])
    return [log_cdf[1:], ratio[1:]]


class Grouped(NamedTuple):
    """A form whose cells share the records of their groups (see the module notes).

    Attributes
    ----------
    released : numpy.ndarray
        Each cell's released number (float64, flat).
    group : numpy.ndarray
        Each cell's group (int32, one per cell), or empty when every cell is in group 0.
    groups : numpy.ndarray
        The groups' :data:`CELL` records, their ``released`` field NaN.
    """

    released: np.ndarray
    group: np.ndarray
    groups: np.ndarray


_RELEASED = _FIELDS.index("released")
_ROW = np.dtype((np.void, CELL.itemsize - 8))  # a record's bytes but its released number's


def grouped(form: np.ndarray) -> Grouped:
    """Return ``form`` (:data:`CELL` records) as a :class:`Grouped` form: the same cells."""
    matrix = as_matrix(form)
    released = np.ascontiguousarray(matrix[:, _RELEASED])
    # compared as bytes: a NaN field (the binomial's scale) is equal to itself
    words = matrix.view(np.uint64)
    others = [k for k in range(len(_FIELDS)) if k != _RELEASED]
    if len(form) <= 1 or all(bool((words[:, k] == words[0, k]).all()) for k in others):
        first, group = np.zeros(len(form[:1]), dtype=np.intp), np.zeros(0, dtype=np.int32)
    else:
        rows = np.ascontiguousarray(words[:, others]).view(_ROW).ravel()
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
        group = inverse.astype(np.int32).reshape(-1)
    groups = form[first]
    groups["released"] = np.nan
    return Grouped(released, group, groups)


def expanded(form: Grouped) -> np.ndarray:
    """Return the :data:`CELL` records of a :class:`Grouped` form (a new array)."""
    at = form.group if form.group.size else np.zeros(form.released.size, dtype=np.intp)
    cells = form.groups[at]
    cells["released"] = form.released
    return cells


def _is_grouped(form) -> bool:
    return isinstance(form, types.BaseNamedTuple) and form.instance_class is Grouped


def record(form: np.ndarray | Grouped, i: int) -> Any:
    """Return cell ``i``'s record: its fields but ``released`` (that is :func:`released_at`'s)."""
    if isinstance(form, Grouped):
        return form.groups[form.group[i] if form.group.size else 0]
    return form[i]


def released_at(form: np.ndarray | Grouped, i: int) -> float:
    """Return cell ``i``'s released number."""
    return form.released[i] if isinstance(form, Grouped) else form[i]["released"]


def size(form: np.ndarray | Grouped) -> int:
    """Return the number of cells of a form."""
    return form.released.size if isinstance(form, Grouped) else len(form)


@overload(record, inline="always")
def _record(form, i):
    if isinstance(form, types.Array):
        return lambda form, i: form[i]
    if _is_grouped(form):
        return lambda form, i: form.groups[form.group[i] if form.group.size else 0]
    return None


@overload(released_at, inline="always")
def _released_at(form, i):
    if isinstance(form, types.Array):
        return lambda form, i: form[i].released
    if _is_grouped(form):
        return lambda form, i: form.released[i]
    return None


@overload(size, inline="always")
def _size(form):
    if isinstance(form, types.Array):
        return lambda form: form.shape[0]
    if _is_grouped(form):
        return lambda form: form.released.shape[0]
    return None
