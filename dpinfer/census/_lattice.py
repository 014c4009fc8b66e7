"""Compiled Metropolis moves on the lattice of integer, non-negative leaf tables.

The state is every leaf's detailed counts ``x`` (leaves in geocode order, so the
leaves under any unit are a contiguous range) and, for the scoring, the current
value of every query cell at every unit (``cur``, ``units x cells``). A move
changes counts by one person and is scored against every measured cell it
changes, on the paths from the leaves to the root, through the discrete
Gaussian's exact pmf ratio (:func:`noise_log_ratio`), plus the prior's ratio.

Three moves, each its own reverse with the same proposal probability (so a
Metropolis step with the target ratio is exact), each refused where it would
break an invariant:

* **within a leaf**: a person moves from cell ``c1`` to ``c2``, ``c2`` drawn among
  the cells that agree with ``c1`` on every axis an invariant on the leaf's path
  keeps (so every invariant's cells keep their values);
* **between leaves**: a person in cell ``c`` moves between the current leaf and a
  leaf drawn under its ancestor at a depth ``t`` (either direction, with
  probability 1/2); refused if a unit strictly below depth ``t`` on either path
  carries an invariant;
* **birth or death**: one person more or less in a cell, only where no unit on the
  leaf's path carries an invariant;
* **swap**: a person in cell ``c1`` of the current leaf and one in ``c2`` of a leaf
  drawn as above exchange cells (both leaves' invariant axes must agree), which
  keeps every unit's counts at and above depth ``t``.

The moves between leaves with ``t`` at or below a subtree's root (a county) keep
every county's detailed counts, so given them the counties are independent:
those moves run county by county (in parallel on an executor), the others over
the whole state.

The random numbers come from an explicit xoshiro256** state (seeded from the
caller's ``Generator``), so a run is reproducible chunk by chunk.
"""

from __future__ import annotations

import numba
import numpy as np

from ._noise_term import noise_log_ratio

__all__ = ["new_state", "run_leaves"]

FLAT, POISSON, NEGATIVE_BINOMIAL = 0, 1, 2


def new_state(rng: np.random.Generator) -> np.ndarray:
    """Return a xoshiro256** state seeded from ``rng``."""
    state = rng.integers(0, 2**63, size=4, dtype=np.int64).astype(np.uint64)
    state[0] |= np.uint64(1)
    return state


@numba.njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(cache=True, inline="always")
def _next(s):
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@numba.njit(cache=True, inline="always")
def _uniform(s):
    return (_next(s) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, inline="always")
def _below(s, n):
    return int(_uniform(s) * n)


@numba.njit(cache=True, inline="always")
def _prior_ratio(kind, count, step, pa, pb):
    """``log prior(count + step) - log prior(count)`` for one leaf cell (step = +-1)."""
    if kind == FLAT:
        return 0.0
    if kind == POISSON:  # pa = log rate
        return pa - np.log(count + 1.0) if step > 0 else np.log(count) - pa
    # negative binomial: pa = size r, pb = log(mean / (mean + r))
    if step > 0:
        return np.log(count + pa) - np.log(count + 1.0) + pb
    return np.log(count) - np.log(count - 1.0 + pa) - pb


@numba.njit(cache=True)
def _path_delta(anc, leaf, stop, c, step, qmap, qoff, ncell, cur, y, h):
    """Log-likelihood change of adding ``step`` to cell ``c`` at the units of depth > stop."""
    delta = 0.0
    for t in range(anc.shape[1] - 1, stop, -1):
        u = anc[leaf, t]
        if u < 0:
            continue
        base = u * ncell
        for j in range(qmap.shape[0]):
            i = base + qoff[j] + qmap[j, c]
            if h[i] > 0.0:
                delta += noise_log_ratio(y[i], cur[i], step, h[i])
    return delta


@numba.njit(cache=True)
def _path_apply(anc, leaf, stop, c, step, qmap, qoff, ncell, cur):
    for t in range(anc.shape[1] - 1, stop, -1):
        u = anc[leaf, t]
        if u < 0:
            continue
        base = u * ncell
        for j in range(qmap.shape[0]):
            cur[base + qoff[j] + qmap[j, c]] += step


@numba.njit(cache=True)
def _swap_delta(anc, leaf, stop, c1, c2, qmap, qoff, ncell, cur, y, h):
    """Log-likelihood change of one person of ``leaf`` moving from ``c1`` to ``c2``.

    At the units of depth > ``stop`` on the leaf's path.
    """
    delta = 0.0
    for t in range(anc.shape[1] - 1, stop, -1):
        u = anc[leaf, t]
        if u < 0:
            continue
        base = u * ncell
        for j in range(qmap.shape[0]):
            k1, k2 = qmap[j, c1], qmap[j, c2]
            if k1 != k2:
                i1, i2 = base + qoff[j] + k1, base + qoff[j] + k2
                if h[i1] > 0.0:
                    delta += noise_log_ratio(y[i1], cur[i1], -1.0, h[i1])
                if h[i2] > 0.0:
                    delta += noise_log_ratio(y[i2], cur[i2], 1.0, h[i2])
    return delta


@numba.njit(cache=True)
def _swap_apply(anc, leaf, stop, c1, c2, qmap, qoff, ncell, cur):
    for t in range(anc.shape[1] - 1, stop, -1):
        u = anc[leaf, t]
        if u < 0:
            continue
        base = u * ncell
        for j in range(qmap.shape[0]):
            k1, k2 = qmap[j, c1], qmap[j, c2]
            if k1 != k2:
                cur[base + qoff[j] + k1] -= 1
                cur[base + qoff[j] + k2] += 1


@numba.njit(cache=True)
def _accept(s, delta):
    return delta >= 0.0 or _uniform(s) < np.exp(delta)


@numba.njit(cache=True)
def run_leaves(
    first, last, per_leaf, moves, tmin, tmax, s, x, cur, ncell, y, h, qmap, qoff, anc, depth,
    leaf_lo, leaf_hi, deepest, group, perm, pos, gsize, prior, pa, pb, counts,
):  # fmt: skip
    """Run ``per_leaf`` proposals at each leaf in ``first:last`` (geocode order).

    ``moves`` are the probabilities of (within, between, birth/death, swap); a move
    between two leaves draws the depth ``t`` of their common ancestor in
    ``tmin..tmax``. ``counts`` accumulates (proposals scored, accepted); ``x`` and
    ``cur`` are updated in place.
    """
    d = x.shape[1]
    for leaf in range(first, last):
        g = group[leaf]
        for _ in range(per_leaf):
            r = _uniform(s)
            c1 = _below(s, d)
            if r < moves[0]:
                if gsize[g] < 2 or x[leaf, c1] == 0:
                    continue
                base = (pos[g, c1] // gsize[g]) * gsize[g]
                k = _below(s, gsize[g] - 1)
                if base + k >= pos[g, c1]:
                    k += 1
                c2 = perm[g, base + k]
                counts[0] += 1
                delta = _swap_delta(anc, leaf, -1, c1, c2, qmap, qoff, ncell, cur, y, h)
                delta += _prior_ratio(prior, x[leaf, c1], -1, pa[c1], pb[c1])
                delta += _prior_ratio(prior, x[leaf, c2], 1, pa[c2], pb[c2])
                if _accept(s, delta):
                    x[leaf, c1] -= 1
                    x[leaf, c2] += 1
                    _swap_apply(anc, leaf, -1, c1, c2, qmap, qoff, ncell, cur)
                    counts[1] += 1
            elif r < moves[0] + moves[1] or r >= moves[0] + moves[1] + moves[2]:
                swap = r >= moves[0] + moves[1] + moves[2]
                t = tmin + _below(s, tmax - tmin + 1)
                if t >= depth[leaf]:
                    continue
                top = anc[leaf, t]
                lo, hi = leaf_lo[top], leaf_hi[top]
                if hi - lo < 2:
                    continue
                other = lo + _below(s, hi - lo - 1)
                if other >= leaf:
                    other += 1
                if t >= depth[other]:
                    continue
                if swap:
                    c2 = _below(s, d)
                    g2 = group[other]
                    same = pos[g, c1] // gsize[g] == pos[g, c2] // gsize[g]
                    same2 = pos[g2, c1] // gsize[g2] == pos[g2, c2] // gsize[g2]
                    if c1 == c2 or not (same and same2) or x[leaf, c1] == 0 or x[other, c2] == 0:
                        continue
                    counts[0] += 1
                    delta = _swap_delta(anc, leaf, t, c1, c2, qmap, qoff, ncell, cur, y, h)
                    delta += _swap_delta(anc, other, t, c2, c1, qmap, qoff, ncell, cur, y, h)
                    delta += _prior_ratio(prior, x[leaf, c1], -1, pa[c1], pb[c1])
                    delta += _prior_ratio(prior, x[leaf, c2], 1, pa[c2], pb[c2])
                    delta += _prior_ratio(prior, x[other, c2], -1, pa[c2], pb[c2])
                    delta += _prior_ratio(prior, x[other, c1], 1, pa[c1], pb[c1])
                    if _accept(s, delta):
                        x[leaf, c1] -= 1
                        x[leaf, c2] += 1
                        x[other, c2] -= 1
                        x[other, c1] += 1
                        _swap_apply(anc, leaf, t, c1, c2, qmap, qoff, ncell, cur)
                        _swap_apply(anc, other, t, c2, c1, qmap, qoff, ncell, cur)
                        counts[1] += 1
                    continue
                if deepest[leaf] > t or deepest[other] > t:
                    continue
                src, dst = (leaf, other) if _uniform(s) < 0.5 else (other, leaf)
                if x[src, c1] == 0:
                    continue
                counts[0] += 1
                delta = _path_delta(anc, src, t, c1, -1.0, qmap, qoff, ncell, cur, y, h)
                delta += _path_delta(anc, dst, t, c1, 1.0, qmap, qoff, ncell, cur, y, h)
                delta += _prior_ratio(prior, x[src, c1], -1, pa[c1], pb[c1])
                delta += _prior_ratio(prior, x[dst, c1], 1, pa[c1], pb[c1])
                if _accept(s, delta):
                    x[src, c1] -= 1
                    x[dst, c1] += 1
                    _path_apply(anc, src, t, c1, -1, qmap, qoff, ncell, cur)
                    _path_apply(anc, dst, t, c1, 1, qmap, qoff, ncell, cur)
                    counts[1] += 1
            else:
                if deepest[leaf] >= 0:
                    continue
                step = 1 if _uniform(s) < 0.5 else -1
                if step < 0 and x[leaf, c1] == 0:
                    continue
                counts[0] += 1
                delta = _path_delta(anc, leaf, -1, c1, float(step), qmap, qoff, ncell, cur, y, h)
                delta += _prior_ratio(prior, x[leaf, c1], step, pa[c1], pb[c1])
                if _accept(s, delta):
                    x[leaf, c1] += step
                    _path_apply(anc, leaf, -1, c1, step, qmap, qoff, ncell, cur)
                    counts[1] += 1


@numba.njit(cache=True)
def record(cur, center, total, total_sq, hist):
    """Add the current query cells to the running sums and the window histograms."""
    width = hist.shape[1]
    half = (width - 2) // 2
    for i in range(cur.shape[0]):
        v = cur[i]
        total[i] += v
        total_sq[i] += float(v) * float(v)
        if width == 0:
            continue
        b = v - center[i] + half + 1
        if b < 1:
            b = 0
        elif b > width - 2:
            b = width - 1
        hist[i, b] += 1
