"""User code that changes the arrays it is given in place is stopped, never silently wrong.

A simulator doing ``p["theta"] *= 1.2`` used to multiply the draws the sampler kept
(rejection ABC returned a posterior mean of 32.69 instead of 28.58). Every user
function that receives arrays a sampler keeps now gets read-only views, and writing into
one raises a ValueError naming the function: checked for every sampler of the registry
that runs a simulator (``samplers/_sampler_registry.py``). The companions show that the
same code written out of place runs, and that other ValueErrors pass through unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from samplers._sampler_registry import SAMPLERS, Problem, theta_draws  # tests/ is on the path

import dpinfer as dp

MECH = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
RELEASE = 37.4


def scaled_in_place(p, rng):
    p["theta"] *= 1.2
    return rng.poisson(p["theta"])


def scaled(p, rng):
    return rng.poisson(p["theta"] * 1.2)


def _model(simulate):
    return dp.Model(prior={"theta": st.gamma(25)}, simulate=simulate)


IN_PLACE = [case for case in SAMPLERS if case.supports("in_place")]


@pytest.mark.parametrize("case", IN_PLACE, ids=str)
def test_a_simulator_changing_params_in_place_is_stopped_by_name(case):
    with pytest.raises(ValueError, match=r"wrote into its params in place") as info:
        case.run(Problem(simulate=scaled_in_place), rng=1)
    message = str(info.value)
    assert "read-only" in message and "* 1.2" in message
    assert "scaled_in_place" in message  # the simulator is named


@pytest.mark.parametrize("case", IN_PLACE, ids=str)
def test_companion_the_same_simulator_written_out_of_place_runs(case):
    assert np.all(np.isfinite(theta_draws(case.run(Problem(simulate=scaled), rng=1))))


def test_the_draws_are_the_parameters_the_simulator_saw():
    # the simulator records the values it was given; every accepted draw is one of them,
    # unchanged (the class of bug: stored draws differing from what was simulated)
    seen = []

    def recording(p, rng):
        assert not p["theta"].flags.writeable
        seen.append(np.array(p["theta"]))
        return rng.poisson(p["theta"])

    idata = dp.rejection_abc(
        _model(recording), MECH, RELEASE, draws=40, rng=3, batch_size=500, progressbar=False
    )
    draws = idata.posterior["theta"].values.ravel()
    assert np.isin(draws, np.concatenate(seen)).all()


def test_the_callers_arrays_stay_writable():
    params = {"theta": np.array([20.0, 30.0])}
    _model(scaled).simulate_checked(params, np.random.default_rng(0), event_shape=())
    assert params["theta"].flags.writeable
    params["theta"] *= 2  # the caller still owns its arrays
    assert params["theta"].tolist() == [40.0, 60.0]


def test_a_prior_density_changing_params_in_place_is_stopped():
    def logpdf(p):
        p["theta"] -= 1.0
        return st.norm.logpdf(p["theta"])

    prior = dp.Prior(lambda n, rng: {"theta": rng.normal(size=n)}, logpdf=logpdf)
    with pytest.raises(ValueError, match="the prior density .*logpdf wrote into its params"):
        prior.logpdf({"theta": np.zeros(3)})


def test_record_model_functions_changing_their_inputs_in_place_are_stopped():
    def simulate(p, n, rng):
        p["p"] *= 0.5
        return rng.random((len(p["p"]), n)) < p["p"][:, None]

    def update(records, rng):
        records[:] = 0
        return {"p": rng.beta(1, 1, size=len(records))}

    model = dp.RecordModel({"p": st.beta(2, 2)}, simulate, lambda x: x, update=update)
    params, rng = {"p": np.array([0.3, 0.6])}, np.random.default_rng(0)
    with pytest.raises(ValueError, match="record simulator .*simulate wrote into its params"):
        model.simulate_records(params, 4, rng)
    with pytest.raises(ValueError, match="update .*update wrote into its records"):
        model.draw_update(np.ones((2, 4)), rng, ["p"])


def test_likelihood_callables_changing_their_inputs_in_place_are_stopped():
    def logp(s, p):
        s += 1.0
        return -((s - p["theta"]) ** 2)

    lik = dp.Likelihood.from_callables(logp, params=["theta"], support={"theta": "real"})
    with pytest.raises(ValueError, match="likelihood callable .* wrote into its s or params"):
        lik.logp(np.zeros(3), {"theta": np.zeros(3)})


def test_companion_other_value_errors_of_user_code_pass_through_unchanged():
    def failing(p, rng):
        raise ValueError("my own message")

    with pytest.raises(ValueError, match="^my own message$"):
        _model(failing).simulate_checked(
            {"theta": np.ones(2)}, np.random.default_rng(0), event_shape=()
        )


def identity(p, rng):
    return p["theta"]


@pytest.mark.parametrize("case", IN_PLACE, ids=str)
def test_a_simulator_returning_its_read_only_params_still_runs(case):
    # an identity simulator hands back the read-only view; the library keeps a copy
    assert np.all(np.isfinite(theta_draws(case.run(Problem(simulate=identity), rng=1))))


def test_a_read_only_simulator_output_is_copied_into_a_writable_array():
    def broadcast(p, rng):
        return np.broadcast_to(np.float64(30.0), p["theta"].shape)  # read-only by NumPy

    s = _model(broadcast).simulate_checked(
        {"theta": np.ones(3)}, np.random.default_rng(0), event_shape=()
    )
    assert s.flags.writeable and s.tolist() == [30.0, 30.0, 30.0]
