"""ABCDP's guards: privacy noise that the published seed could rebuild, and settings from data.

``attrs["seed"]`` publishes the entropy of the public simulations; a privacy seed equal to
it, or derived from it, would let anyone rebuild the noisy threshold (a companion test
shows the leak with the guard removed). Settings computed from the confidential
observations must be charged; plain-number copies of them (``float(h)``, ``h * 1.0``,
float32) and float32 copies of the data are recognised as well.
"""

from __future__ import annotations

import numpy as np
import pytest
from samplers._sampler_registry import by_name, family  # tests/ is on the path

import dpinfer as dp
from dpinfer.distances import MMD, GaussianKernel, RandomFeatureMMD, median_heuristic
from dpinfer.distances.provenance import leaked_settings
from dpinfer.mechanisms.svt import SparseVector

from ._helpers import Recording, abcdp_module, capture, location_model

N = 40


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    observed = rng.normal(1.0, 1.0, size=(N, 1))
    simulated = rng.normal(0.0, 1.5, size=(N, 1))
    return observed, simulated, location_model(N)


def _same_generator():
    gen = np.random.default_rng(5)
    return gen, gen


DERIVED = {
    "same int": lambda: (7, 7),
    "SeedSequence of it": lambda: (7, np.random.SeedSequence(7)),
    "Generator of it": lambda: (7, np.random.default_rng(7)),
    "spawned child": lambda: (7, np.random.SeedSequence(7).spawn(3)[2]),
    "Generator of a child": lambda: (
        np.random.SeedSequence(7),
        np.random.default_rng(np.random.SeedSequence(7).spawn(1)[0]),
    ),
    "int of a SeedSequence": lambda: (np.random.SeedSequence(123456789), 123456789),
    "same Generator object": _same_generator,
}


@pytest.mark.parametrize("sampler", family("abcdp"), ids=str)
@pytest.mark.parametrize("case", list(DERIVED))
def test_privacy_seed_equal_to_or_derived_from_the_public_seed_is_refused(sampler, case):
    rng, privacy_rng = DERIVED[case]()
    with pytest.raises(ValueError, match="privacy_rng"):
        sampler.run(rng=rng, privacy_rng=privacy_rng)


@pytest.mark.parametrize("sampler", family("abcdp"), ids=str)
def test_an_independent_privacy_seed_runs_and_is_never_published(sampler):
    secret = 987654321987654321
    out = sampler.run(rng=7, privacy_rng=np.random.SeedSequence(secret))
    assert out.posterior.attrs["seed"] == "7"
    assert out.posterior.attrs["privacy_noise"] == "seeded"
    published = " ".join(str(v) for group in out.groups() for v in out[group].attrs.values())
    assert str(secret) not in published and str(secret)[:9] not in published


def test_privacy_rng_of_a_wrong_type_is_refused_by_name():
    abcdp = by_name("abcdp")
    with pytest.raises(TypeError, match="privacy_rng must be None, an int"):
        abcdp.run(rng=7, privacy_rng="7")
    with pytest.raises(ValueError, match="privacy_rng must be a non-negative integer"):
        abcdp.run(rng=7, privacy_rng=-3)


def test_companion_without_the_guard_the_published_seed_rebuilds_the_run(monkeypatch, data):
    # Planted bug: the guard removed. abcdp(rng=7, privacy_rng=7) then publishes "7", and a
    # run of the same sparse vector seeded from the published string reproduces every
    # published indicator: the privacy noise is public.
    observed, _, model = data
    monkeypatch.setattr(abcdp_module, "check_privacy_rng", lambda *a, **k: None)
    run = capture(
        monkeypatch,
        Recording,
        observed,
        RandomFeatureMMD(10, 1.0, rng=2),
        model=model,
        n_proposals=300,
        epsilon_total=2.0,
        epsilon_abc=0.3,
        c=5,
        rng=7,
        privacy_rng=7,
    )
    seed = int(run.output.posterior.attrs["seed"])
    rebuilt = SparseVector.run(run.svt, run.queries, rng=np.random.default_rng(seed))
    np.testing.assert_array_equal(
        np.flatnonzero(rebuilt.indicators), run.output.sample_stats["query_index"].values.ravel()
    )
    monkeypatch.undo()
    with pytest.raises(ValueError, match="rebuild the privacy noise"):
        by_name("abcdp").run(rng=7, privacy_rng=7)


# --- settings computed from the confidential observations ----------------------------------


NEAR_COPIES = {
    "float": float,
    "times one": lambda h: h * 1.0,
    "float32": np.float32,
    "float of float32": lambda h: float(np.float32(h)),
    "one-element array": lambda h: np.array([h]),
}


@pytest.mark.parametrize("copy", list(NEAR_COPIES))
def test_plain_copies_of_a_confidential_bandwidth_are_refused(data, copy):
    observed, _, _ = data
    h = NEAR_COPIES[copy](median_heuristic(observed))
    assert leaked_settings({"bandwidth": h}, observed) == ["bandwidth"]
    assert MMD(GaussianKernel(float(np.ravel(h)[0]))).confidential_settings(observed) == [
        "bandwidth"
    ]


def test_bandwidths_from_a_float32_copy_or_recomputed_by_hand_are_refused(data):
    observed, _, _ = data
    from_float32 = median_heuristic(observed.astype(np.float32))
    assert leaked_settings({"h": from_float32}, observed) == ["h"]
    d = np.abs(observed - observed.T)[np.triu_indices(N, 1)]
    by_hand = float(np.median(d[d > 0]))  # never went through dpinfer
    assert leaked_settings({"h": by_hand}, observed) == ["h"]


def test_settings_from_public_data_pass_in_any_form(data):
    observed, simulated, _ = data
    h = median_heuristic(simulated)
    for value in (h, float(h), np.float32(h), h * 1.0, 0.5, 200.0):
        assert leaked_settings({"bandwidth": value, "clip": 200.0}, observed) == []


def test_the_rule_covers_the_threshold_and_says_how_to_pay(data):
    observed, simulated, model = data
    call_kwargs = dict(model=model, n_proposals=60, c=3, rng=1, progressbar=False)
    confidential = float(median_heuristic(observed))
    with pytest.raises(ValueError, match=r"epsilon_abc was computed from the confidential.*"):
        dp.abcdp(
            observed,
            RandomFeatureMMD(10, 1.0, rng=2),
            epsilon_total=2.0,
            epsilon_abc=confidential,
            **call_kwargs,
        )
    with pytest.raises(ValueError, match=r"bandwidth .*charged=Privacy"):
        dp.abcdp(
            observed,
            MMD(confidential),
            epsilon_total=2.0,
            epsilon_abc=0.3,
            **call_kwargs,
        )
    paid = dp.abcdp(
        observed,
        MMD(confidential),
        epsilon_total=2.0,
        epsilon_abc=0.3,
        charged=dp.Privacy(0.5),
        **call_kwargs,
    )
    assert paid.posterior.attrs["epsilon"] == pytest.approx(2.5)
