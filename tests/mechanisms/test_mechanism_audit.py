"""Every privacy claim, audited empirically on worst-case neighbouring inputs.

``dpinfer.audit.audit_epsilon`` returns a lower bound on the true epsilon that
exceeds it with probability at most ``ALPHA`` (Clopper-Pearson, event chosen on an
independent sample). So for a correct mechanism ``lower <= claimed`` fails with
probability at most ALPHA = 1e-3 under a random seed; the seeds are fixed. Each
mechanism also has a planted bug, a sampler with half (or a quarter of) the noise and
the original claim, which the audit must refute (``lower > claimed``).

For the discrete mechanisms the output distributions can be tabulated, so the
hockey-stick divergence delta(epsilon) is also computed exactly from the pmf.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from _mechanism_registry import CASES, IDS, MaxSigmaDiscreteGaussian, with_planted_sampler

import dpinfer as dp
from dpinfer.audit import audit_epsilon, hockey_stick_delta

ALPHA = 1e-3
SEED = 314159


def _sampler(mech, value, code):
    value = np.asarray(value)

    def sample(n, rng):
        batch = np.broadcast_to(value, (n, *value.shape)).copy()
        return code(mech.release(batch, rng=rng))

    return sample


def _claim(mech, setup):
    """The (epsilon, delta) claim audited: a guarantee stated in zCDP at ``setup.delta``."""
    priv = mech.privacy
    return priv.to_approx(setup.delta) if priv.epsilon is None else priv


def _audit(mech, setup):
    priv = _claim(mech, setup)
    t0 = time.perf_counter()
    result = audit_epsilon(
        _sampler(mech, setup.a, setup.code),
        _sampler(mech, setup.b, setup.code),
        n_select=setup.n_select,
        n_test=setup.n_test,
        delta=priv.delta,
        alpha=ALPHA,
        rng=SEED,
    )
    return result, time.perf_counter() - t0


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_audit_is_consistent_with_the_claim(case, audit_table):
    mech = case.audit.make()
    result, seconds = _audit(mech, case.audit)
    claimed = _claim(mech, case.audit).epsilon
    audit_table(case.name, "correct", result, claimed, seconds=seconds)
    assert result.epsilon_lower <= claimed, str(result)
    # the audit is informative: the neighbours expose the worst case (far from a vacuous 0)
    assert result.epsilon_lower > 0.25 * claimed, str(result)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_audit_flags_a_sampler_with_too_little_noise(case, audit_table):
    mech = case.audit.make()
    planted = with_planted_sampler(case, mech, case.audit.planted_factor)
    result, seconds = _audit(planted, case.audit)
    claimed = _claim(planted, case.audit).epsilon
    assert claimed == _claim(mech, case.audit).epsilon  # the bug keeps the (now false) claim
    label = f"planted: noise x {case.audit.planted_factor:g}"
    audit_table(case.name, label, result, claimed, seconds=seconds)
    assert result.refutes(claimed), str(result)


def test_audit_flags_per_cell_privacy_from_the_largest_sigma(audit_table):
    # The sampler is right; the claim is computed from the largest sigma (rho 0.002, not
    # 0.05): the change on the least noisy cell shows a loss the claim does not cover.
    setup = next(c for c in CASES if c.name == "DiscreteGaussian-per-cell").audit
    mech = setup.make()
    planted = MaxSigmaDiscreteGaussian(mech.sigma, sensitivity=1)
    result, seconds = _audit(planted, setup)
    claimed = _claim(planted, setup).epsilon
    assert claimed < _claim(mech, setup).epsilon
    label = "planted: rho from the largest sigma"
    audit_table("DiscreteGaussian-per-cell", label, result, claimed, seconds=seconds)
    assert result.refutes(claimed), str(result)


def test_audit_flags_laplace_with_half_the_scale(audit_table):
    # The bug named in the design: a Laplace subclass that draws with scale / 2.
    class HalfScaleLaplace(dp.Laplace):
        def _sample(self, value, rng):
            return value + rng.laplace(0.0, 1.0, size=value.shape) * self.scale / 2

    mech = HalfScaleLaplace.from_privacy(epsilon=1.0, sensitivity=1.0)
    result = audit_epsilon(
        lambda n, rng: mech.release(np.zeros(n), rng=rng),
        lambda n, rng: mech.release(np.ones(n), rng=rng),
        n_select=50_000,
        n_test=100_000,
        alpha=ALPHA,
        rng=SEED,
    )
    audit_table("Laplace", "planted: subclass, scale / 2", result, 1.0)
    assert result.epsilon_lower > 1.0, str(result)


def test_float_laplace_leaks_in_the_last_bits_and_the_discrete_one_does_not(audit_table):
    # Mironov (2012), the caveat in the Laplace docstring: a release s + noise computed in
    # floating point carries s in its low-order bits. The unrounded privacy-loss statistic
    # of a vector release (a function of the release alone) separates s = 0 from s = D far
    # beyond epsilon = 1; the integer releases of DiscreteLaplace have no such bits.
    sens = np.array([0.25, 0.25, 0.5])
    mech = dp.Laplace([0.5, 1.0, 2.0], sensitivity=sens)

    def raw_loss(x):
        return (np.abs(x) - np.abs(x - sens)) @ (1 / mech.scale)

    def run(m, a, b, code):
        return audit_epsilon(
            _sampler(m, a, code), _sampler(m, b, code), n_select=50_000, n_test=100_000, rng=SEED
        )

    leak = run(mech, np.zeros(3), sens, raw_loss)
    audit_table("Laplace-per-coordinate", "float low bits (Mironov 2012)", leak, 1.0)
    assert leak.refutes(1.0), str(leak)

    disc = dp.DiscreteLaplace(1.0, sensitivity=1, event_shape=(3,))
    ones = np.ones(3, dtype=np.int64)

    def disc_loss(x):
        return ((np.abs(x) - np.abs(x - ones)).sum(axis=-1) / 1.0).astype(np.int64)

    hardened = audit_epsilon(
        _sampler(disc, np.zeros(3, dtype=np.int64), disc_loss),
        _sampler(disc, ones, disc_loss),
        n_select=2_000,
        n_test=4_000,
        rng=SEED,
    )
    # l1 distance 3 between the neighbours here: the claim for them is 3 / scale = 3
    audit_table("DiscreteLaplace", "same statistic, integer release (l1 = 3)", hardened, 3.0)
    assert hardened.epsilon_lower <= 3.0, str(hardened)


# --- exact delta(epsilon) from the pmf (discrete mechanisms) -----------------------------


def _log_pmf_table(mech, values, support):
    """``log eta(k | value)`` for every ``k`` in ``support`` (rows) and value (columns)."""
    return np.array([mech.logpdf(np.full(mech.event_shape, k), values) for k in support])


def _worst_delta(mech, pairs, support, epsilon):
    """max over neighbouring (a, b), both orders, of sum_k max(0, P_a(k) - e^eps P_b(k))."""
    values = np.unique(np.concatenate(pairs)).reshape(-1, *mech.event_shape)
    table = _log_pmf_table(mech, values, support)
    index = {int(v): j for j, v in enumerate(values.reshape(-1))}
    return max(
        hockey_stick_delta(table[:, index[a]], table[:, index[b]], epsilon)
        for pa, pb in zip(*pairs, strict=True)
        for a, b in ((int(pa), int(pb)), (int(pb), int(pa)))
    )


def test_discrete_laplace_exact_delta_is_zero():
    # |k - 0| - |k - D| <= D, so P_0(k) <= e^{D/t} P_D(k) for every k: delta(D/t) = 0.
    mech = dp.DiscreteLaplace.from_privacy(epsilon=0.8, sensitivity=2)
    eps = mech.privacy.epsilon
    support = np.arange(-200, 201)
    pairs = (np.array([0, 0, 5]), np.array([2, -2, 3]))
    assert _worst_delta(mech, pairs, support, eps) <= 1e-15
    # companion: at a smaller epsilon, or with half the scale, delta is far from 0
    assert _worst_delta(mech, pairs, support, 0.9 * eps) > 1e-2
    half = dp.DiscreteLaplace(mech.scale / 2, sensitivity=2)
    assert _worst_delta(half, pairs, support, eps) > 1e-1


@pytest.mark.parametrize(("epsilon", "delta", "sens"), [(1.0, 1e-5, 1), (0.5, 1e-6, 3)])
def test_discrete_gaussian_exact_delta_matches_claim(epsilon, delta, sens):
    mech = dp.DiscreteGaussian.from_privacy(epsilon=epsilon, delta=delta, sensitivity=sens)
    priv = mech.privacy
    support = np.arange(-int(40 * mech.sigma) - 40, int(40 * mech.sigma) + 41)
    pairs = (np.array([0]), np.array([sens]))
    exact = _worst_delta(mech, pairs, support, priv.epsilon)
    # the claim holds and is tight (the calibration solves delta(epsilon) = delta)
    assert exact <= priv.delta * (1 + 1e-9)
    assert exact >= priv.delta * (1 - 1e-6)
    # companion: half the sigma breaks the claimed delta by orders of magnitude
    half = dp.DiscreteGaussian(mech.sigma / 2, sensitivity=sens, delta=delta)
    assert _worst_delta(half, pairs, support, priv.epsilon) > 100 * priv.delta


def test_binomial_release_exact_delta():
    # Neighbours: |I_t - I'_t| <= 1 at every time. One coordinate is enough (the L
    # coordinates are independent and the bound composes); all I in {0..K} are checked.
    mech = dp.BinomialRelease(n=8, m=3, population=6, length=1)
    support = np.arange(mech.n + 1)
    lower = np.arange(mech.population)
    pairs = (lower, lower + 1)
    assert _worst_delta(mech, pairs, support, mech.privacy.epsilon) == 0.0
    assert _worst_delta(mech, pairs, support, mech.tight_epsilon) <= 1e-15
    # tightness: just below n log(1 + 1/m) the worst pair has delta > 0
    assert _worst_delta(mech, pairs, support, mech.tight_epsilon * (1 - 1e-6)) > 0
    # companion: a sampler with m / 2 violates the claim
    half = dp.BinomialRelease(n=8, m=1.5, population=6, length=1)
    assert _worst_delta(half, pairs, support, mech.privacy.epsilon) > 1e-3
