"""The exact discrete samplers: compiled loops against the reference, the pmf, and the bits.

The compiled loops must give the reference algorithm's output on the same bit stream, bit for
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


# --- the compiled loops are the reference, bit for bit --------------------------------------

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
def test_compiled_loops_reproduce_the_reference_on_the_same_stream(kind, param):
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
    assert 10 < len(calls) < 300  # the compiled loop bailed out on some draws, not all
    np.testing.assert_array_equal(fast, _reference(kind, param, 1_000, 6))


@pytest.mark.parametrize("kind", [LAPLACE, GAUSSIAN])
def test_draws_replayed_on_a_longer_stream_are_unchanged(kind):
    # bits_per_draw=1 makes every refill far too short: draws run out of words and replay
    param = Fraction(2.5) if kind == LAPLACE else Fraction(2.5**2)
    n, d = param.numerator, param.denominator
    t = math.isqrt(n // d) + 1
    source = _bits.GeneratorWords(np.random.default_rng(7))
    # one group of parameters, every cell in it (the per-cell loops' scalar case)
    groups = (np.array([True]), np.zeros(1, np.int64))
    if kind == LAPLACE:
        args = (
            np.array([n], np.uint64),
            np.array([d], np.uint64),
            np.array([(n - 1).bit_length()], np.int64),
        )
        run, ref = _exact.compiled.run_discrete_laplace, _exact.discrete_laplace
    else:
        den = 2 * n * d * t * t
        ints = (n, t, t * d, den >> 64, den & (2**64 - 1))
        bits = ((den - 1).bit_length(), (t - 1).bit_length())
        args = tuple(np.array([a], np.uint64) for a in ints)
        args += tuple(np.array([b], np.int64) for b in bits)
        run, ref = _exact.compiled.run_discrete_gaussian, _exact.discrete_gaussian
    out = _exact._drive(
        lambda words, pos, o, start: run(words, pos, *args, *groups, o, start),
        lambda i, r: ref(n, d, r),
        500,
        source,
        bits_per_draw=1,
    )
    np.testing.assert_array_equal(out, _reference(kind, param, 500, 7))


def test_parameters_beyond_the_compiled_loops_run_in_the_reference():
    # sigma = 0.01: sigma^2 = n / 2**66, too wide for the compiled loops; the reference serves
    mech = dp.DiscreteGaussian(0.01)
    draws = mech.release(np.zeros(200, dtype=np.int64), rng=1)
    assert np.all(draws == 0)  # P(|x| >= 1) = 2 exp(-5000), about 1e-2171
    # a scale whose draws would leave the int64 range is refused before any release
    with pytest.raises(ValueError, match=r"scale=1e\+25 is above .* int64 range"):
        dp.DiscreteLaplace(1e25)
    # a tiny scale (denominator 2**152) runs in the reference: every draw is 0
    assert np.all(dp.DiscreteLaplace(1e-30).release(np.zeros(50, dtype=np.int64), rng=1) == 0)


# --- per-cell parameters: one group per distinct value, one stream --------------------------

PER_CELL = [
    (LAPLACE, [Fraction(1 / 0.3), Fraction(2.0**40), Fraction(0.37)], [0, 1, 2, 0, 1]),
    (GAUSSIAN, [Fraction(3.7306**2), Fraction(0.3**2), Fraction(1e4**2)], [2, 0, 0, 1]),
    # a group beyond the compiled loops (sigma^2 = 0.01^2: n / 2**66) beside two within them
    (GAUSSIAN, [Fraction(0.01**2), Fraction(2.5**2), Fraction(1.0)], [1, 0, 2, 1]),
]


def _reference_cells(kind, params, cells, size, seed):
    """The reference, draw ``i`` with the parameter of cell ``i % k``, on one stream."""
    reader = _bits.BitReader(
        np.empty(0, np.uint64), 0, _bits.GeneratorWords(np.random.default_rng(seed))
    )
    draw = _exact.discrete_laplace if kind == LAPLACE else _exact.discrete_gaussian
    groups = [params[cells[i % len(cells)]] for i in range(size)]
    return np.array([draw(p.numerator, p.denominator, reader) for p in groups], dtype=np.int64)


@pytest.mark.parametrize(("kind", "params", "cells"), PER_CELL, ids=["laplace", "gauss", "bail"])
def test_per_cell_compiled_loops_reproduce_the_reference_on_the_same_stream(kind, params, cells):
    sample = _exact.sample_discrete_laplace if kind == LAPLACE else _exact.sample_discrete_gaussian
    source = _bits.GeneratorWords(np.random.default_rng(8))
    got = sample(params, 2_000, source, np.array(cells))
    np.testing.assert_array_equal(got, _reference_cells(kind, params, cells, 2_000, 8))


def test_per_cell_releases_group_cells_by_value():
    # the release of a table draws each cell with its own scale: the same stream as the
    # reference over the cells in order
    mech = dp.DiscreteGaussian([2.5, 0.3, 2.5, 9.0])
    got = mech.release(np.zeros((300, 4), dtype=np.int64), rng=9)
    params = [Fraction(s**2) for s in (0.3, 2.5, 9.0)]  # the distinct values, sorted
    want = _reference_cells(GAUSSIAN, params, [1, 0, 1, 2], 1_200, 9).reshape(300, 4)
    np.testing.assert_array_equal(got, want)


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


PER_CELL_GOF = [
    ("DiscreteLaplace", [1 / 0.3, 2.0, 2.0], dp.DiscreteLaplace, _laplace_pmf),
    ("DiscreteGaussian", [0.3, 3.7306, 100.0], dp.DiscreteGaussian, _gaussian_pmf),
]


@pytest.fixture(scope="module")
def per_cell_pvalues():
    """Per-cell chi-square p-values of a table release: right parameters and 2% off."""
    out = {}
    for name, params, family, pmf in PER_CELL_GOF:
        zeros = np.zeros((200_000, len(params)), dtype=np.int64)
        correct = family(params).release(zeros, rng=20240612)
        planted = family([p * 1.02 for p in params]).release(zeros, rng=20240612)
        out[name] = [
            (_chisquare_pvalue(correct[:, j], pmf(p)), _chisquare_pvalue(planted[:, j], pmf(p)))
            for j, p in enumerate(params)
        ]
    return out


@pytest.mark.parametrize("name", [g[0] for g in PER_CELL_GOF])
def test_per_cell_releases_follow_each_cells_pmf(per_cell_pvalues, name):
    # Each cell's column against its own pmf; false-failure rate 3 x GOF_LEVEL per row.
    assert all(correct > GOF_LEVEL for correct, _ in per_cell_pvalues[name])


@pytest.mark.parametrize("name", [g[0] for g in PER_CELL_GOF])
def test_per_cell_chisquare_companion_rejects_parameters_two_percent_off(per_cell_pvalues, name):
    # the cells whose scale is large enough for 2% to show at this sample size
    assert all(planted < GOF_LEVEL for _, planted in per_cell_pvalues[name][1:])


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
