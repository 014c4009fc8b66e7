"""The exact posterior of the integer, non-negative leaf tables: the lattice MCMC driver.

:func:`sample_posterior` runs several chains of the moves of
:mod:`dpinfer.census._lattice`. A *round* is one pass over the subtrees (the
depth-1 units, counties) of the moves that keep each subtree's detailed counts
(between leaves of one subtree, and swaps), each subtree with its own random
stream, then one pass over the whole tree of the moves that change them (within
a leaf, between subtrees, birth and death). Given the subtrees' counts the
subtrees are independent, so the first pass runs on an executor when one is
given, with the same result seed for seed as the serial run.

After each round past ``tune``, every unit's every query cell is added to
streaming summaries (running sums, and an integer histogram over a window
around the cell's value at the end of tuning), so memory does not grow with the
number of draws; the units' totals (above the leaves) and the log-likelihood
are kept as draws, for R-hat and ESS.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._rng import as_seed_sequence, child_sequence, seed_entropy
from . import _lattice
from ._release import CensusRelease

__all__ = ["CensusPosterior", "sample_posterior"]

#: Half-width of the histogram window of each cell's streaming summary.
WINDOW = 24
#: Central interval level of the summaries.
LEVEL = 0.90


@dataclass(frozen=True, eq=False)
class Problem:
    """The release as the arrays the compiled moves read."""

    release: CensusRelease
    leaves: np.ndarray  # unit index of each leaf, geocode order
    anc: np.ndarray  # (leaves, depths): the unit at each depth on the leaf's path
    depth: np.ndarray
    leaf_lo: np.ndarray  # per unit: its leaves' range in geocode order
    leaf_hi: np.ndarray
    deepest: np.ndarray  # per leaf: deepest depth of an invariant on its path (-1: none)
    group: np.ndarray
    perm: np.ndarray
    pos: np.ndarray
    gsize: np.ndarray
    queries: list
    qmap: np.ndarray
    qoff: np.ndarray
    ncell: int
    y: np.ndarray
    h: np.ndarray
    subtrees: np.ndarray  # (subtrees, 2): leaf ranges of the depth-1 units


def build_problem(release: CensusRelease) -> Problem:
    """Flatten ``release`` into the arrays of :func:`dpinfer.census._lattice.run_leaves`."""
    units, axes = release.units, release.axes
    leaves = units.leaves[np.argsort(units.geocodes[units.leaves].astype(str), kind="stable")]
    dmax = units.levels
    anc = np.full((leaves.size, dmax), -1, dtype=np.int64)
    current = leaves.copy()
    for _ in range(dmax):
        ok = current >= 0
        anc[np.flatnonzero(ok), units.depth[current[ok]]] = current[ok]
        current = np.where(ok, units.parent[np.maximum(current, 0)], -1)
    leaf_lo = np.full(len(units), 0, dtype=np.int64)
    leaf_hi = np.full(len(units), 0, dtype=np.int64)
    for t in range(dmax):
        col = anc[:, t]
        ok = np.flatnonzero(col >= 0)
        u, first = np.unique(col[ok], return_index=True)
        last = np.unique(col[ok][::-1], return_index=True)[1]
        leaf_lo[u] = ok[first]
        leaf_hi[u] = ok[ok.size - 1 - last] + 1
    inv_depth = np.full(len(units), -1, dtype=np.int64)
    frozen = np.zeros(len(units), dtype=np.int64)
    for name, inv in release.invariants.items():
        inv_depth[inv.units] = units.depth[inv.units]
        frozen[inv.units] |= sum(1 << k for k in axes.query(name).kept)
    on_path = np.where(anc >= 0, inv_depth[np.maximum(anc, 0)], -1)
    deepest = on_path.max(axis=1)
    leaf_frozen = np.bitwise_or.reduce(np.where(anc >= 0, frozen[np.maximum(anc, 0)], 0), axis=1)
    masks, group = np.unique(leaf_frozen, return_inverse=True)
    grids = np.indices(axes.sizes).reshape(len(axes.sizes), -1)
    perm = np.empty((masks.size, axes.cells), dtype=np.int64)
    pos = np.empty_like(perm)
    gsize = np.empty(masks.size, dtype=np.int64)
    for g, mask in enumerate(masks):
        key = np.zeros(axes.cells, dtype=np.int64)
        for a, n in enumerate(axes.sizes):
            if mask >> a & 1:
                key = key * n + grids[a]
        perm[g] = np.argsort(key, kind="stable")
        pos[g, perm[g]] = np.arange(axes.cells)
        gsize[g] = axes.cells // (int(key.max()) + 1)
    queries = [release.query(n) for n in release.measurements]
    qmap = np.stack([q.cell_of_detailed for q in queries])
    qoff = np.concatenate([[0], np.cumsum([q.cells for q in queries])[:-1]]).astype(np.int64)
    ncell = int(sum(q.cells for q in queries))
    y = np.zeros((len(units), ncell))
    h = np.zeros((len(units), ncell))
    for q, off, meas in zip(queries, qoff, release.measurements.values(), strict=True):
        y[meas.units, off : off + q.cells] = meas.values
        with np.errstate(divide="ignore"):
            h[meas.units, off : off + q.cells] = 0.5 / meas.variance
    tops = np.arange(units.level_start[1], units.level_start[2]) if dmax > 2 else np.array([0])
    subtrees = np.stack([leaf_lo[tops], leaf_hi[tops]], axis=1)
    return Problem(
        release, leaves, anc, units.depth[leaves], leaf_lo, leaf_hi, deepest,
        group.astype(np.int64),
        perm, pos, gsize, queries, qmap, qoff, ncell, y.ravel(), h.ravel(), subtrees,
    )  # fmt: skip


def query_cells(problem: Problem, x: np.ndarray) -> np.ndarray:
    """``(units * ncell,)`` int64: every unit's query cells for leaf tables ``x``."""
    units = problem.release.units
    detailed = np.zeros((len(units), x.shape[1]), dtype=np.int64)
    detailed[problem.leaves] = x
    for k in range(units.levels - 1, 0, -1):
        lo, hi = units.level_start[k], units.level_start[k + 1]
        np.add.at(detailed, units.parent[lo:hi], detailed[lo:hi])
    return np.concatenate([q.project(detailed) for q in problem.queries], axis=1).ravel()


def initial_table(problem: Problem, start: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Return a non-negative integer leaf table near ``start`` meeting every invariant.

    ``start`` (leaves x cells, real) is rounded and clipped at zero; then each
    invariant, deepest first, is met by adding or removing persons in the cells it
    counts, at leaves under its unit that no deeper invariant constrains.
    """
    release = problem.release
    units = release.units
    x = np.maximum(np.rint(start), 0).astype(np.int64)
    leaf_pos = np.empty(len(units), dtype=np.int64)
    leaf_pos[problem.leaves] = np.arange(problem.leaves.size)
    items = [
        (int(units.depth[u]), int(u), name, values)
        for name, inv in release.invariants.items()
        for u, values in zip(inv.units, inv.values, strict=True)
    ]
    for depth, unit, name, values in sorted(items, key=lambda item: -item[0]):
        q = release.query(name)
        lo, hi = problem.leaf_lo[unit], problem.leaf_hi[unit]
        free = np.arange(lo, hi)[problem.deepest[lo:hi] <= depth]
        for k in range(q.cells):
            cells = np.flatnonzero(q.cell_of_detailed == k)
            gap = int(values[k] - x[lo:hi][:, cells].sum())
            if gap and free.size == 0:
                raise ValueError(
                    f"cannot build a starting table: the {name!r} invariant at geocode "
                    f"{units.geocodes[unit]!r} is not met by its sub-units' invariants"
                )
            if gap > 0:
                np.add.at(x, (rng.choice(free, gap), rng.choice(cells, gap)), 1)
            elif gap < 0:
                sub = x[np.ix_(free, cells)].ravel()
                people = np.repeat(np.arange(sub.size), sub)
                gone = np.bincount(rng.choice(people, -gap, replace=False), minlength=sub.size)
                x[np.ix_(free, cells)] -= gone.reshape(free.size, cells.size)
    return x


@dataclass(frozen=True, eq=False)
class CensusPosterior:
    """The lattice posterior: per-cell summaries of every unit's query cells, and diagnostics.

    Attributes
    ----------
    release : CensusRelease
    mean, sd, lower, upper : dict of str to numpy.ndarray
        By query name, ``(units, cells)``: posterior mean, sd and central 90% interval
        (NaN where the interval's end left the summary's window; see ``clipped``).
    idata : arviz.InferenceData
        Draws of every non-leaf unit's total and of the log-likelihood, by chain, with
        R-hat and ESS in ``attrs``; the leaves' tables too with ``store_leaves=True``.
    clipped : int
        Number of interval ends that fell outside their window.
    rate : float
        Scored proposals per CPU second, over the whole run.
    """

    release: CensusRelease
    mean: dict
    sd: dict
    lower: dict
    upper: dict
    idata: object
    clipped: int
    rate: float

    def table(self, queries=None):
        """Rows ``geocode, query, cell, estimate, sd, lower, upper``."""
        import pandas as pd

        frames = []
        for name in queries or self.mean:
            est = self.mean[name]
            unit, cell = np.indices(est.shape).reshape(2, -1)
            frames.append(
                pd.DataFrame(
                    {
                        "geocode": self.release.units.geocodes[unit],
                        "query": name,
                        "cell": cell,
                        "estimate": est.ravel(),
                        "sd": self.sd[name].ravel(),
                        "lower": self.lower[name].ravel(),
                        "upper": self.upper[name].ravel(),
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)


def sample_posterior(
    release: CensusRelease,
    *,
    draws: int = 500,
    tune: int = 200,
    chains: int = 4,
    prior: str = "flat",
    prior_params=None,
    per_leaf: int | None = None,
    executor=None,
    store_leaves: bool = False,
    intervals: bool = True,
    rng=None,
    progressbar: bool = True,
) -> CensusPosterior:
    r"""Sample the exact posterior of every leaf's integer, non-negative detailed counts.

    Parameters
    ----------
    release : CensusRelease
    draws, tune : int
        Rounds per chain kept, and discarded first (see the module docstring).
    chains : int, default 4
        Independent chains, each from its own starting table and random stream.
    prior : {"flat", "poisson", "negative_binomial"}, default "flat"
        The prior of each leaf cell: flat on the non-negative integers; Poisson with
        a rate per detailed cell that has a Gamma hyperprior (``prior_params =
        (shape, rate)``, the rates updated by Gibbs after every round); or negative
        binomial with a mean per detailed cell and a size (``prior_params = (mean,
        size)``, fixed).
    per_leaf : int, optional
        Proposals per leaf in a round's subtree pass (default: the number of
        detailed cells, at least 4); the whole-tree pass makes half as many.
    executor : concurrent.futures.Executor, optional
        Runs the subtree passes (a dask ``Client`` from ``dpinfer[distributed]``, a
        process pool); same results as serially, seed for seed.
    store_leaves : bool, default False
        Keep every draw of every leaf table (small releases only).
    intervals : bool, default True
        Keep the window histograms of the interval summaries (``2 * WINDOW + 3``
        counts per unit and query cell); without them ``lower`` and ``upper`` are NaN.
    rng : None, int, SeedSequence or Generator
    progressbar : bool, default True

    Returns
    -------
    CensusPosterior

    Notes
    -----
    The target is :math:`p(x \mid y) \propto \pi(x) \prod_{u,q,k}
    N_{\mathbb Z}(y_{uqk} - (P_q x_u)_k; \sigma^2_{uqk})` over leaf tables
    :math:`x \geq 0` that meet every invariant, every measurement through the
    discrete Gaussian pmf exactly. The moves keep every invariant and are
    reversible with symmetric proposals, so the chain is exact (its stationary
    distribution is the posterior); it reaches every table that meets the
    invariants when these are totals or queries whose axes the within-leaf moves
    can keep (the census's case; ``tests/census/test_lattice.py`` checks it by
    exact enumeration).
    """
    from .._validate import non_negative_int, size
    from ._gls import gls

    draws, tune, chains = (
        size("draws", draws),
        non_negative_int("tune", tune),
        size("chains", chains),
    )
    kind, pa, pb, hyper = _prior(prior, prior_params, release.axes.cells)
    problem = build_problem(release)
    d = release.axes.cells
    per_leaf = max(4, d) if per_leaf is None else size("per_leaf", per_leaf)
    root = as_seed_sequence(rng)
    try:
        start = gls(release).detailed[problem.leaves]
    except ValueError:
        start = np.zeros((problem.leaves.size, d))
    outputs = []
    begin = time.process_time()
    for chain in range(chains):
        outputs.append(
            _run_chain(
                problem,
                start,
                chain,
                root,
                draws,
                tune,
                per_leaf,
                kind,
                pa,
                pb,
                hyper,
                executor,
                store_leaves,
                intervals,
            )
        )
    seconds = time.process_time() - begin
    return _collect(problem, outputs, draws, chains, root, seconds, prior, store_leaves)


def _prior(prior, params, d):
    if prior == "flat":
        return _lattice.FLAT, np.zeros(d), np.zeros(d), None
    if prior == "poisson":
        shape, rate = (1.0, 0.01) if params is None else params
        return _lattice.POISSON, np.zeros(d), np.zeros(d), (float(shape), float(rate))
    if prior == "negative_binomial":
        if params is None:
            raise ValueError("prior='negative_binomial' needs prior_params=(mean, size)")
        mean, size_ = (np.broadcast_to(np.asarray(p, float), (d,)) for p in params)
        if not (np.all(mean > 0) and np.all(size_ > 0)):
            raise ValueError(f"prior_params: mean and size must be positive, got {params!r}")
        return _lattice.NEGATIVE_BINOMIAL, size_.copy(), np.log(mean / (mean + size_)), None
    raise ValueError(f"prior must be 'flat', 'poisson' or 'negative_binomial', got {prior!r}")


def _subtree_pass(problem, x, cur, lo, hi, per_leaf, kind, pa, pb, seed):
    """Run the moves that keep one subtree's detailed counts, on its leaves ``lo:hi``."""
    state = _lattice.new_state(np.random.default_rng(seed))
    counts = np.zeros(2, dtype=np.int64)
    tmin = 1 if problem.anc.shape[1] > 2 else 0
    tmax = problem.anc.shape[1] - 2
    if tmax >= tmin:
        moves = np.array([0.0, 0.5, 0.0, 0.5])
        _lattice.run_leaves(
            lo, hi, per_leaf, moves, tmin, tmax, state, x, cur, problem.ncell, problem.y,
            problem.h, problem.qmap, problem.qoff, problem.anc, problem.depth, problem.leaf_lo,
            problem.leaf_hi, problem.deepest, problem.group, problem.perm, problem.pos,
            problem.gsize, kind, pa, pb, counts,
        )  # fmt: skip
    return counts


def _tree_pass(problem, x, cur, per_leaf, kind, pa, pb, seed):
    """Run the moves that change subtrees' counts, over every leaf."""
    state = _lattice.new_state(np.random.default_rng(seed))
    counts = np.zeros(2, dtype=np.int64)
    tmax = 0 if problem.anc.shape[1] > 2 else max(problem.anc.shape[1] - 2, 0)
    moves = np.array([0.6, 0.2, 0.2, 0.0])
    _lattice.run_leaves(
        0, problem.leaves.size, per_leaf, moves, 0, tmax, state, x, cur, problem.ncell,
        problem.y, problem.h, problem.qmap, problem.qoff, problem.anc, problem.depth,
        problem.leaf_lo, problem.leaf_hi, problem.deepest, problem.group, problem.perm,
        problem.pos, problem.gsize, kind, pa, pb, counts,
    )  # fmt: skip
    return counts


def _round(problem, x, cur, seeds, per_leaf, kind, pa, pb, executor):
    counts = np.zeros(2, dtype=np.int64)
    ranges = problem.subtrees
    if executor is None:
        for i, (lo, hi) in enumerate(ranges):
            counts += _subtree_pass(problem, x, cur, lo, hi, per_leaf, kind, pa, pb, seeds[i])
    else:
        counts += _parallel_subtrees(problem, x, cur, per_leaf, kind, pa, pb, seeds, executor)
    counts += _tree_pass(problem, x, cur, max(1, per_leaf // 2), kind, pa, pb, seeds[-1])
    return counts


def _parallel_subtrees(problem, x, cur, per_leaf, kind, pa, pb, seeds, executor):
    """Run each subtree pass on the executor with its own copy, and write the results back."""
    from ._parallel_subtrees import run_subtrees

    return run_subtrees(problem, x, cur, per_leaf, kind, pa, pb, seeds, executor, _subtree_pass)


def _run_chain(problem, start, chain, root, draws, tune, per_leaf, kind, pa, pb, hyper,
               executor, store_leaves, intervals):  # fmt: skip
    chain_seed = child_sequence(root, chain)
    gen = np.random.default_rng(child_sequence(chain_seed, 0))
    x = initial_table(problem, start, gen)
    cur = query_cells(problem, x)
    n_sub = problem.subtrees.shape[0]
    units = problem.release.units
    inner = np.flatnonzero(units.n_children > 0)
    first_cells = problem.qmap[0].max() + 1
    totals = np.empty((draws, inner.size), dtype=np.int64)
    loglik = np.empty(draws)
    leaves = np.empty((draws, *x.shape), dtype=np.int64) if store_leaves else None
    sums = np.zeros(cur.size)
    sumsq = np.zeros(cur.size)
    hist = np.zeros((cur.size, 2 * WINDOW + 3 if intervals else 0), dtype=np.int32)
    counts = np.zeros(2, dtype=np.int64)
    pa = pa.copy()
    for r in range(tune + draws):
        round_seed = child_sequence(chain_seed, r + 1)
        seeds = [child_sequence(round_seed, i) for i in range(n_sub + 1)]
        counts += _round(problem, x, cur, seeds, per_leaf, kind, pa, pb, executor)
        if hyper is not None:  # Gibbs update of the Poisson rates given the table
            shape, rate = hyper
            rates = gen.gamma(shape + x.sum(axis=0), 1.0 / (rate + x.shape[0]))
            pa[:] = np.log(rates)
        if r == tune - 1 or (tune == 0 and r == 0):
            center = cur.copy()
        if r >= tune:
            i = r - tune
            _lattice.record(cur, center, sums, sumsq, hist)
            cells = cur.reshape(len(units), -1)
            totals[i] = cells[inner, :first_cells].sum(axis=1)
            loglik[i] = _loglik(problem, cur)
            if store_leaves:
                leaves[i] = x
    return {
        "sums": sums, "sumsq": sumsq, "hist": hist, "center": center, "totals": totals,
        "loglik": loglik, "leaves": leaves, "counts": counts,
    }  # fmt: skip


def _loglik(problem, cur):
    measured = problem.h > 0
    diff = problem.y[measured] - cur[measured]
    return float(-(problem.h[measured] * diff * diff).sum())


def _collect(problem, outputs, draws, chains, root, seconds, prior, store_leaves):
    from ..results import to_inference_data

    n = draws * chains
    sums = sum(o["sums"] for o in outputs)
    sumsq = sum(o["sumsq"] for o in outputs)
    mean = sums / n
    sd = np.sqrt(np.maximum(sumsq / n - mean * mean, 0.0) * n / max(n - 1, 1))
    if outputs[0]["hist"].shape[1]:
        lower, upper, clipped = _intervals(outputs, n)
    else:
        lower, upper, clipped = np.full(mean.size, np.nan), np.full(mean.size, np.nan), 0
    units = problem.release.units
    split = np.cumsum([q.cells for q in problem.queries])[:-1]

    def by_query(flat):
        parts = np.split(flat.reshape(len(units), problem.ncell), split, axis=1)
        return {q.name: p for q, p in zip(problem.queries, parts, strict=True)}

    counts = sum(o["counts"] for o in outputs)
    rate = counts[0] / seconds if seconds > 0 else np.nan
    posterior = {
        "unit_total": np.concatenate([o["totals"] for o in outputs]),
        "loglik": np.concatenate([o["loglik"] for o in outputs]),
    }
    if store_leaves:
        posterior["leaf_counts"] = np.concatenate([o["leaves"] for o in outputs])
    attrs = {
        "method": "census lattice MCMC",
        "reference": "exact posterior of integer, non-negative tables (dpinfer.census)",
        "mechanism": "DiscreteGaussian",
        "prior": prior,
        "acceptance_rate": counts[1] / max(counts[0], 1),
        "proposals_scored": int(counts[0]),
        "cpu_seconds": seconds,
        "seed": seed_entropy(root),
        "inner_units": ",".join(units.geocodes[units.n_children > 0].tolist()),
    }
    idata = to_inference_data(
        posterior, attrs=attrs, chains=chains, diagnostic_vars=["unit_total", "loglik"]
    )
    return CensusPosterior(
        problem.release, by_query(mean), by_query(sd), by_query(lower), by_query(upper),
        idata, clipped, rate,
    )  # fmt: skip


def _intervals(outputs, n):
    """Central 90% intervals from the pooled window histograms (NaN where clipped)."""
    centers = [o["center"] for o in outputs]
    # chains have different windows: pool by summing each chain's counts at value offsets
    lo_all = min(c.min() for c in centers) - WINDOW
    lower = np.full(centers[0].size, np.nan)
    upper = np.full(centers[0].size, np.nan)
    clipped = 0
    width = 2 * WINDOW + 1
    for i_start in range(0, lower.size, 65536):
        sl = slice(i_start, min(i_start + 65536, lower.size))
        base = np.min([c[sl] for c in centers], axis=0) - WINDOW
        span = np.max([c[sl] for c in centers], axis=0) - base + WINDOW + 1
        grid = np.zeros((sl.stop - sl.start, int(span.max()) + 2))
        under = np.zeros(sl.stop - sl.start)
        over = np.zeros(sl.stop - sl.start)
        for o in outputs:
            h = o["hist"][sl]
            shift = o["center"][sl] - WINDOW - base
            rows = np.arange(h.shape[0])[:, None]
            grid[rows, shift[:, None] + np.arange(width)[None, :]] += h[:, 1 : width + 1]
            under += h[:, 0]
            over += h[:, width + 1]
        cdf = (under[:, None] + np.cumsum(grid, axis=1)) / n
        lo_idx = (cdf < (1 - LEVEL) / 2).sum(axis=1)
        hi_idx = (cdf < (1 + LEVEL) / 2).sum(axis=1)
        ok_lo = under / n < (1 - LEVEL) / 2
        ok_hi = over / n < (1 - LEVEL) / 2
        lower[sl] = np.where(ok_lo, base + lo_idx, np.nan)
        upper[sl] = np.where(ok_hi, base + hi_idx, np.nan)
        clipped += int((~ok_lo).sum() + (~ok_hi).sum())
    del lo_all
    return lower, upper, clipped
