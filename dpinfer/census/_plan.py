"""Setting up and running the lattice chains of a release seen part by part.

:func:`make_plan` turns the parts of a release (in memory, or streamed from a
folder) into what the chains share: the layout and tables, each part's fixed
arrays and rounded least-squares start (in the store), the positions of the
inner units; :func:`run_chains` runs the chains with a progress bar and
returns their draws, the CPU time and the counts of proposals.
"""

from __future__ import annotations

import time

import numpy as np

from .._progress import progress_bar
from .._rng import child_sequence
from . import _lattice
from ._anova import Basis
from ._chains import Plan, run_chain
from ._layout import Layout, static_arrays, top_static
from ._start import rounded, tree_start

__all__ = ["make_plan", "prior_tables", "run_chains"]

#: Default proposals per leaf and round: one per this many query cells of a unit (at
#: least 4), so that a round's moves cost about what its summaries do.
CELLS_PER_PROPOSAL = 64


def prior_tables(prior: str, params, d: int):
    """``(kind, pa, pb, hyper)`` of the compiled moves for a prior and its parameters."""
    if prior == "flat":
        return _lattice.FLAT, np.zeros(d), np.zeros(d), None
    if prior == "poisson":
        shape, rate = (1.0, 0.01) if params is None else params
        if not (float(shape) > 0 and float(rate) > 0):
            raise ValueError(f"prior_params: shape and rate must be positive, got {params!r}")
        return _lattice.POISSON, np.full(d, shape / rate), np.zeros(d), (float(shape), float(rate))
    if prior == "negative_binomial":
        if params is None:
            raise ValueError("prior='negative_binomial' needs prior_params=(mean, size)")
        mean, size = (np.broadcast_to(np.asarray(p, float), (d,)) for p in params)
        if not (np.all(mean > 0) and np.all(size > 0)):
            raise ValueError(f"prior_params: mean and size must be positive, got {params!r}")
        return _lattice.NEGATIVE_BINOMIAL, size.copy(), mean / (mean + size), None
    raise ValueError(f"prior must be 'flat', 'poisson' or 'negative_binomial', got {prior!r}")


def make_plan(parts, store, *, inner_geocodes, fallback_start, prior, options) -> Plan:
    """Prepare the chains of ``parts``; the store receives each part's static and start.

    ``inner_geocodes`` lists the tree's inner units (their draws' order), ``options
    ["trace"]`` the units whose query cells are kept as draws;
    ``fallback_start(i)`` gives part ``i``'s leaf tables when the least-squares tree
    passes do not apply; ``prior`` is :func:`prior_tables`' result; ``options`` holds
    ``draws, tune, chains, per_leaf, intervals, store_leaves, executor``.
    """
    layout = Layout(parts.axes, parts.query_names, per_cell=not parts.uniform)
    top = parts.top()
    top_mask, top_deepest = _top_invariants(top)
    offset = 0 if top is None else 1
    leaves = 0
    for i, (part, start) in enumerate(tree_start(parts, Basis(parts.axes), store)):
        static = static_arrays(
            part, layout, offset=offset, top_mask=top_mask, top_deepest=top_deepest
        )
        start = rounded(start if start is not None else fallback_start(i))
        store.put(("static", i), static)
        store.put(("start", i), start.astype(np.int32))
        leaves += start.shape[0]
    kind, pa, pb, hyper = prior
    top_arrays = top_static(top, layout)  # its noise laws numbered before the tables are made
    per_leaf = options["per_leaf"]
    if per_leaf is None:  # the moves cost about as much as each round's summaries
        per_leaf = max(4, -(-layout.ncell // CELLS_PER_PROPOSAL))
    return Plan(
        parts, layout, layout.tables(kind, pa, pb, offset), store, top_arrays,
        inner_slot={g: k for k, g in enumerate(inner_geocodes)},
        trace_slot={g: k for k, g in enumerate(options["trace"])}, n_leaves=leaves,
        per_leaf=per_leaf, draws=options["draws"], tune=options["tune"],
        chains=options["chains"], intervals=options["intervals"],
        store_leaves=options["store_leaves"], hyper=hyper, executor=options["executor"],
    )  # fmt: skip


def _top_invariants(top) -> tuple[int, int]:
    if top is None or not top.invariants:
        return 0, -1
    mask = 0
    for name in top.invariants:
        mask |= sum(1 << k for k in top.query(name).kept)
    return mask, 0


def run_chains(plan: Plan, root, *, progressbar: bool) -> tuple[list, float, dict]:
    """Run ``plan.chains`` chains from the seed ``root``.

    Return their draws, the CPU seconds of their rounds (each chain's starting table
    excluded: ``init_seconds`` in its draws) and the summaries.
    """
    outputs = []
    summaries: dict = {}
    total = plan.chains * (plan.tune + plan.draws)
    begin = time.process_time()
    with progress_bar("census lattice posterior", total=total, enabled=progressbar) as bar:
        for chain in range(plan.chains):
            outputs.append(run_chain(plan, child_sequence(root, chain), bar, summaries))
    seconds = time.process_time() - begin - sum(o["init_seconds"] for o in outputs)
    return outputs, seconds, summaries
