"""Empirical privacy audits of ABCDP's whole output on neighbouring confidential datasets.

What :func:`dpinfer.abcdp` publishes is a function of the sparse vector run it makes
on the distances (accepted indices -> public parameters), so the audit replays that run:
``SparseVector`` is replaced in ``dpinfer.samplers.abcdp`` by a recording subclass, one
``abcdp`` call per dataset captures the instance (calibrated by ``abcdp`` from
``epsilon_total``) and the distances it answered, and fresh runs of that instance give the
samples. :func:`test_abcdp_output_is_the_captured_run` checks that an ``abcdp`` call
returns exactly the replayed run's output for the same noise seed.

Neighbouring datasets differ in one record, chosen so that every distance moves by
exactly the declared sensitivity: up or down as each design requires (a distance whose
values the tests control, and one random-feature MMD whose embedding moves by exactly
``2 / N``). ``audit_epsilon`` errs (lower bound above the true epsilon) with probability
at most ALPHA = 1e-3: that is the false-failure rate of each "passes" test under a
random seed. The three planted bugs (threshold noise missing, query noise not scaled by
``c``, no halting after ``c`` acceptances) are refuted by designs whose expected lower
bounds were computed exactly beforehand (0.9-1.9 above the claim at these sample sizes).
"""

from __future__ import annotations

import numpy as np
import pytest

import dpinfer as dp
from dpinfer.audit import audit_epsilon

from ._helpers import (
    MeanDistance,
    NoHalting,
    NoThresholdNoise,
    QueryNoiseNotScaledByC,
    Recording,
    capture,
    neighbours,
    pattern_code,
    replay,
)

ALPHA = 1e-3
SEED = 20210806
N = 10  # records; MeanDistance moves by DELTA = 1 / N
DELTA = 1.0 / N
THRESHOLD = 0.5
EPSILON = 2.0
# Sample sizes per input: a correct run passes with probability >= 1 - ALPHA at any size;
# the planted bugs need the larger one for their expected margins.
SIZES = {False: dict(n_select=6_000, n_test=20_000), True: dict(n_select=15_000, n_test=40_000)}


def _mixed(c):
    """8 distances that fall on Y' just above the threshold, then c that rise at it."""
    b = (c + 1) * DELTA / EPSILON
    return np.r_[np.full(8, THRESHOLD + 0.5 * b), np.full(c, -THRESHOLD)]


def _mixed_long():
    """6 falling and 6 rising distances around the threshold, for c = 1."""
    b = 2 * DELTA / EPSILON
    return np.r_[np.full(6, THRESHOLD + 0.5 * b), np.full(6, -(THRESHOLD - 0.5 * b))]


def _group_counts(result):
    """Post-processing of the output: (answered, accepted among 6 first, among 6 last)."""
    ind = np.zeros(12, dtype=bool)
    ind[: result.n_queries] = result.indicators
    return 100 * result.n_queries + 10 * int(ind[:6].sum()) + int(ind[6:].sum())


DESIGNS = {
    # name: (pseudo-data z, c, resample, summary)
    "mixed-c5": (_mixed(5), 5, False, pattern_code),
    "mixed-c5-resample": (_mixed(5), 5, True, pattern_code),
    "mixed-long": (_mixed_long(), 1, False, _group_counts),
}

CASES = [
    # (design, SparseVector class in abcdp, must the audit refute epsilon_total?)
    ("mixed-c5", Recording, False),
    ("mixed-c5", QueryNoiseNotScaledByC, True),
    ("mixed-c5-resample", Recording, False),
    ("mixed-long", Recording, False),
    ("mixed-long", NoHalting, True),
]


def _captures(monkeypatch, cls, design, *, privacy_rng=0):
    z, c, resample, _ = DESIGNS[design]
    a, b = neighbours(N)
    kwargs = dict(
        params={"z": z},
        pseudo_data=z,
        epsilon_total=EPSILON,
        epsilon_abc=THRESHOLD,
        c=c,
        resample=resample,
        privacy_rng=privacy_rng,
    )
    return (
        capture(monkeypatch, cls, a, MeanDistance(), **kwargs),
        capture(monkeypatch, cls, b, MeanDistance(), **kwargs),
    )


@pytest.mark.parametrize(
    ("design", "cls", "refute"),
    CASES,
    ids=[f"{d}-{c.__name__}" for d, c, _ in CASES],
)
def test_audit_of_abcdp_output(monkeypatch, design, cls, refute):
    cap_a, cap_b = _captures(monkeypatch, cls, design)
    _, c, resample, summary = DESIGNS[design]
    # abcdp calibrated the run from epsilon_total (Theorem 1), identically on both datasets
    b = (2 * c if resample else c + 1) * DELTA / EPSILON
    assert cap_a.svt.scale == pytest.approx(b, rel=1e-12) and cap_b.svt.scale == cap_a.svt.scale
    assert cap_a.svt.privacy.epsilon == pytest.approx(EPSILON, rel=1e-12)
    # neighbours: every distance moved by exactly the declared sensitivity
    np.testing.assert_allclose(np.abs(cap_a.queries - cap_b.queries), DELTA, rtol=1e-12)

    res = audit_epsilon(
        replay(cap_a, summary), replay(cap_b, summary), alpha=ALPHA, rng=SEED, **SIZES[refute]
    )
    print(f"{design} {cls.__name__}: claimed {EPSILON}, {res}")
    assert res.refutes(EPSILON) is refute, str(res)


@pytest.mark.parametrize("cls", [Recording, NoThresholdNoise, QueryNoiseNotScaledByC, NoHalting])
def test_abcdp_output_is_the_captured_run(monkeypatch, cls):
    """The replayed run is what abcdp publishes, bugs included (so they are planted in abcdp)."""
    for seed in range(5):
        cap, _ = _captures(monkeypatch, cls, "mixed-long", privacy_rng=seed)
        replayed = dp.SparseVector.run(cap.svt, cap.queries, rng=seed)
        out = cap.output
        np.testing.assert_array_equal(
            out.sample_stats["query_index"].values.ravel(), np.flatnonzero(replayed.indicators)
        )
        np.testing.assert_array_equal(
            out.posterior["z"].values.ravel(),
            DESIGNS["mixed-long"][0][np.flatnonzero(replayed.indicators)],
        )
        assert out.posterior.attrs["n_queries"] == replayed.n_queries


def test_planted_no_halting_changes_abcdp_output(monkeypatch):
    z = np.zeros(30)  # every distance 0, far below the threshold: all accepted
    a, _ = neighbours(N)
    kwargs = dict(params={"z": z}, pseudo_data=z, epsilon_total=EPSILON, epsilon_abc=THRESHOLD)
    good = capture(monkeypatch, Recording, a, MeanDistance(), c=3, privacy_rng=1, **kwargs)
    bad = capture(monkeypatch, NoHalting, a, MeanDistance(), c=3, privacy_rng=1, **kwargs)
    assert good.output.posterior["z"].size == 3
    assert bad.output.posterior["z"].size > 3


# --- a real distance: random-feature MMD with one frequency -------------------------------
# Every distance is exactly 2/N lower on Y' than on Y, twelve times: only the threshold
# noise protects such a stream (a common shift of all queries is a shift of the threshold),
# so this is the design that exposes a run without threshold noise.


def _circle_datasets(w):
    """Y, Y' and Z on the real line whose one-frequency embeddings are known exactly.

    With one frequency ``w`` the feature map sends ``x`` to the unit-circle point at angle
    ``w x``. ``Y``: 10 points at evenly spaced angles (embedding 0); ``Y'``: the point at
    angle 0 moved to angle pi (embedding (-0.2, 0): moved by exactly 2/N, the
    sensitivity). ``Z``: points at angles pi +- pi/3 (embedding (-0.5, 0)). So
    ``MMD(Y', Z) = 0.3`` and ``MMD(Y, Z) = 0.5``.
    """
    # Seven full turns added to every angle keep the embeddings and keep the records away
    # from 0, a record other tests' data share: the provenance guard would otherwise see
    # this run's settings as data-derived whenever such a test ran earlier in the process.
    turns = 14 * np.pi
    angles = 2 * np.pi * np.arange(N) / N
    y = ((turns + angles) / w)[:, None]
    y_prime = y.copy()
    y_prime[0] = (turns + np.pi) / w
    z = np.r_[np.full(5, np.pi + np.pi / 3), np.full(5, np.pi - np.pi / 3)]
    return y, y_prime, ((turns + z) / w)[:, None]


@pytest.mark.parametrize(("cls", "refute"), [(Recording, False), (NoThresholdNoise, True)])
def test_audit_with_random_feature_mmd(monkeypatch, cls, refute):
    distance = dp.distances.RandomFeatureMMD(1, 1.0, rng=7)
    y, y_prime, z = _circle_datasets(float(distance.frequencies[0, 0]))
    pseudo = np.broadcast_to(z, (12, *z.shape))
    kwargs = dict(
        params={"t": np.arange(12)},
        pseudo_data=pseudo,
        epsilon_total=EPSILON,
        epsilon_abc=0.3,
        c=1,
        privacy_rng=0,
    )
    cap_a = capture(monkeypatch, cls, y, distance, **kwargs)
    cap_b = capture(monkeypatch, cls, y_prime, distance, **kwargs)
    sens = distance.sensitivity(N)
    assert sens == 2 / N
    np.testing.assert_allclose(cap_a.queries, 0.5, atol=1e-12)
    np.testing.assert_allclose(cap_b.queries, 0.3, atol=1e-12)  # moved by the sensitivity
    res = audit_epsilon(replay(cap_a), replay(cap_b), alpha=ALPHA, rng=SEED, **SIZES[refute])
    print(f"RF-MMD {cls.__name__}: claimed {EPSILON}, {res}")
    assert res.refutes(EPSILON) is refute, str(res)
