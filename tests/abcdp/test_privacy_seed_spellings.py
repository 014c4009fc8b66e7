"""Every spelling of the published seed, and every seed derived from it, is refused.

NumPy seeds a generator with the entropy coerced to 32-bit words: ``7``, ``[7]``,
``[7, 0, 0, 0]``, ``SeedSequence([7])`` and ``Generator(PCG64([7]))`` give one stream, and
children spawned from a seed differ from it only by a public spawn key. The guard compares
those words, so the property tests below draw seeds and spellings at random and check that
the guard's verdict agrees with what the streams show.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from samplers._sampler_registry import by_name  # tests/ is on the path

from dpinfer.samplers.abcdp._privacy_seed import check_privacy_rng, seed_words

SEEDS = st.integers(min_value=0, max_value=2**96)


def _words(seed: int) -> list[int]:
    return [int(w) for w in seed_words(seed, name="seed", spawn_key=False)]


SPELLINGS = {
    "int": lambda s: s,
    "list": lambda s: [s],
    "padded list": lambda s: _words(s),
    "SeedSequence": lambda s: np.random.SeedSequence(s),
    "SeedSequence of a list": lambda s: np.random.SeedSequence([s]),
    "default_rng": lambda s: np.random.default_rng(s),
    "default_rng of a list": lambda s: np.random.default_rng([s]),
    "PCG64 of a list": lambda s: np.random.Generator(np.random.PCG64([s])),
    "Philox": lambda s: np.random.Generator(np.random.Philox(s)),
    "MT19937": lambda s: np.random.Generator(np.random.MT19937(s)),
}
DERIVED = {
    "child": lambda s: np.random.SeedSequence(s).spawn(3)[2],
    "grandchild": lambda s: np.random.SeedSequence(s).spawn(2)[1].spawn(4)[3],
    "spawn key by hand": lambda s: np.random.SeedSequence(s, spawn_key=(5,)),
    "child's words as entropy": lambda s: np.random.SeedSequence(_words(s) + [5]),
    "Generator of a child": lambda s: np.random.default_rng(np.random.SeedSequence(s).spawn(1)[0]),
    "spawned Generator": lambda s: np.random.default_rng(s).spawn(2)[1],
}


def _refused(privacy_rng, public) -> bool:
    try:
        check_privacy_rng(privacy_rng, public=public)
    except ValueError as err:
        assert "rebuild the privacy noise" in str(err) or "must not be the Generator" in str(err)
        return True
    return False


def _as_list(value):
    # the list spellings are not seeds dpinfer's rng takes; NumPy's SeedSequence takes them
    return np.random.SeedSequence(value) if isinstance(value, list) else value


@settings(max_examples=60, deadline=None)
@given(
    seed=SEEDS,
    public=st.sampled_from(sorted(SPELLINGS)),
    private=st.sampled_from(sorted(SPELLINGS)),
)
def test_every_spelling_of_the_public_seed_is_refused(seed, public, private):
    public_rng = _as_list(SPELLINGS[public](seed))
    private_rng = _as_list(SPELLINGS[private](seed))
    assert _refused(private_rng, [public_rng])


@settings(max_examples=60, deadline=None)
@given(
    seed=SEEDS, public=st.sampled_from(sorted(SPELLINGS)), derived=st.sampled_from(sorted(DERIVED))
)
def test_seeds_derived_from_the_public_seed_are_refused_both_ways(seed, public, derived):
    public_rng = _as_list(SPELLINGS[public](seed))
    child = DERIVED[derived](seed)
    assert _refused(child, [public_rng])  # a child of the published seed
    if not isinstance(public_rng, np.random.Generator):
        assert _refused(_as_list(SPELLINGS[public](seed)), [child])  # its parent


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, other=SEEDS, private=st.sampled_from(sorted(SPELLINGS)))
def test_independent_seeds_pass(seed, other, private):
    if _words(seed)[: len(_words(other))] == _words(other) or _words(other)[
        : len(_words(seed))
    ] == _words(seed):
        return  # one is the other spelled longer: not independent
    assert not _refused(_as_list(SPELLINGS[private](other)), [seed])


@settings(max_examples=40, deadline=None)
@given(seed=SEEDS, spelling=st.sampled_from(sorted(SPELLINGS)))
def test_the_words_are_what_numpy_seeds_with(seed, spelling):
    # The guard's premise: equal words give equal streams. Rebuild the state from the words.
    value = _as_list(SPELLINGS[spelling](seed))
    if isinstance(value, np.random.Generator):
        value = value.bit_generator.seed_seq
    sequence = np.random.SeedSequence(value) if isinstance(value, int) else value
    rebuilt = np.random.SeedSequence([int(w) for w in seed_words(value, name="v")])
    np.testing.assert_array_equal(rebuilt.generate_state(8), sequence.generate_state(8))


def test_companion_comparing_the_entropy_as_text_misses_list_spellings():
    # Planted bug: the old guard compared str(entropy); [7] and 7 then look different
    # although they seed the same stream, which the test above would have caught.
    def old_guard(private, public):
        return str(np.random.SeedSequence(private).entropy) == str(
            np.random.SeedSequence(public).entropy
        )

    assert not old_guard([7], 7)
    assert np.random.default_rng([7]).random() == np.random.default_rng(7).random()
    assert _refused(np.random.SeedSequence([7]), [7])


@pytest.mark.parametrize(
    ("rng", "privacy_rng"),
    [
        (7, np.random.default_rng([7])),
        (7, np.random.SeedSequence([7])),
        (7, np.random.Generator(np.random.PCG64([7]))),
        (np.random.SeedSequence([7]), 7),
    ],
    ids=["default_rng([7])", "SeedSequence([7])", "PCG64([7])", "rng=SeedSequence([7])"],
)
def test_the_reported_spellings_are_refused_by_abcdp(rng, privacy_rng):
    with pytest.raises(ValueError, match="rebuild the privacy noise"):
        by_name("abcdp").run(rng=rng, privacy_rng=privacy_rng)


def test_the_message_never_shows_the_privacy_seed():
    secret = 918273645546372819
    with pytest.raises(ValueError) as err:
        check_privacy_rng(secret, public=[secret])
    assert str(secret) not in str(err.value) and str(secret)[:8] not in str(err.value)
