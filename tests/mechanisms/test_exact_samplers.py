"""The exact discrete samplers: compiled kernels against the reference, the pmf, and the bits.

The kernels must give the reference algorithm's output on the same bit stream, bit for
bit (including the draws they hand back to it and the draws replayed on a longer stream);
their releases must follow the pmf (Pearson chi-square on half a million draws); and curator
releases with ``rng=None`` must draw every bit from the operating system.
Statistical checks use fixed seeds and state their false-failure rates under a random
seed; each has a planted-bug companion that must fail.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats as st
from _mechanism_registry import discrete_gaussian_logpmf_bruteforce

import dpinfer as dp
from dpinfer.mechanisms import _bits, _exact

GOF_LEVEL = 1e-3  # chi-square rejection level = false-failure rate of each test below

LAPLACE = "laplace"
GAUSSIAN = "gaussian"


def _reference(kind, param: Fraction, size: int, seed: int) -> np.ndarray:
    """``size`` draws of the pure-Python reference from the words of ``default_rng(seed)``."""
    reader = _bits.BitReader(
        np.empty(0, np.uint64), 0, _bits.GeneratorWords(np.random.default_rng(seed))
    )
    n, d = param.numerator, param.denominator
    draw = _exact.discrete_laplace if kind == LAPLACE else _exact.discrete_gaussian
    return np.array([draw(n, d, reader) for _ in range(size)], dtype=np.int64)


def _fast(kind, param: Fraction, size: int, seed: int) -> np.ndarray:
    sample = _exact.sample_discrete_laplace if kind == LAPLACE else _exact.sample_discrete_gaussian
    return sample(param, size, _bits.GeneratorWords(np.random.default_rng(seed)))


# --- the kernels are the reference, bit for bit -----------------------------------------

SAME_STREAM = [
    (LAPLACE, Fraction(1)),
    (LAPLACE, Fraction(1 / 0.3)),  # a float scale: 7505999378950827 / 2**51
    (LAPLACE, Fraction(0.37)),
    (LAPLACE, Fraction(2.0**40)),
    (GAUSSIAN, Fraction(1.0)),
    (GAUSSIAN, Fraction(3.7306**2)),  # a calibrated sigma: 53-bit numerator, 2**48 below
    (GAUSSIAN, Fraction(0.3**2)),
    (GAUSSIAN, Fraction(1e4**2)),
]


@pytest.mark.parametrize(
    ("kind", "param"), SAME_STREAM, ids=[f"{k}-{float(p):.6g}" for k, p in SAME_STREAM]
)
def test_kernels_reproduce_the_reference_on_the_same_stream(kind, param):
    np.testing.assert_array_equal(_fast(kind, param, 2_000, 5), _reference(kind, param, 2_000, 5))


@pytest.mark.parametrize(
    ("kind", "param", "draw"),
    [
        # t = 2**62 - 1: t * v overflows 63 bits for v >= 2 (about 13% of draws)
        (LAPLACE, Fraction(2**62 - 1, 2**10), "discrete_laplace"),
        # t d = 2**61: |y| t d overflows 63 bits for |y| >= 4 (about 4% of draws)
        (GAUSSIAN, Fraction(int(3.6 * 2**60) | 1, 2**60), "discrete_gaussian"),
    ],
)
def test_draws_handed_back_to_the_reference_continue_the_same_stream(
    monkeypatch, kind, param, draw
):
    calls = []
    original = getattr(_exact, draw)

    def counted(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(_exact, draw, counted)
    fast = _fast(kind, param, 1_000, 6)
    monkeypatch.setattr(_exact, draw, original)
    assert 10 < len(calls) < 300  # the kernel bailed out on some draws, not all
    np.testing.assert_array_equal(fast, _reference(kind, param, 1_000, 6))


@pytest.mark.parametrize("kind", [LAPLACE, GAUSSIAN])
def test_draws_replayed_on_a_longer_stream_are_unchanged(kind):
    # bits_per_draw=1 makes every refill far too short: draws run out of words and replay
    param = Fraction(2.5) if kind == LAPLACE else Fraction(2.5**2)
    n, d = param.numerator, param.denominator
    t = math.isqrt(n // d) + 1
    source = _bits.GeneratorWords(np.random.default_rng(7))
    if kind == LAPLACE:
        args = (np.uint64(n), np.uint64(d), (n - 1).bit_length())
        run, ref = _exact.kernels.run_discrete_laplace, _exact.discrete_laplace
    else:
        den = 2 * n * d * t * t
        args = (
            n,
            t,
            t * d,
            den >> 64,
            den & (2**64 - 1),
            (den - 1).bit_length(),
            (t - 1).bit_length(),
        )
        args = tuple(np.uint64(a) for a in args[:5]) + args[5:]
        run, ref = _exact.kernels.run_discrete_gaussian, _exact.discrete_gaussian
    out = _exact._drive(
        lambda words, pos, o, start: run(words, pos, *args, o, start),
        lambda r: ref(n, d, r),
        500,
        source,
        bits_per_draw=1,
    )
    np.testing.assert_array_equal(out, _reference(kind, param, 500, 7))


def test_parameters_beyond_the_kernels_run_in_the_reference():
    # sigma = 0.01: sigma^2 = n / 2**66, too wide for the kernels; the reference serves
    mech = dp.DiscreteGaussian(0.01)
    draws = mech.release(np.zeros(200, dtype=np.int64), rng=1)
    assert np.all(draws == 0)  # P(|x| >= 1) = 2 exp(-5000), about 1e-2171
    # a scale whose draws would leave the int64 range is refused before any release
    with pytest.raises(ValueError, match=r"scale=1e\+25 is above .* int64 range"):
        dp.DiscreteLaplace(1e25)
    # a tiny scale (denominator 2**152) runs in the reference: every draw is 0
    assert np.all(dp.DiscreteLaplace(1e-30).release(np.zeros(50, dtype=np.int64), rng=1) == 0)


# --- the releases follow the pmf ---------------------------------------------------------


def _chisquare_pvalue(draws: np.ndarray, log_pmf) -> float:
    """Pearson chi-square of integer draws against a pmf; bins with expected count >= 5."""
    n = draws.size
    support = np.arange(draws.min() - 50, draws.max() + 51)
    expected = n * np.exp(log_pmf(support))
    core = support[expected >= 5]
    lo, hi = core[0], core[-1]
    observed = np.concatenate(
        [
            [np.count_nonzero(draws < lo)],
            np.bincount(draws[(draws >= lo) & (draws <= hi)] - lo, minlength=hi - lo + 1),
            [np.count_nonzero(draws > hi)],
        ]
    )
    inner = expected[(support >= lo) & (support <= hi)]
    exp_bins = np.concatenate([[expected[support < lo].sum()], inner, [0.0]])
    exp_bins[-1] = n - exp_bins[:-1].sum()  # the upper tail, mass beyond the window included
    keep = exp_bins > 0
    assert observed[~keep].sum() == 0
    return float(st.chisquare(observed[keep], exp_bins[keep]).pvalue)


def _laplace_pmf(scale):
    return lambda k: st.dlaplace.logpmf(k, a=1.0 / scale)


def _gaussian_pmf(sigma):
    return lambda k: discrete_gaussian_logpmf_bruteforce(k, sigma)


GOF = [
    ("DiscreteLaplace", 1 / 0.3, lambda p: dp.DiscreteLaplace(p), _laplace_pmf),
    ("DiscreteLaplace", 2.0, lambda p: dp.DiscreteLaplace(p), _laplace_pmf),
    ("DiscreteGaussian", 0.3, lambda p: dp.DiscreteGaussian(p), _gaussian_pmf),
    ("DiscreteGaussian", 3.7306, lambda p: dp.DiscreteGaussian(p), _gaussian_pmf),
    ("DiscreteGaussian", 100.0, lambda p: dp.DiscreteGaussian(p), _gaussian_pmf),
]
N_GOF = 500_000


@pytest.fixture(scope="module")
def gof_pvalues():
    """Chi-square p-values per row: releases with the right parameter and with it 2% off."""
    out = {}
    for name, param, make, pmf in GOF:
        zeros = np.zeros(N_GOF, dtype=np.int64)
        correct = make(param).release(zeros, rng=20240601)
        planted = make(param * 1.02).release(zeros, rng=20240601)
        out[name, param] = (
            _chisquare_pvalue(correct, pmf(param)),
            _chisquare_pvalue(planted, pmf(param)),
        )
    return out


@pytest.mark.parametrize(
    ("name", "param"), [g[:2] for g in GOF], ids=[f"{g[0]}-{g[1]:.4g}" for g in GOF]
)
def test_releases_follow_the_pmf(gof_pvalues, name, param):
    # False-failure rate GOF_LEVEL = 1e-3 per row under a random seed.
    assert gof_pvalues[name, param][0] > GOF_LEVEL


@pytest.mark.parametrize(
    ("name", "param"), [g[:2] for g in GOF], ids=[f"{g[0]}-{g[1]:.4g}" for g in GOF]
)
def test_chisquare_companion_rejects_a_parameter_two_percent_off(gof_pvalues, name, param):
    assert gof_pvalues[name, param][1] < GOF_LEVEL


# --- where the bits come from -------------------------------------------------------------


@pytest.mark.parametrize("mech", [dp.DiscreteLaplace(2.0), dp.DiscreteGaussian(3.0)], ids=str)
def test_curator_releases_draw_every_bit_from_the_os(monkeypatch, mech):
    requested, real_urandom = [], os.urandom

    def urandom(n):
        requested.append(n)
        return real_urandom(n)

    def no_numpy_generator(*args, **kwargs):
        raise AssertionError("a numpy generator was seeded for a curator release")

    monkeypatch.setattr(_bits.os, "urandom", urandom)
    monkeypatch.setattr(np.random, "default_rng", no_numpy_generator)
    monkeypatch.setattr(np.random, "SeedSequence", no_numpy_generator)
    released = mech.release(np.zeros(10_000, dtype=np.int64))
    assert requested and sum(requested) % 8 == 0
    assert released.dtype == np.int64 and released.shape == (10_000,)
    # two releases share no bits: equal only with probability far below 1e-100
    assert not np.array_equal(released, mech.release(np.zeros(10_000, dtype=np.int64)))


def test_seeded_releases_are_reproducible_and_follow_the_seed():
    mech = dp.DiscreteGaussian(2.5, event_shape=(4,))
    value = np.arange(8).reshape(2, 4)
    a = mech.release(value, rng=3)
    np.testing.assert_array_equal(a, mech.release(value, rng=np.random.SeedSequence(3)))
    np.testing.assert_array_equal(a, mech.release(value, rng=np.random.default_rng(3)))
    assert not np.array_equal(a, mech.release(value, rng=4))
    assert a.shape == (2, 4) and a.dtype == np.int64
