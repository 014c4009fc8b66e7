"""Dense constrained least squares (the KKT system): the reference for small releases.

The unknowns are every leaf's detailed counts; each measured cell is a row of
the design (the sum of the leaf cells it counts) weighted by its inverse
variance; each invariant cell is an equality constraint. The estimate and its
covariance come from the bordered (KKT) system
``[[A^T W A, C^T], [C, 0]]``: its inverse's top-left block is the covariance of
the constrained estimate.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ._release import CensusRelease
from ._result import GLSResult

__all__ = ["dense_gls", "design"]

#: Largest number of unknowns (leaves x detailed cells) the dense solver accepts.
MAX_UNKNOWNS = 6000


def design(release: CensusRelease, unit: np.ndarray, query, cell: np.ndarray) -> np.ndarray:
    """Rows of the design: which leaf detailed cells each (unit, query cell) counts."""
    units = release.units
    leaves = units.leaves
    ancestors = units.leaf_ancestors()
    q = release.query(query) if isinstance(query, str) else query
    under = (ancestors[None, :, :] == np.asarray(unit)[:, None, None]).any(axis=2)
    in_cell = q.cell_of_detailed[None, :] == np.asarray(cell)[:, None]
    rows = under[:, :, None] & in_cell[:, None, :]
    return rows.reshape(len(unit), leaves.size * release.axes.cells).astype(float)


def dense_gls(release: CensusRelease) -> GLSResult:
    """Constrained generalised least squares by the KKT system (see the module docstring).

    Returns a :class:`~dpinfer.census.GLSResult` with ``method="dense"``; refuses
    releases with more than :data:`MAX_UNKNOWNS` unknowns.
    """
    units = release.units
    leaves = units.leaves
    d = release.axes.cells
    n = leaves.size * d
    if n > MAX_UNKNOWNS:
        raise ValueError(
            f"the dense solver takes at most {MAX_UNKNOWNS} unknowns (leaves x detailed cells); "
            f"this release has {n}: the tree passes (method 'tree' or 'matrix') need each "
            "leaf's own measurements to determine its detailed cells"
        )
    a_rows, weights, y = [], [], []
    for name, meas in release.measurements.items():
        unit, cell = np.nonzero(np.isfinite(meas.variance))
        a_rows.append(design(release, meas.units[unit], name, cell))
        weights.append(1.0 / meas.variance[unit, cell])
        y.append(meas.values[unit, cell].astype(float))
    c_rows, c = [], []
    for name, inv in release.invariants.items():
        unit, cell = np.indices(inv.values.shape).reshape(2, -1)
        c_rows.append(design(release, inv.units[unit], name, cell))
        c.append(inv.values[unit, cell].astype(float))
    a = np.concatenate(a_rows)
    w = np.concatenate(weights)
    cmat = np.concatenate(c_rows) if c_rows else np.zeros((0, n))
    cmat, cvec = _independent(cmat, np.concatenate(c) if c else np.zeros(0))
    k = cmat.shape[0]
    kkt = np.zeros((n + k, n + k))
    kkt[:n, :n] = a.T @ (w[:, None] * a)
    kkt[:n, n:] = cmat.T
    kkt[n:, :n] = cmat
    rhs = np.concatenate([a.T @ (w * np.concatenate(y)), cvec])
    if np.linalg.matrix_rank(kkt) < n + k:
        raise ValueError("the counts are not identified by the measurements and invariants")
    inverse = np.linalg.inv(kkt)
    x = (inverse @ rhs)[:n].reshape(leaves.size, d)
    cov = inverse[:n, :n]
    every = np.zeros((len(units), leaves.size))
    ancestors = units.leaf_ancestors()
    for j in range(ancestors.shape[1]):
        ok = ancestors[:, j] >= 0
        every[ancestors[ok, j], np.flatnonzero(ok)] = 1.0
    detailed = every @ x
    sds = {}
    for q in release.queries:
        m = np.kron(every, q.design)
        var = np.einsum("ij,jk,ik->i", m, cov, m)
        sds[q.name] = np.sqrt(np.maximum(var, 0.0)).reshape(len(units), q.cells)
    return GLSResult(release, detailed, "dense", sds)


def _independent(cmat: np.ndarray, c: np.ndarray):
    """Drop constraint rows implied by the others (consistent invariants can repeat)."""
    if cmat.shape[0] == 0:
        return cmat, c
    q, r, perm = scipy.linalg.qr(cmat.T, pivoting=True, mode="economic")
    diag = np.abs(np.diag(r))
    rank = int((diag > 1e-9 * diag.max()).sum())
    keep = np.sort(perm[:rank])
    return cmat[keep], c[keep]
