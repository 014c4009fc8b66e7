"""The lattice posterior against exact enumeration on tiny trees, with a planted companion."""

import itertools

import numpy as np
import pytest

from dpinfer.census import CensusRelease, _posterior
from dpinfer.census._posterior import sample_posterior

#: A state "1" with counties "11", "12", blocks "111", "112", "121"; two cells per block.
ROWS = {
    "geocode": ["1", "1", "11", "12", "111", "111", "112", "112", "121", "121", "111"],
    "query": ["total", "a", "total", "a", "a", "a", "a", "a", "a", "a", "total"],
    "cell": [0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0],
    "value": [5, 3, 2, 1, 0, 2, 1, -1, 2, 0, 3],
    "variance": [1.0, 2.0, 1.5, 1.0, 2.0, 2.0, 1.5, 1.5, 2.0, 2.0, 9.0],
}
INVARIANT = {"geocode": ["1"], "query": ["total"], "cell": [0], "value": [4]}


@pytest.fixture(scope="module")
def release():
    return CensusRelease.from_rows({"a": 2}, ROWS, invariants=INVARIANT)


def exact_posterior(release):
    """Every leaf table (3 blocks x 2 cells, total 4) with its posterior probability."""
    units = release.units
    leaves = np.sort(units.geocodes[units.leaves].astype(str))
    tables = [
        np.array(t).reshape(3, 2)
        for t in itertools.product(range(5), repeat=6)
        if sum(t) == INVARIANT["value"][0]
    ]
    index = {g: i for i, g in enumerate(leaves)}
    logp = []
    for table in tables:
        total = 0.0
        for g, q, c, y, v in zip(*ROWS.values(), strict=True):
            under = [index[leaf] for leaf in leaves if leaf.startswith(g)]
            counts = table[under].sum(axis=0)
            s = counts.sum() if q == "total" else counts[c]
            total -= (y - s) ** 2 / (2 * v)
        logp.append(total)
    p = np.exp(np.array(logp) - max(logp))
    return np.stack(tables), p / p.sum()


def run(release, seed):
    post = sample_posterior(
        release, draws=4000, tune=100, chains=4, store_leaves=True, rng=seed, progressbar=False
    )
    draws = np.asarray(post.idata.posterior["leaf_counts"]).reshape(-1, 3, 2)
    return post, draws


def check_against_enumeration(release, draws):
    """Every draw meets the invariant, and each leaf cell's mean matches the exact one.

    The tolerance is 5 Monte Carlo standard errors with the ESS taken as a tenth of the
    16,000 draws (the chains' autocorrelation; the ESS measured is higher): a false
    failure has probability below 1e-5 per cell.
    """
    tables, p = exact_posterior(release)
    assert np.all(draws.sum(axis=(1, 2)) == INVARIANT["value"][0]), "a draw breaks the invariant"
    exact_mean = np.einsum("s,sij->ij", p, tables)
    exact_sd = np.sqrt(np.einsum("s,sij->ij", p, (tables - exact_mean) ** 2))
    error = np.abs(draws.mean(axis=0) - exact_mean)
    np.testing.assert_array_less(error, 5 * exact_sd / np.sqrt(draws.shape[0] / 10))


def test_the_lattice_posterior_matches_exact_enumeration(release):
    post, draws = run(release, seed=1)
    check_against_enumeration(release, draws)
    assert post.idata.attrs["rhat_max"] < 1.05
    assert post.clipped == 0


def test_planted_companion_dropping_the_invariant_fails(release, monkeypatch):
    # the sampler believes no unit carries an invariant: birth and death moves run at
    # every leaf, so the draws leave the invariant's total and the enumeration check fails
    build = _posterior.build_problem

    def without_invariant(rel):
        problem = build(rel)
        problem.deepest[:] = -1
        return problem

    monkeypatch.setattr(_posterior, "build_problem", without_invariant)
    _, draws = run(release, seed=1)
    with pytest.raises(AssertionError):
        check_against_enumeration(release, draws)


def test_summaries_match_the_stored_draws(release):
    post, draws = run(release, seed=2)
    leaves = release.units.leaves
    order = np.argsort(release.units.geocodes[leaves].astype(str))
    detailed = post.mean["a"][leaves[order]]
    np.testing.assert_allclose(detailed, draws.mean(axis=0), rtol=1e-12)
    q05, q95 = np.quantile(draws, [0.05, 0.95], axis=0, method="inverted_cdf")
    np.testing.assert_array_equal(post.lower["a"][leaves[order]], q05)
    np.testing.assert_array_equal(post.upper["a"][leaves[order]], q95)
