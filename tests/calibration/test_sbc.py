"""``dp.sbc``: it passes correct samplers, flags planted bugs, and is reproducible.

Statistical checks. Each p-value is Pearson's chi-square test of the fractional ranks
(``dpinfer.calibration._ranks``); under a correct sampler it is uniform, so a check
``p > 1e-3`` fails a correct sampler with probability 0.1% (0.15% at 100 replicates,
where the chi-square approximation is slightly liberal; ``test_ranks.py`` measures it).
The seeds are fixed, so every outcome here is deterministic. A planted bug must give
``p < 1e-3``: at 200 replicates the two bugs below give p below 1e-9 on this problem
(seed 11; seeds 12-14 likewise), so the threshold is not a near miss. Samplers whose
calls cost more run fewer replicates: such a check only catches gross errors, but it
shows ``dp.sbc`` driving the sampler (thinning, chains, metadata) correctly; each
sampler's exactness is tested against references in ``tests/samplers``.
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.results import to_inference_data

from . import _poisson

P_LIMIT = 1e-3
SEED = 11


@pytest.fixture(scope="module")
def model():
    return _poisson.model()


@pytest.fixture(scope="module")
def mech():
    return _poisson.mechanism()


@pytest.fixture(scope="module")
def runs(model, mech):
    """200 replicates of the exact sampler and of the two planted bugs, same seed."""
    samplers = {"exact": _poisson.exact, "naive": _poisson.naive, "shrunk": _poisson.shrunk}
    return {
        name: dp.sbc(fn, model, mech, replicates=200, rng=SEED, progressbar=False)
        for name, fn in samplers.items()
    }


@pytest.fixture(scope="module")
def gaussian_model():
    return dp.Model(
        prior={"theta": st.multivariate_normal(np.zeros(2))},
        simulate=lambda p, rng: p["theta"] + rng.standard_normal(p["theta"].shape),
    )


# --- a correct sampler passes, planted bugs fail ------------------------------------------


def test_exact_posterior_passes(runs):
    result = runs["exact"]
    assert result.ranks.shape == (200, 1) and result.parameters == ("theta",)
    assert np.all((result.ranks >= 0) & (result.ranks <= result.n_draws[:, None]))
    assert result.p_values["theta"] > P_LIMIT


@pytest.mark.parametrize("bug", ["naive", "shrunk"])
def test_planted_bug_is_flagged(runs, bug):
    # naive: the release read as the count; shrunk: exact draws at 60% of their spread
    assert runs[bug].p_values["theta"] < P_LIMIT


def test_coverage_of_the_exact_sampler_and_of_a_planted_bug(runs):
    levels = [0.5, 0.8, 0.95]
    got = runs["exact"].coverage(levels)["theta"]
    # within 4 binomial standard errors of the level: false failure 6e-5 per level
    se = np.sqrt(np.multiply(levels, np.subtract(1, levels)) / 200)
    assert np.all(np.abs(got - levels) < 4 * se), got
    # companion: the shrunk posterior covers far too little
    assert runs["shrunk"].coverage([0.8])["theta"][0] < 0.8 - 4 * np.sqrt(0.16 / 200)


def test_same_seed_same_replicates_whatever_the_sampler(runs):
    exact, naive = runs["exact"], runs["naive"]
    np.testing.assert_array_equal(exact.truths["theta"], naive.truths["theta"])
    np.testing.assert_array_equal(exact.releases, naive.releases)
    np.testing.assert_array_equal(exact.statistics, naive.statistics)
    assert exact.info["seed"] == naive.info["seed"]


# --- every sampler of the library: test_sbc_samplers.py ------------------------------------


# --- thinning autocorrelated draws -----------------------------------------------------------


def _autocorrelated(reported_ess=None):
    """Four AR(1) chains (autocorrelation 0.995) whose every draw is from the exact posterior."""

    def sample(released, rng):
        rho = 0.995
        z = np.empty((4, 100, 2))
        z[:, 0] = rng.standard_normal((4, 2))
        for t in range(1, 100):
            z[:, t] = rho * z[:, t - 1] + math.sqrt(1 - rho**2) * rng.standard_normal((4, 2))
        idata = _poisson.posterior(released / 3 + math.sqrt(2 / 3) * z.reshape(400, 2))
        if reported_ess is not None:
            idata.attrs["ess"] = reported_ess  # what a faulty sampler would report
        return idata

    return sample


def test_autocorrelated_draws_are_thinned_by_their_ess(gaussian_model):
    mech = dp.Gaussian(1.0, event_shape=(2,))
    result = dp.sbc(
        _autocorrelated(), gaussian_model, mech, replicates=200, rng=SEED, progressbar=False
    )
    assert result.n_draws.max() <= 8  # ESS of about 400 (1 - 0.995) / 1.995 = 1, estimated <= 16
    assert result.p_value > P_LIMIT


def test_planted_overstated_ess_is_flagged(gaussian_model):
    # companion: claiming all 400 draws are independent leaves them unthinned, and the
    # ranks among four barely moving chains pile up at the ends and quarters
    mech = dp.Gaussian(1.0, event_shape=(2,))
    result = dp.sbc(
        _autocorrelated(400.0), gaussian_model, mech, replicates=200, rng=SEED, progressbar=False
    )
    assert np.all(result.n_draws == 400)
    assert result.p_value < P_LIMIT


# --- vector parameters: one test per component ----------------------------------------------


def _gaussian(shrink_second: bool):
    """theta ~ N(0, I_2), s ~ N(theta, I), s_dp ~ N(s, I): theta | s_dp ~ N(s_dp / 3, 2/3 I)."""

    def sample(released, rng):
        theta = released / 3 + math.sqrt(2 / 3) * rng.standard_normal((200, 2))
        if shrink_second:
            theta[:, 1] = released[1] / 3 + 0.6 * (theta[:, 1] - released[1] / 3)
        return _poisson.posterior(theta)

    return sample


def test_each_component_of_a_vector_is_tested(gaussian_model):
    mech = dp.Gaussian(1.0, event_shape=(2,))
    good = dp.sbc(
        _gaussian(False), gaussian_model, mech, replicates=200, rng=SEED, progressbar=False
    )
    bad = dp.sbc(
        _gaussian(True), gaussian_model, mech, replicates=200, rng=SEED, progressbar=False
    )
    assert good.parameters == ("theta[0]", "theta[1]") and good.ranks.shape == (200, 2)
    assert min(good.p_values.values()) > P_LIMIT and good.p_value > P_LIMIT
    assert bad.p_values["theta[0]"] > P_LIMIT  # the same draws as above
    assert bad.p_values["theta[1]"] < P_LIMIT and bad.p_value < P_LIMIT
    assert bad.p_value == pytest.approx(min(1.0, 2 * bad.p_values["theta[1]"]))


# --- executors, export and plot ---------------------------------------------------------------


def test_same_result_with_a_process_pool(model, mech):
    serial = dp.sbc(_poisson.exact, model, mech, replicates=8, rng=3, progressbar=False)
    with ProcessPoolExecutor(2) as pool:
        pooled = dp.sbc(
            _poisson.exact, model, mech, replicates=8, rng=3, executor=pool, progressbar=False
        )
    np.testing.assert_array_equal(serial.ranks, pooled.ranks)
    np.testing.assert_array_equal(serial.fractional_ranks, pooled.fractional_ranks)
    np.testing.assert_array_equal(serial.releases, pooled.releases)
    other = dp.sbc(_poisson.exact, model, mech, replicates=8, rng=4, progressbar=False)
    assert not np.array_equal(serial.releases, other.releases)


def test_export_saves_and_loads_back(runs, tmp_path):
    result = runs["exact"]
    idata = result.to_inference_data()
    assert idata.prior["theta"].shape == (1, 200)
    assert idata.prior_predictive["s_dp"].shape == (1, 200)
    path = tmp_path / "sbc.nc"
    idata.to_netcdf(path)
    back = dp.SBCResult.from_inference_data(dp.results.from_netcdf(path))
    np.testing.assert_array_equal(back.ranks, result.ranks)
    np.testing.assert_array_equal(back.n_draws, result.n_draws)
    np.testing.assert_array_equal(back.truths["theta"], result.truths["theta"])
    assert back.p_values == result.p_values and back.info["seed"] == result.info["seed"]
    with pytest.raises(ValueError, match="it has no prior, prior_predictive"):
        dp.SBCResult.from_inference_data(_poisson.exact(1.0, np.random.default_rng(0)))


def test_plot_shows_the_ecdf_difference_and_its_band(runs):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = runs["shrunk"]
    (ax,) = result.plot()
    u = np.sort(result.fractional_ranks[:, 0])
    points = np.linspace(0, 1, 101)[1:]
    expected = np.searchsorted(u, points, side="right") / u.size - points
    curves = [line.get_ydata() for line in ax.get_lines() if len(line.get_ydata()) == 100]
    assert any(np.allclose(y, expected) for y in curves)
    assert ax.collections, "the simultaneous band is drawn"
    assert "p = " in ax.get_title()
    plt.close("all")


# --- arguments ---------------------------------------------------------------------------------


def _returns(value):
    return lambda released, rng: value


def _posterior(**arrays):
    return lambda released, rng: to_inference_data(arrays, chains=1, attrs={})


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"sample": "rejection"}, TypeError, "sample must be a callable"),
        ({"model": "model"}, TypeError, "model must be a dpinfer.Model"),
        ({"mechanism": 4.0}, TypeError, "mechanism must be a dpinfer Mechanism"),
        ({"replicates": 0}, ValueError, "replicates"),
        ({"replicates": 2.5}, ValueError, "replicates"),
        ({"estimator_options": {"draws": 10}}, ValueError, "estimator_options applies to"),
        ({"rng": -1}, ValueError, "rng"),
        ({"progressbar": "no"}, TypeError, "progressbar"),
        ({"sample": _returns({"theta": 1})}, TypeError, "InferenceData with a posterior"),
        ({"sample": _posterior(mu=np.ones(8))}, ValueError, "without the parameter 'theta'"),
        (
            {"sample": _posterior(theta=np.ones((8, 2)))},
            ValueError,
            r"expected \(chain, draw, \*\(\)\)",
        ),
        (
            {"sample": _posterior(theta=np.full(8, np.nan))},
            ValueError,
            "non-finite posterior draws",
        ),
        ({"sample": _posterior(theta=np.ones(0))}, ValueError, "no posterior draws"),
    ],
)
def test_bad_arguments(model, mech, kwargs, error, match):
    args = {"sample": _poisson.exact, "model": model, "mechanism": mech, **kwargs}
    with pytest.raises(error, match=match):
        dp.sbc(
            args.pop("sample"),
            args.pop("model"),
            args.pop("mechanism"),
            replicates=args.pop("replicates", 3),
            progressbar=args.pop("progressbar", False),
            **args,
        )


def test_a_model_without_prior_is_refused(mech):
    model = dp.Model(None, simulate=lambda p, rng: rng.poisson(p["theta"]))
    with pytest.raises(ValueError, match="sbc needs a model with a prior"):
        dp.sbc(_poisson.exact, model, mech, replicates=3, progressbar=False)


def test_few_replicates_give_no_test(model, mech):
    result = dp.sbc(_poisson.exact, model, mech, replicates=9, rng=1, progressbar=False)
    assert result.bins == 1 and math.isnan(result.p_values["theta"]) and math.isnan(result.p_value)
    with pytest.raises(ValueError, match="levels must be credible levels"):
        result.coverage([0.5, 1.0])
    with pytest.raises(ValueError, match="parameters must name some of"):
        result.plot(parameters=["mu"])
