r"""The ANOVA basis that makes a census unit's precision diagonal.

When every (unit, query) measurement has one variance ``v_q`` for all its cells,
a unit's precision for its detailed counts is
:math:`\Lambda = \sum_q v_q^{-1} P_q^\top P_q`, and
:math:`P_q^\top P_q = \bigotimes_a M_{q,a}` with :math:`M_{q,a} = I` on an axis
the query keeps and the all-ones matrix :math:`J` on an axis it sums. Per axis
take an orthonormal basis whose first vector is constant (Helmert's):
:math:`I` is diagonal in it and :math:`J = \mathrm{diag}(n_a, 0, \dots, 0)`. So in
the product basis every :math:`P_q^\top P_q`, hence :math:`\Lambda`, is diagonal: the
coordinate :math:`(i_1, \dots, i_A)` belongs to the *component*
:math:`S = \{a : i_a \neq 0\}` and its eigenvalue is

.. math:: \lambda_S = \sum_{q:\ S \subseteq K_q} v_q^{-1} \prod_{a \notin K_q} n_a,

with :math:`K_q` the axes query :math:`q` keeps. Parent sums are linear, so they
hold coordinate by coordinate; and an invariant on query :math:`q` fixes exactly
the coordinates of the components :math:`S \subseteq K_q`. The constrained
least-squares problem of the whole tree splits into independent scalar tree
problems, one per coordinate (:mod:`dpinfer.census._gls`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from ._queries import Axes, Query

__all__ = ["Basis"]


class Basis:
    """The product Helmert basis of a histogram's axes.

    Attributes
    ----------
    components : numpy.ndarray of int64
        The component (a bitmask of axes) of each of the ``axes.cells`` coordinates.
    n_components : int
        ``2 ** len(axes)``.
    """

    def __init__(self, axes: Axes):
        self.axes = axes
        self.sizes = axes.sizes
        self.helmert = [scipy.linalg.helmert(n, full=True) for n in self.sizes]
        grids = np.indices(self.sizes).reshape(len(self.sizes), -1)
        self.components = sum(
            (grids[a] != 0).astype(np.int64) << a for a in range(len(self.sizes))
        )
        self.n_components = 1 << len(self.sizes)

    def to_basis(self, detailed: np.ndarray) -> np.ndarray:
        """Coordinates of detailed vectors ``(..., cells)`` in the basis."""
        return self._apply(detailed, transpose=False)

    def from_basis(self, coords: np.ndarray) -> np.ndarray:
        """Detailed vectors ``(..., cells)`` of coordinates in the basis."""
        return self._apply(coords, transpose=True)

    def _apply(self, arr: np.ndarray, *, transpose: bool) -> np.ndarray:
        lead = arr.shape[:-1]
        out = np.asarray(arr, dtype=float).reshape((*lead, *self.sizes))
        for a, h in enumerate(self.helmert):
            out = np.moveaxis(
                np.tensordot(out, h if transpose else h.T, axes=([len(lead) + a], [0])),
                -1,
                len(lead) + a,
            )
        return out.reshape((*lead, -1))

    def query_coordinates(self, query: Query, values: np.ndarray) -> np.ndarray:
        """Coordinates of ``P_q^T values`` (``values`` ``(..., query.cells)``), all of them.

        The coordinates outside the query's components are zero.
        """
        lead = values.shape[:-1]
        kept = np.asarray(values, dtype=float).reshape((*lead, *query.shape))
        for i, k in enumerate(query.kept):
            kept = np.moveaxis(
                np.tensordot(kept, self.helmert[k].T, axes=([len(lead) + i], [0])),
                -1,
                len(lead) + i,
            )
        full = np.zeros((*lead, *self.sizes))
        index = tuple(slice(None) if a in query.kept else 0 for a in range(len(self.sizes)))
        full[(Ellipsis, *index)] = kept * math.sqrt(query.summed_size)
        return full.reshape((*lead, -1))

    def query_components(self, query: Query) -> np.ndarray:
        """Return the components a query sees (``S`` within its kept axes) as a boolean mask."""
        mask = sum(1 << k for k in query.kept)
        return np.array([(s & ~mask) == 0 for s in range(self.n_components)])

    def eigenvalue(self, query: Query) -> np.ndarray:
        """``diag`` of ``P_q^T P_q`` per component: the summed size on the components it sees."""
        return np.where(self.query_components(query), float(query.summed_size), 0.0)

    def cell_variance_weights(self, query: Query) -> np.ndarray:
        r"""Weights ``w_S``: ``Var(query cell) = sum_S w_S s_S`` for component variances ``s_S``.

        :math:`w_S = N_q \prod_{a \in S} (1 - 1/n_a) \prod_{a \in K_q \setminus S} 1/n_a`
        for :math:`S \subseteq K_q` (zero otherwise), :math:`N_q` the query's summed size;
        the same for every cell of the query.
        """
        weights = np.zeros(self.n_components)
        for s in np.flatnonzero(self.query_components(query)):
            w = float(query.summed_size)
            for k in query.kept:
                n = self.sizes[k]
                w *= (1 - 1 / n) if s >> k & 1 else 1 / n
            weights[s] = w
        return weights
