"""A privacy generator is judged by the stream it draws from, not by its seed.

A generator jumped, advanced, drawn from or state-copied from one that the published seed
builds has a fresh seed but the published stream in its state. The property tests draw a
published seed, a generator that it builds (every bit generator NumPy offers, seeded from
the seed, a child or a grandchild of it, or by legacy seeding) and a derivation of it
(jumps, an advance by any amount, draws, a copy of its state into a fresh bit generator).
Each case first shows that anyone holding the published seed alone rebuilds the derived
stream, then that the guard refuses it, naming the kind of match and never a value. The
pipeline test rebuilds the published indicators of a real ``dp.abcdp`` run from its
published seed with the guard removed, then shows the guard refusing the same call.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from samplers._sampler_registry import by_name, family  # tests/ is on the path

import dpinfer as dp
import dpinfer.models
from dpinfer.distances import RandomFeatureMMD
from dpinfer.mechanisms.svt import SparseVector
from dpinfer.samplers.abcdp import _privacy_seed
from dpinfer.samplers.abcdp._privacy_seed import CHILDREN, GRANDCHILDREN, check_privacy_rng

from ._helpers import Recording, abcdp_module, capture, location_model

SEEDS = st.integers(min_value=0, max_value=2**64)
FAMILIES = {
    "PCG64": np.random.PCG64,
    "PCG64DXSM": np.random.PCG64DXSM,
    "Philox": np.random.Philox,
    "SFC64": np.random.SFC64,
    "MT19937": np.random.MT19937,
}
#: Families whose stream has an invariant (the increment, the key) that jumps, advances and
#: draws keep; the others are recognised as copies of a generator's state when seeded.
INVARIANT = {"PCG64": "increment", "PCG64DXSM": "increment", "Philox": "key"}


@dataclass(frozen=True)
class Derivation:
    """A recipe from a published seed to a generator: what a careless user might pass."""

    family: str
    spawn_key: tuple = ()
    steps: tuple = ()  # ("jump", n), ("advance", n) or ("draw", n), in order
    copy: bool = False  # the state copied into a fresh bit generator (fresh entropy)
    legacy: bool = False  # MT19937 seeded as RandomState(seed) seeds it

    def build(self, seed: int) -> np.random.Generator:
        """The generator, built from the published ``seed`` alone."""
        if self.legacy:
            bg = np.random.MT19937()
            bg.state = {"bit_generator": "MT19937", "state": _legacy_state(seed)}
        else:
            bg = FAMILIES[self.family](np.random.SeedSequence(seed, spawn_key=self.spawn_key))
        for kind, n in self.steps:
            if kind == "jump":
                bg = bg.jumped(n)
            elif kind == "advance":
                bg.advance(n)
            else:
                np.random.Generator(bg).random(n)
        if self.copy:
            fresh = FAMILIES[self.family]()
            fresh.state = bg.state
            bg = fresh
        return np.random.Generator(bg)

    @property
    def seeded_from_it(self) -> bool:
        """Whether the generator still carries the published seed (the seed check sees it)."""
        return not (self.copy or self.legacy or any(kind == "jump" for kind, _ in self.steps))

    def expected_message(self) -> str:
        """A pattern of the refusal: the kind of match (a public Generator's own stream too)."""
        if self.seeded_from_it:
            return "has the entropy of the published public seed"
        if self.family in INVARIANT:
            return f"the {INVARIANT[self.family]} of the (published|public rng's) stream"
        return "the state of a generator seeded from the published seed"


def _legacy_state(seed: int) -> dict:
    return np.random.RandomState(seed).get_state(legacy=False)["state"]


SPAWN_KEYS = st.one_of(
    st.just(()),
    st.tuples(st.integers(0, CHILDREN - 1)),
    st.tuples(st.integers(0, GRANDCHILDREN - 1), st.integers(0, GRANDCHILDREN - 1)),
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("jump"), st.integers(1, 3)),
        st.tuples(st.just("advance"), st.integers(0, 2**128 - 1)),
        st.tuples(st.just("draw"), st.integers(1, 50)),
    ),
    max_size=3,
).map(tuple)


@st.composite
def derivations(draw) -> tuple[int, Derivation]:
    family = draw(st.sampled_from(sorted(FAMILIES)))
    if family == "MT19937" and draw(st.booleans()):
        seed = draw(st.integers(0, 2**32 - 1))  # what legacy seeding takes
        return seed, Derivation(family, legacy=True)
    seed, key = draw(SEEDS), draw(SPAWN_KEYS)
    if family in INVARIANT:
        return seed, Derivation(family, key, draw(STEPS), draw(st.booleans()))
    return seed, Derivation(family, key, copy=draw(st.booleans()))


#: ABCDP's settings in the runs below.
SETTINGS = {"epsilon_total": 2.0, "epsilon_abc": 0.3, "c": 5}
PUBLIC = {
    "int": lambda s: s,
    "SeedSequence": np.random.SeedSequence,
    "default_rng": np.random.default_rng,
}


def _refusal(privacy_rng, public) -> str | None:
    try:
        check_privacy_rng(privacy_rng, public=public)
    except ValueError as err:
        return str(err)
    return None


@settings(max_examples=120, deadline=None)
@given(case=derivations(), public=st.sampled_from(sorted(PUBLIC)))
def test_every_derivation_of_the_published_seed_is_refused(case, public):
    seed, derivation = case
    # the leak is real: the published seed alone rebuilds the derived stream
    attacker, privacy_rng = derivation.build(seed), derivation.build(seed)
    np.testing.assert_array_equal(attacker.random(6), derivation.build(seed).random(6))
    message = _refusal(privacy_rng, [PUBLIC[public](seed)])
    assert message is not None, f"{derivation} of the published seed was accepted"
    assert re.search(derivation.expected_message(), message), message
    state = privacy_rng.bit_generator.state["state"]
    secrets = [str(v) for v in np.ravel(list(state.values())[0])] + [str(seed)]
    assert not any(len(s) > 4 and s in message for s in secrets), "a value is shown"


@settings(max_examples=60, deadline=None)
@given(case=derivations(), other=SEEDS)
def test_the_same_derivations_of_an_independent_seed_pass(case, other):
    seed, derivation = case
    words = [_privacy_seed.seed_words(s, name="s", spawn_key=False) for s in (seed, other)]
    if any(np.array_equal(a[: b.size], b) for a, b in (words, words[::-1]) if a.size >= b.size):
        return  # one seed is the other spelled longer: not independent
    if derivation.legacy and other >= 2**32:
        other %= 2**32
        if other == seed:
            return
    assert _refusal(derivation.build(other), [seed]) is None


def test_the_issues_generators_are_refused_by_abcdp():
    copied = np.random.PCG64()
    copied.state = np.random.PCG64(7).state
    for privacy_rng in (
        np.random.Generator(np.random.PCG64(7).jumped()),
        np.random.Generator(copied),
    ):
        with pytest.raises(ValueError, match="the increment of the published stream"):
            by_name("abcdp").run(rng=7, privacy_rng=privacy_rng)


def test_the_children_of_every_chunk_of_the_run_are_compared(location):
    # a run of CHILDREN + 50 chunks spawns children beyond those compared by default
    observed, model = location
    child = np.random.SeedSequence(11, spawn_key=(CHILDREN + 40,))
    privacy_rng = np.random.Generator(np.random.PCG64(child).jumped())
    assert _refusal(privacy_rng, [11]) is None  # beyond the default: the run must say so
    run = dict(SETTINGS, model=model, n_proposals=CHILDREN + 50, batch_size=1, rng=11)
    run["progressbar"] = False
    with pytest.raises(ValueError, match="increment of the published stream"):
        dp.abcdp(observed, RandomFeatureMMD(10, 1.0, rng=2), privacy_rng=privacy_rng, **run)


def test_a_public_generator_s_own_stream_is_compared():
    public = np.random.Generator(np.random.PCG64(123))
    copied = np.random.PCG64()
    copied.state = public.bit_generator.state
    with pytest.raises(ValueError, match="the increment of the public rng's stream"):
        check_privacy_rng(np.random.Generator(copied), public=[public])


# --- the whole pipeline: the published seed rebuilds the published indicators ------------

PIPELINE = st.one_of(
    st.builds(
        Derivation,
        family=st.sampled_from(["PCG64", "PCG64DXSM", "Philox"]),
        spawn_key=SPAWN_KEYS,
        steps=STEPS,
        copy=st.just(True),
    ),
    st.builds(Derivation, family=st.sampled_from(["SFC64", "MT19937"]), copy=st.just(True)),
)


@pytest.fixture(scope="module")
def location():
    observed = np.random.default_rng(3).normal(1.0, 1.0, size=(40, 1))
    return observed, location_model(40)


@settings(max_examples=12, deadline=None)
@given(derivation=PIPELINE, seed=st.integers(0, 2**32))
def test_with_the_guard_removed_the_published_seed_rebuilds_the_noise(location, derivation, seed):
    observed, model = location
    run_kwargs = dict(SETTINGS, model=model, n_proposals=300, rng=seed)
    run_kwargs["privacy_rng"] = derivation.build(seed)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(abcdp_module, "check_privacy_rng", lambda *a, **k: None)
        run = capture(mp, Recording, observed, RandomFeatureMMD(10, 1.0, rng=2), **run_kwargs)
    published = int(run.output.posterior.attrs["seed"])
    rebuilt = SparseVector.run(run.svt, run.queries, rng=derivation.build(published))
    np.testing.assert_array_equal(
        np.flatnonzero(rebuilt.indicators), run.output.sample_stats["query_index"].values.ravel()
    )
    run_kwargs["privacy_rng"] = derivation.build(seed)
    with pytest.raises(ValueError, match=derivation.expected_message()):
        dp.abcdp(observed, RandomFeatureMMD(10, 1.0, rng=2), progressbar=False, **run_kwargs)


def test_companion_a_guard_of_seeds_only_accepts_the_derivations(monkeypatch):
    # Planted bug: the guard before streams were compared (seeds only). The jumped and the
    # copied generators of the issue pass it, so the tests above can fail.
    monkeypatch.setattr(_privacy_seed, "_stream_match", lambda *args: None)
    for derivation in (
        Derivation("PCG64", steps=(("jump", 1),)),
        Derivation("PCG64", copy=True),
        Derivation("Philox", spawn_key=(3,), steps=(("advance", 2**100),), copy=True),
        Derivation("SFC64", copy=True),
    ):
        assert _refusal(derivation.build(7), [7]) is None


# --- every public entry point that takes a privacy_rng goes through the guard ---------------


def _entry_points() -> set[str]:
    modules = [dp]
    for info in pkgutil.walk_packages(dpinfer.models.__path__, "dpinfer.models."):
        modules.append(importlib.import_module(info.name))
    found = set()
    for module in modules:
        for name, obj in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(obj):
                continue
            if module is not dp and not obj.__module__.startswith("dpinfer.models"):
                continue  # imported from dpinfer, not an entry point of the examples
            if "privacy_rng" in inspect.signature(obj).parameters:
                found.add(f"{obj.__module__}.{obj.__qualname__}")
    return found


def _calls() -> dict:
    from dpinfer.models import covid_polynomial, mixture_uniform, tuberculosis

    small = dict(n_observations=10, n_proposals=20, n_features=5, rng=7)
    samplers = {
        f"{case.function.__module__}.{case.function.__qualname__}": (
            lambda p, case=case: case.run(rng=7, privacy_rng=p)
        )
        for case in family("abcdp")
    }
    return {
        **samplers,
        "dpinfer.models.covid_polynomial.run_experiment": lambda p: (
            covid_polynomial.run_experiment(22.0, n_proposals=50, rng=7, privacy_rng=p)
        ),
        "dpinfer.models.mixture_uniform._figure3.run_experiment": lambda p: (
            mixture_uniform.run_experiment(
                c=2, epsilon_abc=0.1, epsilon_total=1.0, privacy_rng=p, **small
            )
        ),
        "dpinfer.models.mixture_uniform._figure3.figure3": lambda p: mixture_uniform.figure3(
            noise_repetitions=1, privacy_rng=p, **small
        ),
        "dpinfer.models.tuberculosis._errors.error_table": lambda p: tuberculosis.error_table(
            10, n_proposals=20, noise_repetitions=1, rng=7, privacy_rng=p, progressbar=False
        ),
    }


def test_the_table_below_lists_every_entry_point_taking_a_privacy_rng():
    assert _entry_points() == set(_calls()), "a new entry point needs a row in _calls"


@pytest.mark.parametrize("name", sorted(_calls()))
def test_every_entry_point_refuses_a_derived_stream_before_it_runs(name):
    call = _calls()[name]
    with pytest.raises(ValueError, match="increment of the published stream"):
        call(np.random.Generator(np.random.PCG64(7).jumped()))
    with pytest.raises(ValueError, match="entropy of the published public seed"):
        call(np.random.SeedSequence(7).spawn(2)[1])
