"""``dpinfer.abcdp``: the noiseless limit, its calibration, its inputs and its randomness."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.distances import MMD, ClippedL2, GaussianKernel, RandomFeatureMMD, median_heuristic

from ._helpers import MeanDistance, location_model

N, T = 200, 400
# a valid budget, for the refusals that are about something else
ONE_HIT = dict(epsilon_total=1.0, epsilon_abc=0.1, c=1)


@pytest.fixture(scope="module")
def problem():
    """A normal location model: observations, public proposals and pseudo-datasets."""
    rng = np.random.default_rng(0)
    observed = rng.normal(1.0, 1.0, size=(N, 1))
    params = {"mu": rng.normal(0.0, 2.0, size=T)}
    pseudo = params["mu"][:, None, None] + rng.normal(size=(T, N, 1))
    return observed, params, pseudo, RandomFeatureMMD(30, 1.0, rng=1)


def _run(problem, **kwargs):
    observed, params, pseudo, distance = problem
    options = dict(
        params=params,
        pseudo_data=pseudo,
        epsilon_total=1.0,
        epsilon_abc=0.1,
        c=10,
        progressbar=False,
    )
    options.update(kwargs)
    return dp.abcdp(observed, distance, **options)


def _indices(out):
    return out.sample_stats["query_index"].values.ravel()


# --- the noiseless limit ---------------------------------------------------------------


@pytest.mark.parametrize("resample", [False, True])
@pytest.mark.parametrize(("threshold", "c"), [(0.1, 10), (0.1, 1), (0.05, 10_000)])
def test_infinite_budget_is_rejection_abc_on_the_same_draws(problem, threshold, c, resample):
    observed, params, pseudo, distance = problem
    rho = distance(observed, pseudo)
    hits = np.flatnonzero(rho <= threshold)
    assert hits.size > 1
    expected = hits[:c]  # rejection ABC at the same threshold, halted after c acceptances
    out = _run(problem, epsilon_total=math.inf, epsilon_abc=threshold, c=c, resample=resample)
    np.testing.assert_array_equal(_indices(out), expected)
    np.testing.assert_array_equal(out.posterior["mu"].values.ravel(), params["mu"][expected])
    np.testing.assert_array_equal(out.prior["mu"].values.ravel(), params["mu"])
    answered = T if hits.size < c else hits[c - 1] + 1
    assert out.posterior.attrs["n_queries"] == answered
    assert out.posterior.attrs["b"] == 0.0


def test_threshold_between_distances_matches_the_inclusive_rule():
    z = np.array([0.5, 0.2, 0.3, 0.2, 0.9])
    y = np.zeros((4, 1))
    out = dp.abcdp(
        y,
        MeanDistance(),
        params={"z": z},
        pseudo_data=z,
        epsilon_total=math.inf,
        epsilon_abc=0.3,
        c=2,
        progressbar=False,
    )
    np.testing.assert_array_equal(_indices(out), [1, 2])  # <= epsilon_abc, in order


# --- calibration and metadata ----------------------------------------------------------


THEOREM_1 = [(False, lambda c: c + 1), (True, lambda c: 2 * c)]


@pytest.mark.parametrize(("resample", "factor"), THEOREM_1)
def test_noise_scale_is_theorem_1(problem, resample, factor):
    eps, c = 0.7, 10
    out = _run(problem, epsilon_total=eps, c=c, resample=resample, privacy_rng=3)
    attrs = out.posterior.attrs
    sensitivity = 2 / N  # Lemma 1, B_k = 1 for unit-norm random features
    assert attrs["sensitivity"] == sensitivity
    assert attrs["b"] == factor(c) * sensitivity / eps  # to the last digit
    assert attrs["epsilon"] == eps and attrs["delta"] == 0.0
    assert attrs["epsilon_total"] == eps and attrs["c"] == c
    assert bool(attrs["resample"]) is resample
    assert attrs["privacy_noise"] == "seeded"
    assert _indices(out).size <= c
    assert attrs["n_simulations"] == T


def test_charged_settings_are_composed_into_the_guarantee(problem):
    observed, params, pseudo, _ = problem
    leaky = RandomFeatureMMD(30, median_heuristic(observed), rng=1)
    out = dp.abcdp(
        observed,
        leaky,
        params=params,
        pseudo_data=pseudo,
        epsilon_total=1.0,
        epsilon_abc=0.1,
        c=5,
        charged=dp.Privacy(epsilon=0.25),
        privacy_rng=0,
        progressbar=False,
    )
    assert out.posterior.attrs["epsilon"] == 1.25
    assert out.posterior.attrs["epsilon_total"] == 1.0


# --- invalid inputs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("epsilon_total", 0, ValueError),
        ("epsilon_total", -1.0, ValueError),
        ("epsilon_total", math.nan, ValueError),
        ("epsilon_total", -math.inf, ValueError),
        ("epsilon_total", "1", TypeError),
        ("epsilon_abc", math.nan, ValueError),
        ("epsilon_abc", math.inf, ValueError),
        ("c", 0, ValueError),
        ("c", -3, ValueError),
        ("c", 2.5, ValueError),
        ("c", math.nan, ValueError),
        ("c", True, TypeError),
        ("c", "10", TypeError),
        ("charged", 0.5, TypeError),
        ("resample", "yes", TypeError),
        ("resample", 1, TypeError),
    ],
)
def test_invalid_budgets_are_refused_by_name(problem, option, value, error):
    with pytest.raises(error, match=option):
        _run(problem, **{option: value})


def test_invalid_public_inputs_are_refused(problem):
    observed, params, pseudo, distance = problem
    model = dp.Model({"mu": st.norm(0, 2)}, simulate=lambda p, r: None)
    with pytest.raises(ValueError, match="either"):
        _run(problem, model=model, n_proposals=10)
    with pytest.raises(ValueError, match="either"):
        dp.abcdp(observed, distance, params=params, **ONE_HIT)
    with pytest.raises(ValueError, match="draws"):
        _run(problem, params={"mu": params["mu"][:-1]})
    with pytest.raises(TypeError, match="Distance"):
        dp.abcdp(observed, lambda a, b: 0.0, params=params, pseudo_data=pseudo, **ONE_HIT)
    bad = observed.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="observed"):
        dp.abcdp(bad, distance, params=params, pseudo_data=pseudo, **ONE_HIT)


class SometimesNaN(dp.distances.Distance):
    """A distance that fails on some pseudo-datasets (as a broken simulator would)."""

    def __init__(self, bad):
        self.bad = bad

    def __call__(self, observed, pseudo):
        d = np.full(len(pseudo), 0.5)
        d[1] = self.bad
        return d

    def sensitivity(self, n_observations):
        return 1.0 / n_observations


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("epsilon_total", [1.0, math.inf])
def test_non_finite_distances_are_refused(bad, epsilon_total):
    z = np.zeros(4)
    with pytest.raises(ValueError, match="not finite"):
        dp.abcdp(
            np.zeros((5, 1)),
            SometimesNaN(bad),
            params={"z": z},
            pseudo_data=z,
            **ONE_HIT | {"epsilon_total": epsilon_total},
        )


def test_non_finite_pseudo_data_through_a_model_are_refused():
    model = dp.Model(
        {"mu": st.norm(0, 1)},
        simulate=lambda p, rng: (
            np.where(p["mu"][:, None, None] > 0, np.nan, 0.0) + np.zeros((len(p["mu"]), 20, 1))
        ),
    )
    with pytest.raises(ValueError, match="not finite"):
        dp.abcdp(
            np.zeros((20, 1)),
            RandomFeatureMMD(5, 1.0, rng=0),
            model=model,
            n_proposals=50,
            **ONE_HIT,
            rng=0,
            progressbar=False,
        )


def test_clipped_distance_maps_failures_to_its_bound_before_the_noise():
    summary = lambda x: np.nanmean(x, axis=1)  # noqa: E731  a summary that can fail
    pseudo = np.zeros((6, 5, 1))
    pseudo[2] = np.nan
    dist = ClippedL2(3.0, summary=summary)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        rho = dist(np.zeros((5, 1)), pseudo)
    assert rho[2] == 3.0 and np.all(rho[[0, 1, 3, 4, 5]] == 0.0)
    with pytest.warns(RuntimeWarning):
        out = dp.abcdp(
            np.zeros((5, 1)),
            dist,
            params={"i": np.arange(6)},
            pseudo_data=pseudo,
            epsilon_total=math.inf,
            epsilon_abc=1.0,
            c=10,
            progressbar=False,
        )
    np.testing.assert_array_equal(_indices(out), [0, 1, 3, 4, 5])


# --- confidential-data-dependent bandwidths ----------------------------------------------


def _leaky_distances(observed, simulated):
    stacked = np.stack([simulated, observed, simulated])
    for data in (observed, np.concatenate([simulated, observed]), stacked):
        h = median_heuristic(data)
        yield MMD(GaussianKernel(h))
        yield MMD(h)
        yield RandomFeatureMMD(10, h, rng=0)


def test_bandwidth_from_confidential_data_is_refused_unless_charged(problem):
    observed, params, pseudo, _ = problem
    simulated = pseudo[0]
    kwargs = dict(
        params=params,
        pseudo_data=pseudo[:, :50],
        epsilon_total=1.0,
        epsilon_abc=0.1,
        c=1,
        privacy_rng=0,
        progressbar=False,
    )
    variants = {k: v for k, v in kwargs.items() if k != "c"}
    for distance in _leaky_distances(observed, simulated):
        with pytest.raises(ValueError, match="confidential"):
            dp.abcdp(observed, distance, **kwargs)
        with pytest.raises(ValueError, match="confidential"):
            dp.rejection_abcdp_gaussian(
                observed, distance, distance_bound=2.0, **variants | {"epsilon_total": 10.0}
            )
        with pytest.raises(ValueError, match="confidential"):
            dp.soft_abcdp(observed, distance, delta_total=1e-5, **variants)
        charged = dp.abcdp(observed, distance, charged=dp.Privacy(0.1), **kwargs)
        assert charged.posterior.attrs["epsilon"] == pytest.approx(1.1)
    # from simulated data only: accepted as it is
    for h in (median_heuristic(simulated), median_heuristic(pseudo[:5])):
        out = dp.abcdp(observed, MMD(h), **kwargs)
        assert out.posterior.attrs["epsilon"] == 1.0


# --- privacy noise -----------------------------------------------------------------------


def test_privacy_noise_is_fresh_by_default_and_reproducible_with_a_seed(problem):
    # c = 40 of many near-threshold proposals: two OS-entropy runs coincide with
    # probability far below 1e-9 (false-failure rate)
    kwargs = dict(epsilon_total=2.0, epsilon_abc=0.3, c=40)
    fresh = [_run(problem, **kwargs) for _ in range(2)]
    assert not np.array_equal(_indices(fresh[0]), _indices(fresh[1]))
    assert all(o.posterior.attrs["privacy_noise"] == "os-entropy" for o in fresh)
    seeded = [_run(problem, privacy_rng=11, **kwargs) for _ in range(2)]
    np.testing.assert_array_equal(_indices(seeded[0]), _indices(seeded[1]))
    assert seeded[0].posterior.attrs["privacy_noise"] == "seeded"
    other = _run(problem, privacy_rng=12, **kwargs)
    assert not np.array_equal(_indices(seeded[0]), _indices(other))


def test_public_draws_follow_rng_and_privacy_noise_follows_privacy_rng():
    model = location_model(50)
    y = np.random.default_rng(5).normal(1.0, 1.0, size=(50, 1))

    def run(privacy_rng):
        return dp.abcdp(
            y,
            RandomFeatureMMD(20, 1.0, rng=2),
            model=model,
            n_proposals=600,
            epsilon_total=3.0,
            epsilon_abc=0.2,
            c=30,
            rng=4,
            privacy_rng=privacy_rng,
            batch_size=128,
            progressbar=False,
        )

    a, b = run(None), run(None)
    np.testing.assert_array_equal(a.prior["mu"].values, b.prior["mu"].values)  # public
    assert not np.array_equal(_indices(a), _indices(b))  # P(equal) < 1e-9
    np.testing.assert_array_equal(_indices(run(8)), _indices(run(8)))


def test_global_numpy_random_state_is_untouched(problem):
    observed, params, pseudo, distance = problem
    before = np.random.get_state(legacy=False)  # noqa: NPY002 (the legacy global state)
    _run(problem)  # OS-entropy privacy noise
    _run(problem, epsilon_total=math.inf)
    _run(problem, resample=True, privacy_rng=1)
    dp.rejection_abcdp_gaussian(
        observed,
        distance,
        params=params,
        pseudo_data=pseudo,
        epsilon_total=50.0,
        epsilon_abc=0.1,
        distance_bound=2.0,
        progressbar=False,
    )
    dp.soft_abcdp(
        observed,
        distance,
        params=params,
        pseudo_data=pseudo,
        epsilon_total=5.0,
        delta_total=1e-5,
        epsilon_abc=0.1,
        progressbar=False,
    )
    after = np.random.get_state(legacy=False)  # noqa: NPY002
    np.testing.assert_array_equal(before["state"]["key"], after["state"]["key"])
    assert before["state"]["pos"] == after["state"]["pos"]
    assert (before["has_gauss"], before["gauss"]) == (after["has_gauss"], after["gauss"])
