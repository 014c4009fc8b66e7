"""Privacy noise that the published results must not let anyone rebuild.

ABCDP publishes the seed of its public simulations (``attrs["seed"]``) so that
anyone can reproduce the proposals. If the privacy noise came from that seed,
or from anything derived from it, anyone could rebuild the noisy threshold
and the noisy distances, and the run would not be private at all. The privacy
seed itself is never written to the results.

Two checks, both needed:

* **Seeds** are compared by what NumPy actually mixes into a generator's state:
  the entropy coerced to 32-bit words (so ``7``, ``[7]`` and ``[7, 0, 0, 0]``
  are one seed), padded with zeros to the pool size (which NumPy's mixing
  treats alike), followed by the spawn key. A privacy seed whose words extend
  the public seed's entropy words (the seed itself, any spelling of it, any
  child of it), or whose words the public seed's extend (an ancestor of it),
  is refused.
* **Streams** are compared by their identity, which a generator keeps however it
  was made: a jumped, advanced or state-copied generator has a fresh seed and the
  published stream in its state. A PCG64 or PCG64DXSM stream is identified by its
  increment, which jumps, advances and copies keep; a Philox stream by its key. An
  SFC64 or MT19937 stream has no such invariant: its whole state is compared. The
  privacy generator's identity is compared with that of every generator the
  published seed builds: each bit generator NumPy offers, seeded from the
  published entropy with no spawn key, with the public seed's spawn key, and with
  each of these followed by the child index of any chunk of the run (at least the
  first :data:`CHILDREN`) or by two indices below :data:`GRANDCHILDREN`; and
  MT19937's legacy seeding (``RandomState``) of the entropy. An SFC64 or MT19937
  that has drawn numbers, or an MT19937 that was jumped, is not recognised: leave
  ``privacy_rng=None``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np

# private to NumPy and absent from its stubs, but it is the coercion that seeding applies
from numpy.random.bit_generator import _coerce_to_uint32_array  # type: ignore[attr-defined]

from ..._rng import RNGLike, as_seed_sequence

__all__ = ["CHILDREN", "GRANDCHILDREN", "check_privacy_rng", "privacy_noise_label", "seed_words"]

#: Children of a published seed whose streams are compared (more if the run spawns more).
CHILDREN = 256
#: Each of the first this many children's first this many children are compared too.
GRANDCHILDREN = 16

_BUILDS = {
    "increment": np.random.PCG64,
    "key": np.random.Philox,
    "SFC64": np.random.SFC64,
    "MT19937": np.random.MT19937,
}
_MATCH = {
    "increment": "the increment of the published stream (which jumps, advances and copies keep)",
    "key": "the key of the published stream (which jumps, advances and copies keep)",
    "SFC64": "the state of a generator seeded from the published seed",
    "MT19937": "the state of a generator seeded from the published seed",
}


def check_privacy_rng(
    privacy_rng: RNGLike, *, public: Iterable[RNGLike], children: int = 0
) -> None:
    """Refuse a ``privacy_rng`` equal to, or derived from, any of the ``public`` seeds.

    Parameters
    ----------
    privacy_rng : None, int, SeedSequence or Generator
        The seed of the privacy noise (None, OS entropy, always passes).
    public : iterable
        The seeds of the public computation: the ``rng`` the user passed and the
        root ``SeedSequence`` whose entropy the results publish (None entries
        are skipped).
    children : int, default 0
        The number of children the run spawned from its root (one per chunk):
        their streams are compared too, beyond the first :data:`CHILDREN`.

    Raises
    ------
    ValueError
        Naming what matched (the seed, the increment of the published stream,
        ...), never the seed or the state itself.

    Examples
    --------
    Code that runs ABCDP's pieces itself (public draws once, several noisy
    runs) checks its privacy seed as :func:`dpinfer.abcdp` does:

    >>> import numpy as np
    >>> from dpinfer.samplers import check_privacy_rng
    >>> check_privacy_rng(None, public=[7])  # OS entropy: always private
    >>> child = np.random.SeedSequence(7).spawn(2)[1]
    >>> check_privacy_rng(child, public=[7])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: privacy_rng (a SeedSequence) has the entropy of the published public seed ...
    """
    if privacy_rng is None:
        return
    mine = seed_words(privacy_rng, name="privacy_rng")
    public = [seed for seed in public if seed is not None]
    for seed in public:
        if privacy_rng is seed and isinstance(seed, np.random.Generator):
            raise ValueError(
                "privacy_rng must not be the Generator used for the public simulations (rng); "
                "leave privacy_rng=None for fresh OS entropy"
            )
        theirs = seed_words(seed, name="rng", spawn_key=False)
        theirs_keyed = seed_words(seed, name="rng")
        if mine is None or theirs is None or theirs_keyed is None:
            continue
        if _extends(mine, theirs) or _extends(theirs_keyed, mine):
            raise ValueError(
                f"privacy_rng ({_describe(privacy_rng)}) has the entropy of the published public "
                "seed (the same seed spelled another way, or one spawned from it, or its "
                "parent), so anyone could rebuild the privacy noise from the results; leave "
                "privacy_rng=None (OS entropy) for a real release"
            )
    if isinstance(privacy_rng, np.random.Generator):
        match = _stream_match(privacy_rng.bit_generator, public, max(CHILDREN, int(children)))
        if match is not None:
            raise ValueError(
                f"privacy_rng ({_describe(privacy_rng)}) draws from a stream that anyone can "
                f"rebuild from the published public seed: it has {match}, so the privacy noise "
                "could be rebuilt from the results; leave privacy_rng=None (OS entropy) for a "
                "real release"
            )


def privacy_noise_label(privacy_rng: RNGLike) -> str:
    """Return what ``attrs["privacy_noise"]`` says: never the seed itself."""
    return "os-entropy" if privacy_rng is None else "seeded"


def seed_words(value: RNGLike, *, name: str, spawn_key: bool = True) -> np.ndarray | None:
    """Return the 32-bit words NumPy mixes into the state seeded by ``value``.

    The entropy as NumPy coerces it, padded with zeros to the pool size, then
    (with ``spawn_key``) the spawn key. None if a Generator hides its seed.
    """
    sequence = _sequence(value, name=name)
    if sequence is None:
        return None
    entropy = _coerce_to_uint32_array(sequence.entropy)
    padding = np.zeros(max(0, sequence.pool_size - entropy.size), dtype=np.uint32)
    key = _coerce_to_uint32_array(sequence.spawn_key) if spawn_key else padding[:0]
    return np.concatenate([entropy, padding, key])


def _sequence(value: RNGLike, *, name: str) -> np.random.SeedSequence | None:
    if isinstance(value, np.random.Generator):
        sequence = getattr(value.bit_generator, "seed_seq", None)
        return sequence if isinstance(sequence, np.random.SeedSequence) else None
    return as_seed_sequence(value, name=name)


def _stream_match(bit_generator, public: list, children: int) -> str | None:
    """Return what identifies ``bit_generator``'s stream as a published one, or None."""
    mine = _identity(bit_generator)
    if mine is None:
        return None
    family, identity = mine
    for seed in public:
        if isinstance(seed, np.random.Generator) and _identity(seed.bit_generator) == mine:
            return _MATCH[family].replace("the published stream", "the public rng's stream")
        sequence = _sequence(seed, name="rng")
        if sequence is None or sequence.entropy is None:
            continue
        # an int or a sequence of them in NumPy's stubs, but kept as given: a NumPy integer
        # or array too
        entropy: Any = sequence.entropy
        entropy = int(entropy) if np.ndim(entropy) == 0 else tuple(int(e) for e in entropy)
        key = tuple(int(k) for k in sequence.spawn_key)
        if identity in _published(family, entropy, sequence.pool_size, key, children):
            return _MATCH[family]
    return None


def _identity(bit_generator) -> tuple[str, object] | None:
    """Return the family of a bit generator's stream and what identifies the stream in it."""
    state = getattr(bit_generator, "state", None)
    if not (isinstance(state, dict) and isinstance(state.get("state"), dict)):
        return None
    family, inner = state.get("bit_generator"), state["state"]
    if family in ("PCG64", "PCG64DXSM"):
        return "increment", int(inner["inc"])
    if family == "Philox":
        return "key", tuple(int(k) for k in inner["key"])
    if family == "SFC64":
        return "SFC64", tuple(int(w) for w in inner["state"])
    if family == "MT19937":
        return "MT19937", (np.asarray(inner["key"], dtype=np.uint32).tobytes(), int(inner["pos"]))
    return None


@functools.lru_cache(maxsize=64)
def _published(family: str, entropy, pool_size: int, key: tuple, children: int) -> frozenset:
    """Return the identities of every stream of ``family`` that the published seed builds."""
    build = _BUILDS[family]
    found = {
        _known_identity(build(np.random.SeedSequence(entropy, spawn_key=k, pool_size=pool_size)))
        for k in _spawn_keys(key, children)
    }
    if family == "MT19937":
        found |= _legacy_seeded(entropy)
    return frozenset(found)


def _spawn_keys(key: tuple, children: int) -> set[tuple]:
    """No key and ``key``, each alone, with a child index, or with two small indices."""
    bases = {(), key}
    keys = set(bases)
    for base in bases:
        keys.update((*base, i) for i in range(children))
        keys.update((*base, i, j) for i, j in itertools.product(range(GRANDCHILDREN), repeat=2))
    return keys


def _legacy_seeded(entropy) -> set:
    """Return the MT19937 state that ``RandomState(entropy)`` seeds, if it takes the entropy."""
    try:
        legacy = np.random.RandomState(entropy).get_state(legacy=False)
    except (TypeError, ValueError):
        return set()
    bit_generator = np.random.MT19937()
    bit_generator.state = {"bit_generator": "MT19937", "state": legacy["state"]}
    return {_known_identity(bit_generator)}


def _known_identity(bit_generator) -> object:
    """Return the identity of a stream of one of the families in ``_BUILDS``."""
    found = _identity(bit_generator)
    if found is None:
        raise TypeError(f"a {type(bit_generator).__name__} stream has no identity")
    return found[1]


def _extends(words: np.ndarray, prefix: np.ndarray) -> bool:
    return words.size >= prefix.size and np.array_equal(words[: prefix.size], prefix)


def _describe(value) -> str:
    """Return the kind of seed, never the seed itself (a privacy seed is a secret)."""
    if isinstance(value, np.random.Generator):
        return f"a Generator({type(value.bit_generator).__name__})"
    return f"a {type(value).__name__}"
