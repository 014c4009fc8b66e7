"""Privacy noise that the published results must not let anyone rebuild.

ABCDP publishes the seed of its public simulations (``attrs["seed"]``) so that
anyone can reproduce the proposals. If the privacy noise came from that seed,
or from anything spawned from it, anyone could rebuild the noisy threshold
and the noisy distances, and the run would not be private at all. The privacy
seed itself is never written to the results.

Seeds are compared by what NumPy actually mixes into a generator's state: the
entropy coerced to 32-bit words (so ``7``, ``[7]`` and ``[7, 0, 0, 0]`` are one
seed), padded with zeros to the pool size (which NumPy's mixing treats alike),
followed by the spawn key. A privacy seed whose words extend the public seed's
entropy words (the seed itself, any spelling of it, any child of it), or whose
words the public seed's extend (an ancestor of it), is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.random.bit_generator import _coerce_to_uint32_array

from .._rng import RNGLike, as_seed_sequence

__all__ = ["check_privacy_rng", "privacy_noise_label", "seed_words"]


def check_privacy_rng(privacy_rng: RNGLike, *, public: Iterable[RNGLike]) -> None:
    """Refuse a ``privacy_rng`` equal to, or derived from, any of the ``public`` seeds.

    Parameters
    ----------
    privacy_rng : None, int, SeedSequence or Generator
        The seed of the privacy noise (None, OS entropy, always passes).
    public : iterable
        The seeds of the public computation: the ``rng`` the user passed and the
        root ``SeedSequence`` whose entropy the results publish (None entries
        are skipped).
    """
    if privacy_rng is None:
        return
    mine = seed_words(privacy_rng, name="privacy_rng")
    for seed in public:
        if seed is None:
            continue
        if privacy_rng is seed and isinstance(seed, np.random.Generator):
            raise ValueError(
                "privacy_rng must not be the Generator used for the public simulations (rng); "
                "leave privacy_rng=None for fresh OS entropy"
            )
        theirs = seed_words(seed, name="rng", spawn_key=False)
        if mine is None or theirs is None:
            continue
        if _extends(mine, theirs) or _extends(seed_words(seed, name="rng"), mine):
            raise ValueError(
                f"privacy_rng ({_describe(privacy_rng)}) has the entropy of the published public "
                "seed (the same seed spelled another way, or one spawned from it, or its "
                "parent), so anyone could rebuild the privacy noise from the results; leave "
                "privacy_rng=None (OS entropy) for a real release"
            )


def privacy_noise_label(privacy_rng: RNGLike) -> str:
    """Return what ``attrs["privacy_noise"]`` says: never the seed itself."""
    return "os-entropy" if privacy_rng is None else "seeded"


def seed_words(value: RNGLike, *, name: str, spawn_key: bool = True) -> np.ndarray | None:
    """Return the 32-bit words NumPy mixes into the state seeded by ``value``.

    The entropy as NumPy coerces it, padded with zeros to the pool size, then
    (with ``spawn_key``) the spawn key. None if a Generator hides its seed.
    """
    if isinstance(value, np.random.Generator):
        sequence = getattr(value.bit_generator, "seed_seq", None)
        if not isinstance(sequence, np.random.SeedSequence):
            return None
    else:
        sequence = as_seed_sequence(value, name=name)
    entropy = _coerce_to_uint32_array(sequence.entropy)
    padding = np.zeros(max(0, sequence.pool_size - entropy.size), dtype=np.uint32)
    key = _coerce_to_uint32_array(sequence.spawn_key) if spawn_key else padding[:0]
    return np.concatenate([entropy, padding, key])


def _extends(words: np.ndarray, prefix: np.ndarray) -> bool:
    return words.size >= prefix.size and np.array_equal(words[: prefix.size], prefix)


def _describe(value) -> str:
    """Return the kind of seed, never the seed itself (a privacy seed is a secret)."""
    if isinstance(value, np.random.Generator):
        return f"a Generator({type(value.bit_generator).__name__})"
    return f"a {type(value).__name__}"
