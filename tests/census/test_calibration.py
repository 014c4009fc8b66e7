"""Calibration of the lattice posterior on a synthetic state, against least squares."""

import numpy as np
import pytest

from dpinfer.census import (
    CensusRelease,
    gls,
    pl94_variances,
    sample_posterior,
    synthetic_release,
    synthetic_state,
)

AXES = {"votingage": 2, "hispanic": 2}


@pytest.fixture(scope="module")
def state():
    truth = synthetic_state(AXES, shape=(3, 4, 2, 8), mean_block=30, rng=1)
    return truth, synthetic_release(truth, pl94_variances(AXES), rng=11)


def block_cells(release, truth, post):
    q = release.query("votingage * hispanic")
    leaves = release.units.leaves
    exact = q.project(truth.detailed())[leaves]
    covered = (post.lower[q.name][leaves] <= exact) & (exact <= post.upper[q.name][leaves])
    error = np.sqrt(np.mean((post.mean[q.name][leaves] - exact) ** 2))
    return covered.mean(), error, exact


def interval_mass(release, post):
    """The mean share of the stored draws inside the block cells' 90% intervals.

    The intervals' ends are mid-quantiles, between integers: the integer draws inside
    are a share near 90% (here about 92%), which is the coverage to expect.
    """
    q = release.query("votingage * hispanic")
    leaves = release.units.leaves
    draws = np.asarray(post.idata.posterior["leaf_counts"])
    draws = draws.reshape(-1, *draws.shape[2:])
    inside = (draws >= post.lower[q.name][leaves]) & (draws <= post.upper[q.name][leaves])
    return inside.mean()


def check_calibration(release, truth, post, mass):
    """90% intervals cover the true block cells as often as they hold posterior mass.

    The 768 block cells' coverage is within 4.5 points of ``mass`` (the intervals'
    own share of the draws, near 90% for integer counts), and between 85% and 95%;
    with independent cells its sd would be about 0.8 points, so a false failure has
    probability about 1e-8 (the cells share tracts, so the band is narrower than 4.5
    sd in truth, which the fixed seed makes moot). The posterior mean's error beats
    least squares'.
    """
    coverage, error, exact = block_cells(release, truth, post)
    fit = gls(release)
    leaves = release.units.leaves
    gls_error = np.sqrt(np.mean((fit.estimate("votingage * hispanic")[leaves] - exact) ** 2))
    assert abs(coverage - mass) <= 0.045 and 0.85 <= coverage <= 0.95, (coverage, mass)
    assert error < gls_error


def test_posterior_intervals_cover_the_truth_and_beat_least_squares(state):
    truth, release = state
    post = sample_posterior(
        release, draws=400, tune=100, chains=4, store_leaves=True, rng=21, progressbar=False
    )
    check_calibration(release, truth, post, interval_mass(release, post))
    assert post.idata.attrs["rhat_max"] < 1.1


def test_planted_companion_with_variances_read_as_sigmas_fails(state):
    # a reader that takes the published variance for sigma (a 3-fold too narrow noise
    # at the blocks) gives overconfident intervals: the calibration check must fail
    truth, release = state
    shrunk = {
        name: type(m)(m.units, m.values, np.sqrt(m.variance))
        for name, m in release.measurements.items()
    }
    wrong = CensusRelease(release.axes, release.units, shrunk, release.invariants)
    post = sample_posterior(
        wrong, draws=400, tune=100, chains=4, store_leaves=True, rng=21, progressbar=False
    )
    with pytest.raises(AssertionError):
        check_calibration(release, truth, post, interval_mass(release, post))
