r"""Least squares over the tree: the linear-Gaussian posterior under a flat prior.

The measurements are read as Gaussian with their published variances, the
counts as real numbers; the invariants are equality constraints. The result is
the constrained generalised least-squares estimate of every unit's every query
cell, its standard deviation, and joint Gaussian draws.

**The fast path** (every (unit, query) measurement has one variance for all its
cells, and every leaf is measured in every ANOVA component, as with the detailed
query at the blocks): in the basis of :mod:`dpinfer.census._anova` the problem
splits into one scalar tree problem per coordinate, solved by one pass up and
one pass down the tree, each a few vectorised numpy operations per level:

* up: a unit's *lower* estimate (mean ``mu``, variance ``V``: the posterior of its
  coordinate given the measurements in its subtree) combines the sum of its
  children's lower estimates ``(mu_c, V_c)`` with its own measurements
  ``(lambda, z)``: ``V = V_c / (1 + lambda V_c)``, ``mu = (mu_c + V_c z) / (1 + lambda V_c)``
  (a leaf: ``1 / lambda`` and ``z / lambda``); an invariant sets ``V = 0``, ``mu = t``;
* down: given the parent's posterior ``(m_p, s_p)``, a child's is
  ``m = mu + w (m_p - mu_c(p))``, ``s = V - w V + w^2 s_p`` with ``w = V / V_c(p)``.

Variances depend on the component only, so they are carried as ``(units,
2**axes)`` arrays; a query cell's variance is a weighted sum of its unit's
component variances (:meth:`Basis.cell_variance_weights`). Time and memory are
linear in the number of units times the number of detailed cells; there are no
``d x d`` matrices.

**Otherwise** (cells of one query with different variances, units that miss a
query) the passes carry one ``d x d`` matrix per unit
(:mod:`dpinfer.census._matrix_passes`): linear in the number of units again,
``O(units x d^3)`` time and ``O(units x d^2)`` memory, for small histograms (a
few dozen cells; not the 2,016-cell PL94 histogram, for which that is 4 million
numbers per unit). They need each leaf's own measurements to determine the
detailed counts its invariants leave free (the ANOVA passes need the same).
When even that fails, a small release still has the dense constrained least
squares of :func:`dense_gls` (the KKT system over all leaf cells, at most
6,000 unknowns).

======== ============================================ ==============================
method   applies when                                 cost
======== ============================================ ==============================
"tree"   one variance per (unit, query); every leaf   ``O(units x d x sum(sizes))``
         measured in every ANOVA component            time, ``O(units x d)`` memory
"matrix" every leaf's own measurements determine its  ``O(units x d^3)`` time,
         cells (given its invariants)                 ``O(units x d^2)`` memory
"dense"  the whole release identifies the leaf cells  ``O((leaves x d)^3)``, at
                                                      most 6,000 unknowns
======== ============================================ ==============================

(``d`` the detailed cells, ``sizes`` the axes' sizes.)
"""

from __future__ import annotations

import numpy as np

from .._validate import choice
from ._anova import Basis
from ._dense import dense_gls
from ._matrix_passes import MatrixPasses, matrix_obstacle
from ._release import CensusRelease
from ._result import GLSResult

__all__ = ["gls"]

#: The solvers, in the order ``"auto"`` tries them.
METHODS = ("auto", "tree", "matrix", "dense")


def gls(release: CensusRelease, *, method: str = "auto") -> GLSResult:
    """Constrained generalised least squares of every unit's every query cell.

    Parameters
    ----------
    release : CensusRelease
    method : {"auto", "tree", "matrix", "dense"}, default "auto"
        ``"tree"``: the linear-time passes in the ANOVA basis (needs one variance
        per (unit, query) and every leaf measured in every component);
        ``"matrix"``: the linear-time passes with a ``d x d`` matrix per unit (any
        variances and queries, as long as each leaf's own measurements determine
        its cells); ``"dense"``: the KKT system (small releases); ``"auto"``: the
        first of these that applies (see the module docstring's table).

    Returns
    -------
    GLSResult
        Estimates and sds of the queries the release measures or holds invariant.

    Raises
    ------
    ValueError
        If the counts are not identified (a leaf measured in too few queries), or
        the release is too large for every solver that applies, naming each reason.

    Notes
    -----
    The posterior under a flat prior on real-valued counts, with the measurements
    Gaussian of the published variances and the invariants exact: the Census
    Bureau's and BlueDown's least-squares estimate, with the invariants carried to
    every unit (BlueDown's linear pass applies the state total at the state only).

    Examples
    --------
    >>> from dpinfer.census import CensusRelease
    >>> rows = {"geocode": ["1", "11", "12"], "query": ["total"] * 3, "cell": [0] * 3,
    ...         "value": [9, 4, 7], "variance": [1.0, 1.0, 1.0]}
    >>> fit = gls(CensusRelease.from_rows({"sex": 1}, rows,
    ...           invariants={"geocode": ["1"], "query": ["total"], "cell": [0], "value": [10]}))
    >>> fit.estimate("total").round(3).ravel().tolist(), fit.sd("total").round(3).ravel().tolist()
    ([10.0, 3.5, 6.5], [0.0, 0.707, 0.707])
    """
    method = choice("method", method, METHODS)
    reasons = {}
    for name, obstacle, solve in (
        ("tree", tree_obstacle, _tree_gls),
        ("matrix", matrix_obstacle, _matrix_gls),
    ):
        if method in ("auto", name):
            reasons[name] = obstacle(release)
            if not reasons[name]:
                return solve(release)
            if method == name:
                raise ValueError(f"method={name!r} does not apply: {reasons[name]}")
    try:
        return dense_gls(release)
    except ValueError as err:
        if method == "dense":
            raise
        tried = "; ".join(f"method={k!r}: {v}" for k, v in reasons.items())
        raise ValueError(
            f"no solver applies to this release ({tried}; method='dense': {err})"
        ) from None


def tree_obstacle(release: CensusRelease) -> str:
    """Why the tree passes do not apply to ``release`` (empty text if they do)."""
    for name, meas in release.measurements.items():
        if not meas.uniform:
            return f"the cells of query {name!r} at one unit have different variances"
    basis = Basis(release.axes)
    lam = component_precision(release, basis)
    fixed = _fixed_components(release, basis)
    leaves = release.units.leaves
    present = np.bincount(basis.components, minlength=basis.n_components) > 0
    bad = (lam[leaves] == 0) & ~fixed[leaves] & present
    if bad.any():
        unit = leaves[np.flatnonzero(bad.any(axis=1))[0]]
        return (
            f"leaf {release.units.geocodes[unit]!r} is not measured in every component "
            "(measure its detailed query, or hold it invariant)"
        )
    return ""


def component_precision(release: CensusRelease, basis: Basis) -> np.ndarray:
    """``(units, components)``: each unit's precision eigenvalue of each component."""
    lam = np.zeros((len(release.units), basis.n_components))
    for name, meas in release.measurements.items():
        q = release.query(name)
        lam[meas.units] += (1.0 / meas.variance[:, :1]) * basis.eigenvalue(q)
    return lam


def _fixed_components(release: CensusRelease, basis: Basis) -> np.ndarray:
    fixed = np.zeros((len(release.units), basis.n_components), dtype=bool)
    for name, inv in release.invariants.items():
        fixed[inv.units] |= basis.query_components(release.query(name))
    return fixed


def _information(release: CensusRelease, basis: Basis) -> np.ndarray:
    """``(units, cells)``: the coordinates of ``sum_q P_q^T y_q / v_q`` at every unit."""
    z = np.zeros((len(release.units), release.axes.cells))
    for name, meas in release.measurements.items():
        q = release.query(name)
        z[meas.units] += basis.query_coordinates(q, meas.values / meas.variance[:, :1])
    return z


def _tree_gls(release: CensusRelease) -> GLSResult:
    basis = Basis(release.axes)
    passes = TreePasses(release, basis)
    m, s = passes.posterior()
    detailed = basis.from_basis(m)
    sds = {}
    for q in release.queries:
        var = s @ basis.cell_variance_weights(q)
        sds[q.name] = np.broadcast_to(np.sqrt(np.maximum(var, 0.0))[:, None], (len(var), q.cells))
    return GLSResult(release, detailed, "tree", sds, passes.draw)


def _matrix_gls(release: CensusRelease) -> GLSResult:
    passes = MatrixPasses(release)
    sds = {q.name: np.sqrt(np.maximum(passes.query_variance(q), 0.0)) for q in release.queries}
    return GLSResult(release, passes.mean, "matrix", sds, passes.draw)


class TreePasses:
    """The up and down passes of the ANOVA-diagonal tree problem (see the module docstring)."""

    def __init__(self, release: CensusRelease, basis: Basis):
        self.units = release.units
        self.basis = basis
        comp = basis.components
        lam = component_precision(release, basis)
        z = _information(release, basis)
        fixed_mu, fixed = self._invariants(release)
        n, d = len(self.units), release.axes.cells
        # components without coordinates (an axis of size 1) carry nothing
        fixed |= np.bincount(comp, minlength=basis.n_components) == 0
        self.mu = np.empty((n, d))  # lower means
        self.var = np.empty((n, basis.n_components))  # lower variances
        self.mu_c = np.zeros((n, d))  # sums of the children's lower means
        self.var_c = np.zeros((n, basis.n_components))
        units = self.units
        for k in range(units.levels - 1, -1, -1):
            lo, hi = units.level_start[k], units.level_start[k + 1]
            self._children_sums(lo, hi)
            leaf = units.n_children[lo:hi] == 0
            v_c = np.where(leaf[:, None], np.inf, self.var_c[lo:hi])
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = np.where(np.isinf(v_c), 1.0 / lam[lo:hi], v_c / (1.0 + lam[lo:hi] * v_c))
                shrink = np.where(np.isinf(v_c), 0.0, 1.0 / (1.0 + lam[lo:hi] * v_c))
                # an unmeasured component of a leaf (infinite gain) is held invariant below
                mu = shrink[:, comp] * self.mu_c[lo:hi] + gain[:, comp] * z[lo:hi]
            self.var[lo:hi] = np.where(fixed[lo:hi], 0.0, gain)
            self.mu[lo:hi] = np.where(fixed[lo:hi][:, comp], fixed_mu[lo:hi], mu)

    def _children_sums(self, lo: int, hi: int) -> None:
        units = self.units
        parents = lo + np.flatnonzero(units.n_children[lo:hi] > 0)
        if parents.size:
            starts = units.first_child[parents]
            end = starts[-1] + units.n_children[parents[-1]]
            first = starts[0]
            self.mu_c[parents] = np.add.reduceat(self.mu[first:end], starts - first, axis=0)
            self.var_c[parents] = np.add.reduceat(self.var[first:end], starts - first, axis=0)

    def _invariants(self, release: CensusRelease):
        n, d = len(self.units), release.axes.cells
        fixed_mu = np.zeros((n, d))
        fixed = _fixed_components(release, self.basis)
        for name, inv in release.invariants.items():
            q = release.query(name)
            coords = self.basis.query_coordinates(q, inv.values) / q.summed_size
            seen = self.basis.query_components(q)[self.basis.components]
            fixed_mu[np.ix_(inv.units, np.flatnonzero(seen))] = coords[:, seen]
        return fixed_mu, fixed

    def _weights(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Children ``lo:hi``'s shares ``w = V / V_c(parent)`` and their parents."""
        parent = self.units.parent[lo:hi]
        total = self.var_c[parent]
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(total > 0, self.var[lo:hi] / total, 0.0)
        return w, parent

    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the posterior means (coordinates) and variances (per component)."""
        comp = self.basis.components
        m, s = np.empty_like(self.mu), np.empty_like(self.var)
        m[0], s[0] = self.mu[0], self.var[0]
        units = self.units
        for k in range(1, units.levels):
            lo, hi = units.level_start[k], units.level_start[k + 1]
            w, parent = self._weights(lo, hi)
            m[lo:hi] = self.mu[lo:hi] + w[:, comp] * (m[parent] - self.mu_c[parent])
            s[lo:hi] = self.var[lo:hi] - w * self.var[lo:hi] + w * w * s[parent]
        return m, s

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``(n, units, cells)`` joint draws of the detailed counts, by conditioning on the sum."""
        comp = self.basis.components
        units = self.units
        theta = np.empty((n, *self.mu.shape))
        theta[:, 0] = self.mu[0] + np.sqrt(self.var[0, comp]) * rng.standard_normal(
            (n, self.mu.shape[1])
        )
        for k in range(1, units.levels):
            lo, hi = units.level_start[k], units.level_start[k + 1]
            w, parent = self._weights(lo, hi)
            eps = self.mu[lo:hi] + np.sqrt(self.var[lo:hi][:, comp]) * rng.standard_normal(
                (n, hi - lo, self.mu.shape[1])
            )
            sums = np.zeros((n, len(units), self.mu.shape[1]))
            np.add.at(sums.swapaxes(0, 1), parent, eps.swapaxes(0, 1))
            theta[:, lo:hi] = eps + w[:, comp] * (theta[:, parent] - sums[:, parent])
        return self.basis.from_basis(theta)
