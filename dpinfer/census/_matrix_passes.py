r"""Least squares over the tree with one ``d x d`` matrix per unit: any variances, any queries.

The solver of :func:`dpinfer.census.gls` when the ANOVA passes do not apply
(cells of one query with their own variances, units that miss a query): the
same pass up and pass down the tree, each unit carrying its detailed counts'
mean (``d``) and covariance (``d x d``, ``d`` the detailed cells), every
level's units updated together as a stack of small matrices. Time is linear in
the number of units, ``O(units x d^3)``; memory ``O(units x d^2)``; there is
no matrix over units.

A unit's measurements enter through their information: ``G^T G = sum_q P_q^T W_q P_q``
and ``G^T z = sum_q P_q^T W_q y_q`` (``W_q`` the inverse variances of query ``q``'s
cells, zero for a cell not measured), with ``G`` a ``d x d`` square root.

* **Up** (deepest units first), each unit's *lower* estimate: the Gaussian
  posterior ``(mu, Sigma)`` of its detailed counts given the measurements and
  invariants in its subtree.

  - a leaf: the constrained least squares of its own measurements. With its
    invariants ``C x = c`` written ``x = x_0 + N t`` (``N`` a basis of the null
    space of ``C``), ``Sigma = N (N^T G^T G N)^{-1} N^T`` and
    ``mu = x_0 + Sigma G^T (z - G x_0)``; the leaf's own measurements must
    determine what its invariants leave free;
  - an inner unit: the sum of its children's lower estimates
    ``(mu_s, Sigma_s)`` (independent given nothing else), updated by its own
    measurements, ``K = Sigma_s G^T (I + G Sigma_s G^T)^{-1}``,
    ``mu = mu_s + K (z - G mu_s)``, ``Sigma = Sigma_s - K G Sigma_s``, then
    conditioned on its invariants ``C x = c`` the same way with no noise (a
    pseudo-inverse, since an invariant the children's already imply has zero
    variance).

* **Down** (the root's lower estimate is its posterior): given the parent's
  posterior ``(m_p, S_p)``, a child's is ``m = mu + K_c (m_p - mu_s(p))`` and
  ``S = Sigma - K_c Sigma + K_c S_p K_c^T`` with ``K_c = Sigma Sigma_s(p)^+``:
  the children's lower estimates conditioned on their sum. Joint draws follow
  the same conditioning: draw every child from its lower estimate, then add
  ``K_c`` times the parent's draw minus the sum of the children's.
"""

from __future__ import annotations

import numpy as np

from ._release import CensusRelease

__all__ = ["MatrixPasses", "matrix_obstacle"]

#: Relative size below which an eigenvalue counts as zero (an implied invariant).
RCOND = 1e-10
#: Memory the passes may take: they keep about ``ARRAYS`` stacks of ``units x d x d`` floats.
MAX_BYTES = 4 * 2**30
ARRAYS = 8


def _information(release: CensusRelease) -> tuple[np.ndarray, np.ndarray]:
    """``(units, d, d)`` and ``(units, d)``: every unit's ``G^T G`` and ``G^T z``."""
    units, d = release.units, release.axes.cells
    precision, info = np.zeros((len(units), d, d)), np.zeros((len(units), d))
    for name, meas in release.measurements.items():
        q = release.query(name)
        with np.errstate(divide="ignore"):
            weight = 1.0 / meas.variance  # 0 for a cell not measured
        cell = q.cell_of_detailed
        same = cell[:, None] == cell[None, :]
        precision[meas.units] += weight[:, cell][:, :, None] * same[None]
        info[meas.units] += (weight * meas.values)[:, cell]
    return precision, info


def _whitened(precision: np.ndarray, info: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(g, z)`` with ``g^T g = precision`` and ``g^T z = info``, ``g`` square (eigenvectors)."""
    w, v = np.linalg.eigh(precision)
    # a direction no measurement reaches (rounding leaves it at +-1e-17) gets no weight
    root = np.sqrt(np.where(w > RCOND * w[:, -1:], w, 0.0))
    g = root[:, :, None] * np.swapaxes(v, 1, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(root > 0, np.einsum("nde,nd->ne", v, info) / root, 0.0)
    return g, z


def _constraint_groups(release: CensusRelease) -> dict:
    """Units by the invariant queries they carry: ``{names: (units, C, c)}``."""
    units = release.units
    names_at: list[list[str]] = [[] for _ in range(len(units))]
    for name, inv in release.invariants.items():
        for u in inv.units:
            names_at[int(u)].append(name)
    groups: dict[tuple, list] = {}
    for u, carried in enumerate(names_at):
        groups.setdefault(tuple(carried), []).append(u)
    out = {}
    for names, listed in groups.items():
        members = np.array(listed, dtype=np.int64)
        rows, values = [], []
        for name in names:
            q, inv = release.query(name), release.invariants[name]
            rows.append(q.design)
            slot = np.searchsorted(inv.units, members)
            values.append(inv.values[slot].astype(float))
        cmat = np.concatenate(rows) if rows else np.zeros((0, release.axes.cells))
        cval = np.concatenate(values, axis=1) if values else np.zeros((members.size, 0))
        out[names] = (members, cmat, cval)
    return out


def _symmetric(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _null_space(cmat: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Return an orthonormal basis of the null space of ``cmat``, and its pseudo-inverse."""
    if cmat.shape[0] == 0:
        return np.eye(d), np.zeros((d, 0))
    _, s, vt = np.linalg.svd(cmat)
    rank = int((s > RCOND * s.max()).sum())
    return vt[rank:].T, np.linalg.pinv(cmat, rcond=RCOND)


def _leaf_estimates(precision, info, cmat, cval):
    """Constrained least squares of each leaf's own measurements (see the module docstring).

    Returns ``(mu, Sigma, ok)``; ``ok`` is False for a leaf whose measurements do
    not determine what its invariants leave free.
    """
    m, d = info.shape
    null, pinv = _null_space(cmat, d)
    x0 = cval @ pinv.T  # (m, d): each leaf's invariant cells met, least norm
    if null.shape[1] == 0:  # the invariants fix every cell
        return x0, np.zeros((m, d, d)), np.ones(m, dtype=bool)
    free = null.T @ precision @ null  # (m, f, f)
    eig = np.linalg.eigvalsh(free)
    ok = eig[:, 0] > RCOND * np.maximum(eig[:, -1], 1e-300)
    free[~ok] = np.eye(null.shape[1])
    cov = _symmetric(null @ np.linalg.inv(free) @ null.T)
    resid = info - np.einsum("mde,me->md", precision, x0)
    mu = x0 + np.einsum("mde,me->md", cov, resid)
    return mu, cov, ok


def _measured(mu, cov, g, z):
    """Update prior ``(mu, cov)`` by the whitened measurements ``(g, z)`` (Kalman form)."""
    if g.shape[1] == 0:
        return mu, cov
    gs = g @ cov  # (m, rows, d)
    inner = np.eye(g.shape[1]) + gs @ np.swapaxes(g, 1, 2)
    gain_t = np.linalg.solve(inner, gs)  # K^T
    resid = z - np.einsum("mrd,md->mr", g, mu)
    mu = mu + np.einsum("mrd,mr->md", gain_t, resid)
    cov = _symmetric(cov - np.swapaxes(gs, 1, 2) @ gain_t)
    return mu, cov


def _conditioned(mu, cov, cmat, cval):
    """Condition ``(mu, cov)`` on the exact ``cmat x = cval`` (pseudo-inverse: rows may repeat)."""
    if cmat.shape[0] == 0:
        return mu, cov
    cs = cmat @ cov  # (m, r, d)
    inner = _symmetric(cs @ cmat.T)
    gain = np.swapaxes(cs, 1, 2) @ np.linalg.pinv(inner, rcond=RCOND, hermitian=True)
    mu = mu + np.einsum("mdr,mr->md", gain, cval - mu @ cmat.T)
    return mu, _symmetric(cov - gain @ cs)


def _square_root(cov: np.ndarray) -> np.ndarray:
    """``L`` with ``L L^T = cov`` for a stack of positive semi-definite matrices."""
    w, v = np.linalg.eigh(cov)
    return v * np.sqrt(np.maximum(w, 0.0))[:, None, :]


class MatrixPasses:
    """The up and down passes of the module docstring over a release.

    Attributes
    ----------
    mean, cov : numpy.ndarray
        ``(units, d)`` and ``(units, d, d)``: every unit's posterior.
    """

    def __init__(self, release: CensusRelease):
        units = self.units = release.units
        n, d = len(units), release.axes.cells
        precision, info = _information(release)
        self.mu, self.sigma = np.empty((n, d)), np.empty((n, d, d))  # lower estimates
        self.mu_s, self.sigma_s = np.zeros((n, d)), np.zeros((n, d, d))  # children's sums
        groups = _constraint_groups(release)
        leaf = units.is_leaf
        for k in range(units.levels - 1, -1, -1):
            lo, hi = units.level_start[k], units.level_start[k + 1]
            self._children_sums(lo, hi)
            for names, (members, cmat, cval) in groups.items():
                here = (members >= lo) & (members < hi)
                inner = members[here & ~leaf[members]]
                leaves = members[here & leaf[members]]
                if leaves.size:
                    mu, cov, ok = _leaf_estimates(
                        precision[leaves], info[leaves], cmat, cval[here & leaf[members]]
                    )
                    if not ok.all():
                        raise ValueError(matrix_obstacle(release))
                    self.mu[leaves], self.sigma[leaves] = mu, cov
                if inner.size:
                    g, z = _whitened(precision[inner], info[inner])
                    mu, cov = _measured(self.mu_s[inner], self.sigma_s[inner], g, z)
                    mu, cov = _conditioned(mu, cov, cmat, cval[here & ~leaf[members]])
                    self.mu[inner], self.sigma[inner] = mu, cov
        self.gain = np.zeros((n, d, d))  # K_c of each child
        self.mean, self.cov = np.empty((n, d)), np.empty((n, d, d))
        self.mean[0], self.cov[0] = self.mu[0], self.sigma[0]
        for k in range(1, units.levels):
            lo, hi = units.level_start[k], units.level_start[k + 1]
            parent = units.parent[lo:hi]
            used, slot = np.unique(parent, return_inverse=True)
            pinv = np.linalg.pinv(self.sigma_s[used], rcond=RCOND, hermitian=True)
            gain = self.sigma[lo:hi] @ pinv[slot]
            self.gain[lo:hi] = gain
            shift = self.mean[parent] - self.mu_s[parent]
            self.mean[lo:hi] = self.mu[lo:hi] + np.einsum("nde,ne->nd", gain, shift)
            spread = gain @ self.cov[parent] @ np.swapaxes(gain, 1, 2)
            self.cov[lo:hi] = _symmetric(self.sigma[lo:hi] - gain @ self.sigma[lo:hi] + spread)

    def _children_sums(self, lo: int, hi: int) -> None:
        units = self.units
        parents = lo + np.flatnonzero(units.n_children[lo:hi] > 0)
        if parents.size:
            starts = units.first_child[parents]
            first, end = starts[0], starts[-1] + units.n_children[parents[-1]]
            self.mu_s[parents] = np.add.reduceat(self.mu[first:end], starts - first, axis=0)
            self.sigma_s[parents] = np.add.reduceat(self.sigma[first:end], starts - first, axis=0)

    def query_variance(self, query) -> np.ndarray:
        """``(units, query.cells)``: the posterior variance of every unit's query cells."""
        return np.einsum("jd,nde,je->nj", query.design, self.cov, query.design)

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``(n, units, d)`` joint draws of the detailed counts (module docstring)."""
        units = self.units
        out = np.empty((n, *self.mean.shape))
        root = _square_root(self.cov[:1])[0]
        out[:, 0] = self.mean[0] + rng.standard_normal((n, root.shape[1])) @ root.T
        for k in range(1, units.levels):
            lo, hi = units.level_start[k], units.level_start[k + 1]
            parent = units.parent[lo:hi]
            noise = rng.standard_normal((n, hi - lo, self.mean.shape[1]))
            root = _square_root(self.sigma[lo:hi])
            lower = self.mu[lo:hi] + np.einsum("cde,nce->ncd", root, noise)
            # children are contiguous and in their parents' order (see Units)
            used, starts = np.unique(parent, return_index=True)
            sums = np.add.reduceat(lower, starts, axis=1)
            gap = out[:, used] - sums
            slot = np.searchsorted(used, parent)
            out[:, lo:hi] = lower + np.einsum("cde,nce->ncd", self.gain[lo:hi], gap[:, slot])
        return out


def matrix_obstacle(release: CensusRelease) -> str:
    """Why the matrix passes do not apply (empty text if they do).

    They need every leaf's own measurements to determine the detailed counts
    its invariants leave free, and a ``d x d`` matrix per unit to fit in memory.
    """
    n, d = len(release.units), release.axes.cells
    need = ARRAYS * n * d * d * 8
    if need > MAX_BYTES:
        return (
            f"{n} units with {d} detailed cells need about {need / 2**30:.0f} GiB of "
            f"d x d matrices (at most {MAX_BYTES / 2**30:.0f} GiB)"
        )
    precision, info = _information(release)
    leaf = release.units.is_leaf
    for members, cmat, cval in _constraint_groups(release).values():
        leaves = members[leaf[members]]
        if leaves.size:
            _, _, ok = _leaf_estimates(precision[leaves], info[leaves], cmat, cval[leaf[members]])
            if not ok.all():
                code = release.units.geocodes[leaves[np.flatnonzero(~ok)[0]]]
                return (
                    f"leaf {code!r} is not measured in enough queries to determine its "
                    "detailed counts (measure its detailed query, or hold it invariant)"
                )
    return ""
