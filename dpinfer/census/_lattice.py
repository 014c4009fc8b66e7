r"""Compiled Metropolis-Hastings moves on the lattice of integer, non-negative leaf tables.

The state lives in *arenas* (:class:`Arena`), one per subtree (a county and
everything below it) and one for the units above the subtrees (the state):
each leaf's detailed counts ``x``, a Fenwick tree of them (``fen``, to draw a
person uniformly in ``O(log cells)``; none where a leaf has at most
:data:`SCANNED` cells, whose row is scanned), and every unit's query cells as
residuals ``r = released - current`` (int32). A move changes counts by one
person and is scored against every measured cell it changes, on the paths
from the leaves to the root, through the discrete Gaussian's exact pmf ratio
(:func:`dpinfer.census._noise_term.step_log_ratio`, from the line of each
cell's noise law), times the proposal's and the prior's ratios.

Four moves, each refused (before scoring) where it would break an invariant.
A person is drawn uniformly among a leaf's persons (cell ``c`` with
probability ``x_c / n``), so the Hastings ratios hold the counts:

* **within a leaf**: a person of cell ``c1`` moves to ``c2``, drawn among the
  other cells that agree with ``c1`` on every axis an invariant on the leaf's
  path keeps; ratio ``(x_c2 + 1) / x_c1``;
* **between leaves**: a person of cell ``c`` moves from ``src`` to ``dst`` (the
  current leaf and a partner, either way with probability 1/2); ratio
  ``((x^dst_c + 1) / (n_dst + 1)) / (x^src_c / n_src)``; refused if a unit below
  the two leaves' lowest common ancestor carries an invariant;
* **birth or death**: a person enters a uniform cell or a drawn person leaves
  (probability 1/2 each), only where no unit on the leaf's path carries an
  invariant; ratios ``d (x_c + 1) / (n + 1)`` and ``n / (d x_c)``;
* **swap**: a person of ``c1`` in the current leaf and one of ``c2`` in the
  partner exchange cells (both leaves' invariant axes must agree on them); ratio
  ``(x_c2 + 1)(x'_c1 + 1) / (x_c1 x'_c2)``.

Moves between two leaves are scored at the units strictly below their lowest
common ancestor (the units above it do not change), so the partner may be
drawn by any rule that does not look at the counts: for a given pair each
move is a Metropolis-Hastings step that leaves the posterior invariant, and so
is any sequence of them. Partners are drawn near the leaf in memory (the
leaves are in geocode order, so a unit's leaves sit together): for a lowest
common ancestor at depth ``t``, uniformly among the leaves under that ancestor,
outside the leaf's own unit at depth ``t + 1``, at most ``Tables.window`` beyond
its edges (by default without limit: the whole ancestor). Adjacent units' edge
leaves can always pair, so every table that partners drawn across the whole
ancestor reach is still reached with a narrow window too; a narrow window
trades the reach of one move for cache hits (a partner drawn across a whole
county costs a cache miss at each of its rows), which measured no faster here.

A *subtree pass* (:func:`run_subtree`) runs the moves that keep the subtree's
detailed counts (between leaves and swaps, the partner drawn under the leaf's
ancestor at a depth ``t`` in ``tmin..tmax``); given those counts the subtrees
are independent. A *pair pass* (:func:`run_pair`) runs, on the leaves of two
subtrees, the moves within a leaf, births and deaths, and the moves between leaves
whose partner is a leaf of the other subtree (no swaps: a leaf's cells within one
invariant group are connected by the moves within it, so swaps only speed mixing,
and the subtree passes run them); it reads and writes the top arena.

A *cell update*, as the rates count it, is one proposed move of one person
scored against every measured cell it changes and then accepted or rejected;
proposals refused before scoring (an empty leaf, a move an invariant forbids)
are not counted.

The kernels are compiled without numba's reference counting (they allocate
nothing; the caller passes the buffers of :func:`scratch`) and with every
helper inlined: an array handed to a function, or taken from a tuple, is
otherwise reference-counted at every use, which costs more than the move itself.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ._noise_term import step_log_ratio
from ._prefetch import prefetch_row
from ._xoshiro import below, uniform

__all__ = ["Arena", "Scratch", "Tables", "fenwick", "run_pair", "run_subtree", "scratch"]

FLAT, POISSON, NEGATIVE_BINOMIAL = 0, 1, 2
REFUSED, REJECTED, ACCEPTED = 0, 1, 2
WITHIN, BETWEEN, BIRTH_DEATH = 0, 1, 2
#: Leaves with at most this many cells keep no Fenwick sums: a scan of the row is faster.
SCANNED = 16
#: Default half-width of the window of leaves a partner is drawn in: no limit. A window
#: of 32 leaves ran at about the same rate on a 10**6-measurement state (7.8 and 6.1 against
#: 7.4 and 7.2 million cell updates per CPU second) and cost a fifth to a third of the
#: effective samples per proposal, so partners are drawn across the whole ancestor.
WINDOW = 2**30

#: Entry points: compiled once (cached), no reference counting.
_kernel = numba.njit(cache=True, _nrt=False, error_model="numpy")
#: Helpers: inlined into the entry points.
_inline = numba.njit(cache=True, inline="always", _nrt=False, error_model="numpy")


class Tables(NamedTuple):
    """What every arena shares: the query cells of each detailed cell, the invariant groups."""

    cidx: np.ndarray  # (cells, queries) int32: flat query cell of each detailed cell
    law_col: np.ndarray  # (cells, queries) int32: column of Arena.intercept of each of those
    perm: np.ndarray  # (groups, cells) int32: cells sorted by their invariant axes' values
    pos: np.ndarray  # (groups, cells) int32: inverse of perm
    gsize: np.ndarray  # (groups,) int32: cells per value of the invariant axes
    lead: np.ndarray  # (groups, cells) int32: position in perm of the first cell of the value
    prior: int  # FLAT, POISSON or NEGATIVE_BINOMIAL
    pa: np.ndarray  # (cells,) float64: Poisson rate, or negative binomial size
    pb: np.ndarray  # (cells,) float64: negative binomial mean / (mean + size)
    top_depth: int  # depths served by the top arena (1: the root; 0: no top arena)
    window: int = WINDOW  # partners lie at most this many leaves away (in a leaf's order)
    swap_hastings: bool = True  # False drops the swap's Hastings ratio (a planted bug, in tests)


class Arena(NamedTuple):
    """One subtree's chain state and fixed arrays (or the top units', without leaves)."""

    x: np.ndarray  # (leaves, cells) int32 detailed counts
    fen: np.ndarray  # (leaves, width) int32 Fenwick sums of x's rows (see fenwick)
    r: np.ndarray  # (units, query cells) int32 residuals released - current
    intercept: np.ndarray  # (units, columns) float64: noise laws' intercepts (0: not measured)
    anc: np.ndarray  # (leaves, depths) int32: the unit at each depth (the top's above top_depth)
    depth: np.ndarray  # (leaves,) int32
    leaf_lo: np.ndarray  # (units,) int32: each unit's leaves are leaf_lo:leaf_hi
    leaf_hi: np.ndarray
    deepest: np.ndarray  # (leaves,) int32: deepest invariant on the path (-1: none)
    group: np.ndarray  # (leaves,) int32: invariant group (Tables.perm row)


class Scratch(NamedTuple):
    """The query cells one move changes, their noise laws' columns and their steps (+-1)."""

    cell: np.ndarray
    col: np.ndarray
    step: np.ndarray


def scratch(tables: Tables) -> Scratch:
    """Buffers for the cells one move changes (two per query at most)."""
    size = 2 * tables.cidx.shape[1]
    return Scratch(np.empty(size, np.uint64), np.empty(size, np.uint64), np.empty(size, np.int64))


def fenwick(x: np.ndarray) -> np.ndarray:
    """Fenwick sums of each row of ``x`` (``(leaves, width)``, width a power of 2).

    Rows of at most :data:`SCANNED` cells get none (width 0): they are scanned.
    """
    if x.shape[1] <= SCANNED:
        return np.zeros((x.shape[0], 0), dtype=np.int32)
    width = 1 << max(int(x.shape[1]) - 1, 0).bit_length()
    fen = np.zeros((x.shape[0], width), dtype=np.int32)
    fen[:, : x.shape[1]] = x
    for i in range(1, width + 1):
        j = i + (i & -i)
        if j <= width:
            fen[:, j - 1] += fen[:, i - 1]
    return fen


@_inline
def _persons(a, leaf):
    if a.fen.shape[1] == 0:
        n = 0
        for c in range(a.x.shape[1]):
            n += a.x[leaf, c]
        return n
    return a.fen[leaf, a.fen.shape[1] - 1]


@_inline
def _find(a, leaf, k):
    """Return the cell of the ``k``-th person (0-based) of ``leaf``."""
    if a.fen.shape[1] == 0:
        c = 0
        while k >= a.x[leaf, c]:
            k -= a.x[leaf, c]
            c += 1
        return c
    pos = 0
    bit = a.fen.shape[1] >> 1
    while bit:
        before = a.fen[leaf, pos + bit - 1]
        step = before <= k
        k -= before * step
        pos += bit * step
        bit >>= 1
    return pos


@_inline
def _add(a, leaf, c, v):
    a.x[leaf, c] += v
    i = c + 1
    while i <= a.fen.shape[1]:
        a.fen[leaf, i - 1] += v
        i += i & -i


@_inline
def _up(tb, c, k):
    """``prior(k + 1) / prior(k)`` for detailed cell ``c``, as a numerator and denominator."""
    if tb.prior == FLAT:
        return 1.0, 1.0
    if tb.prior == POISSON:
        return tb.pa[c], k + 1.0
    return (k + tb.pa[c]) * tb.pb[c], k + 1.0


@_inline
def _terms(tb, c_out, c_in, buf):
    """List the query cells a person changes leaving ``c_out``, entering ``c_in`` (-1: none)."""
    m = 0
    for j in range(tb.cidx.shape[1]):
        i_out = tb.cidx[c_out, j] if c_out >= 0 else -1
        i_in = tb.cidx[c_in, j] if c_in >= 0 else -1
        if i_out == i_in:
            continue
        if i_out >= 0:
            buf.cell[m], buf.col[m], buf.step[m] = i_out, tb.law_col[c_out, j], -1
            m += 1
        if i_in >= 0:
            buf.cell[m], buf.col[m], buf.step[m] = i_in, tb.law_col[c_in, j], 1
            m += 1
    return m


@_inline
def _units(r, intercept, anc, leaf, first, last, buf, m, apply):
    """Score (or, with ``apply``, make) the change ``step`` of the listed cells.

    At the units of depths ``first:last`` on ``leaf``'s path (up to its own depth), the
    units of even and odd depths in two sums (two chains of additions, not one).
    """
    delta, held = 0.0, 0.0  # this unit's sum, and the other one
    for t in range(first, last):
        if anc[leaf, t] < 0:
            break
        u = np.uint64(anc[leaf, t])
        for k in range(m):
            step = buf.step[k]
            if apply:
                r[u, buf.cell[k]] -= step
            else:
                delta += step_log_ratio(intercept[u, buf.col[k]], r[u, buf.cell[k]], step)
        delta, held = held, delta
    return delta + held


@_inline
def _path(tb, top, a, leaf, buf, m, apply):
    """:func:`_units` on ``leaf``'s whole path: the top arena's units, then its own."""
    levels = a.anc.shape[1]
    last = min(tb.top_depth, levels)
    delta = _units(top.r, top.intercept, a.anc, leaf, 0, last, buf, m, apply)
    return delta + _units(a.r, a.intercept, a.anc, leaf, tb.top_depth, levels, buf, m, apply)


@_inline
def _both_paths(a, leaf, b, other, first, buf, m, apply):
    """:func:`_units` on ``leaf``'s path and on ``other``'s, steps reversed, from depth ``first``.

    The two paths' units are taken side by side, a depth at a time, their scores summed
    apart (two chains of additions, not one); a path that ends first weighs nothing.
    """
    delta_a = 0.0
    delta_b = 0.0
    levels_a, levels_b = a.anc.shape[1], b.anc.shape[1]
    for t in range(first, max(levels_a, levels_b)):
        ua = a.anc[leaf, t] if t < levels_a else -1
        ub = b.anc[other, t] if t < levels_b else -1
        if ua < 0 and ub < 0:
            break
        wa, wb = np.int64(ua >= 0), np.int64(ub >= 0)
        ua, ub = np.uint64(max(ua, 0)), np.uint64(max(ub, 0))
        for k in range(m):
            step, cell, col = buf.step[k], buf.cell[k], buf.col[k]
            if apply:
                a.r[ua, cell] -= wa * step
                b.r[ub, cell] += wb * step
            else:
                delta_a += wa * step_log_ratio(a.intercept[ua, col], a.r[ua, cell], step)
                delta_b += wb * step_log_ratio(b.intercept[ub, col], b.r[ub, cell], -step)
    return delta_a + delta_b


@_inline
def _accept(s, delta, num, den):
    """Metropolis-Hastings: accept with probability ``min(1, exp(delta) num / den)``."""
    if delta >= 0.0 and num >= den:  # odds >= 1 without the exponential
        return True
    odds = np.exp(delta) * num
    return odds >= den or uniform(s) * den < odds


@_inline
def _within(tb, top, a, leaf, buf, s):
    n = _persons(a, leaf)
    g = a.group[leaf]
    size = tb.gsize[g]
    if n == 0 or size < 2:
        return REFUSED
    c1 = _find(a, leaf, below(s, n))
    lead = tb.lead[g, c1]
    k = below(s, size - 1)
    if k >= tb.pos[g, c1] - lead:
        k += 1
    c2 = tb.perm[g, lead + k]
    m = _terms(tb, c1, c2, buf)
    x1, x2 = a.x[leaf, c1], a.x[leaf, c2]
    delta = _path(tb, top, a, leaf, buf, m, False)
    up2, down2 = _up(tb, c2, x2)
    up1, down1 = _up(tb, c1, x1 - 1)
    if not _accept(s, delta, (x2 + 1.0) * up2 * down1, x1 * down2 * up1):
        return REJECTED
    _path(tb, top, a, leaf, buf, m, True)
    _add(a, leaf, c1, -1)
    _add(a, leaf, c2, 1)
    return ACCEPTED


@_inline
def _birth_death(tb, top, a, leaf, buf, s):
    n = _persons(a, leaf)
    d = a.x.shape[1]
    if uniform(s) < 0.5:
        c, sign = below(s, d), -1
        k = a.x[leaf, c]
        up, down = _up(tb, c, k)
        num, den = d * (k + 1.0) * up, (n + 1.0) * down
    else:
        if n == 0:
            return REFUSED
        c, sign = _find(a, leaf, below(s, n)), 1
        k = a.x[leaf, c]
        up, down = _up(tb, c, k - 1)
        num, den = n * down, d * float(k) * up
    m = _terms(tb, c, -1, buf)
    for i in range(m):
        buf.step[i] *= sign
    delta = _path(tb, top, a, leaf, buf, m, False)
    if not _accept(s, delta, num, den):
        return REJECTED
    _path(tb, top, a, leaf, buf, m, True)
    _add(a, leaf, c, -sign)
    return ACCEPTED


@_inline
def _exchange(tb, first, a, leaf, b, other, c_out, c_in, num, den, buf, s):
    """At ``leaf`` a person leaves ``c_out`` for ``c_in``; at ``other`` one does the reverse.

    A cell of -1 is none (a person moving between the leaves). Scored at the units of
    depth ``first`` and below on both paths, with the proposal and prior ratio
    ``num / den``.
    """
    m = _terms(tb, c_out, c_in, buf)
    if not _accept(s, _both_paths(a, leaf, b, other, first, buf, m, False), num, den):
        return REJECTED
    _both_paths(a, leaf, b, other, first, buf, m, True)
    for cell, step in ((c_out, -1), (c_in, 1)):
        if cell >= 0:
            _add(a, leaf, cell, step)
            _add(b, other, cell, -step)
    return ACCEPTED


@_inline
def _transfer(tb, first, sa, src, da, dst, buf, s):
    """Move one person of a drawn cell from leaf ``src`` to ``dst`` (depths ``first`` on)."""
    n_src = _persons(sa, src)
    if n_src == 0:
        return REFUSED
    c = _find(sa, src, below(s, n_src))
    n_dst = _persons(da, dst)
    k_src, k_dst = sa.x[src, c], da.x[dst, c]
    up_dst, down_dst = _up(tb, c, k_dst)
    up_src, down_src = _up(tb, c, k_src - 1)
    num = (k_dst + 1.0) * n_src * up_dst * down_src
    den = (n_dst + 1.0) * k_src * down_dst * up_src
    return _exchange(tb, first, sa, src, da, dst, c, -1, num, den, buf, s)


@_inline
def _same_block(tb, g, c1, c2):
    return tb.lead[g, c1] == tb.lead[g, c2]


@_inline
def _swap(tb, first, a, leaf, b, other, buf, s):
    """Exchange the cells of a person of ``leaf`` and one of ``other`` (depths ``first`` on)."""
    n_a, n_b = _persons(a, leaf), _persons(b, other)
    if n_a == 0 or n_b == 0:
        return REFUSED
    c1 = _find(a, leaf, below(s, n_a))
    c2 = _find(b, other, below(s, n_b))
    if c1 == c2 or not (
        _same_block(tb, a.group[leaf], c1, c2) and _same_block(tb, b.group[other], c1, c2)
    ):
        return REFUSED
    a1, a2, b1, b2 = a.x[leaf, c1], a.x[leaf, c2], b.x[other, c1], b.x[other, c2]
    up_a2, down_a2 = _up(tb, c2, a2)
    up_b1, down_b1 = _up(tb, c1, b1)
    up_a1, down_a1 = _up(tb, c1, a1 - 1)
    up_b2, down_b2 = _up(tb, c2, b2 - 1)
    num = (a2 + 1.0) * (b1 + 1.0) * up_a2 * up_b1 * down_a1 * down_b2
    den = a1 * float(b2) * down_a2 * down_b1 * up_a1 * up_b2
    if not tb.swap_hastings:
        num, den = up_a2 * up_b1 * down_a1 * down_b2, down_a2 * down_b1 * up_a1 * up_b2
    return _exchange(tb, first, a, leaf, b, other, c1, c2, num, den, buf, s)


@_inline
def _tally(counts, code):
    if code != REFUSED:
        counts[0] += 1
        if code == ACCEPTED:
            counts[1] += 1


@_inline
def _cycle(t, tmin, tmax):
    return tmin if t == tmax else t + 1


@_inline
def _partner(a, leaf, t, window, s):
    """Draw a partner whose lowest common ancestor with ``leaf`` is at depth ``t`` (-1: none).

    Uniformly among the leaves under that ancestor but outside ``leaf``'s child of it,
    at most ``window`` leaves beyond either edge of that child.
    """
    if t >= a.depth[leaf]:
        return -1
    outer, inner = a.anc[leaf, t], a.anc[leaf, t + 1]
    lo, hi = a.leaf_lo[inner], a.leaf_hi[inner]
    left = min(window, lo - a.leaf_lo[outer])
    right = min(window, a.leaf_hi[outer] - hi)
    if left + right == 0:
        return -1
    k = below(s, left + right)
    return lo - left + k if k < left else hi + k - left


@_inline
def _facing(leaf, n_a, n_b, window, s):
    """Draw a leaf of a subtree of ``n_b`` leaves near the position of ``leaf`` among ``n_a``."""
    centre = leaf * n_b // n_a
    lo = max(centre - window, 0)
    hi = min(centre + window + 1, n_b)
    return lo + below(s, hi - lo)


@_inline
def _prefetch_leaf(a, leaf):
    """Fetch ``leaf``'s rows into the cache (-1: none)."""
    if leaf >= 0:
        prefetch_row(a.anc, leaf)
        prefetch_row(a.x, leaf)
        prefetch_row(a.fen, leaf)
        prefetch_row(a.deepest, leaf)
        prefetch_row(a.group, leaf)
        prefetch_row(a.depth, leaf)


@_inline
def _prefetch_unit(a, leaf):
    """Fetch the rows of ``leaf``'s own unit into the cache (-1: none).

    Its path and depth are read: fetch them (:func:`_prefetch_leaf`) a move before.
    """
    if leaf >= 0:
        unit = a.anc[leaf, a.depth[leaf]]
        prefetch_row(a.r, unit)
        prefetch_row(a.intercept, unit)


@_kernel
def run_subtree(tb, a, per_leaf, tmin, tmax, s, counts, buf):
    """About ``per_leaf`` moves between leaves and swaps at each leaf of ``a`` (kept counts).

    For each of ``ceil(per_leaf / 2)`` partners, whose lowest common ancestor with the
    leaf is at a depth that cycles through ``tmin..tmax`` (:func:`_partner`): a
    move between the two, where no invariant below their common ancestor forbids it,
    and a swap. ``counts`` accumulates
    (proposals scored, accepted); ``buf`` is :func:`scratch`'s. Each partner is drawn
    two turns ahead, its rows fetched into the cache then and its own unit's rows (found
    from those) a turn later.
    """
    n = a.x.shape[0]
    turns = (per_leaf + 1) // 2
    t, leaf2, turn2 = tmin, 0, 0  # the last partner's depth, the next one's (leaf, turn)
    other, depth, ahead, ahead_t = -1, t, -1, t
    for _ in range(2):  # the partners of the first turn (other) and the second (ahead)
        other, depth = ahead, ahead_t
        ahead, t, leaf2, turn2 = _next_partner(a, tb.window, tmin, tmax, t, leaf2, turn2, turns, s)
        ahead_t = t
    for leaf in range(n):
        for _ in range(turns):
            this, this_t = other, depth
            other, depth = ahead, ahead_t
            ahead, t, leaf2, turn2 = _next_partner(
                a, tb.window, tmin, tmax, t, leaf2, turn2, turns, s
            )
            ahead_t = t
            _prefetch_unit(a, other)
            if this < 0:
                continue
            first = this_t + 1  # the units the two paths do not share
            if a.deepest[leaf] < first and a.deepest[this] < first:
                flip = (leaf ^ this) * (uniform(s) < 0.5)  # either way, with probability 1/2
                _tally(counts, _transfer(tb, first, a, leaf ^ flip, a, this ^ flip, buf, s))
            _tally(counts, _swap(tb, first, a, leaf, a, this, buf, s))


@_inline
def _next_partner(a, window, tmin, tmax, t, leaf, turn, turns, s):
    """Draw the partner of ``leaf`` at ``turn`` (-1: none, or past the last leaf).

    Its depth is the one after ``t``; fetch its rows. Return it, its depth and the
    position (leaf, turn) of the next draw.
    """
    if leaf >= a.x.shape[0]:
        return -1, t, leaf, turn
    t = _cycle(t, tmin, tmax)
    other = _partner(a, leaf, t, window, s)
    _prefetch_leaf(a, other)
    if turn + 1 == turns:
        return other, t, leaf + 1, 0
    return other, t, leaf, turn + 1


@_inline
def _possible(kind, within_ok, between_ok, birth_ok):
    """``kind``, or the first move a leaf can make in its place (-1: none)."""
    if kind == WITHIN and within_ok or kind == BETWEEN and between_ok:
        return kind
    if kind == BIRTH_DEATH and birth_ok:
        return kind
    if within_ok:
        return WITHIN
    return BETWEEN if between_ok else BIRTH_DEATH if birth_ok else -1


@_inline
def _kind(tb, a, paired, pattern, leaf, turn):
    """Return the move ``leaf`` makes at ``turn`` of ``pattern`` (:func:`_possible`)."""
    deepest = a.deepest[leaf]
    within_ok = tb.gsize[a.group[leaf]] > 1
    between_ok = paired and deepest < tb.top_depth
    return _possible(pattern[turn], within_ok, between_ok, deepest < 0)


@_inline
def _next_between(tb, a, paired, pattern, per_leaf, leaf, step, turn):
    """Return the position (leaf, step, turn) of the next move between leaves after this one.

    Its leaf is ``a.x.shape[0]`` where there is none.
    """
    n = a.x.shape[0]
    if not paired or per_leaf < 1:
        return n, 0, 0
    while leaf < n:
        turn = 0 if turn + 1 == pattern.size else turn + 1
        step += 1
        if step == per_leaf:
            leaf, step = leaf + 1, 0
        if leaf < n and _kind(tb, a, paired, pattern, leaf, turn) == BETWEEN:
            break
    return leaf, step, turn


@_kernel
def _pair_side(tb, top, a, b, paired, pattern, per_leaf, s, counts, buf):
    first = tb.top_depth  # the partner's path meets the leaf's at the root
    n_a, n_b = a.x.shape[0], b.x.shape[0]
    # the partner of the move between leaves after next is drawn at each such move (its
    # rows fetched), the own unit's rows of the next one's fetched
    other, ahead = -1, -1
    leaf2, step2, turn2 = 0, -1, -1  # the position of the move ``ahead`` is drawn for
    due = 2  # draws due: two before the first move
    turn = 0
    for leaf in range(n_a):
        for _ in range(per_leaf):
            while due:
                other = ahead
                _prefetch_unit(b, other)
                leaf2, step2, turn2 = _next_between(
                    tb, a, paired, pattern, per_leaf, leaf2, step2, turn2
                )
                ahead = _facing(leaf2, n_a, n_b, tb.window, s) if leaf2 < n_a else -1
                _prefetch_leaf(b, ahead)
                due -= 1
            kind = _kind(tb, a, paired, pattern, leaf, turn)
            turn = 0 if turn + 1 == pattern.size else turn + 1
            if kind == WITHIN:
                code = _within(tb, top, a, leaf, buf, s)
            elif kind == BIRTH_DEATH:
                code = _birth_death(tb, top, a, leaf, buf, s)
            elif kind == BETWEEN:
                due = 1
                if b.deepest[other] >= first:
                    code = REFUSED
                else:  # either way, with probability 1/2
                    (sa, src), (da, dst) = (
                        ((a, leaf), (b, other)) if uniform(s) < 0.5 else ((b, other), (a, leaf))
                    )
                    code = _transfer(tb, first, sa, src, da, dst, buf, s)
            else:
                code = REFUSED
            _tally(counts, code)


@_kernel
def run_pair(tb, top, a, b, paired, per_leaf, pattern, s, counts, buf):
    """``per_leaf`` moves at each leaf of the subtrees ``a`` and ``b`` (changed counts).

    The moves cycle through ``pattern`` (``WITHIN``, ``BETWEEN``, ``BIRTH_DEATH``),
    a move a leaf cannot make (a birth under an invariant, within a leaf whose cells
    an invariant fixes, between leaves without a partner) replaced by the first it
    can; the partner of a move between leaves is drawn uniformly among the leaves of
    the other subtree at most ``tb.window`` from the leaf's relative position (their
    lowest common ancestor is the root), two such moves ahead (from the same stream,
    without looking at the counts, so each move's proposal is unchanged), its rows
    fetched into the cache meanwhile. With ``paired`` false (``b`` is ``a``) there is
    no partner.
    """
    _pair_side(tb, top, a, b, paired, pattern, per_leaf, s, counts, buf)
    if paired:
        _pair_side(tb, top, b, a, paired, pattern, per_leaf, s, counts, buf)
