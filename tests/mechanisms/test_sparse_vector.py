"""The sparse vector technique: semantics, exact output law, and empirical privacy audits.

``SparseVector`` is not an additive mechanism, so it has its own contract: the
law of its indicator patterns is computed exactly (one integral over the threshold
noise per threshold draw) and compared with runs; Theorem 1 of Park et al. (2021)
is audited on neighbouring query streams, and three planted bugs (no query noise,
query noise not scaled with ``c``, no halting) must be refuted.

Statistical checks use fixed seeds and state their false-failure rates (under a
random seed); each has companions that plant a bug and must fail.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.stats as st
from _svt_helpers import (
    NoHalting,
    NoQueryNoise,
    QueryNoiseNotScaledByC,
    pattern_probability,
    patterns,
)

import dpinfer as dp
from dpinfer.audit import audit_epsilon

ALPHA = 1e-3  # audit error rate: P(lower bound > true epsilon) <= ALPHA
GOF_LEVEL = 1e-3  # chi-square rejection level = false-failure rate under a random seed


# --- semantics ---------------------------------------------------------------------------


def test_run_halts_after_c_positives_and_publishes_indicators_only():
    svt = dp.SparseVector(0.0, scale=0.01, c=3, sensitivity=1.0)
    queries = np.array([5.0, -5.0, 5.0, -5.0, -5.0, -5.0, -5.0])
    res = svt.run(queries, rng=1)
    np.testing.assert_array_equal(res.indicators, [False, True, False, True, True])
    assert (res.n_queries, res.n_positives, res.halted) == (5, 3, True)
    assert res.privacy == svt.privacy
    # nothing noisy is published
    assert set(vars(res)) == {"indicators", "n_queries", "n_positives", "halted", "privacy"}


def test_run_without_enough_positives_answers_the_whole_stream():
    svt = dp.SparseVector(0.0, scale=0.01, c=2, sensitivity=1.0, resample=True)
    res = svt.run([5.0, -5.0, 5.0, 5.0], rng=2)
    np.testing.assert_array_equal(res.indicators, [False, True, False, False])
    assert (res.n_queries, res.n_positives, res.halted) == (4, 1, False)


def test_long_streams_cross_the_internal_blocks():
    svt = dp.SparseVector(0.0, scale=1e-3, c=2, sensitivity=1.0)
    queries = np.full(200_000, 10.0)
    queries[[70_000, 150_000]] = -10.0
    res = svt.run(queries, rng=3)
    assert res.n_queries == 150_001
    np.testing.assert_array_equal(np.flatnonzero(res.indicators), [70_000, 150_000])


def test_no_halting_bug_really_runs_on():
    svt = NoHalting(0.0, scale=0.01, c=1, sensitivity=1.0)
    res = svt.run([-5.0, -5.0, -5.0], rng=4)
    assert (res.n_queries, res.n_positives, res.halted) == (3, 3, False)


def test_same_seed_same_run_and_queries_are_validated():
    svt = dp.SparseVector.from_privacy(epsilon=1.0, threshold=0.0, c=2, sensitivity=1.0)
    q = np.linspace(-2, 2, 50)
    a, b = svt.run(q, rng=5), svt.run(q, rng=5)
    np.testing.assert_array_equal(a.indicators, b.indicators)
    with pytest.raises(ValueError, match=r"queries must be one-dimensional, got shape \(2, 2\)"):
        svt.run(np.zeros((2, 2)), rng=0)
    with pytest.raises(ValueError, match=r"queries must be finite: 1 of 2 entries .*\[1\]"):
        svt.run([0.0, np.nan], rng=0)


# --- the exact law of the indicator patterns ---------------------------------------------


def _pattern_chisquare(svt, queries, n, seed, reference=None):
    """Chi-square p-value of ``n`` runs of ``svt`` against the exact law of ``reference``."""
    reference = svt if reference is None else reference
    pats = patterns(len(queries), reference.c)
    expected = np.array([pattern_probability(reference, queries, p) for p in pats])
    assert abs(expected.sum() - 1) < 1e-8  # the law is a distribution
    index = {p: i for i, p in enumerate(pats)}
    counts = np.zeros(len(pats) + 1)  # last bin: patterns the reference cannot publish
    rng = np.random.default_rng(seed)
    for _ in range(n):
        counts[index.get(tuple(svt.run(queries, rng=rng).indicators.tolist()), -1)] += 1
    if counts[-1] > 0:
        return 0.0
    return st.chisquare(counts[:-1], n * expected).pvalue


STREAM = np.array([0.4, -0.3, 0.1, 0.0])


@pytest.mark.parametrize("resample", [False, True], ids=["once", "resample"])
def test_pattern_law_matches_exact_integral(resample):
    # False-failure rate GOF_LEVEL = 1e-3 under a random seed.
    svt = dp.SparseVector(0.1, scale=0.25, c=2, sensitivity=1.0, resample=resample)
    assert _pattern_chisquare(svt, STREAM, n=8_000, seed=11) > GOF_LEVEL


@pytest.mark.parametrize("bug", [NoQueryNoise, QueryNoiseNotScaledByC, NoHalting])
@pytest.mark.parametrize("resample", [False, True], ids=["once", "resample"])
def test_pattern_law_companion_rejects_planted_bugs(bug, resample):
    planted = bug(0.1, scale=0.25, c=2, sensitivity=1.0, resample=resample)
    correct = dp.SparseVector(0.1, scale=0.25, c=2, sensitivity=1.0, resample=resample)
    assert _pattern_chisquare(planted, STREAM, n=8_000, seed=11, reference=correct) < GOF_LEVEL


def test_pattern_law_companion_rejects_a_shared_threshold_when_resampling():
    # runs that keep one threshold draw do not follow the resampling law
    once = dp.SparseVector(0.1, scale=0.25, c=2, sensitivity=1.0, resample=False)
    resampling = dp.SparseVector(0.1, scale=0.25, c=2, sensitivity=1.0, resample=True)
    assert _pattern_chisquare(once, STREAM, n=8_000, seed=12, reference=resampling) < GOF_LEVEL


# --- empirical privacy audits ---------------------------------------------------------------


def _pattern_code(res):
    """The whole published pattern as one integer: a leading 1 then the indicator bits."""
    bits = res.indicators
    return (1 << bits.size) | int(bits @ (1 << np.arange(bits.size)))


def _up_minus_down(up):
    """Positives among queries that move down on b, minus positives among those moving up."""

    def code(res):
        bits = res.indicators
        moved_up = up[: bits.size]
        return int(bits[~moved_up].sum() - bits[moved_up].sum())

    return code


def _audit_svt(svt, qa, qb, code, n_select, n_test, seed=2718):
    qa, qb = np.asarray(qa, float), np.asarray(qb, float)
    assert np.max(np.abs(qa - qb)) <= svt.sensitivity  # neighbouring query streams

    def sampler(q):
        def sample(n, rng):
            return np.fromiter((code(svt.run(q, rng=rng)) for _ in range(n)), np.int64, n)

        return sample

    t0 = time.perf_counter()
    res = audit_epsilon(
        sampler(qa), sampler(qb), n_select=n_select, n_test=n_test, alpha=ALPHA, rng=seed
    )
    return res, time.perf_counter() - t0


# Design 1: q = (D, 0) vs q' = (0, D), threshold 0, c = 1. Without query noise the
# pattern (no, yes) needs 0 <= rho < D on q but D <= rho < 0 on q': impossible.
DESIGN_SWAP = dict(qa=[1.0, 0.0], qb=[0.0, 1.0], code=_pattern_code, c=1)

# Design 2: 20 queries at the threshold; on b the odd ones move up by D and the even ones
# down, so a shift of the threshold noise cannot explain both. Outcome: positives on the
# queries that moved down minus those that moved up. Each positive costs 2D / (query
# scale): D/b with the correct Lap(2b), c D / b with the bug's Lap(2b/c).
_UP20 = np.arange(20) % 2 == 1
DESIGN_MIXED = dict(
    qa=np.zeros(20), qb=np.where(_UP20, 1.0, -1.0), code=_up_minus_down(_UP20), c=4
)

# Design 3: the same mixed stream, 40 queries, c = 1: without halting every query answers
# and the up-minus-down count keeps accumulating evidence.
_UP40 = np.arange(40) % 2 == 1
DESIGN_LONG = dict(qa=np.zeros(40), qb=np.where(_UP40, 1.0, -1.0), code=_up_minus_down(_UP40), c=1)

SVT_AUDITS = [
    # (label, class, resample, design, n_select, n_test, must_refute)
    ("correct", dp.SparseVector, False, DESIGN_SWAP, 10_000, 20_000, False),
    ("correct", dp.SparseVector, True, DESIGN_SWAP, 10_000, 20_000, False),
    ("planted: no query noise", NoQueryNoise, False, DESIGN_SWAP, 5_000, 10_000, True),
    ("planted: no query noise", NoQueryNoise, True, DESIGN_SWAP, 5_000, 10_000, True),
    ("correct", dp.SparseVector, False, DESIGN_MIXED, 15_000, 30_000, False),
    (
        "planted: query noise 2b/c",
        QueryNoiseNotScaledByC,
        False,
        DESIGN_MIXED,
        20_000,
        40_000,
        True,
    ),
    ("correct", dp.SparseVector, False, DESIGN_LONG, 15_000, 30_000, False),
    ("planted: never halts", NoHalting, False, DESIGN_LONG, 15_000, 30_000, True),
]


def _design_name(design):
    return {id(DESIGN_SWAP): "swap", id(DESIGN_MIXED): "mixed", id(DESIGN_LONG): "long"}[
        id(design)
    ]


@pytest.mark.parametrize(
    ("label", "cls", "resample", "design", "n_select", "n_test", "must_refute"),
    SVT_AUDITS,
    ids=[f"{a[0]}-{'resample' if a[2] else 'once'}-{_design_name(a[3])}" for a in SVT_AUDITS],
)
def test_sparse_vector_audit(
    label, cls, resample, design, n_select, n_test, must_refute, audit_table
):
    svt = cls.from_privacy(
        epsilon=1.0, threshold=0.0, c=design["c"], sensitivity=1.0, resample=resample
    )
    claimed = svt.privacy.epsilon
    res, seconds = _audit_svt(svt, design["qa"], design["qb"], design["code"], n_select, n_test)
    variant = f"{label} (c={svt.c}, {'resample' if resample else 'once'}, {_design_name(design)})"
    audit_table("SparseVector", variant, res, claimed, seconds=seconds)
    if must_refute:
        assert res.refutes(claimed), str(res)
    else:
        assert res.epsilon_lower <= claimed, str(res)
