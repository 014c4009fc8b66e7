"""Data-derived settings (the median heuristic) and the clipped distance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpinfer.distances import (
    MMD,
    ClippedL2,
    DataDerived,
    GaussianKernel,
    RandomFeatureMMD,
    median_heuristic,
)


def test_median_heuristic_is_the_median_pairwise_distance():
    pts = np.random.default_rng(0).normal(size=(40, 2))
    d = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))[np.triu_indices(40, 1)]
    h = median_heuristic(pts)
    assert isinstance(h, DataDerived) and float(h) == pytest.approx(np.median(d), rel=1e-12)
    # a stack of datasets (T, M, d) is a set of T * M points
    stack = pts.reshape(4, 10, 2)
    assert float(median_heuristic(stack)) == pytest.approx(float(h), rel=1e-12)
    with pytest.raises(ValueError, match="distinct"):
        median_heuristic(np.ones((5, 1)))


def test_data_derived_settings_remember_the_points_they_used():
    rng = np.random.default_rng(1)
    observed = rng.normal(size=(50, 1))
    simulated = rng.normal(size=(3, 50, 1))
    assert median_heuristic(observed).derived_from(observed)
    assert median_heuristic(np.concatenate([simulated[0], observed])).derived_from(observed)
    assert median_heuristic(np.concatenate([simulated, observed[None]])).derived_from(observed)
    # one confidential record is enough to make the bandwidth depend on it
    assert median_heuristic(np.concatenate([simulated[0], observed[:1]])).derived_from(observed)
    assert not median_heuristic(simulated).derived_from(observed)
    assert median_heuristic(observed[:, 0]).derived_from(observed)  # 1-D input
    # only the subsampled points matter: of 10_000 simulated points, 1000 are used
    big = rng.normal(size=(10_000, 1))
    h = median_heuristic(big, max_points=1000, rng=3)
    used = [p for p in big if h.derived_from(p[None])]
    assert len(used) == 1000


def test_distances_report_their_confidential_settings():
    rng = np.random.default_rng(2)
    observed, simulated = rng.normal(size=(30, 1)), rng.normal(size=(30, 1))
    leaky, clean = median_heuristic(observed), median_heuristic(simulated)
    for make in (MMD, lambda h: MMD(GaussianKernel(h)), lambda h: RandomFeatureMMD(5, h)):
        assert make(leaky).confidential_settings(observed) == ["bandwidth"]
        assert make(clean).confidential_settings(observed) == []
        assert make(0.5).confidential_settings(observed) == []


def test_clipped_l2_bounds_its_sensitivity_and_maps_failures_to_the_bound():
    dist = ClippedL2(2.0, weights=[1.0, 0.5])
    obs = np.array([0.0, 0.0])
    pseudo = np.array([[3.0, 4.0], [1.0, 2.0], [np.nan, 0.0], [np.inf, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(dist(obs, pseudo), [2.0, math.sqrt(2), 2.0, 2.0, 0.0])
    assert dist.sensitivity(10) == dist.sensitivity(10_000) == 2.0
    # any change of the observations moves a clipped distance by at most the clip
    rng = np.random.default_rng(3)
    z = rng.normal(scale=3, size=(200, 2))
    for _ in range(50):
        a, b = rng.normal(scale=5, size=(2, 2))
        assert np.all(np.abs(dist(a, z) - dist(b, z)) <= 2.0)
    with pytest.raises(ValueError, match="entries"):
        dist(obs, np.zeros((3, 3)))
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="clip"):
            ClippedL2(bad)
    with pytest.raises(ValueError, match="weights"):
        ClippedL2(1.0, weights=[1.0, math.nan])
