"""The empirical auditor itself: its bounds, its error rate and its argument checks.

Audits of the mechanisms are in ``tests/mechanisms``. Here the auditor is run on
distributions whose privacy loss is known exactly. Seeds are fixed; each
statistical assertion states its false-failure rate under a random seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from dpinfer.audit import AuditResult, audit_epsilon, clopper_pearson, hockey_stick_delta


def _normal(mu):
    return lambda n, rng: rng.normal(mu, 1.0, size=n)


def _randomised_response(p_yes):
    return lambda n, rng: (rng.random(n) < p_yes).astype(np.int64)


# --- Clopper-Pearson ---------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 50), (1, 50), (17, 50), (50, 50), (3, 10_000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    # a two-sided exact interval at level 1 - 2a is the pair of one-sided bounds at level a
    lo, hi = clopper_pearson(k, n, 0.025)
    ci = st.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert float(lo) == pytest.approx(ci.low, rel=1e-9, abs=1e-15)
    assert float(hi) == pytest.approx(ci.high, rel=1e-9, abs=1e-15)


def test_clopper_pearson_is_vectorised_and_ordered():
    k = np.arange(0, 101)
    lo, hi = clopper_pearson(k, 100, 1e-3)
    assert lo.shape == hi.shape == (101,)
    assert np.all(lo <= k / 100) and np.all(k / 100 <= hi)
    assert lo[0] == 0.0 and hi[-1] == 1.0
    assert np.all(np.diff(lo) > 0) and np.all(np.diff(hi) > 0)


# --- bounds on known privacy losses ---------------------------------------------------------


def test_randomised_response_bound_is_tight_and_valid():
    # Randomised response with P(yes) = e^eps / (1 + e^eps) on a and 1 / (1 + e^eps) on b is
    # exactly eps-DP; the audit must not exceed eps (failure rate <= alpha = 1e-3) and, with
    # 2e5 draws, comes within 0.1 of it.
    eps = 1.0
    p = math.exp(eps) / (1 + math.exp(eps))
    res = audit_epsilon(_randomised_response(p), _randomised_response(1 - p), rng=1)
    assert eps - 0.1 < res.epsilon_lower <= eps
    assert res.event.startswith("x in {")


def test_gaussian_shift_bound_respects_delta():
    # N(0, 1) vs N(1, 1) is (eps, delta(eps))-DP on the Balle-Wang curve; audit at eps = 1.
    delta = st.norm.cdf(0.5 - 1.0) - math.e * st.norm.cdf(-0.5 - 1.0)
    res = audit_epsilon(_normal(0.0), _normal(1.0), delta=delta, rng=2)
    assert 0 < res.epsilon_lower <= 1.0
    assert res.delta == delta


def test_bound_direction_and_event_are_reported():
    # b = N(2, 1) is favoured by right half-lines, a = N(0, 1) by left ones
    for mu_a, mu_b in ((0.0, 2.0), (2.0, 0.0)):
        res = audit_epsilon(_normal(mu_a), _normal(mu_b), n_select=20_000, n_test=40_000, rng=3)
        right = res.event.startswith("x >= ")
        assert right or res.event.startswith("x <= ")
        assert (res.direction == "b>a") == (right == (mu_b > mu_a))
        assert isinstance(res, AuditResult) and res.n_test == 40_000 and res.alpha == 1e-3
        assert 0 <= res.q_hat < res.p_hat <= 1
        assert res.epsilon_lower > 1.0  # the true epsilon of this pair is infinite
        assert "epsilon >=" in str(res)


def test_identical_inputs_give_no_evidence():
    # Same distribution on both inputs: the true epsilon is 0, so each audit reports 0
    # except with probability alpha = 1e-3 (20 audits: false-failure rate <= 2%).
    lowers = [
        audit_epsilon(
            _normal(0.0), _normal(0.0), n_select=2_000, n_test=4_000, rng=seed
        ).epsilon_lower
        for seed in range(10)
    ] + [
        audit_epsilon(
            _randomised_response(0.3),
            _randomised_response(0.3),
            n_select=2_000,
            n_test=4_000,
            rng=seed,
        ).epsilon_lower
        for seed in range(10)
    ]
    assert lowers == [0.0] * 20


def test_companion_reusing_the_selection_sample_overstates_epsilon():
    # Planted bug: choose the event on the very sample used to bound it. With many integer
    # outcomes of equal probability the chosen level set is pure noise, yet it "shows" a
    # positive epsilon; the real auditor, with a fresh test sample, reports 0.
    def uniform(n, rng):
        return rng.integers(0, 400, size=n)

    res = audit_epsilon(uniform, uniform, n_select=4_000, n_test=4_000, rng=4)
    assert res.epsilon_lower == 0.0

    class SameSample:
        def __init__(self):
            self.cache = {}

        def __call__(self, n, rng):
            key = n
            if key not in self.cache:
                self.cache[key] = uniform(n, rng)
            return self.cache[key]

    # the same draws returned for selection and test (n_select == n_test): the bug
    a, b = SameSample(), SameSample()
    biased = audit_epsilon(a, b, n_select=4_000, n_test=4_000, rng=4)
    assert biased.epsilon_lower > 0.0


def test_same_seed_same_audit_different_seed_different_draws():
    kw = dict(n_select=5_000, n_test=5_000)
    a = audit_epsilon(_normal(0.0), _normal(1.0), rng=7, **kw)
    b = audit_epsilon(_normal(0.0), _normal(1.0), rng=np.random.SeedSequence(7), **kw)
    c = audit_epsilon(_normal(0.0), _normal(1.0), rng=8, **kw)
    assert a == b
    assert a != c


def test_selection_and_test_streams_are_independent():
    seen = []

    def record(n, rng):
        x = rng.normal(size=n)
        seen.append(x[:3].copy())
        return x

    audit_epsilon(record, record, n_select=100, n_test=100, rng=9)
    assert len(seen) == 4
    assert len({tuple(s) for s in seen}) == 4  # four distinct streams


# --- hockey-stick divergence ----------------------------------------------------------------


def test_hockey_stick_delta_by_hand():
    log_p = np.log([0.5, 0.3, 0.2])
    log_q = np.log([0.2, 0.3, 0.5])
    assert hockey_stick_delta(log_p, log_q, 0.0) == pytest.approx(0.3, abs=1e-15)
    assert hockey_stick_delta(log_p, log_q, math.log(2.0)) == pytest.approx(0.1, abs=1e-15)
    assert hockey_stick_delta(log_p, log_q, math.log(2.5)) == 0.0
    # -inf entries: mass where q is 0 always counts
    assert hockey_stick_delta(np.log([0.5, 0.5]), [0.0, -np.inf], 10.0) == 0.5


def test_hockey_stick_delta_checks_arguments():
    with pytest.raises(ValueError, match=r"same shape, got \(2,\) and \(3,\)"):
        hockey_stick_delta([0.0, 0.0], [0.0, 0.0, 0.0], 1.0)
    with pytest.raises(ValueError, match="epsilon must be a non-negative finite number, got -1"):
        hockey_stick_delta([0.0], [0.0], -1)


# --- argument checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("n_select", 0),
        ("n_test", -5),
        ("n_thresholds", 0),
        ("delta", -0.1),
        ("delta", 1.0),
        ("delta", math.nan),
        ("alpha", 0.0),
        ("alpha", 1.0),
        ("alpha", math.nan),
    ],
)
def test_audit_arguments_are_checked(name, bad):
    with pytest.raises(ValueError, match=rf"{name} must .*got {bad!r}"):
        audit_epsilon(_normal(0.0), _normal(1.0), **{name: bad})


def test_audit_samplers_are_checked():
    with pytest.raises(TypeError, match="sample_b must be callable"):
        audit_epsilon(_normal(0.0), [1.0, 2.0])
    with pytest.raises(ValueError, match=r"sample_a\(n, rng\) must return a 1-D array of n=10"):
        audit_epsilon(lambda n, rng: np.zeros((n, 2)), _normal(0.0), n_select=10, rng=0)
    with pytest.raises(ValueError, match="sample_b returned non-finite outcomes"):
        audit_epsilon(
            _normal(0.0), lambda n, rng: np.full(n, np.nan), n_select=10, n_test=10, rng=0
        )
    with pytest.raises(TypeError, match="sample_a must return numeric outcomes"):
        audit_epsilon(lambda n, rng: np.array(["a"] * n), _normal(0.0), n_select=10, rng=0)
