"""Least squares over the tree (the ANOVA passes) against the dense constrained GLS."""

import numpy as np
import pytest

from dpinfer.census import CensusRelease
from dpinfer.census._gls import gls
from dpinfer.census._synthetic import pl94_variances, synthetic_release, synthetic_state

CASES = {
    "two axes, state total": ({"votingage": 2, "hispanic": 2}, (2, 2, 2, 3), [("total", 0)]),
    "three axes, totals at two levels": (
        {"a": 3, "b": 2, "c": 2},
        (2, 3, 3),
        [("total", 0), ("total", 1)],
    ),
    "a marginal invariant at the counties": (
        {"a": 2, "b": 3},
        (3, 2, 2),
        [("total", 0), ("a", 1)],
    ),
}


def both(axes, shape, invariants, seed):
    truth = synthetic_state(axes, shape=shape, mean_block=8.0, rng=seed)
    levels = truth.units.levels
    variances = pl94_variances(axes, levels=5)[-levels:]
    release = synthetic_release(truth, variances, invariants=invariants, rng=seed + 1)
    return release, gls(release, method="tree"), gls(release, method="dense")


@pytest.mark.parametrize("case", CASES)
def test_tree_passes_equal_the_dense_constrained_gls(case):
    release, tree, dense = both(*CASES[case], seed=3)
    for q in release.axes.every_query():
        est, ref = tree.estimate(q.name), dense.estimate(q.name)
        np.testing.assert_allclose(est, ref, rtol=1e-8, atol=1e-8 * np.abs(ref).max())
        if q.name in {x.name for x in release.queries}:
            np.testing.assert_allclose(tree.sd(q.name), dense.sd(q.name), rtol=1e-8, atol=1e-6)


def test_estimates_add_up_and_meet_the_invariants_everywhere():
    release, tree, _ = both(*CASES["a marginal invariant at the counties"], seed=5)
    units = release.units
    detailed = tree.detailed
    for parent in np.flatnonzero(units.n_children):
        kids = slice(
            units.first_child[parent], units.first_child[parent] + units.n_children[parent]
        )
        np.testing.assert_allclose(detailed[kids].sum(axis=0), detailed[parent], atol=1e-8)
    for name, inv in release.invariants.items():
        np.testing.assert_allclose(tree.estimate(name)[inv.units], inv.values, atol=1e-8)
        assert np.all(tree.sd(name)[inv.units] < 1e-6)


def test_joint_draws_add_up_meet_the_invariants_and_have_the_sds():
    # 4000 draws: the sd of a sample sd is about sd / sqrt(8000) ~ 1.1%; 6% tolerance is
    # over 5 standard errors for every checked cell (false failure below 1e-6 per cell)
    release, tree, _ = both(*CASES["two axes, state total"], seed=7)
    draws = tree.draws(4000, rng=11)
    units = release.units
    assert draws.shape == (4000, len(units), release.axes.cells)
    np.testing.assert_allclose(draws[:, 0].sum(axis=1), release.invariants["total"].values[0, 0])
    kids = slice(units.first_child[0], units.first_child[0] + units.n_children[0])
    np.testing.assert_allclose(draws[:, kids].sum(axis=1), draws[:, 0], atol=1e-8)
    q = release.query("votingage")
    sd = q.project(draws).std(axis=0)
    np.testing.assert_allclose(sd[1:], tree.sd("votingage")[1:], rtol=0.06)


def test_the_planted_companion_sd_check_fails_when_the_draws_ignore_the_invariant():
    # the same check as above on draws that lose the state total: the root sd is
    # no longer zero, so the comparison must fail
    release, tree, _ = both(*CASES["two axes, state total"], seed=7)
    draws = tree.draws(400, rng=11)
    draws[:, :, 0] += np.random.default_rng(1).normal(size=(400, 1))
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(
            draws[:, 0].sum(axis=1), release.invariants["total"].values[0, 0]
        )


def test_different_variances_within_a_query_fall_back_to_the_dense_solver():
    rows = {
        "geocode": ["1", "1", "11", "11", "12", "12"],
        "query": ["a"] * 6,
        "cell": [0, 1] * 3,
        "value": [5, 4, 3, 1, 2, 2],
        "variance": [1.0, 2.0, 1.0, 1.0, 1.0, 1.0],
    }
    release = CensusRelease.from_rows({"a": 2}, rows)
    assert gls(release).method == "dense"
    with pytest.raises(ValueError, match="different variances"):
        gls(release, method="tree")


def test_a_leaf_without_detailed_measurements_is_not_identified():
    rows = {
        "geocode": ["1", "11", "12"],
        "query": ["a", "total", "total"],
        "cell": [0, 0, 0],
        "value": [5, 3, 2],
        "variance": [1.0, 1.0, 1.0],
    }
    release = CensusRelease.from_rows({"a": 2}, rows)
    with pytest.raises(ValueError, match="not identified"):
        gls(release)
