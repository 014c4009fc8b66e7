"""The lattice chains, round by round, part by part.

A *round* of a chain draws a random pairing of the parts (subtrees); then, for
each pair ``(A, B)`` in turn, runs A's and B's subtree passes (the moves that
keep their detailed counts) and the pair pass (moves within leaves, births and
deaths, and moves and swaps between a leaf of A and one of B); a part left
without a partner runs its pair pass alone. Every piece of work has its own
random stream, from the round's seed by its index (:mod:`dpinfer.census._xoshiro`).
A subtree pass reads and writes its own part only and the pair passes run in
order, so running every subtree pass first (on an executor) gives the same
tables, seed for seed, as going pair by pair with two parts in memory.

Parts live in a *store* (``get(key)``, ``put(key, value)``):
:class:`MemoryStore` keeps them; a release streamed part by part writes them
to disk between uses (:mod:`dpinfer.census._streaming`). After each round past
``tune`` every part's cells go to its streaming summary
(:mod:`dpinfer.census._summaries`), and the inner units' totals and the
log-likelihood are kept as draws.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numba
import numpy as np

from .._rng import child_sequence
from . import _lattice
from ._layout import Layout, Static, chain_arena, query_cells
from ._noise_term import log_likelihood
from ._release import CensusRelease
from ._start import apply_changes, free_leaves, meet_part_invariants, top_changes
from ._summaries import Summary
from ._xoshiro import below, round_states

__all__ = ["MemoryStore", "PartState", "Plan", "run_chain"]

#: The pair pass's cycle of moves at each leaf.
PAIR_PATTERN = np.array([_lattice.WITHIN, _lattice.BETWEEN, _lattice.WITHIN, _lattice.BIRTH_DEATH])


class Parts(Protocol):
    """A release cut into parts: ``len(parts)`` subtrees and the units above them."""

    def __len__(self) -> int: ...

    def part(self, i: int) -> CensusRelease:
        """Return part ``i``: a subtree of the release."""
        ...

    def top(self) -> CensusRelease | None:
        """Return the units above the parts (None: the parts are the whole tree)."""
        ...


class Store(Protocol):
    """Where a run keeps its parts' states between uses (in memory, or on disk)."""

    def put(self, key: Any, value: Any) -> None:
        """Keep ``value`` under ``key``."""
        ...

    def get(self, key: Any, default: Any = None) -> Any:
        """Return what was kept under ``key`` (``default`` if nothing)."""
        ...


class MemoryStore:
    """Parts kept in memory, by key."""

    def __init__(self):
        self._items: dict = {}

    def put(self, key, value) -> None:
        """Keep ``value`` under ``key``."""
        self._items[key] = value

    def get(self, key, default=None):
        """Return what was kept under ``key`` (``default`` if nothing)."""
        return self._items.get(key, default)


@dataclass
class Watch:
    """What an arena's draws record: its inner units' totals, its traced units' cells."""

    inner: np.ndarray  # local indices
    inner_slots: np.ndarray  # positions among the tree's inner units
    ysum: np.ndarray  # released sum of the first query's cells, per inner unit
    traced: np.ndarray
    traced_slots: np.ndarray
    ytraced: np.ndarray  # released values of the traced units' query cells

    @classmethod
    def of(cls, units, y: np.ndarray, plan: Plan) -> Watch:
        """Return the watch of an arena whose units are ``units``, released values ``y``."""
        inner = np.array([u for u, g in enumerate(units.geocodes) if g in plan.inner_slot], int)
        traced = np.array([u for u, g in enumerate(units.geocodes) if g in plan.trace_slot], int)
        first = plan.layout.queries[0].cells
        return cls(
            inner, np.array([plan.inner_slot[g] for g in units.geocodes[inner]], dtype=int),
            y[inner, :first].sum(axis=1), traced,
            np.array([plan.trace_slot[g] for g in units.geocodes[traced]], dtype=int), y[traced],
        )  # fmt: skip

    def record(self, r: np.ndarray, first: int, out: dict, draw: int) -> None:
        """Write the draw ``draw`` of the arena whose residuals are ``r`` to ``out``."""
        out["totals"][draw, self.inner_slots] = self.ysum - r[self.inner, :first].sum(axis=1)
        if self.traced.size:
            out["trace"][draw, self.traced_slots] = self.ytraced - r[self.traced]


@dataclass
class PartState:
    """A part's chain state, its summary, and what its draws record."""

    x: np.ndarray
    fen: np.ndarray
    r: np.ndarray
    watch: Watch
    summary: Summary | None = None


@dataclass
class Plan:
    """What every chain of one run shares.

    The store holds ``("static", i)`` (each part's :class:`Static`) and
    ``("start", i)`` (its rounded least-squares tables) before the chains run.
    """

    parts: Parts
    layout: Layout
    tables: _lattice.Tables
    store: Store
    top_static: Static
    inner_slot: dict  # geocode -> position among the inner units (the draws' order)
    trace_slot: dict  # geocode -> position among the traced units
    n_leaves: int
    per_leaf: int
    draws: int
    tune: int
    chains: int
    intervals: bool
    store_leaves: bool
    hyper: tuple | None = None
    executor: Any = None
    top_watch: Watch | None = None
    counts: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.int64))

    def arena(self, i: int, state: PartState) -> _lattice.Arena:
        """Part ``i``'s arena in ``state``."""
        return self.store.get(("static", i)).arena(state.x, state.fen, state.r)


@numba.njit(cache=True)
def _shuffle(s, n):
    order = np.arange(n)
    for i in range(n - 1, 0, -1):
        j = below(s, i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def _pairs(state: np.ndarray, n: int) -> list[tuple[int, ...]]:
    order = _shuffle(state, n).tolist()
    return [tuple(order[i : i + 2]) for i in range(0, n, 2)]


def init_chain(plan: Plan, chain_seed) -> _lattice.Arena:
    """Put every part's starting state in the store; return the top arena.

    A part's summary carries over from the previous chain's state.
    """
    parts, layout, store = plan.parts, plan.layout, plan.store
    n, d = len(parts), layout.axes.cells
    seeds = child_sequence(chain_seed, 0)
    totals = np.zeros((n, d), dtype=np.int64)
    free_persons = np.zeros((n, d), dtype=np.int64)
    free_count = np.zeros(n, dtype=np.int64)
    for i in range(n):
        static = store.get(("static", i))
        x = store.get(("start", i)).copy()
        meet_part_invariants(parts.part(i), static, x, _generator(seeds, i))
        free = free_leaves(static)
        totals[i], free_persons[i], free_count[i] = x.sum(axis=0), x[free].sum(axis=0), free.size
        store.put(("x", i), x)
    top = parts.top()
    change = np.zeros((n, d), dtype=np.int64)
    if top is not None and top.invariants:
        change = top_changes(top, totals, free_persons, free_count, _generator(seeds, n))
    root = np.zeros(d, dtype=np.int64)
    for i in range(n):
        part, static = parts.part(i), store.get(("static", i))
        x = store.get(("x", i))
        apply_changes(x, free_leaves(static), change[i], _generator(seeds, n + 1 + i))
        root += x.sum(axis=0)
        y = layout.measured(part)
        arena = chain_arena(static, y, x, query_cells(part, layout, x, static.leaves))
        previous = store.get(i)
        state = PartState(arena.x, arena.fen, arena.r, Watch.of(part.units, y, plan),
                          previous and previous.summary)  # fmt: skip
        store.put(i, state)
        store.put(("x", i), None)
    cells = np.concatenate([q.project(root[None]) for q in layout.queries], axis=1)
    if top is None:
        y = np.zeros((0, layout.ncell), np.int64)
        plan.top_watch = None
    else:
        y = layout.measured(top)
        plan.top_watch = Watch.of(top.units, y, plan)
    return chain_arena(plan.top_static, y, np.zeros((0, d), dtype=np.int64), cells[: len(y)])


def _generator(seeds, index: int) -> np.random.Generator:
    return np.random.default_rng(child_sequence(seeds, index))


def _subtree_pass(tables, arena, per_leaf, state):
    """Run one part's subtree pass; return its new state and (scored, accepted)."""
    counts = np.zeros(2, dtype=np.int64)
    tmax = arena.anc.shape[1] - 2
    if tmax >= 1:
        _lattice.run_subtree(
            tables, arena, per_leaf, 1, tmax, state, counts, _lattice.scratch(tables)
        )
    return arena.x, arena.fen, arena.r, counts


def _parallel_subtree_passes(plan, states):
    """Every part's subtree pass on the executor, the results written back in order."""
    futures = []
    for i in range(len(plan.parts)):
        arena = plan.arena(i, plan.store.get(i))
        futures.append(
            plan.executor.submit(_subtree_pass, plan.tables, arena, plan.per_leaf, states[1 + i])
        )
    for i, future in enumerate(futures):
        state = plan.store.get(i)
        x, fen, r, counts = future.result()
        np.copyto(state.x, x)
        np.copyto(state.fen, fen)
        np.copyto(state.r, r)
        plan.counts += counts


def run_round(plan: Plan, top, seed, *, out: dict | None, draw: int) -> np.ndarray:
    """One round of one chain; with ``out``, record it as draw ``draw``. Return leaf sums."""
    n = len(plan.parts)
    states = round_states(seed, 1 + n + (n + 1) // 2)
    parallel = plan.executor is not None and isinstance(plan.store, MemoryStore)
    if parallel:
        _parallel_subtree_passes(plan, states)
    leaf_sums = np.zeros(plan.layout.axes.cells)
    for p, pair in enumerate(_pairs(states[0], n)):
        sides = [plan.store.get(i) for i in pair]
        arenas = [plan.arena(i, s) for i, s in zip(pair, sides, strict=True)]
        if not parallel:
            for i, arena in zip(pair, arenas, strict=True):
                plan.counts += _subtree_pass(plan.tables, arena, plan.per_leaf, states[1 + i])[3]
        _lattice.run_pair(
            plan.tables, top, arenas[0], arenas[-1], len(pair) == 2,
            max(1, plan.per_leaf // 2), PAIR_PATTERN, states[1 + n + p], plan.counts,
            _lattice.scratch(plan.tables),
        )  # fmt: skip
        for i, side in zip(pair, sides, strict=True):
            leaf_sums += side.x.sum(axis=0)
            if out is not None:
                _record(plan.layout, side, plan.store.get(("static", i)), out, draw)
            plan.store.put(i, side)
        del sides, arenas  # else the last pair stays in memory while the next one is read
    if out is not None and top.r.shape[0]:
        assert plan.top_watch is not None, "a chain with a top arena watches it"
        out["top_summary"].add(top.r)
        out["loglik"][draw] += _log_likelihood(plan.layout, top.r, plan.top_static)
        plan.top_watch.record(top.r, plan.layout.queries[0].cells, out, draw)
    return leaf_sums


def _record(layout: Layout, side: PartState, static: Static, out: dict, draw: int) -> None:
    assert side.summary is not None, "the summaries are created before the first draw"
    side.summary.add(side.r)
    out["loglik"][draw] += _log_likelihood(layout, side.r, static)
    side.watch.record(side.r, layout.queries[0].cells, out, draw)


def _log_likelihood(layout: Layout, r: np.ndarray, static: Static) -> float:
    return log_likelihood(r, static.law, layout.law_column, layout.laws.form)


def run_chain(plan: Plan, chain_seed, progress, summaries: dict) -> dict:
    """Run one chain; return its draws.

    ``summaries`` is shared by the chains: the first to finish tuning creates them
    (centered on its cells at that round), the others add to them.
    """
    start = time.process_time()
    top = init_chain(plan, chain_seed)
    n = len(plan.parts)
    out: dict[str, Any] = {
        "init_seconds": time.process_time() - start,
        "totals": np.zeros((plan.draws, len(plan.inner_slot)), dtype=np.int64),
        "trace": np.zeros((plan.draws, len(plan.trace_slot), plan.layout.ncell), dtype=np.int64),
        "loglik": np.zeros(plan.draws),
        "leaves": [] if plan.store_leaves else None,
    }
    gibbs = np.random.default_rng(child_sequence(chain_seed, 1))
    if plan.hyper is not None:
        plan.tables.pa[:] = plan.hyper[0] / plan.hyper[1]  # the rates' prior mean
    for r in range(plan.tune + plan.draws):
        record = r >= plan.tune
        if record and "top" not in summaries:
            _create_summaries(plan, top, summaries)
        out["top_summary"] = summaries.get("top")
        leaf_sums = run_round(plan, top, child_sequence(chain_seed, r + 2),
                              out=out if record else None, draw=r - plan.tune)  # fmt: skip
        if plan.hyper is not None:  # Gibbs update of the Poisson rates given the tables
            shape, rate = plan.hyper
            plan.tables.pa[:] = gibbs.gamma(shape + leaf_sums, 1.0 / (rate + plan.n_leaves))
        if record and plan.store_leaves:
            out["leaves"].append(np.concatenate([plan.store.get(i).x for i in range(n)]))
        progress.advance(1)
    return out


def _create_summaries(plan, top, summaries):
    recorded = plan.draws * plan.chains
    for i in range(len(plan.parts)):
        state = plan.store.get(i)
        state.summary = Summary(state.r, intervals=plan.intervals, recorded=recorded)
        plan.store.put(i, state)
    summaries["top"] = Summary(top.r, intervals=plan.intervals, recorded=recorded)
