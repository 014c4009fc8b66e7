"""Normalisation of ``rng`` arguments and per-chunk generator spawning.

Every stochastic public function accepts ``rng`` as None, an int, a
:class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`.
It is normalised once at the public boundary. Chunked work derives the
generator of chunk ``i`` from one root :class:`~numpy.random.SeedSequence`
by index, so results do not depend on how chunks are scheduled.
"""

from __future__ import annotations

import numbers

import numpy as np

RNGLike = None | int | np.random.SeedSequence | np.random.Generator


def as_generator(rng: RNGLike, *, name: str = "rng") -> np.random.Generator:
    """Return a Generator for ``rng`` (None draws fresh OS entropy); errors name ``name``."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(as_seed_sequence(rng, name=name))


def check_rng(rng: RNGLike, *, name: str = "rng") -> RNGLike:
    """Return ``rng`` unchanged, or raise unless it is a valid seed (nothing is consumed)."""
    if not isinstance(rng, np.random.Generator | np.random.SeedSequence) and rng is not None:
        as_seed_sequence(rng, name=name)
    return rng


def as_seed_sequence(rng: RNGLike, *, name: str = "rng") -> np.random.SeedSequence:
    """Return a root SeedSequence for ``rng``.

    A Generator is consumed (four 64-bit words are drawn from it), so
    passing the same Generator twice gives two different roots, as a user
    of a Generator expects.
    """
    if rng is None:
        return np.random.SeedSequence()
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        words = rng.integers(0, 2**63, size=4, dtype=np.int64)
        return np.random.SeedSequence([int(w) for w in words])
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"{name} must be a non-negative integer seed, got {rng!r}")
        return np.random.SeedSequence(int(rng))
    raise TypeError(
        f"{name} must be None, an int, a numpy SeedSequence or a numpy Generator, "
        f"got {type(rng).__name__}: {rng!r}"
    )


def chunk_generator(root: np.random.SeedSequence, index: int) -> np.random.Generator:
    """Return the generator of chunk ``index`` derived from ``root``.

    Equivalent to the ``index``-th child of ``root.spawn`` but independent of
    how many children were spawned before, so any executor reproduces it.
    """
    child = np.random.SeedSequence(
        root.entropy,
        spawn_key=(*root.spawn_key, int(index)),
        pool_size=root.pool_size,
    )
    return np.random.default_rng(child)


def seed_entropy(root: np.random.SeedSequence) -> str:
    """Return the entropy of ``root`` as a string, for result metadata."""
    return str(root.entropy)


def child_sequence(root: np.random.SeedSequence, index: int) -> np.random.SeedSequence:
    """Return the ``index``-th child SeedSequence of ``root`` (stable under any spawning)."""
    return np.random.SeedSequence(
        root.entropy, spawn_key=(*root.spawn_key, int(index)), pool_size=root.pool_size
    )
