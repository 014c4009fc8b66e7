"""The lattice posterior against exact enumeration on tiny trees, with a planted companion."""

import itertools

import numpy as np
import pytest
from scipy import special, stats

from dpinfer.census import CensusRelease, _layout, _plan
from dpinfer.census._posterior import sample_posterior
from dpinfer.census._summaries import central_interval
from dpinfer.results import effective_sample_size

#: A state "1" with counties "11", "12", blocks "111", "112", "121"; two cells per block.
SHALLOW = {
    "geocode": ["1", "1", "11", "12", "111", "111", "112", "112", "121", "121", "111"],
    "query": ["total", "a", "total", "a", "a", "a", "a", "a", "a", "a", "total"],
    "cell": [0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0],
    "value": [5, 3, 2, 1, 0, 2, 1, -1, 2, 0, 3],
    "variance": [1.0, 2.0, 1.5, 1.0, 2.0, 2.0, 1.5, 1.5, 2.0, 2.0, 9.0],
}
#: Blocks "1111", "1112" share the tract "111" under the county "11", whose other
#: tract "112" has one block "1121"; the county "12" is a block itself. A move between
#: the two blocks of "111" whose partner was drawn under the county changes nothing at
#: the tract: scoring it there (taking the county for their common ancestor) biases
#: the chain by 0.05 sd, which the check finds (|z| up to 11).
DEEP = {
    "geocode": ["1", "11", "111", "111", "111", "112", "12", "12"]
    + ["1111", "1111", "1112", "1112", "1121", "1121"],
    "query": ["a", "total", "total", "a", "a", "total", "a", "a"] + ["a"] * 6,
    "cell": [0, 0, 0, 0, 1, 0, 0, 1] + [0, 1] * 3,
    "value": [2, 3, 3, 1, 1, 0, 0, 1] + [2, 0, -1, 2, 0, 1],
    "variance": [1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.5, 1.5] + [2.0] * 6,
}
#: Four cells per block; the blocks "111", "112" of the county "11" have exact totals, the
#: county "12" is a block itself. No person moves between blocks, and a move within a block
#: changes the county's precisely measured cells (mostly rejected): the two blocks' tables
#: mix mainly through swaps, which the county does not see. Dropping the swap's Hastings
#: ratio biases the chain by up to 9 Monte Carlo standard errors (seeds 1 to 3).
SWAPS = {
    "geocode": ["11"] * 4 + ["111"] * 4 + ["112"] * 4 + ["12"] * 2,
    "query": ["a"] * 14,
    "cell": [0, 1, 2, 3] * 3 + [0, 1],
    "value": [1, 2, 2, 1] + [2, 0, 1, 0] + [0, 1, 1, 2] + [0, 1],
    "variance": [0.5] * 4 + [2.0] * 8 + [1.0] * 2,
}
SWAPS_INVARIANTS = {
    "geocode": ["1", "111", "112"],
    "query": ["total"] * 3,
    "cell": [0] * 3,
    "value": [7, 3, 3],
}
TREES = {
    "shallow": (SHALLOW, {"geocode": ["1"], "query": ["total"], "cell": [0], "value": [4]}),
    "deep": (DEEP, {"geocode": ["1"], "query": ["total"], "cell": [0], "value": [4]}),
}


@pytest.fixture(scope="module", params=list(TREES))
def tree(request):
    rows, invariant = TREES[request.param]
    return rows, invariant, CensusRelease.from_rows({"a": 2}, rows, invariants=invariant)


def log_prior(table, prior, params):
    """The log prior of a leaf table (leaves x 2), up to a constant."""
    if prior == "negative_binomial":
        mean, size = params
        return stats.nbinom.logpmf(table, size, size / (size + mean)).sum()
    if prior == "poisson":  # the rates integrated out of the Gamma(shape, rate) hyperprior
        shape, rate = params
        totals = table.sum(axis=0)
        logp = special.gammaln(shape + totals) - (shape + totals) * np.log(rate + len(table))
        return logp.sum() - special.gammaln(table + 1).sum()
    return 0.0


def leaf_rows(cells, most, exact):
    """Every row of ``cells`` non-negative counts adding up to at most ``most`` (or ``exact``)."""
    rows = itertools.product(range(most + 1), repeat=cells)
    return [r for r in rows if sum(r) <= most and exact in (None, sum(r))]


def query_value(table, leaves, geocode, query, cell):
    """The value of a query cell of the unit ``geocode`` in a leaf table."""
    counts = table[[leaf.startswith(geocode) for leaf in leaves]].sum(axis=0)
    return counts.sum() if query == "total" else counts[cell]


def exact_posterior(rows, invariant, release, prior="flat", params=None, cells=2):
    """Every leaf table (leaves x cells) meeting the invariants, with its posterior probability.

    The first invariant is the root's total.
    """
    units = release.units
    leaves = np.sort(units.geocodes[units.leaves].astype(str))
    total = invariant["value"][0]
    fixed = {g: y for g, q, _, y in zip(*invariant.values(), strict=True) if q == "total"}
    per_leaf = [leaf_rows(cells, total, fixed.get(leaf)) for leaf in leaves]
    summing = (np.array(t) for t in itertools.product(*per_leaf) if sum(map(sum, t)) == total)
    kept = list(zip(*invariant.values(), strict=True))[1:]
    tables = [t for t in summing if all(query_value(t, leaves, *k[:3]) == k[3] for k in kept)]
    logp = []
    for table in tables:
        value = log_prior(table, prior, params)
        for g, q, c, y, v in zip(*rows.values(), strict=True):
            value -= (y - query_value(table, leaves, g, q, c)) ** 2 / (2 * v)
        logp.append(value)
    p = np.exp(np.array(logp) - max(logp))
    return np.stack(tables), p / p.sum()


def run(release, seed, draws=4000, cells=2, **prior):
    post = sample_posterior(
        release, draws=draws, tune=100, chains=4, per_leaf=32, store_leaves=True, rng=seed,
        progressbar=False, **prior,
    )  # fmt: skip
    leaves = release.units.leaves.size
    draws = np.asarray(post.idata.posterior["leaf_counts"]).reshape(4, -1, leaves, cells)
    return post, draws


@pytest.fixture(scope="module")
def sampled(tree):
    """One long run of each tree, shared by the enumeration check and the summaries check."""
    return run(tree[2], seed=1)


def check_against_enumeration(tree, draws, prior="flat", params=None):
    """Every draw meets the invariant, and each leaf cell's mean matches the exact one.

    ``draws`` is ``(chains, draws, leaves, cells)``. The tolerance is 5 Monte Carlo standard
    errors from each cell's bulk ESS (about 12,000 of the 16,000 draws): a false failure
    has probability about 6e-7 per cell.
    """
    rows, invariant, release = tree
    cells = draws.shape[3]
    tables, p = exact_posterior(rows, invariant, release, prior, params, cells)
    assert np.all(draws.sum(axis=(2, 3)) == invariant["value"][0]), "a draw breaks the invariant"
    exact_mean = np.einsum("s,sij->ij", p, tables)
    exact_sd = np.sqrt(np.einsum("s,sij->ij", p, (tables - exact_mean) ** 2))
    leaves = draws.shape[2]
    ess = np.array(
        [[effective_sample_size(draws[..., i, j]) for j in range(cells)] for i in range(leaves)]
    )
    error = np.abs(draws.mean(axis=(0, 1)) - exact_mean)
    np.testing.assert_array_less(error, 5 * exact_sd / np.sqrt(ess))


def test_the_lattice_posterior_matches_exact_enumeration(tree, sampled):
    post, draws = sampled
    check_against_enumeration(tree, draws)
    assert post.idata.attrs["rhat_max"] < 1.05
    assert post.clipped == 0


@pytest.mark.parametrize(
    "prior, params", [("negative_binomial", (1.5, 2.0)), ("poisson", (2.0, 1.5))]
)
def test_the_lattice_posterior_under_a_prior_matches_exact_enumeration(prior, params):
    # the Poisson rates have a Gamma hyperprior and are drawn by Gibbs: the tables'
    # marginal is enumerated with the rates integrated out
    rows, invariant = TREES["shallow"]
    tree = (rows, invariant, CensusRelease.from_rows({"a": 2}, rows, invariants=invariant))
    _, draws = run(tree[2], seed=3, prior=prior, prior_params=params)
    check_against_enumeration(tree, draws, prior, params)


def test_planted_companion_dropping_the_invariant_fails(tree, monkeypatch):
    # the sampler believes no unit carries an invariant: birth and death moves run at
    # every leaf, so the draws leave the invariant's total and the enumeration check fails
    # (its first assertion: a few hundred draws break it as surely as the full run)
    build = _plan.static_arrays

    def without_invariant(*args, **kwargs):
        static = build(*args, **kwargs)
        static.deepest[:] = -1
        return static

    monkeypatch.setattr(_plan, "static_arrays", without_invariant)
    _, draws = run(tree[2], seed=1, draws=250)
    with pytest.raises(AssertionError, match="breaks the invariant"):
        check_against_enumeration(tree, draws)


@pytest.fixture(scope="module")
def swaps():
    release = CensusRelease.from_rows({"a": 4}, SWAPS, invariants=SWAPS_INVARIANTS)
    return SWAPS, SWAPS_INVARIANTS, release


def test_swaps_between_blocks_with_exact_totals_match_exact_enumeration(swaps):
    post, draws = run(swaps[2], seed=1, cells=4)
    check_against_enumeration(swaps, draws)
    assert post.idata.attrs["rhat_max"] < 1.05


def test_planted_companion_dropping_the_swap_hastings_ratio_fails(swaps, monkeypatch):
    # the swap accepts with the posterior ratio alone, as if its proposal were symmetric:
    # the draws still meet every invariant, but the blocks' means are off by up to 9
    # Monte Carlo standard errors where the check allows 5
    build = _layout.Layout.tables

    def without_swap_ratio(*args, **kwargs):
        return build(*args, **kwargs)._replace(swap_hastings=False)

    monkeypatch.setattr(_layout.Layout, "tables", without_swap_ratio)
    _, draws = run(swaps[2], seed=1, cells=4)
    with pytest.raises(AssertionError, match="Mismatched elements"):
        check_against_enumeration(swaps, draws)


def test_summaries_match_the_stored_draws(tree, sampled):
    release = tree[2]
    post, draws = sampled
    draws = draws.reshape(-1, *draws.shape[2:])
    leaves = release.units.leaves
    order = np.argsort(release.units.geocodes[leaves].astype(str))
    detailed = post.mean["a"][leaves[order]]
    np.testing.assert_allclose(detailed, draws.mean(axis=0), rtol=1e-12)
    flat = draws.reshape(draws.shape[0], -1)
    lower = post.lower["a"][leaves[order]].ravel()
    upper = post.upper["a"][leaves[order]].ravel()
    for i in range(flat.shape[1]):
        counts = np.bincount(flat[:, i] - flat[:, i].min())
        check_mid_quantiles(counts, lower[i] - flat[:, i].min(), upper[i] - flat[:, i].min())


def continuized_cdf(counts, x):
    """The share of draws below ``x`` with each value ``v``'s spread evenly over ``v +- 1/2``.

    ``counts[v]`` is the number of draws equal to ``v``.
    """
    spread = np.clip(x - (np.arange(counts.size) - 0.5), 0.0, 1.0)
    return float(spread @ counts) / counts.sum()


def check_mid_quantiles(counts, lower, upper, level=0.9):
    """``lower`` and ``upper`` are the smallest points with 5% and 95% of the mass below.

    An end given as NaN is not checked.
    """
    for end, share in ((lower, (1 - level) / 2), (upper, (1 + level) / 2)):
        if not np.isnan(end):
            assert continuized_cdf(counts, end) == pytest.approx(share, abs=1e-12)
            assert continuized_cdf(counts, end - 1e-6) < share


@pytest.mark.parametrize("seed", range(3))
def test_central_intervals_are_the_mid_quantiles(seed):
    gen = np.random.default_rng(seed)
    hist = gen.integers(0, 6, size=(40, 12)).astype(np.uint16)
    hist[::4, 3:9] = 0  # rows with empty stretches and two separated modes
    hist[1::5, 0] = 40  # rows whose lower end falls in the first bin, beyond the window
    hist[2::10] = 0  # rows without draws
    for row, (lower, upper) in zip(hist, central_interval(hist, 0.9), strict=True):
        if row.sum() == 0:
            assert np.isnan(lower) and np.isnan(upper)
            continue
        share_below = np.cumsum(row) / row.sum()
        assert np.isnan(lower) == (share_below[0] >= 0.05)
        assert np.isnan(upper) == (share_below[-2] < 0.95)
        check_mid_quantiles(row.astype(float), lower, upper)


def test_partners_from_a_window_of_one_leaf_match_exact_enumeration(monkeypatch):
    # partners at most one leaf beyond the edges of the leaf's own unit below their
    # common ancestor (from "1121" the county's pass reaches "1112" only), and between
    # the counties at most one leaf from the leaf's relative position: the posterior is
    # the same
    build = _layout.Layout.tables

    def adjacent(*args, **kwargs):
        return build(*args, **kwargs)._replace(window=1)

    monkeypatch.setattr(_layout.Layout, "tables", adjacent)
    rows, invariant = TREES["deep"]
    tree = (rows, invariant, CensusRelease.from_rows({"a": 2}, rows, invariants=invariant))
    post, draws = run(tree[2], seed=4)
    check_against_enumeration(tree, draws)
    assert post.idata.attrs["rhat_max"] < 1.05


@pytest.mark.parametrize("cells", [4, 20])
def test_a_drawn_person_is_found_in_their_cell_with_or_without_fenwick_sums(cells):
    # rows of at most SCANNED cells are scanned, longer rows read their Fenwick sums
    # (the enumeration trees have two cells: this is where the sums are checked)
    from collections import namedtuple

    from dpinfer.census import _lattice

    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(3, cells)).astype(np.int32)
    rows = namedtuple("Rows", "x fen")(x, _lattice.fenwick(x))
    assert (rows.fen.shape[1] == 0) == (cells <= _lattice.SCANNED)
    for _ in range(20):  # moves keep the sums current
        leaf, c = int(rng.integers(3)), int(rng.integers(cells))
        _lattice._add(rows, leaf, c, 1)
        np.testing.assert_array_equal(rows.fen, _lattice.fenwick(x))
        n = _lattice._persons(rows, leaf)
        assert n == x[leaf].sum()
        found = [_lattice._find(rows, leaf, k) for k in range(n)]
        np.testing.assert_array_equal(found, np.repeat(np.arange(cells), x[leaf]))
