"""Randomness for code built on dpinfer: the ``rng=`` convention and per-chunk streams.

Every stochastic function of dpinfer takes a keyword-only ``rng`` (None, an
int, a :class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`)
and normalises it once at the public boundary; work split into chunks draws
chunk ``i`` from the ``i``-th child of one root SeedSequence, so the same seed
gives the same result with any executor and any number of workers. A model,
simulator or example of one's own does the same with these functions:

- :func:`as_generator`: one Generator for ``rng`` (None: fresh OS entropy);
- :func:`as_seed_sequence`: the root SeedSequence for ``rng``;
- :func:`child_sequence` and :func:`chunk_generator`: the stream of chunk
  ``i`` of a root, whatever ran before it;
- :func:`check_rng`: refuse a bad ``rng`` up front without consuming it;
- :func:`seed_entropy`: the root's entropy as text, for metadata;
- :data:`RNGLike`: the type of an ``rng`` argument.

Examples
--------
>>> import numpy as np
>>> from dpinfer.random import as_seed_sequence, chunk_generator
>>> def simulate(n_chunks, *, rng=None):
...     root = as_seed_sequence(rng)
...     return np.concatenate([chunk_generator(root, i).normal(size=2) for i in range(n_chunks)])
>>> bool(np.array_equal(simulate(3, rng=1), simulate(3, rng=1)))
True
"""

from ._rng import (
    RNGLike,
    as_generator,
    as_seed_sequence,
    check_rng,
    child_sequence,
    chunk_generator,
    seed_entropy,
)

__all__ = [
    "RNGLike",
    "as_generator",
    "as_seed_sequence",
    "check_rng",
    "child_sequence",
    "chunk_generator",
    "seed_entropy",
]
