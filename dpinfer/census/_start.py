"""Starting tables for the lattice chains: least squares by parts, rounded, invariants met.

The least-squares start goes part by part (:func:`tree_start`): each part's up
pass (:class:`dpinfer.census._gls.TreePasses`) gives its root's estimate from
its own subtree; the top combines those with its own measurements and
invariants; each part's down pass then starts from its root's posterior. Only
one part's arrays are in memory at a time.

A starting table is the estimate rounded and clipped at zero (:func:`rounded`),
then made to meet every invariant: each part's own, deepest first and the finer
query first at one unit (:func:`meet_part_invariants`), then the top's, whose
gaps are shared among the parts by the numbers of persons and free leaves
they hold (:func:`top_changes`), each part adding or removing its share
(:func:`apply_changes`). A leaf is *free* for an invariant when no deeper
invariant is on its path.
"""

from __future__ import annotations

import numpy as np

from ._anova import Basis
from ._gls import TreePasses, component_precision, tree_obstacle

__all__ = ["apply_changes", "meet_part_invariants", "rounded", "top_changes", "tree_start"]


def tree_start(parts, basis: Basis, store):
    """Yield each part and its least-squares leaf tables (leaves in geocode order).

    ``parts`` has ``len``, ``part(i)`` and ``top()`` (see :mod:`dpinfer.census._parts`);
    each part's up pass waits in ``store`` (under ``("passes", i)``) for its down pass.
    Yield ``(part, None)`` throughout when the tree passes do not apply to a part
    (cells of one query with different variances, a leaf not measured in every
    component) or to the top's variances.
    """
    top = parts.top()
    lower = []
    usable = top is None or all(m.uniform for m in top.measurements.values())
    for i in range(len(parts) if usable else 0):
        part = parts.part(i)
        if tree_obstacle(part):
            usable = False
            break
        passes = TreePasses(part, basis)
        lower.append((passes.mu[0].copy(), passes.var[0].copy()))
        store.put(("passes", i), passes)
    if not usable:
        for i in range(len(lower)):
            store.put(("passes", i), None)
        for i in range(len(parts)):
            yield parts.part(i), None
        return
    yield from _down(parts, basis, top, lower, store)


def _down(parts, basis, top, lower, store):
    comp = basis.components
    mu_c = sum(m for m, _ in lower)
    var_c = sum(v for _, v in lower)
    m0, s0 = _root_posterior(top, basis, mu_c, var_c) if top is not None else (None, None)
    for i, (mu, var) in enumerate(lower):
        passes = store.get(("passes", i))
        store.put(("passes", i), None)
        if top is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(var_c > 0, var / var_c, 0.0)
            passes.mu[0] = mu + w[comp] * (m0 - mu_c)
            passes.var[0] = var - w * var + w * w * s0
        m, _ = passes.posterior()
        part = parts.part(i)
        leaves = part.units.leaves
        order = np.argsort(part.units.geocodes[leaves].astype(str), kind="stable")
        yield part, basis.from_basis(m[leaves[order]])


def _root_posterior(top, basis, mu_c, var_c):
    """Combine the children's estimates with the root's measurements and invariants."""
    comp = basis.components
    lam = component_precision(top, basis)[0]
    z = np.zeros(basis.axes.cells)
    for name, meas in top.measurements.items():
        z += basis.query_coordinates(top.query(name), meas.values[0] / meas.variance[0, 0])
    var = var_c / (1.0 + lam * var_c)
    mean = (mu_c + var_c[comp] * z) / (1.0 + lam[comp] * var_c[comp])
    for name, inv in top.invariants.items():
        q = top.query(name)
        seen = basis.query_components(q)
        fixed = seen[comp]
        mean[fixed] = (basis.query_coordinates(q, inv.values[0]) / q.summed_size)[fixed]
        var[seen] = 0.0
    return mean, var


def rounded(start: np.ndarray) -> np.ndarray:
    """Round the estimate to the nearest non-negative integers."""
    return np.maximum(np.rint(start), 0).astype(np.int64)


def _by_depth(release, depths):
    """List the invariants (depth, query, unit, values), deepest and finer queries first."""
    items = [
        (int(depths[u]), release.query(name), int(u), values)
        for name, inv in release.invariants.items()
        for u, values in zip(inv.units, inv.values, strict=True)
    ]
    return sorted(items, key=lambda item: (-item[0], -len(item[1].kept)))


def meet_part_invariants(part, static, x: np.ndarray, gen: np.random.Generator) -> None:
    """Make the leaf tables ``x`` (in place) meet the part's own invariants."""
    units = part.units
    for depth, q, unit, values in _by_depth(part, static.offset + units.depth):
        lo, hi = static.leaf_lo[unit], static.leaf_hi[unit]
        free = np.arange(lo, hi)[static.deepest[lo:hi] <= depth]
        for k in range(q.cells):
            cells = np.flatnonzero(q.cell_of_detailed == k)
            gap = int(values[k] - x[lo:hi][:, cells].sum())
            if gap and free.size == 0:
                raise ValueError(
                    f"cannot build a starting table: the {q.name!r} invariant at geocode "
                    f"{units.geocodes[unit]!r} is not met by its sub-units' invariants"
                )
            _move_persons(x, free, cells, gap, gen, q, units.geocodes[unit])


def free_leaves(static) -> np.ndarray:
    """Return the part's leaves on whose paths no invariant is deeper than the root."""
    return np.flatnonzero(static.deepest <= 0)


def top_changes(top, totals, free_persons, free_count, gen) -> np.ndarray:
    """``(parts, cells)``: persons each part adds (or removes) to meet the top's invariants.

    ``totals`` and ``free_persons`` (``(parts, cells)``) count each part's persons
    per detailed cell, at all its leaves and at its free leaves; ``free_count`` its
    free leaves.
    """
    totals, free_persons = totals.copy(), free_persons.copy()
    change = np.zeros_like(totals)
    share = free_count / max(free_count.sum(), 1)
    for _, q, unit, values in _by_depth(top, np.zeros(len(top.units), dtype=np.int64)):
        for k in range(q.cells):
            cells = np.flatnonzero(q.cell_of_detailed == k)
            gap = int(values[k] - totals[:, cells].sum())
            if gap and free_count.sum() == 0:
                raise ValueError(
                    f"cannot build a starting table: the {q.name!r} invariant at geocode "
                    f"{top.units.geocodes[unit]!r} is not met by its sub-units' invariants"
                )
            if gap > 0:
                p = np.repeat(share[:, None] / cells.size, cells.size, axis=1).ravel()
                moved = gen.multinomial(gap, p / p.sum()).reshape(-1, cells.size)
            elif gap < 0:
                pool = free_persons[:, cells].ravel()
                _removable(pool, gap, q, top.units.geocodes[unit])
                moved = -gen.multivariate_hypergeometric(pool, -gap).reshape(-1, cells.size)
            else:
                continue
            totals[:, cells] += moved
            free_persons[:, cells] += moved
            change[:, cells] += moved
    return change


def apply_changes(x: np.ndarray, free: np.ndarray, change: np.ndarray, gen) -> None:
    """Add (or remove) ``change[c]`` persons of each cell ``c`` at the leaves ``free``."""
    added = np.flatnonzero(change > 0)
    cells = np.repeat(added, change[added])
    np.add.at(x, (gen.choice(free, cells.size), cells), 1)
    for c in np.flatnonzero(change < 0):
        _move_persons(x, free, np.array([c]), int(change[c]), gen)


def _removable(pool, gap, q, geocode) -> None:
    if pool.sum() < -gap:
        raise ValueError(
            f"cannot build a starting table: the {q.name!r} invariant at geocode {geocode!r} "
            "is below what its sub-units' invariants hold"
        )


def _move_persons(x, leaves, cells, gap, gen, q=None, geocode=None) -> None:
    if gap > 0:
        np.add.at(x, (gen.choice(leaves, gap), gen.choice(cells, gap)), 1)
    elif gap < 0:
        pool = x[np.ix_(leaves, cells)]
        _removable(pool, gap, q, geocode)
        gone = gen.multivariate_hypergeometric(pool.ravel(), -gap).reshape(pool.shape)
        x[np.ix_(leaves, cells)] -= gone
