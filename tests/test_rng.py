"""``rng`` normalisation and per-chunk generator spawning (design principle 4)."""

from __future__ import annotations

import numpy as np
import pytest

import dpinfer as dp
from dpinfer._rng import as_generator, as_seed_sequence, chunk_generator, seed_entropy


def test_as_generator_accepts_every_documented_kind():
    gen = np.random.default_rng(0)
    assert as_generator(gen) is gen  # a Generator is used as is
    a = as_generator(5).random(4)
    b = as_generator(np.random.SeedSequence(5)).random(4)
    np.testing.assert_array_equal(a, b)
    assert isinstance(as_generator(None), np.random.Generator)
    assert isinstance(as_generator(np.int64(3)), np.random.Generator)


def test_none_draws_fresh_os_entropy():
    assert as_seed_sequence(None).entropy != as_seed_sequence(None).entropy
    x = dp.Laplace(1.0).release(np.zeros(8), rng=None)
    y = dp.Laplace(1.0).release(np.zeros(8), rng=None)
    assert not np.array_equal(x, y)


def test_a_generator_is_consumed_so_two_uses_differ():
    gen = np.random.default_rng(1)
    first, second = as_seed_sequence(gen), as_seed_sequence(gen)
    assert first.entropy != second.entropy
    # and deterministically: the same generator state gives the same root
    again = as_seed_sequence(np.random.default_rng(1))
    assert again.entropy == first.entropy


@pytest.mark.parametrize(
    ("bad", "exc", "match"),
    [
        (-1, ValueError, "rng must be a non-negative integer seed, got -1"),
        (True, TypeError, "rng must be None, an int, .* got bool: True"),
        (1.5, TypeError, "got float: 1.5"),
        ("7", TypeError, "got str: '7'"),
        (np.random.RandomState(0), TypeError, "got RandomState"),
    ],
)
def test_bad_rng_is_rejected_naming_it(bad, exc, match):
    with pytest.raises(exc, match=match):
        as_generator(bad)
    with pytest.raises(exc, match=match):
        dp.Laplace(1.0).release(0.0, rng=bad)


def test_chunk_generators_depend_only_on_root_and_index():
    root = np.random.SeedSequence(1234)
    children = root.spawn(5)
    for i in (4, 0, 2):  # any order, any subset
        ours = chunk_generator(np.random.SeedSequence(1234), i).random(3)
        spawned = np.random.default_rng(children[i]).random(3)
        np.testing.assert_array_equal(ours, spawned)
    a = chunk_generator(root, 0).random(3)
    b = chunk_generator(root, 1).random(3)
    assert not np.array_equal(a, b)


def test_seed_entropy_is_a_string_that_recreates_the_root():
    root = as_seed_sequence(99)
    text = seed_entropy(root)
    assert text == "99"
    again = np.random.SeedSequence(int(text))
    np.testing.assert_array_equal(
        chunk_generator(again, 3).random(2), chunk_generator(root, 3).random(2)
    )


@pytest.mark.parametrize(
    "mech",
    [
        dp.Laplace(1.0),
        dp.Gaussian(1.0),
        dp.DiscreteLaplace(2.0),
        dp.DiscreteGaussian(2.0),
    ],
    ids=lambda m: type(m).__name__,
)
def test_releases_are_reproducible_from_seeds(mech):
    value = np.zeros(50, dtype=np.int64 if mech.discrete else float)
    a = mech.release(value, rng=42)
    b = mech.release(value, rng=np.random.SeedSequence(42))
    c = mech.release(value, rng=np.random.default_rng(np.random.SeedSequence(42)))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, mech.release(value, rng=43))


def test_sparse_vector_and_binomial_are_reproducible_from_seeds():
    svt = dp.SparseVector(0.0, scale=1.0, c=3, sensitivity=1.0)
    q = np.linspace(-1, 1, 40)
    np.testing.assert_array_equal(svt.run(q, rng=3).indicators, svt.run(q, rng=3).indicators)
    mech = dp.BinomialRelease(n=100, m=10, population=50, length=4)
    np.testing.assert_array_equal(
        mech.release([1, 2, 3, 4], rng=3), mech.release([1, 2, 3, 4], rng=3)
    )
