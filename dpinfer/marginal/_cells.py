"""Each mechanism's release as per-cell numbers for the compiled kernel.

A release of ``n`` cells becomes, for the kernel of :mod:`._kernels`, a term kind
per cell, the released value (for a suppressed cell, its cut: the largest
suppressed noisy value), the eight coefficients of the term's formula (the
last two the support of the confidential value), and for suppressed
discrete-Gaussian cells a table of the noise's log-CDF (the kernel looks values
up instead of summing the tail at every term).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms._tails import discrete_gaussian_log_cdf
from ..mechanisms.base import AdditiveNoise
from ..mechanisms.discrete import (
    DiscreteGaussian,
    DiscreteLaplace,
    discrete_gaussian_log_normaliser,
)
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.thresholded import Thresholded
from . import _kernels as k

# the discrete Gaussian's log-CDF table spans [-TABLE_LOW sigma, TABLE_HIGH sigma]: below, the
# kernel sums the tail directly (log F < -800 there); above, log F = 0 to double precision
TABLE_LOW, TABLE_HIGH = 40.0, 12.0
MAX_TABLE = 10_000_000


@dataclass(frozen=True)
class Cells:
    """Per-cell numbers of one mechanism's release (flattened cells)."""

    kinds: np.ndarray
    released: np.ndarray
    coef: np.ndarray
    table: np.ndarray

    @staticmethod
    def stack(measurements: list[Cells]) -> tuple[np.ndarray, ...]:
        """Kinds ``(m, n)``, releases ``(m, n)``, coefficients ``(m, n, 8)`` and one table."""
        tables, offset, coefs = [], 0, []
        for cells in measurements:
            coef = cells.coef.copy()
            below = cells.kinds == k.DISCRETE_GAUSSIAN_BELOW
            coef[below, 1] += offset
            coefs.append(coef)
            tables.append(cells.table)
            offset += cells.table.size
        return (
            np.stack([c.kinds for c in measurements]).astype(np.int64),
            np.stack([c.released for c in measurements]).astype(float),
            np.ascontiguousarray(np.stack(coefs)),
            np.concatenate([*tables, np.zeros(1)]),
        )


def release_cells(
    mechanism, released: np.ndarray, latent_discrete: bool, name: str = "released"
) -> Cells:
    """Return the per-cell numbers of ``released`` (shape ending in the event shape).

    ``name`` is the parameter that messages about the release name.
    """
    if mechanism.discrete and not latent_discrete:
        raise ValueError(
            f"{type(mechanism).__name__} releases integers and needs an integer confidential "
            "value; the latent distribution given is continuous"
        )
    rows = np.reshape(released, (-1, *mechanism.event_shape))
    parts = [_row(mechanism, mechanism._check_released(row, name)) for row in rows]
    if len(parts) == 1:
        return parts[0]
    kinds, values, coefs, tables = zip(*((p.kinds, p.released, p.coef, p.table) for p in parts))
    return Cells(np.concatenate(kinds), np.concatenate(values), np.concatenate(coefs), tables[0])


def _row(mechanism, released: np.ndarray) -> Cells:
    if isinstance(mechanism, Thresholded):
        return _thresholded(mechanism, released)
    form = mechanism._coordinate_form(released)
    if form is None:
        raise ValueError(
            f"{type(mechanism).__name__} has no per-cell log-density, so its releases cannot "
            "be marginalised cell by cell"
        )
    n = form.released.size
    coef = np.zeros((n, 8))
    coef[:, :4] = form.coefficients
    coef[:, k.LOWER], coef[:, k.UPPER] = form.lower, form.upper
    return Cells(np.full(n, form.kind), form.released, coef, np.zeros(0))


def _thresholded(mechanism: Thresholded, released: np.ndarray) -> Cells:
    """Return published cells as the inner release, suppressed ones as their cuts' CDFs."""
    suppressed = np.isnan(released).reshape(-1)
    published = ~suppressed
    cut = np.broadcast_to(mechanism._cut, mechanism.event_shape).reshape(-1)
    flat = released.reshape(-1)
    candidates = np.where(suppressed, np.inf, flat).reshape(mechanism.event_shape)
    impossible = published & ~mechanism._publishes(candidates).reshape(-1)
    if impossible.any():
        bad = np.flatnonzero(impossible)[:5].tolist()
        raise ValueError(
            "released has published cells below the threshold, impossible under this "
            f"mechanism (positions {bad}); check threshold= and publish={mechanism.publish!r}"
        )
    inner = mechanism.mechanism
    values = np.where(suppressed, cut, flat)
    out = _row(inner, values.reshape(mechanism.event_shape).astype(inner_dtype(inner)))
    kinds, coef = out.kinds.copy(), out.coef.copy()
    below, table = _below(inner, np.flatnonzero(suppressed))
    kinds[suppressed] = below.kinds
    coef[suppressed] = below.coef
    return Cells(kinds, values, coef, table)


def inner_dtype(mechanism):
    """Return the dtype of the inner mechanism's releases."""
    return np.int64 if mechanism.discrete else float


def _below(mechanism: AdditiveNoise, cells: np.ndarray) -> tuple[Cells, np.ndarray]:
    """Kinds and coefficients of suppressed ``cells`` of the additive ``mechanism``."""
    n = cells.size
    coef = np.zeros((n, 8))
    coef[:, k.LOWER], coef[:, k.UPPER] = -np.inf, np.inf

    def param(name):
        return np.broadcast_to(getattr(mechanism, name), mechanism.event_shape).reshape(-1)[cells]

    table = np.zeros(0)
    if isinstance(mechanism, DiscreteGaussian):
        kind = k.DISCRETE_GAUSSIAN_BELOW
        sigma = param("sigma")
        coef[:, 0] = sigma
        table = _log_cdf_tables(sigma, coef)
    elif isinstance(mechanism, DiscreteLaplace):
        kind = k.DISCRETE_LAPLACE_BELOW
        coef[:, 0], coef[:, 1] = param("scale"), param("_log1p_p")
    elif isinstance(mechanism, Gaussian):
        kind = k.GAUSSIAN_BELOW
        coef[:, 0] = param("sigma")
    elif isinstance(mechanism, Laplace):
        kind = k.LAPLACE_BELOW
        coef[:, 0] = param("scale")
    else:
        raise TypeError(f"suppressed cells of {type(mechanism).__name__} are not supported")
    return Cells(np.full(n, kind), np.zeros(n), coef, np.zeros(0)), table


def _log_cdf_tables(sigma: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """One log-CDF table per distinct sigma; fill each cell's offset and bounds in ``coef``.

    Each table of ``log F(k)``, ``k`` in ``[low, high]``, is followed by one of the same
    length holding ``F(k - 1) / F(k)``: the ratio of consecutive terms of a suppressed
    cell, which the kernel then reads instead of taking an ``exp`` of two entries.
    """
    tables, offset = [], 0
    for s in np.unique(sigma):
        low, high = -math.ceil(TABLE_LOW * s) - 1, math.ceil(TABLE_HIGH * s) + 1
        if 2 * (high - low + 1) + offset > MAX_TABLE:
            raise ValueError(
                f"suppressed cells with discrete Gaussian noise of sigma {s:g} need a log-CDF "
                f"table of {2 * (high - low + 1):,} entries, more than {MAX_TABLE:,}"
            )
        at = sigma == s
        coef[at, 1], coef[at, 2] = offset, discrete_gaussian_log_normaliser(float(s))
        coef[at, 3], coef[at, 4] = low, high
        log_cdf = discrete_gaussian_log_cdf(np.arange(low - 1, high + 1, dtype=float), s)
        tables += [log_cdf[1:], np.exp(log_cdf[:-1] - log_cdf[1:])]
        offset += 2 * (high - low + 1)
    return np.concatenate(tables) if tables else np.zeros(0)
