"""ABCDP on the tuberculosis record setup (Park et al. 2021, Section 6.3).

The confidential data are ``n`` outbreak records; each public draw simulates ``n``
pseudo-records and the distance averages the per-pair distances clipped at ``C``
(sensitivity ``C / n``). Checked here: the noiseless limit is rejection ABC on the same
draws; the calibration of both resampling modes to the last digit (Theorem 1); and an
empirical audit of the whole output on neighbouring record sets, which flags a distance
that clips after averaging but declares the same sensitivity.
"""

from __future__ import annotations

import math
import weakref

import numpy as np
import pytest

import dpinfer as dp
from dpinfer._rng import as_seed_sequence, chunk_generator
from dpinfer.audit import audit_epsilon
from dpinfer.distances import PairedClippedL2
from dpinfer.models import tuberculosis as tb

from ._helpers import Recording, capture, pattern_code, replay

N = 20  # confidential records (small, for test time)
T = 60  # public proposals
BATCH = 16  # draws per chunk: four chunks
C_SMALL = 5  # acceptances before halting, fewer than the paper's 10 for the small T


@pytest.fixture(scope="module")
def observed():
    return tb.confidential_records(N, rng=0)


def _abcdp_on_model(observed, **kwargs):
    options = dict(
        model=tb.model(n_records=N),
        n_proposals=T,
        batch_size=BATCH,
        rng=7,
        epsilon_abc=tb.EPSILON_ABC,
        c=C_SMALL,
        progressbar=False,
    )
    return dp.abcdp(observed, tb.distance(), **(options | kwargs))


@pytest.fixture(scope="module")
def rejection_reference(observed):
    """Distances of the same public draws, simulated chunk by chunk as documented.

    Chunk ``i`` draws its parameters and then its pseudo-records from the generator
    spawned from the root seed by index ``i`` (``dpinfer._rng.chunk_generator``).
    """
    model, root = tb.model(n_records=N), as_seed_sequence(7)
    params, distances = [], []
    for i, start in enumerate(range(0, T, BATCH)):
        gen = chunk_generator(root, i)
        theta = model.prior.sample(min(BATCH, T - start), gen)
        pseudo = model.simulate(theta, gen)
        params.append(theta)
        distances.append(tb.distance()(observed, pseudo))
    merged = {k: np.concatenate([p[k] for p in params]) for k in tb.PARAMETERS}
    return merged, np.concatenate(distances)


@pytest.mark.parametrize("resample", [False, True])  # no noise: resampling changes nothing
def test_infinite_budget_is_rejection_abc_on_the_same_draws(
    observed, rejection_reference, resample
):
    params, rho = rejection_reference
    hits = np.flatnonzero(rho <= tb.EPSILON_ABC)
    assert C_SMALL < hits.size < T  # the run halts after c acceptances, before the end
    expected = hits[:C_SMALL]
    out = _abcdp_on_model(observed, epsilon_total=math.inf, resample=resample)
    np.testing.assert_array_equal(out.sample_stats["query_index"].values.ravel(), expected)
    for name in tb.PARAMETERS:
        np.testing.assert_array_equal(out.posterior[name].values.ravel(), params[name][expected])
        np.testing.assert_array_equal(out.prior[name].values.ravel(), params[name])
    assert out.posterior.attrs["n_queries"] == expected[-1] + 1
    assert out.posterior.attrs["b"] == 0.0


def test_public_draws_helper_computes_the_same_draws(observed, rejection_reference):
    params, rho = rejection_reference
    helper_params, helper = tb.public_draws(
        observed, n_proposals=T, batch_size=BATCH, rng=7, progressbar=False
    )
    np.testing.assert_array_equal(helper.values, rho)
    for name in tb.PARAMETERS:
        np.testing.assert_array_equal(helper_params[name], params[name])
    assert helper.sensitivity(N) == tb.CLIP / N


# Theorem 1: b = (c + 1) Delta / epsilon without resampling, 2 c Delta / epsilon with it.
THEOREM_1 = [(False, lambda c: c + 1), (True, lambda c: 2 * c)]


@pytest.mark.parametrize(("resample", "factor"), THEOREM_1)
@pytest.mark.parametrize("n", [100, 1000])
def test_privacy_accounting_of_the_record_setup(resample, factor, n):
    """The paper's settings (C = 200, c = 10, epsilon_total = 1) on precomputed distances."""
    rng = np.random.default_rng(n)
    records = rng.normal(size=(n, 8))  # stands in for the records: only the sizes matter here
    base = tb.distance()
    dist = dp.distances.PrecomputedDistances(base, records, rng.uniform(100, 200, size=500))
    out = dp.abcdp(
        records,
        dist,
        params={"R1": np.arange(500.0)},
        pseudo_data=np.arange(500),
        epsilon_total=tb.EPSILON_TOTAL,
        epsilon_abc=tb.EPSILON_ABC,
        c=tb.C,
        resample=resample,
        privacy_rng=3,
        progressbar=False,
    )
    attrs = out.posterior.attrs
    sensitivity = tb.CLIP / n  # 2.0 and 0.2
    assert attrs["sensitivity"] == sensitivity
    assert attrs["b"] == factor(tb.C) * sensitivity / tb.EPSILON_TOTAL  # to the last digit
    assert attrs["epsilon"] == 1.0 and attrs["delta"] == 0.0
    assert bool(attrs["resample"]) is resample
    svt_eps = dp.accounting.svt_epsilon(attrs["b"], sensitivity, tb.C, resample=resample)
    assert svt_eps == pytest.approx(1.0, rel=1e-15)
    assert out.posterior.sizes["draw"] * out.posterior.sizes["chain"] <= tb.C


# --- the empirical audit on neighbouring record sets ---------------------------------------

AUDIT_ALPHA = 1e-3  # the audit errs (bound above the true epsilon) with probability <= 1e-3
AUDIT_T = 40
AUDIT_C = 1
AUDIT_EPSILON = 2.0  # b = (c + 1) C / (n epsilon) = 10: the planted bug moves distances by ~95
FAR_RECORD = np.array([1e5, 1e5, 1e4, 1e3, 0.5, 0.05, 24.0, 24.0])  # every pair beyond C


class ClipAfterAveraging(PairedClippedL2):
    """Planted bug: the mean of unclipped pairs is clipped, with the sensitivity C / n kept."""

    def __call__(self, observed, pseudo):
        return np.minimum(self.pairwise(observed, pseudo).mean(axis=1), self.clip)


@pytest.fixture(scope="module")
def audit_inputs(observed):
    """Neighbours (record 0 replaced by a far record) and public pseudo-datasets.

    The proposals are all at the truth, so that the distances of ``Y`` lie well below the
    threshold and the far record can push them up by as much as the distance allows.
    """
    model, gen = tb.model(n_records=N), np.random.default_rng(11)
    theta = {k: np.full(AUDIT_T, v) for k, v in tb.TRUTH.items()}
    neighbour = observed.copy()
    neighbour[0] = FAR_RECORD
    return observed, neighbour, theta, model.simulate(theta, gen)


@pytest.mark.parametrize(("cls", "refute"), [(PairedClippedL2, False), (ClipAfterAveraging, True)])
def test_audit_of_abcdp_on_neighbouring_record_sets(monkeypatch, audit_inputs, cls, refute):
    records, neighbour, theta, pseudo = audit_inputs
    dist = cls(tb.CLIP, weights=tb.WEIGHTS, relative=tb.RELATIVE)
    kwargs = dict(
        params=theta,
        pseudo_data=pseudo,
        epsilon_total=AUDIT_EPSILON,
        epsilon_abc=tb.EPSILON_ABC,
        c=AUDIT_C,
        privacy_rng=0,
    )
    cap_a = capture(monkeypatch, Recording, records, dist, **kwargs)
    cap_b = capture(monkeypatch, Recording, neighbour, dist, **kwargs)
    assert cap_a.svt.scale == (AUDIT_C + 1) * (tb.CLIP / N) / AUDIT_EPSILON == cap_b.svt.scale
    moved = np.abs(cap_a.queries - cap_b.queries)
    if cls is PairedClippedL2:
        assert moved.max() <= tb.CLIP / N * (1 + 1e-12)  # within the declared sensitivity
    res = audit_epsilon(
        replay(cap_a, pattern_code),
        replay(cap_b, pattern_code),
        alpha=AUDIT_ALPHA,
        rng=20210806,
        n_select=4000,
        n_test=12_000,
    )
    print(f"tuberculosis {cls.__name__}: claimed {AUDIT_EPSILON}, {res}")
    assert res.refutes(AUDIT_EPSILON) is refute, str(res)


# --- streaming: the pseudo-records of one chunk at a time -----------------------------------


class CountingSimulator:
    """Wraps the record simulator and counts its outputs that are still alive."""

    def __init__(self, n_records, *, leak=False):
        self.inner = tb.model(n_records=n_records).simulate
        self.alive = self.most_alive = self.calls = 0
        self.kept = [] if leak else None  # the planted bug keeps every batch of records

    def __call__(self, params, rng):
        records = self.inner(params, rng)
        self.calls += 1
        self.alive += 1
        self.most_alive = max(self.most_alive, self.alive)
        weakref.finalize(records, self._released)
        if self.kept is not None:
            self.kept.append(records)
        return records

    def _released(self):
        self.alive -= 1


def check_streaming(simulator, observed):
    dp.abcdp(
        observed,
        tb.distance(),
        model=dp.Model(tb.prior(), simulate=simulator),
        n_proposals=24,
        batch_size=4,
        rng=1,
        epsilon_total=math.inf,
        epsilon_abc=tb.EPSILON_ABC,
        c=24,
        progressbar=False,
    )
    assert simulator.calls == 6
    assert simulator.most_alive == 1, f"{simulator.most_alive} batches of pseudo-records alive"


def test_pseudo_records_are_released_chunk_by_chunk(observed):
    records = observed[:5]
    check_streaming(CountingSimulator(5), records)
    with pytest.raises(AssertionError, match="batches of pseudo-records alive"):
        check_streaming(CountingSimulator(5, leak=True), records)
