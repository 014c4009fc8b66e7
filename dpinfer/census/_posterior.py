"""The exact posterior of the integer, non-negative leaf tables of a release in memory.

:func:`sample_posterior` runs several chains of the lattice moves
(:mod:`dpinfer.census._lattice`), part by part (:mod:`dpinfer.census._chains`),
and returns every unit's every query cell's posterior mean, sd and central 90%
interval (:class:`CensusPosterior`), with the draws of the inner units'
totals and of the log-likelihood as InferenceData.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._rng import RNGLike, as_seed_sequence, seed_entropy
from .._validate import flag, non_negative_int, size
from ..results import to_inference_data
from ._chains import MemoryStore
from ._gls import gls
from ._parts import ReleaseParts
from ._plan import make_plan, prior_tables, run_chains
from ._release import CensusRelease
from ._summaries import finish, query_frame

__all__ = ["CensusPosterior", "sample_posterior"]


@dataclass(frozen=True, eq=False)
class CensusPosterior:
    """The lattice posterior: per-cell summaries of every unit's query cells, and diagnostics.

    Attributes
    ----------
    release : CensusRelease
    mean, sd, lower, upper : dict of str to numpy.ndarray
        By query name, ``(units, cells)``: posterior mean, sd and central 90% interval,
        from the 5% to the 95% mid-quantile (each count's draws spread evenly over its
        unit bin, of which exactly 5% lie beyond each end; the ends are real numbers, and
        an end inside a count's bin leaves part of that count's integer draws beyond it).
        NaN where an end left the summary's window, see ``clipped``; without
        ``intervals``, ``lower`` and ``upper`` are read-only arrays of NaN).
    idata : arviz.InferenceData
        Draws of every non-leaf unit's total and of the log-likelihood, by chain, with
        R-hat and ESS in ``attrs``; the leaves' tables too with ``store_leaves=True``.
    clipped : int
        Number of interval ends that fell outside their window.
    rate : float
        Cell updates (proposals scored, then accepted or rejected) per CPU second of
        the chains' rounds (the setup, the least-squares start and the starting tables
        excluded: ``idata.attrs["init_cpu_seconds"]``).
    """

    release: CensusRelease
    mean: dict
    sd: dict
    lower: dict
    upper: dict
    idata: object
    clipped: int
    rate: float

    def table(self, queries: Sequence[str] | None = None) -> pd.DataFrame:
        """Rows ``geocode, query, cell, estimate, sd, lower, upper``."""
        geocodes = self.release.units.geocodes
        frames = [
            query_frame(
                geocodes, name, self.mean[name], self.sd[name], self.lower[name], self.upper[name]
            )  # fmt: skip
            for name in queries or self.mean
        ]
        frame = pd.concat(frames, ignore_index=True)
        frame["geocode"] = frame["geocode"].astype(str)
        return frame


def check_options(draws, tune, chains, per_leaf, prior, prior_params, cells, rng, progressbar):
    """Validate the sampler's options; return them normalised and the prior's tables."""
    options = {
        "draws": size("draws", draws),
        "tune": non_negative_int("tune", tune),
        "chains": size("chains", chains),
        "per_leaf": None if per_leaf is None else size("per_leaf", per_leaf),
    }
    flag("progressbar", progressbar)
    return options, prior_tables(prior, prior_params, cells), as_seed_sequence(rng)


def sample_posterior(
    release: CensusRelease,
    *,
    draws: int = 500,
    tune: int = 200,
    chains: int = 4,
    prior: str = "flat",
    prior_params: Sequence[float] | None = None,
    per_leaf: int | None = None,
    executor: Executor | None = None,
    store_leaves: bool = False,
    intervals: bool = True,
    trace: Sequence[str] = (),
    rng: RNGLike = None,
    progressbar: bool = True,
) -> CensusPosterior:
    r"""Sample the exact posterior of every leaf's integer, non-negative detailed counts.

    Parameters
    ----------
    release : CensusRelease
    draws, tune : int
        Rounds per chain kept, and discarded first (see :mod:`dpinfer.census._chains`).
    chains : int, default 4
        Independent chains, each from its own starting table and random stream.
    prior : {"flat", "poisson", "negative_binomial"}, default "flat"
        The prior of each leaf cell: flat on the non-negative integers; Poisson with
        a rate per detailed cell that has a Gamma hyperprior (``prior_params =
        (shape, rate)``, the rates updated by Gibbs after every round); or negative
        binomial with a mean per detailed cell and a size (``prior_params = (mean,
        size)``, fixed).
    per_leaf : int, optional
        Proposals per leaf in a round's subtree pass (default: one per 64 query cells
        of a unit, at least 4, so that a round's moves cost about what its summaries
        do); the pair pass makes half as many.
    executor : concurrent.futures.Executor, optional
        Runs the subtree passes (a dask ``Client`` from ``dpinfer[distributed]``, a
        process pool); same results as serially, seed for seed. The rate counts the
        CPU time of this process only.
    store_leaves : bool, default False
        Keep every draw of every leaf table (small releases only).
    intervals : bool, default True
        Keep the window histograms of the interval summaries (``2 * WINDOW + 3``
        counts per unit and query cell); without them ``lower`` and ``upper`` are NaN.
    trace : sequence of str, default ()
        Geocodes of units whose every query cell is kept as draws (the posterior
        variable ``unit_cells``, ``(chain, draw, unit, query cell)``, the query cells in
        the order of ``release.measurements``): for trace plots and ESS.
    rng : None, int, SeedSequence or Generator
    progressbar : bool, default True
        Show a progress bar over the rounds (on standard error).

    Returns
    -------
    CensusPosterior

    Notes
    -----
    The target is :math:`p(x \mid y) \propto \pi(x) \prod_{u,q,k}
    N_{\mathbb Z}(y_{uqk} - (P_q x_u)_k; \sigma^2_{uqk})` over leaf tables
    :math:`x \geq 0` that meet every invariant, every measurement through the
    discrete Gaussian pmf exactly. Every move keeps every invariant and is a
    Metropolis-Hastings step with its proposal's ratio, so the chain is exact
    (its stationary distribution is the posterior); it reaches every table that
    meets the invariants when these are totals or queries whose axes the
    within-leaf moves can keep (the census's case; ``tests/census/test_lattice.py``
    checks it by exact enumeration). The least-squares start and the setup are not
    counted in ``rate``.
    """
    options, prior_parts, root = check_options(
        draws, tune, chains, per_leaf, prior, prior_params, release.axes.cells, rng, progressbar
    )
    units = release.units
    options.update(intervals=intervals, store_leaves=store_leaves, executor=executor)
    options["trace"] = check_trace(trace, units)
    parts = ReleaseParts(release)
    inner = units.geocodes[units.n_children > 0]
    plan = make_plan(
        parts, MemoryStore(), inner_geocodes=inner, fallback_start=_fallback(release, parts),
        prior=prior_parts, options=options,
    )  # fmt: skip
    outputs, seconds, summaries = run_chains(plan, root, progressbar=progressbar)
    mean, sd, lower, upper, clipped = _gather(plan, parts, summaries)
    idata = draws_data(plan, outputs, seconds, root, prior, inner, options["trace"])
    return CensusPosterior(
        release, mean, sd, lower, upper, idata, clipped, plan.counts[0] / max(seconds, 1e-9)
    )


def _fallback(release, parts):
    """Part by part, the leaf tables of the release's own least squares (or zeros)."""
    cache = {}

    def start(i):
        if "detailed" not in cache:
            try:
                cache["detailed"] = gls(release).detailed
            except ValueError:
                cache["detailed"] = np.zeros((len(release.units), release.axes.cells))
        members = parts.partition.members[i]
        part = parts.part(i)
        leaves = part.units.leaves
        order = np.argsort(part.units.geocodes[leaves].astype(str), kind="stable")
        return cache["detailed"][members[leaves[order]]]

    return start


def _gather(plan, parts, summaries):
    """Every unit's summaries, by query, in the release's unit order.

    Each part's chain state is dropped once its summaries are out.
    """
    n = plan.draws * plan.chains
    shape = (len(parts.units), plan.layout.ncell)
    stats = [np.empty(shape) for _ in range(2)]
    if plan.intervals:
        stats += [np.empty(shape) for _ in range(2)]
    else:
        stats += [np.broadcast_to(np.nan, shape)] * 2
    clipped = 0
    top = parts.top()
    for i in range(-1 if top is not None else 0, len(parts)):
        part = top if i < 0 else parts.part(i)
        summary = summaries["top"] if i < 0 else plan.store.get(i).summary
        *values, n_clipped = finish(summary, plan.layout.measured(part), n)
        members = parts.partition.top if i < 0 else parts.partition.members[i]
        for stat, value in zip(stats[: len(stats) if plan.intervals else 2], values, strict=False):
            stat[members] = value
        clipped += n_clipped
        if i >= 0:
            for key in (i, ("start", i), ("static", i)):
                plan.store.put(key, None)
    split = np.cumsum([q.cells for q in plan.layout.queries])[:-1]
    by_query = [
        {q.name: p for q, p in zip(plan.layout.queries, np.split(s, split, axis=1), strict=True)}
        for s in stats
    ]
    return (*by_query, clipped)


def check_trace(trace, units) -> list[str]:
    """Return the geocodes of ``trace`` as text; raise ValueError naming any unknown."""
    codes = [str(g) for g in (trace or ())]
    known = set(units.geocodes.tolist())
    unknown = [g for g in codes if g not in known]
    if unknown:
        raise ValueError(f"trace: geocode(s) {unknown[:5]} are not units of the release")
    if len(set(codes)) != len(codes):
        raise ValueError(f"trace: a geocode is given twice in {codes[:10]}")
    return codes


def draws_data(plan, outputs, seconds, root, prior, inner_geocodes, traced):
    """Return the InferenceData of the draws (inner units' totals, log-likelihood)."""
    posterior = {
        "unit_total": np.stack([o["totals"] for o in outputs]),
        "loglik": np.stack([o["loglik"] for o in outputs]),
    }
    if traced:
        posterior["unit_cells"] = np.stack([o["trace"] for o in outputs])
    if plan.store_leaves:
        posterior["leaf_counts"] = np.stack([np.stack(o["leaves"]) for o in outputs])
    counts = plan.counts
    attrs = {
        "method": "census lattice MCMC",
        "reference": "exact posterior of integer, non-negative tables (dpinfer.census)",
        "mechanism": "DiscreteGaussian",
        "prior": prior,
        "acceptance_rate": counts[1] / max(counts[0], 1),
        "proposals_scored": int(counts[0]),
        "cpu_seconds": seconds,
        "init_cpu_seconds": sum(o["init_seconds"] for o in outputs),
        "per_leaf": plan.per_leaf,
        "seed": seed_entropy(root),
        "inner_units": ",".join(inner_geocodes.tolist()),
        "traced_units": ",".join(traced),
    }
    return to_inference_data(
        {k: v.reshape(-1, *v.shape[2:]) for k, v in posterior.items()},
        attrs=attrs, chains=plan.chains, diagnostic_vars=["unit_total", "loglik"],
    )  # fmt: skip
