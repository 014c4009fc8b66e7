"""Normalisation of ``rng`` arguments and per-chunk generator spawning.

Every stochastic public function accepts ``rng`` as None, an int, a
:class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`.
It is normalised once at the public boundary. Chunked work derives the
generator of chunk ``i`` from one root :class:`~numpy.random.SeedSequence`
by index, so results do not depend on how chunks are scheduled.

The public names are re-exported by :mod:`dpinfer.random`.
"""

from __future__ import annotations

import numbers

import numpy as np

RNGLike = None | int | np.random.SeedSequence | np.random.Generator


def as_generator(rng: RNGLike, *, name: str = "rng") -> np.random.Generator:
    """Return a Generator for ``rng``.

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
        None draws fresh OS entropy; an int or a SeedSequence seeds a new
        Generator; a Generator is returned as it is (and used up by its caller).
    name : str, default "rng"
        The parameter named in error messages.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError, ValueError
        If ``rng`` is none of the above, or a negative int.

    Examples
    --------
    >>> from dpinfer.random import as_generator
    >>> int(as_generator(1).integers(100)) == int(as_generator(1).integers(100))
    True
    >>> gen = np.random.default_rng(0)
    >>> as_generator(gen) is gen
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(as_seed_sequence(rng, name=name))


def check_rng(rng: RNGLike, *, name: str = "rng") -> RNGLike:
    """Return ``rng`` unchanged, or raise unless it is a valid seed (nothing is consumed).

    For a function that checks its arguments up front but uses ``rng`` later.

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
    name : str, default "rng"
        The parameter named in error messages.

    Returns
    -------
    The same ``rng``.

    Examples
    --------
    >>> from dpinfer.random import check_rng
    >>> check_rng(3)
    3
    >>> check_rng(-1)
    Traceback (most recent call last):
    ...
    ValueError: rng must be a non-negative integer seed, got -1
    """
    if not isinstance(rng, np.random.Generator | np.random.SeedSequence) and rng is not None:
        as_seed_sequence(rng, name=name)
    return rng


def as_seed_sequence(rng: RNGLike, *, name: str = "rng") -> np.random.SeedSequence:
    """Return a root SeedSequence for ``rng``, from which chunks and runs are spawned.

    A Generator is consumed (four 64-bit words are drawn from it), so
    passing the same Generator twice gives two different roots, as a user
    of a Generator expects.

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
        None draws fresh OS entropy; a SeedSequence is returned as it is.
    name : str, default "rng"
        The parameter named in error messages.

    Returns
    -------
    numpy.random.SeedSequence

    Examples
    --------
    >>> from dpinfer.random import as_seed_sequence
    >>> as_seed_sequence(42).entropy
    42
    >>> as_seed_sequence("42")
    Traceback (most recent call last):
    ...
    TypeError: rng must be None, an int, a numpy SeedSequence or a numpy Generator, got str: '42'
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


def child_sequence(root: np.random.SeedSequence, index: int) -> np.random.SeedSequence:
    """Return the ``index``-th child SeedSequence of ``root``.

    Equal to the ``index``-th entry of ``root.spawn(n)`` for a root that has
    spawned nothing yet, but independent of how many children were spawned
    before: chunk ``index`` gets the same stream whichever worker runs it,
    in whatever order.

    Parameters
    ----------
    root : numpy.random.SeedSequence
    index : int
        The chunk (or run) number, ``>= 0``.

    Returns
    -------
    numpy.random.SeedSequence

    Examples
    --------
    >>> from dpinfer.random import child_sequence
    >>> root = np.random.SeedSequence(7)
    >>> child_sequence(root, 2).spawn_key == np.random.SeedSequence(7).spawn(3)[2].spawn_key
    True
    """
    return np.random.SeedSequence(
        root.entropy, spawn_key=(*root.spawn_key, int(index)), pool_size=root.pool_size
    )


def chunk_generator(root: np.random.SeedSequence, index: int) -> np.random.Generator:
    """Return the generator of chunk ``index``, seeded by :func:`child_sequence`.

    Parameters
    ----------
    root : numpy.random.SeedSequence
    index : int
        The chunk number, ``>= 0``.

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> from dpinfer.random import as_seed_sequence, chunk_generator
    >>> root = as_seed_sequence(1)
    >>> draws = [chunk_generator(root, i).random() for i in (1, 0)]  # any order
    >>> draws == [chunk_generator(root, 1).random(), chunk_generator(root, 0).random()]
    True
    """
    return np.random.default_rng(child_sequence(root, index))


def seed_entropy(root: np.random.SeedSequence) -> str:
    """Return the entropy of ``root`` as a string, for result metadata.

    Examples
    --------
    >>> from dpinfer.random import seed_entropy
    >>> seed_entropy(np.random.SeedSequence(5))
    '5'
    """
    return str(root.entropy)
