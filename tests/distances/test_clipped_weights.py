"""ClippedL2 weights: refused when they would make every distance 0, or do not fit."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.distances import ClippedL2


@pytest.mark.parametrize("weights", [0.0, [0.0, 0.0], [1.0, -1.0], [], [[1.0, 2.0]]])
def test_weights_that_cannot_weigh_are_refused(weights):
    with pytest.raises(ValueError, match="weights"):
        ClippedL2(1.0, weights=weights)


def test_weights_of_the_wrong_length_are_refused_when_the_statistics_are_seen():
    dist = ClippedL2(10.0, weights=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="weights has 3 entries, the statistics have 2"):
        dist(np.zeros(2), np.ones((4, 2)))


def test_companion_weights_that_fit_weigh_the_coordinates():
    # a zero weight drops a coordinate; the distance is the weighted norm
    dist = ClippedL2(10.0, weights=[2.0, 0.0])
    np.testing.assert_allclose(dist(np.zeros(2), np.array([[1.0, 5.0]])), [2.0])
