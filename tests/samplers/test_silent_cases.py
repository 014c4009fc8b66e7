"""Cases that used to pass silently now warn or raise, each naming what to do."""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.distances import ClippedL2
from dpinfer.samplers import importance
from dpinfer.samplers.mcem._schedule import AscentSchedule, as_schedule

from ._oracles import normal_model

# --- importance_abc: degenerate weights --------------------------------------------------------

# Releases 6 and 3 prior standard deviations out, with little noise: few prior draws matter
# (ESS about 5 and 60 of 2000 particles), and one near the prior (ESS above 100).
FAR, MIDDLE, NEAR, NOISE = 6.0, 3.0, 0.5, dp.Gaussian(0.3)


def _importance(released, **kwargs):
    kwargs = {"draws": 2000, "rng": 5, "progressbar": False, **kwargs}
    return dp.importance_abc(normal_model(), NOISE, released, **kwargs)


def test_importance_warns_when_the_ess_fraction_is_small():
    with pytest.warns(RuntimeWarning, match="weights are degenerate") as caught:
        idata = _importance(FAR)
    message = str(caught[0].message)
    assert "below 5%" in message
    for remedy in ("smc_abc", "proposal=", "target_ess="):
        assert remedy in message
    assert idata.attrs["ess_kish"] < 0.05 * 2000


def test_importance_near_the_prior_does_not_warn():
    # Companion: the same check stays quiet when the weights are healthy.
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        idata = _importance(NEAR)
    assert idata.attrs["ess_kish"] > 0.05 * 2000


@pytest.mark.parametrize(("ess", "warns"), [(99.0, True), (101.0, False)])
def test_importance_threshold_is_five_percent(ess, warns):
    assert importance.ESS_WARNING_FRACTION == 0.05
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        importance._warn_if_degenerate(ess, 2000)
    assert bool(caught) is warns


def test_target_ess_keeps_simulating_until_reached():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the target replaces the warning
        idata = _importance(MIDDLE, target_ess=300)  # one round: ESS about 60
    attrs = idata.attrs
    assert attrs["ess_kish"] >= 300
    assert attrs["n_rounds"] > 1
    assert attrs["n_simulations"] == 2000 * attrs["n_rounds"]
    # one posterior draw per particle, per chain
    assert idata.posterior["theta"].shape == (4, attrs["n_simulations"] // 4)
    assert idata.sample_stats["particle_theta"].shape == (4, attrs["n_simulations"] // 4)
    # one round fewer would not have reached the target: it stopped at the first that did
    log_w = idata.sample_stats["log_weight"].values[:, :-500]  # each chain's last 500
    partial = sum(
        float(np.exp(2 * np.logaddexp.reduce(r) - np.logaddexp.reduce(2 * r))) for r in log_w
    )
    assert partial < 300


def test_target_ess_rounds_are_the_same_under_an_executor():
    from concurrent.futures import ThreadPoolExecutor

    serial = _importance(MIDDLE, target_ess=300, batch_size=700)
    with ThreadPoolExecutor(2) as pool:
        pooled = _importance(MIDDLE, target_ess=300, batch_size=700, executor=pool)
    np.testing.assert_array_equal(serial.posterior["theta"], pooled.posterior["theta"])
    np.testing.assert_array_equal(serial.attrs["chain_ess"], pooled.attrs["chain_ess"])


def test_target_ess_is_bounded_by_max_simulations():
    with pytest.raises(
        dp.SimulationBudgetExceeded, match="max_simulations=8000.*target_ess=100000"
    ):
        _importance(FAR, draws=4000, target_ess=1e5, max_simulations=8000)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "100"])
def test_target_ess_is_checked(bad):
    with pytest.raises((TypeError, ValueError), match="target_ess"):
        _importance(NEAR, target_ess=bad)


# --- a simulator returning NaN ------------------------------------------------------------------


def nan_above_one(params, rng):
    theta = params["theta"]
    return np.where(theta > 1.0, np.nan, theta + rng.standard_normal(theta.shape))


def _runs():
    model = dp.Model(prior={"theta": st.norm(0, 1)}, simulate=nan_above_one)
    kw = {"rng": 1, "progressbar": False}
    return {
        "rejection_abc": lambda: dp.rejection_abc(model, NOISE, 0.5, draws=100, **kw),
        "importance_abc": lambda: dp.importance_abc(model, NOISE, 0.5, draws=100, **kw),
        "smc_abc": lambda: dp.smc_abc(model, NOISE, 0.5, particles=100, **kw),
        "tolerance_smc_abc": lambda: dp.tolerance_smc_abc(model, NOISE, 0.5, particles=100, **kw),
    }


@pytest.mark.parametrize("name", list(_runs()))
def test_nan_from_the_simulator_names_it_and_the_parameters(name):
    with pytest.raises(ValueError, match="the simulator nan_above_one returned non-finite") as e:
        _runs()[name]()
    message = str(e.value)
    count, total = map(int, re.search(r"for (\d+) of (\d+) parameter sets", message).groups())
    assert 0 < count < total  # about 16% of a standard normal prior lies above 1
    shown = [float(x) for x in re.findall(r"theta=([-\d.e+]+\d)", message)]
    assert 1 <= len(shown) <= 3 and all(x > 1.0 for x in shown)


def _normal_likelihood():
    """log N(s; theta, 1) with its score and Hessian."""
    return dp.Likelihood.from_callables(
        lambda s, p: st.norm.logpdf(s, p["theta"], 1.0),
        params={"theta": ()},
        score=lambda s, p: (s - p["theta"])[:, None],
        hessian=lambda s, p: -np.ones((len(s), 1, 1)),
    )


def test_nan_from_the_simulator_in_mcem():
    model = dp.Model(simulate=nan_above_one, likelihood=_normal_likelihood())
    with pytest.raises(ValueError, match="the simulator nan_above_one returned non-finite"):
        dp.mcem(model, NOISE, 3.0, start={"theta": 1.5}, rng=1, progressbar=False)


# --- mcem: no prior needed, the cheaper schedule by default -------------------------------------


def test_mcem_default_schedule_is_the_ascent_based_one():
    default = inspect.signature(dp.mcem).parameters["schedule"].default
    assert default == "auto" and isinstance(as_schedule(default), AscentSchedule)
    assert as_schedule("staged").stages == ((10**3, 1e-3), (10**5, 1e-4), (10**7, 1e-5))


def test_mcem_runs_without_a_prior_and_abc_refuses_one():
    model = dp.Model(
        simulate=lambda p, rng: rng.normal(p["theta"], 1.0), likelihood=_normal_likelihood()
    )
    assert model.prior is None
    schedule = dp.StagedSchedule(stages=((2000, 1e-2),))
    fit = dp.mcem(model, NOISE, 1.2, start={"theta": 0.0}, schedule=schedule, rng=2,
                  progressbar=False)  # fmt: skip
    assert abs(fit.estimate["theta"] - 1.2) < 0.2  # the MLE is the release here
    for sampler in (dp.rejection_abc, dp.importance_abc):
        with pytest.raises(ValueError, match="needs a model with a prior.*prior=None"):
            sampler(model, NOISE, 1.2, draws=100, progressbar=False)
    with pytest.raises(ValueError, match="needs a model with a prior"):
        dp.smc_abc(model, NOISE, 1.2, progressbar=False)
    with pytest.raises(ValueError, match="public_distances needs a model with a prior"):
        dp.samplers.public_distances(
            np.zeros((5, 1)), ClippedL2(1.0), model=model, n_proposals=10, progressbar=False
        )


# --- strings are not numbers -------------------------------------------------------------------


@pytest.mark.parametrize("released", ["1.3", np.array("1.3"), True, np.bool_(False)])
def test_samplers_refuse_a_release_that_is_not_a_number(released):
    with pytest.raises(TypeError, match="released must be a number or an array of numbers"):
        dp.rejection_abc(normal_model(), NOISE, released, draws=100, progressbar=False)


def test_a_zero_dimensional_array_release_is_a_number():
    idata = dp.rejection_abc(
        normal_model(), NOISE, np.array(0.5), draws=100, rng=1, progressbar=False
    )
    assert idata.posterior["theta"].shape == (4, 25)
