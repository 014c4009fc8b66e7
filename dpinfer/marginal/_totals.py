"""Exact totals over groups of cells: read and checked, and the latent counts drawn given them.

``totals=(groups, values)`` of :func:`dpinfer.to_pymc` names, for every cell, the
group whose exact total its latent count is part of (``-1`` for none), and each
group's total. :func:`read_totals` checks them against the cells and their
releases and orders the grouped cells group by group, as the compiled sums of
:mod:`._groups` read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate
from ..noise.form import CELL, NO_TABLE
from ._forms import kernel_form, parameters, read_only
from ._groups import OK, group_draws, release_supports
from ._kernels import COUNTABLE

__all__ = ["Groups", "draw_given_totals", "read_totals"]

_SHOWN = 5  # groups named in a message


@dataclass(frozen=True)
class Groups:
    """The cells' groups, ordered for the compiled sums.

    Attributes
    ----------
    order : numpy.ndarray
        Flat (C order) indices of the grouped cells, group after group, each
        group's cells in C order.
    starts : numpy.ndarray
        ``(G + 1,)`` int64: group ``g`` is ``order[starts[g]:starts[g + 1]]``.
    totals : numpy.ndarray
        ``(G,)`` float64: each group's exact total.
    free : numpy.ndarray
        Flat indices of the cells in no group.
    """

    order: np.ndarray
    starts: np.ndarray
    totals: np.ndarray
    free: np.ndarray

    @property
    def firsts(self) -> np.ndarray:
        """The flat index of each group's first cell, which holds its log-likelihood."""
        return self.order[self.starts[:-1]]


def read_totals(totals, cells: tuple[int, ...], forms: list[np.ndarray]) -> Groups:
    """Return the :class:`Groups` of ``totals=(groups, values)``, or raise naming the problem.

    ``forms`` are the per-cell forms of the cells' releases (flat, C order): a
    total outside the counts that the releases allow (a binomial release's
    population bounds its cell's count) is refused, naming its group.
    """
    if not (isinstance(totals, tuple | list) and len(totals) == 2):
        got = type(totals).__name__
        if isinstance(totals, tuple | list):
            got = f"a {got} of {len(totals)} items"
        raise TypeError(
            "totals must be a (groups, values) pair: an integer array of the cells' shape "
            f"giving each cell's group (-1 for none) and one exact total per group; got {got}"
        )
    groups = _validate.integer_array("totals[0] (groups)", totals[0])
    values = _validate.integer_array("totals[1] (values)", totals[1], confidential=True)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            f"totals[1] (values) must hold one total per group (a non-empty 1-d array), got "
            f"shape {values.shape}"
        )
    try:
        groups = np.broadcast_to(groups, cells)
    except ValueError:
        raise ValueError(
            f"totals[0] (groups) of shape {groups.shape} does not broadcast to the cells' "
            f"shape {cells}"
        ) from None
    _check_entries(groups, values)
    flat = groups.reshape(-1)
    sizes = np.bincount(flat[flat >= 0], minlength=values.size)
    _refuse_groups(sizes == 0, "has no cell", "have no cell")
    order = np.argsort(flat, kind="stable")
    order = order[flat[order] >= 0]
    result = Groups(
        order=order,
        starts=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        totals=values.astype(float),
        free=np.flatnonzero(flat < 0),
    )
    _check_reachable(result, forms)
    return result


def _check_entries(groups: np.ndarray, values: np.ndarray) -> None:
    if np.any(values < 0):
        raise ValueError(
            _validate.bad_entries("totals[1] (values)", values < 0, "be non-negative counts")
        )
    far = ~(values < COUNTABLE)
    if np.any(far):
        raise ValueError(
            _validate.bad_entries(
                "totals[1] (values)", far, "stay below 2**53, where float64 counts in steps of one"
            )
        )
    outside = (groups < -1) | (groups >= values.size)
    if np.any(outside):
        raise ValueError(
            _validate.bad_entries(
                "totals[0] (groups)",
                outside,
                f"be -1 (no total) or a group number in [0, {values.size}), one per total",
            )
        )


def _check_reachable(groups: Groups, forms: list[np.ndarray]) -> None:
    """Refuse the totals that no split allowed by the cells' releases can meet."""
    form, _ = kernel_form(np.concatenate([f[groups.order] for f in forms]), NO_TABLE)
    lower, upper = release_supports(form, groups.order.size)
    low = np.add.reduceat(np.ceil(lower), groups.starts[:-1])
    high = np.add.reduceat(np.floor(upper), groups.starts[:-1])
    _refuse_groups(
        (groups.totals < low) | (groups.totals > high),
        "has a total that no split of it among its cells' releases can meet (a binomial "
        "release bounds its cell's count by its population)",
        "have totals that no split of them among their cells' releases can meet (a binomial "
        "release bounds its cell's count by its population)",
    )


def _refuse_groups(bad: np.ndarray, one: str, several: str) -> None:
    where = np.flatnonzero(bad)
    if where.size == 0:
        return
    more = ", ..." if where.size > _SHOWN else ""
    listed = ", ".join(str(int(g)) for g in where[:_SHOWN]) + more
    if where.size == 1:
        raise ValueError(f"totals: group {listed} {one}")
    raise ValueError(f"totals: {where.size} groups ({listed}) {several}")


def draw_given_totals(family, a, b, groups: Groups, tol: float, rng) -> np.ndarray:
    """Draw the latent counts of every cell, the grouped ones given their groups' totals.

    ``a, b`` are the latent's parameters, flat (one entry per cell, C order).
    """
    counts = np.asarray(family.sample(rng, a, b, a.shape), dtype=float)
    if groups.order.size == 0:
        return counts
    drawn = np.empty(groups.order.size)
    status = group_draws(
        family,
        parameters(a[groups.order]),
        parameters(b[groups.order]),
        *kernel_form(np.zeros(0, dtype=CELL), NO_TABLE),  # no releases: the latent counts alone
        tol,
        read_only(groups.starts, np.int64),
        read_only(groups.totals),
        rng.random(groups.order.size),
        drawn,
    )
    failed = np.flatnonzero(status != OK)
    if failed.size:
        raise ValueError(
            f"cannot draw the counts of group(s) {failed[:_SHOWN].tolist()} given their totals: "
            "the latent's parameters there give the total no probability"
        )
    counts[groups.order] = drawn
    return counts
