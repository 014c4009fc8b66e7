"""Scrambled Sobol points: one independent scramble per statistic, uniform and stratified."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from dpinfer.neural._rqmc import scrambled_sobol


def _stratified(points: np.ndarray) -> bool:
    """Each set's M points fall one in each of [j/M, (j+1)/M), in every coordinate."""
    m = points.shape[1]
    cells = np.sort(np.floor(points * m).astype(int), axis=1)
    return bool(np.all(cells == np.arange(m)[None, :, None]))


def test_each_set_is_a_stratified_net():
    pts = scrambled_sobol(500, 8, 5, np.random.default_rng(0))
    assert pts.shape == (500, 8, 5)
    assert np.all((pts > 0) & (pts < 1))
    assert _stratified(pts)


def test_stratification_companion_flags_plain_uniforms():
    plain = np.random.default_rng(0).random((500, 8, 5))
    assert not _stratified(plain)


def test_points_are_uniform_and_scrambles_independent():
    # KS of every point's first coordinate against U(0, 1), and of the differences of the
    # first points of consecutive sets against the triangular law of U - U' (independent
    # scrambles); false-failure rate 1e-3 each under a random seed (seed fixed).
    pts = scrambled_sobol(20_000, 4, 3, np.random.default_rng(1))
    for i in range(4):
        assert st.kstest(pts[:, i, 0], "uniform").pvalue > 1e-3
    diff = pts[1:, 0, 1] - pts[:-1, 0, 1]
    assert st.kstest(diff, st.triang(c=0.5, loc=-1, scale=2).cdf).pvalue > 1e-3


def test_independence_companion_flags_a_shared_scramble():
    pts = scrambled_sobol(1, 4, 3, np.random.default_rng(1))
    shared = np.repeat(pts, 2000, axis=0)
    diff = shared[1:, 0, 1] - shared[:-1, 0, 1]
    assert st.kstest(diff, st.triang(c=0.5, loc=-1, scale=2).cdf).pvalue < 1e-3


def test_same_generator_state_same_points_and_power_of_two_required():
    a = scrambled_sobol(10, 4, 2, np.random.default_rng(5))
    b = scrambled_sobol(10, 4, 2, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="power of two"):
        scrambled_sobol(10, 6, 2, np.random.default_rng(5))
