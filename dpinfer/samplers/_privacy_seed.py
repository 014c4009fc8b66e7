"""Privacy noise that the published results must not let anyone rebuild.

ABCDP publishes the seed of its public simulations (``attrs["seed"]``) so that
anyone can reproduce the proposals. If the privacy noise came from that seed,
or from anything spawned from it, anyone could rebuild the noisy threshold
and the noisy distances, and the run would not be private at all. The privacy
seed itself is never written to the results.
"""

from __future__ import annotations

import numpy as np

from .._rng import RNGLike, as_seed_sequence

__all__ = ["check_privacy_rng", "privacy_noise_label"]


def check_privacy_rng(privacy_rng: RNGLike, *, rng: RNGLike, published_seed: str) -> None:
    """Refuse a ``privacy_rng`` equal to, or derived from, ``rng`` or the published seed.

    Derived means: the same object, the same integer seed, or a ``SeedSequence``
    or ``Generator`` with the same entropy (children spawned from a root share
    its entropy and differ only in their spawn key, which is public).
    """
    if privacy_rng is None:
        return
    mine = _entropy("privacy_rng", privacy_rng)
    public = {published_seed}
    if rng is not None:
        if isinstance(rng, np.random.Generator) and privacy_rng is rng:
            raise ValueError(
                "privacy_rng must not be the Generator used for the public simulations (rng); "
                "leave privacy_rng=None for fresh OS entropy"
            )
        theirs = _entropy("rng", rng)
        if theirs is not None:
            public.add(str(theirs))
    if mine is not None and str(mine) in public:
        raise ValueError(
            f"privacy_rng={privacy_rng!r} has the entropy of the published public seed "
            f"({str(mine)[:40]}), so anyone could rebuild the privacy noise from the results; "
            "leave privacy_rng=None (OS entropy) for a real release"
        )


def privacy_noise_label(privacy_rng: RNGLike) -> str:
    """Return what ``attrs["privacy_noise"]`` says: never the seed itself."""
    return "os-entropy" if privacy_rng is None else "seeded"


def _entropy(name: str, value: RNGLike):
    """Return the entropy a seed-like value carries (None if a Generator hides it)."""
    if isinstance(value, np.random.SeedSequence):
        return value.entropy
    if isinstance(value, np.random.Generator):
        seed_seq = getattr(value.bit_generator, "seed_seq", None)
        return seed_seq.entropy if isinstance(seed_seq, np.random.SeedSequence) else None
    return as_seed_sequence(value, name=name).entropy  # an int seed is its own entropy
