"""Exact output law of the sparse vector technique and its privacy loss on neighbouring streams.

The quadrature is checked against scipy's adaptive integration; correct mechanisms must
never exceed Theorem 1 of Park et al. (2021) on any stream tried, and planted bugs whose
violating outputs have probabilities around 1e-10 (out of reach of sampling audits) must
be refuted. Everything here is deterministic.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _svt_helpers import NoHalting, QueryNoiseNotScaledByC, pattern_probability

import dpinfer as dp
from dpinfer import accounting
from dpinfer.audit import svt_output_probabilities, svt_privacy_loss


class ResampleWithOnceBudget(dp.SparseVector):
    """Planted bug: redraws the threshold after each positive but claims the once budget."""

    @property
    def privacy(self):
        return dp.Privacy(
            epsilon=accounting.svt_epsilon(self.scale, self.sensitivity, self.c, resample=False)
        )


def _planted(c: int = 4) -> ResampleWithOnceBudget:
    b = accounting.svt_scale(1.0, 1.0, c, resample=False)
    return ResampleWithOnceBudget(0.0, scale=b, c=c, sensitivity=1.0, resample=True)


# --- the quadrature against scipy's adaptive integration ---------------------------------


@pytest.mark.parametrize("resample", [False, True], ids=["once", "resample"])
def test_output_law_matches_adaptive_quadrature(resample):
    svt = dp.SparseVector(0.1, scale=0.25, c=2, sensitivity=1.0, resample=resample)
    queries = np.array([0.4, -0.3, 0.1, 0.9])
    law = svt_output_probabilities(svt, queries)
    assert len(law) == 1 + 4 + 6  # no positive, one, or halted at the second
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-13)
    for output, p in law.items():
        assert p == pytest.approx(pattern_probability(svt, queries, output), rel=1e-9)


def test_neighbour_given_explicitly_is_one_of_the_worst_cases():
    svt = dp.SparseVector.from_privacy(epsilon=1.0, threshold=0.0, c=2, sensitivity=1.0)
    q = np.array([0.3, -0.2, 0.0, 0.5])
    worst = svt_privacy_loss(svt, q)
    given = svt_privacy_loss(svt, q, neighbour=worst.neighbour)
    assert given.epsilon == pytest.approx(worst.epsilon, rel=1e-12)
    shifted = svt_privacy_loss(svt, q, neighbour=q + 1.0)
    assert shifted.epsilon < worst.epsilon
    # the reported log-probabilities are those of the reported output on the two streams
    law_a = svt_output_probabilities(svt, q)
    law_b = svt_output_probabilities(svt, worst.neighbour)
    assert np.log(law_a[worst.output]) == pytest.approx(worst.log_p, rel=1e-12)
    assert np.log(law_b[worst.output]) == pytest.approx(worst.log_q, rel=1e-12)


# --- correct mechanisms stay within Theorem 1 ---------------------------------------------

STREAMS = {
    "at threshold": lambda m: np.zeros(m),
    "below": lambda m: np.full(m, -2.0),
    "ramp": lambda m: np.linspace(-3.0, 3.0, m),
}


@pytest.mark.parametrize("c", [1, 2, 4])
@pytest.mark.parametrize("resample", [False, True], ids=["once", "resample"])
def test_correct_sparse_vector_is_never_refuted(c, resample):
    svt = dp.SparseVector.from_privacy(
        epsilon=1.0, threshold=0.0, c=c, sensitivity=1.0, resample=resample
    )
    lengths = (c, 2 * c) if not resample else (c, 10, 40)
    for (name, make), m in itertools.product(STREAMS.items(), lengths):
        loss = svt_privacy_loss(svt, make(m))
        assert not loss.refutes(svt.privacy.epsilon), f"{name}, m={m}: {loss}"
        assert loss.total_probability == pytest.approx(1.0, abs=1e-12)


def test_long_streams_approach_theorem_1_from_below():
    # resample=True: c one-positive runs, each 2 D / b; long negative runs reach the bound
    svt = dp.SparseVector.from_privacy(
        epsilon=1.0, threshold=0.0, c=2, sensitivity=1.0, resample=True
    )
    losses = [svt_privacy_loss(svt, np.zeros(m)).epsilon for m in (4, 10, 40)]
    assert losses[0] < losses[1] < losses[2] <= 1.0
    assert losses[2] > 0.999


# --- planted bugs whose violations sampling cannot see ------------------------------------


def test_companion_resampling_with_the_once_budget_is_refuted():
    # Claimed (c + 1) D / b = 1; true loss up to 2 c D / b = 1.6 on long streams. The
    # violating outputs have probabilities near 1e-10.
    planted = _planted(c=4)
    assert planted.privacy.epsilon == pytest.approx(1.0)
    loss = svt_privacy_loss(planted, np.zeros(40))
    assert loss.refutes(1.0), str(loss)
    assert loss.epsilon == pytest.approx(1.5798, abs=1e-4)
    assert sum(loss.output) == 4 and loss.log_p < np.log(1e-8)
    assert svt_privacy_loss(planted, np.zeros(80)).epsilon == pytest.approx(1.6, abs=1e-4)


@pytest.mark.parametrize(
    ("bug", "c", "resample", "m"),
    [
        (QueryNoiseNotScaledByC, 4, False, 6),
        (QueryNoiseNotScaledByC, 4, True, 8),
        (NoHalting, 1, False, 8),
        (NoHalting, 1, True, 8),
    ],
)
def test_companion_other_planted_bugs_are_refuted(bug, c, resample, m):
    svt = bug.from_privacy(epsilon=1.0, threshold=0.0, c=c, sensitivity=1.0, resample=resample)
    loss = svt_privacy_loss(svt, np.zeros(m))
    assert loss.refutes(svt.privacy.epsilon), str(loss)


# --- argument checks ----------------------------------------------------------------------


def test_arguments_are_checked():
    svt = dp.SparseVector(0.0, scale=1.0, c=1, sensitivity=1.0)
    with pytest.raises(TypeError, match="svt must be a SparseVector, got Laplace"):
        svt_privacy_loss(dp.Laplace(1.0), [0.0])
    with pytest.raises(ValueError, match=r"queries must be a non-empty one-dimensional"):
        svt_privacy_loss(svt, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="queries"):
        svt_privacy_loss(svt, [0.0, np.nan])
    with pytest.raises(ValueError, match=r"neighbour must have the shape of queries \(2,\)"):
        svt_privacy_loss(svt, [0.0, 0.0], neighbour=[0.0])

    class NoQueryNoise(dp.SparseVector):
        def _query_scale(self):
            return 0.0

    with pytest.raises(ValueError, match="Laplace noise on the threshold and the queries"):
        svt_privacy_loss(NoQueryNoise(0.0, scale=1.0, c=1, sensitivity=1.0), [0.0])
    with pytest.raises(ValueError, match="more than 200000 can be enumerated"):
        svt_privacy_loss(NoHalting(0.0, scale=1.0, c=1, sensitivity=1.0), np.zeros(20))
