"""Least squares over the tree (the ANOVA passes) against the dense constrained GLS."""

import numpy as np
import pytest

from dpinfer.census import CensusRelease, Invariants, Measurements
from dpinfer.census._gls import gls, tree_obstacle
from dpinfer.census._synthetic import (
    PL94_AXES,
    pl94_variances,
    synthetic_release,
    synthetic_state,
)

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


@pytest.mark.parametrize("method", ["tree", "matrix"])
def test_joint_draws_add_up_meet_the_invariants_and_have_the_sds(method):
    # 4000 draws: the sd of a sample sd is about sd / sqrt(8000) ~ 1.1%; 6% tolerance is
    # over 5 standard errors for every checked cell (false failure below 1e-6 per cell)
    release, _, _ = both(*CASES["two axes, state total"], seed=7)
    tree = gls(release, method=method)
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


def test_different_variances_within_a_query_go_to_the_matrix_passes():
    rows = {
        "geocode": ["1", "1", "11", "11", "12", "12"],
        "query": ["a"] * 6,
        "cell": [0, 1] * 3,
        "value": [5, 4, 3, 1, 2, 2],
        "variance": [1.0, 2.0, 1.0, 1.0, 1.0, 1.0],
    }
    release = CensusRelease.from_rows({"a": 2}, rows)
    fit = gls(release)
    assert fit.method == "matrix"
    assert_equal_fits(fit, gls(release, method="dense"), release)
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


# --- the matrix passes: any variances, units missing queries -------------------------------


def with_measurements(release, name, *, keep=None, scale=None):
    """``release`` with query ``name`` measured at ``keep`` units and variances times ``scale``."""
    meas = release.measurements[name]
    rows = np.ones(len(meas.units), dtype=bool) if keep is None else keep(meas.units)
    variance = meas.variance[rows] * (1.0 if scale is None else scale(meas.variance[rows].shape))
    changed = dict(release.measurements)
    changed[name] = Measurements(meas.units[rows], meas.values[rows], variance)
    if not rows.any():
        del changed[name]
    return CensusRelease(release.axes, release.units, changed, release.invariants)


def cells_with_their_own_variances(release, rng):
    for name in release.measurements:
        release = with_measurements(
            release, name, scale=lambda shape: rng.uniform(0.3, 3.0, size=shape)
        )
    return release


def units_missing_queries(release, rng):
    units = release.units
    inner = ~units.is_leaf
    # the detailed query at no county and half the tracts; the total at a third of the
    # blocks; a marginal at half of the block groups and blocks
    release = with_measurements(
        release, "votingage * hispanic", keep=lambda u: ~inner[u] | (rng.random(u.size) < 0.5)
    )
    release = with_measurements(release, "total", keep=lambda u: rng.random(u.size) < 0.66)
    return with_measurements(release, "hispanic", keep=lambda u: rng.random(u.size) < 0.5)


def blocks_missing_a_detailed_cell(release, rng):
    meas = release.measurements["votingage * hispanic"]
    variance = meas.variance.copy()
    leaf = release.units.is_leaf[meas.units]
    hit = leaf & (rng.random(leaf.size) < 0.3)  # their total still identifies the cell
    variance[hit, rng.integers(0, 4, size=hit.sum())] = np.inf
    changed = {**release.measurements, "votingage * hispanic": Measurements(
        meas.units, meas.values, variance)}  # fmt: skip
    return CensusRelease(release.axes, release.units, changed, release.invariants)


IRREGULAR = {
    "cells with their own variances": cells_with_their_own_variances,
    "units missing queries": units_missing_queries,
    "blocks missing a detailed cell": blocks_missing_a_detailed_cell,
}
IRREGULAR_INVARIANTS = [("total", 0), ("total", 1), ("votingage", 2), ("total", 4)]


@pytest.fixture(scope="module")
def irregular_state():
    axes = {"votingage": 2, "hispanic": 2}
    truth = synthetic_state(axes, shape=(2, 2, 2, 3), mean_block=8.0, rng=12)
    variances = pl94_variances(axes, levels=5)
    return synthetic_release(truth, variances, invariants=IRREGULAR_INVARIANTS, rng=13)


def assert_equal_fits(fit, ref, release):
    for q in release.axes.every_query():
        est, want = fit.estimate(q.name), ref.estimate(q.name)
        np.testing.assert_allclose(est, want, rtol=1e-8, atol=1e-8 * np.abs(want).max())
    for q in release.queries:
        np.testing.assert_allclose(fit.sd(q.name), ref.sd(q.name), rtol=1e-8, atol=1e-6)


@pytest.mark.parametrize("case", IRREGULAR)
def test_matrix_passes_equal_the_dense_constrained_gls(case, irregular_state):
    release = IRREGULAR[case](irregular_state, np.random.default_rng(7))
    dense = gls(release, method="dense")
    assert_equal_fits(gls(release, method="matrix"), dense, release)
    # inner units missing queries keep the ANOVA passes (every leaf still measured in
    # every component); cells with their own variances or a leaf's missing cell do not
    fit = gls(release)
    assert fit.method == ("tree" if case == "units missing queries" else "matrix")
    assert bool(tree_obstacle(release)) == (fit.method == "matrix")
    assert_equal_fits(fit, dense, release)


@pytest.mark.parametrize("case", CASES)
def test_matrix_passes_equal_the_dense_constrained_gls_on_the_anova_cases(case):
    release, _, dense = both(*CASES[case], seed=3)
    assert_equal_fits(gls(release, method="matrix"), dense, release)


def test_the_planted_companion_fails_when_the_matrix_passes_drop_the_invariants(irregular_state):
    # the same comparison with the invariants left out of the matrix passes (the state
    # total, county totals, a tract marginal, block totals): it must fail
    release = cells_with_their_own_variances(irregular_state, np.random.default_rng(7))
    loose = CensusRelease(release.axes, release.units, release.measurements, {})
    with pytest.raises(AssertionError):
        assert_equal_fits(gls(loose, method="matrix"), gls(release, method="dense"), release)


def test_a_leaf_the_invariants_determine_needs_no_measurement(irregular_state):
    units = irregular_state.units
    leaf = units.leaves[0]
    totals = irregular_state.invariants["total"]
    total = int(totals.values[np.searchsorted(totals.units, leaf), 0])  # the blocks' totals
    truth_cells = np.array([[total // 2, 0, total - total // 2 - 1, 1]])
    release = with_measurements(
        with_measurements(irregular_state, "votingage * hispanic", keep=lambda u: u != leaf),
        "total",
        keep=lambda u: u != leaf,
    )
    release = with_measurements(release, "votingage", keep=lambda u: u != leaf)
    release = with_measurements(release, "hispanic", keep=lambda u: u != leaf)
    exact = dict(release.invariants)
    exact["votingage * hispanic"] = Invariants(np.array([leaf]), truth_cells)
    release = CensusRelease(release.axes, units, release.measurements, exact)
    release.check_invariants()
    dense = gls(release, method="dense")
    for method in ("tree", "matrix"):
        fit = gls(release, method=method)
        np.testing.assert_allclose(fit.detailed[leaf], truth_cells[0], atol=1e-9)
        assert_equal_fits(fit, dense, release)


def test_a_leaf_its_own_measurements_do_not_determine_goes_to_the_dense_solver():
    rows = {
        "geocode": ["1", "11", "12", "12"],
        "query": ["a", "a", "total", "a"],
        "cell": [0, 0, 0, 1],
        "value": [5, 3, 2, 1],
        "variance": [1.0, 1.0, 1.0, 2.0],
    }
    # leaf 11 is measured in cell 0 of "a" only; its cell 1 is the root's minus leaf 12's
    rows["geocode"].append("1")
    rows["query"].append("a")
    rows["cell"].append(1)
    rows["value"].append(4)
    rows["variance"].append(1.0)
    release = CensusRelease.from_rows({"a": 2}, rows)
    with pytest.raises(ValueError, match="method='matrix' does not apply: leaf '11'"):
        gls(release, method="matrix")
    assert gls(release).method == "dense"


def check_draws(release, fit, draws):
    """Draws add up at every parent, meet every invariant, and have the fit's means and sds.

    Per non-invariant cell, 4000 draws: the mean is within 5 standard errors (false
    failure 6e-7) and the sd within 6% (over 5 standard errors, below 1e-6); about 400
    cells, so a false failure below 1e-3 for the whole check.
    """
    units = release.units
    for parent in np.flatnonzero(units.n_children):
        kids = slice(
            units.first_child[parent], units.first_child[parent] + units.n_children[parent]
        )
        np.testing.assert_allclose(draws[:, kids].sum(axis=1), draws[:, parent], atol=1e-6)
    for name, inv in release.invariants.items():
        cells = release.query(name).project(draws[:, inv.units])
        np.testing.assert_allclose(cells, np.broadcast_to(inv.values, cells.shape), atol=1e-6)
    for q in release.queries:
        cells, sd = q.project(draws), fit.sd(q.name)
        free = sd > 1e-6
        error = np.abs(cells.mean(axis=0) - fit.estimate(q.name))
        assert np.all(error[free] < 5 * sd[free] / np.sqrt(len(draws)))
        np.testing.assert_allclose(cells.std(axis=0)[free], sd[free], rtol=0.06)


def test_matrix_draws_add_up_meet_the_invariants_and_have_the_means_and_sds(irregular_state):
    release = cells_with_their_own_variances(irregular_state, np.random.default_rng(7))
    fit = gls(release, method="matrix")
    check_draws(release, fit, fit.draws(4000, rng=5))


def test_the_planted_companion_fails_when_the_children_ignore_their_parents_draw(
    irregular_state,
):
    # the draws of each unit from its lower estimate only (K_c = 0): no longer tied
    # to the parent's draw, they do not add up and their sds are off
    release = cells_with_their_own_variances(irregular_state, np.random.default_rng(7))
    fit = gls(release, method="matrix")
    fit._sampler.__self__.gain[:] = 0.0
    with pytest.raises(AssertionError):
        check_draws(release, fit, fit.draws(4000, rng=5))


def test_a_release_too_large_for_every_solver_that_applies_is_refused_naming_each_reason():
    # the PL94 histogram (2,016 cells) with cells of their own variances: the ANOVA
    # passes do not apply, 23 units of 2016 x 2016 matrices are too much memory, and
    # 16 leaves x 2016 cells too many unknowns for the dense solver
    truth = synthetic_state(PL94_AXES, shape=(2, 2, 4), mean_block=8.0, rng=1)
    release = synthetic_release(truth, pl94_variances(PL94_AXES, levels=4), rng=2)
    release = cells_with_their_own_variances(release, np.random.default_rng(3))
    with pytest.raises(ValueError, match=r"method='matrix' does not apply: 23 units .* GiB"):
        gls(release, method="matrix")
    with pytest.raises(
        ValueError, match="no solver applies .*different variances.*GiB.*at most 6000 unknowns"
    ):
        gls(release)
