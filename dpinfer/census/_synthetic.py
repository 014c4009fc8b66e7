"""Synthetic states and their noisy releases: test an analysis before trusting it.

:func:`synthetic_state` draws a ground-truth table (a state, its counties,
tracts, block groups and blocks, every block's detailed counts) from a fixed
seed; :func:`synthetic_release` measures it the way the Census Bureau does:
every query of a strategy at every unit of each level, plus discrete Gaussian
noise from dpinfer's exact sampler (:class:`dpinfer.DiscreteGaussian`), and
publishes the invariants exactly. The truth is synthetic; the variances of
:func:`pl94_variances` are PL94-like (see there).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._rng import RNGLike, as_generator, as_seed_sequence, child_sequence
from .._validate import positive_finite
from ..mechanisms import DiscreteGaussian
from ._queries import Axes
from ._release import CensusRelease, Invariants, Measurements
from ._units import Units

__all__ = [
    "PL94_AXES",
    "Truth",
    "pl94_production_variances",
    "pl94_variances",
    "synthetic_release",
    "synthetic_state",
]

#: The PL94 persons file's detailed histogram (2,016 cells).
PL94_AXES = {"hhgq": 8, "votingage": 2, "hispanic": 2, "cenrace": 63}

#: Geographic levels below the state, with the digits each adds to the geocode.
LEVEL_NAMES = ("state", "county", "tract", "block group", "block")
_DIGITS = (2, 3, 6, 1, 3)


@dataclass(frozen=True, eq=False)
class Truth:
    """A ground-truth table: every leaf unit's detailed counts.

    Attributes
    ----------
    axes : Axes
    units : Units
        Every unit (the leaves and all their ancestors).
    counts : numpy.ndarray
        ``(len(units.leaves), axes.cells)`` int64: the leaves' detailed counts, in the
        order of ``units.leaves``.
    """

    axes: Axes
    units: Units
    counts: np.ndarray

    def detailed(self) -> np.ndarray:
        """``(units, cells)``: every unit's detailed counts (the sums of its leaves')."""
        out = np.zeros((len(self.units), self.axes.cells), dtype=np.int64)
        out[self.units.leaves] = self.counts
        for k in range(self.units.levels - 1, 0, -1):
            lo, hi = self.units.level_start[k], self.units.level_start[k + 1]
            np.add.at(out, self.units.parent[lo:hi], out[lo:hi])
        return out


def synthetic_state(
    axes: Mapping[str, int] | Axes,
    *,
    shape: Sequence[int] = (4, 6, 2, 10),
    mean_block: float = 30.0,
    empty: float = 0.15,
    concentration: float = 50.0,
    state: str = "01",
    rng: RNGLike = None,
) -> Truth:
    """Draw a synthetic state's true detailed counts.

    Parameters
    ----------
    axes : dict or Axes
        The detailed histogram.
    shape : tuple of int, default (4, 6, 2, 10)
        Counties per state, tracts per county, block groups per tract, blocks per
        block group (fewer levels are allowed: ``(counties, tracts, blocks)`` has no
        block groups, the blocks numbered within their tracts).
    mean_block : float, default 30
        Mean persons per populated block (negative binomial, dispersion 2).
    empty : float, default 0.15
        Share of blocks with no population (water, parks), still measured.
    concentration : float, default 50
        Dirichlet concentration of each tract's cell shares around the state's
        (smaller: tracts differ more).
    state : str, default "01"
        The state's geocode.
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    Truth
    """
    axes = axes if isinstance(axes, Axes) else Axes(axes)
    gen = as_generator(rng)
    geocodes = _geocodes(state, tuple(int(s) for s in shape))
    units = Units.from_geocodes(geocodes)
    leaves = units.leaves
    tract_of_leaf = _ancestor_at(units, leaves, min(2, units.levels - 2))
    shares = gen.dirichlet(np.full(axes.cells, 2.0))
    tracts, tract_index = np.unique(tract_of_leaf, return_inverse=True)
    tract_shares = gen.dirichlet(concentration * shares + 0.05, size=tracts.size)
    sizes = gen.negative_binomial(2.0, 2.0 / (2.0 + mean_block), size=leaves.size)
    sizes[gen.random(leaves.size) < empty] = 0
    counts = np.stack(
        [gen.multinomial(n, tract_shares[t]) for n, t in zip(sizes, tract_index, strict=True)]
    ).astype(np.int64)
    return Truth(axes, units, counts)


def _geocodes(state: str, shape: tuple[int, ...]) -> list[str]:
    digits = _DIGITS[1 : 1 + len(shape)] if len(shape) == 4 else (3, 6, 4)[: len(shape)]
    codes, level = [state], [state]
    for count, width in zip(shape, digits, strict=True):
        first = 1 if width == 1 else 0  # a block group digit is 1..9
        level = [f"{p}{i + first:0{width}d}" for p in level for i in range(count)]
        codes += level
    return codes


def _ancestor_at(units: Units, index: np.ndarray, depth: int) -> np.ndarray:
    out = index.copy()
    while (units.depth[out] > depth).any():
        deep = units.depth[out] > depth
        out[deep] = units.parent[out[deep]]
    return out


def synthetic_release(
    truth: Truth,
    variances: Sequence[Mapping[str, float]],
    *,
    invariants: Sequence[tuple[str, int]] = (("total", 0),),
    rng: RNGLike = None,
) -> CensusRelease:
    """Measure ``truth`` with discrete Gaussian noise: a :class:`CensusRelease`.

    Parameters
    ----------
    truth : Truth
    variances : sequence of dict
        ``variances[k]`` maps query names to the variance (the discrete Gaussian's
        ``sigma**2``) of every cell of that query at every unit of depth ``k`` (0 the
        root); a level may measure any subset of the queries.
    invariants : sequence of (str, int), default (("total", 0),)
        ``(query, depth)`` pairs published exactly at every unit of that depth
        (the default: the state total, as in the 2020 Census).
    rng : None, int, SeedSequence or Generator
        The noise's source; None draws OS entropy, as a real release must. Each
        (level, query) gets its own child stream.

    Returns
    -------
    CensusRelease
    """
    units, axes = truth.units, truth.axes
    if len(variances) != units.levels:
        raise ValueError(
            f"variances must give one dict per level ({units.levels}), got {len(variances)}"
        )
    root = as_seed_sequence(rng)
    detailed = truth.detailed()
    measured: dict[str, list] = {}
    for k, level in enumerate(variances):
        lo, hi = units.level_start[k], units.level_start[k + 1]
        for j, (name, variance) in enumerate(dict(level).items()):
            q = axes.query(name)
            counts = q.project(detailed[lo:hi])
            mech = DiscreteGaussian(
                math.sqrt(positive_finite(f"variances[{k}][{name!r}]", variance))
            )
            noisy = mech.release(
                counts, rng=np.random.default_rng(child_sequence(root, 1000 * k + j))
            )
            var = np.full(counts.shape, float(variance))
            measured.setdefault(q.name, []).append((np.arange(lo, hi), noisy, var))
    measurements = {
        name: Measurements(*(np.concatenate(parts) for parts in zip(*blocks, strict=True)))
        for name, blocks in measured.items()
    }
    exact_parts: dict[str, list] = {}
    for name, depth in invariants:
        q = axes.query(name)
        lo, hi = units.level_start[depth], units.level_start[depth + 1]
        exact_parts.setdefault(q.name, []).append((np.arange(lo, hi), q.project(detailed[lo:hi])))
    exact = {
        name: Invariants(*(np.concatenate(p) for p in zip(*parts, strict=True)))
        for name, parts in exact_parts.items()
    }
    order = [q.name for q in axes.every_query()]
    release = CensusRelease(
        axes,
        units,
        {n: _sorted(measurements[n]) for n in order if n in measurements},
        {n: _sorted(exact[n]) for n in order if n in exact},
    )
    release.check_invariants()
    return release


def _sorted(part):
    order = np.argsort(part.units, kind="stable")
    return type(part)(*(getattr(part, f)[order] for f in part.__dataclass_fields__))


def pl94_variances(axes: Mapping[str, int] | Axes = PL94_AXES, *, levels: int = 5) -> list[dict]:
    """PL94-like variances of every marginal of ``axes`` at each level.

    Anchored on the sigmas the 2020 production settings give for PL94 persons
    (``REAL_RELEASES``: a block's detailed cell 3.18, a block total 89, a tract
    total 2.5, a county total 2.2, a state total 1.1); every other entry is an
    interpolation of ours (a query with more cells gets a larger sigma, block
    groups between tracts and blocks), not the Bureau's table. Levels: state,
    county, tract, block group, block (``levels=4``: no block group).
    """
    axes = axes if isinstance(axes, Axes) else Axes(axes)
    queries = axes.every_query()
    full = len(axes.sizes)
    # sigma of the total and of the detailed query per level; the rest interpolated
    totals = {"state": 1.1, "county": 2.2, "tract": 2.5, "block group": 4.0, "block": 89.0}
    details = {"state": 2.0, "county": 2.6, "tract": 3.0, "block group": 3.2, "block": 3.18}
    names = LEVEL_NAMES if levels == 5 else tuple(n for n in LEVEL_NAMES if n != "block group")
    out = []
    for level in names:
        low, high = totals[level], details[level]
        row = {}
        for q in queries:
            share = len(q.kept) / full
            if level == "block":  # the block budget goes to the detailed query
                sigma = high if len(q.kept) == full else max(12.0, low * (1 - share))
            else:
                sigma = low + (high - low) * share
            row[q.name] = round(sigma * sigma, 4)
        out.append(row)
    return out


#: The 2020 production strategy of the PL94 persons file (the Census Bureau's
#: ``ProductionCandidate20210527US_mult8``): each level's share of the budget and each
#: query's share of its level's, as fractions (numerator, denominator). Its query
#: ``hhinstlevels`` (hhgq's 8 levels grouped into household, institutional and
#: non-institutional) is not a marginal of the histogram and is left out here.
PL94_PRODUCTION: dict[str, Any] = {
    "levels": {"state": (1708, 4100), "county": (530, 4100), "tract": (434, 4100),
               "block group": (1110, 4100), "block": (195, 4100)},
    "queries": ("total", "cenrace", "hispanic", "votingage", "hhinstlevels", "hhgq",
                "hispanic * cenrace", "votingage * cenrace", "votingage * hispanic",
                "votingage * hispanic * cenrace", "detailed"),
    "shares": {
        "state": ((1889, 2051), (3, 2051), (3, 2051), (3, 2051), (3, 2051), (3, 2051),
                  (6, 2051), (6, 2051), (3, 2051), (17, 2051), (115, 2051)),
        "county": ((29, 38), (5, 2052), (5, 2052), (5, 2052), (5, 2052), (5, 2052),
                   (7, 1026), (7, 1026), (5, 2052), (101, 4104), (755, 4104)),
        "tract": ((1472, 2051), (15, 4102), (4, 2051), (4, 2051), (4, 2051), (4, 2051),
                  (37, 4102), (37, 4102), (4, 2051), (125, 4102), (452, 2051)),
        "block group": ((143, 256), (1, 1024), (1, 1024), (1, 1024), (1, 1024), (1, 1024),
                        (3, 1024), (3, 1024), (1, 1024), (1, 128), (27, 64)),
        "block": ((5, 4103), (9, 4103), (5, 4103), (5, 4103), (5, 4103), (5, 4103),
                  (21, 4103), (21, 4103), (5, 4103), (71, 4103), (3951, 4103)),
    },
}  # fmt: skip


def pl94_production_variances(*, block_detail_sigma: float = 3.18) -> list[dict]:
    """Variances of the PL94 persons production strategy's queries at each of five levels.

    The queries and the level and query shares of the 2020 production strategy
    (:data:`PL94_PRODUCTION`): ``sigma**2 = c / (level share x query share)``, with
    ``c`` set so that a block's detailed cell has the sigma ``block_detail_sigma``
    (3.18 as ``REAL_RELEASES`` gives it; then a block total's sigma is 89.5, a
    tract's 2.47, a county's 2.17, the state's 1.10). ``hhinstlevels`` is a grouping
    of hhgq, not a marginal: it is left out (its share unused) and ``hhgq`` is
    measured with its own share. The histogram is :data:`PL94_AXES`; levels state,
    county, tract, block group, block.
    """
    sigma = positive_finite("block_detail_sigma", block_detail_sigma)
    level_share = {k: a / b for k, (a, b) in PL94_PRODUCTION["levels"].items()}
    query_share = {
        level: dict(zip(PL94_PRODUCTION["queries"], (a / b for a, b in shares), strict=True))
        for level, shares in PL94_PRODUCTION["shares"].items()
    }
    scale = sigma**2 * level_share["block"] * query_share["block"]["detailed"]
    axes = Axes(PL94_AXES)
    out = []
    for level in LEVEL_NAMES:
        row = {}
        for name, share in query_share[level].items():
            if name != "hhinstlevels":
                query = axes.query("hhgq * votingage * hispanic * cenrace" if name == "detailed"
                                   else name)  # fmt: skip
                row[query.name] = scale / (level_share[level] * share)
        out.append(row)
    return out
