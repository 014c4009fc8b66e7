"""Invalid input to the samplers that take ``draws=`` and ``batch_size=`` names the problem.

The samplers are those of the registry whose signature has both options (rejection and
importance ABC); the SMC samplers' own options are checked in ``test_smc.py`` and
``test_smc_degeneracy.py``, DA-MCMC's in ``test_da_mcmc_errors.py``, and every public
function's in the bad-input sweep (``tests/sweep``).
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp

from ._sampler_registry import SAMPLERS, by_name

DRAWING = [
    case
    for case in SAMPLERS
    if {"draws", "batch_size"} <= set(inspect.signature(case.function).parameters)
]
REJECTION, IMPORTANCE = by_name("rejection_abc"), by_name("importance_abc")


def _model(simulate=None):
    return dp.Model(
        prior={"theta": st.norm(0.0, 1.0)},
        simulate=simulate or (lambda p, rng: p["theta"] + rng.standard_normal(len(p["theta"]))),
    )


MECH = dp.Gaussian(1.0)


def _call(case, model=None, mechanism=MECH, released=0.5, **kwargs):
    kwargs = {"draws": 20, "rng": 0, "progressbar": False, "batch_size": 100, **kwargs}
    return case.function(_model() if model is None else model, mechanism, released, **kwargs)


@pytest.fixture(params=DRAWING, ids=str)
def which(request):
    return request.param


def test_the_drawing_samplers_include_rejection_and_importance_abc():
    assert {"rejection_abc", "importance_abc"} <= {case.name for case in DRAWING}


def test_simulator_of_the_wrong_shape(which):
    model = _model(lambda p, rng: np.zeros((len(p["theta"]), 2)))
    expected = re.escape("shape (100, 2)") + ".*" + re.escape("expects (batch, *event_shape)")
    with pytest.raises(ValueError, match=expected + ".*" + re.escape("(100,)")):
        _call(which, model=model, draws=100)


def test_simulator_dropping_the_batch_axis(which):
    model = _model(lambda p, rng: np.float64(1.0))
    with pytest.raises(ValueError, match=re.escape("shape ()") + ".*batch of 100"):
        _call(which, model=model, draws=100)


def test_vector_mechanism_with_a_scalar_simulator(which):
    with pytest.raises(ValueError, match=re.escape("= (100, 2)")):
        _call(which, mechanism=dp.Laplace([1.0, 1.0]), released=[0.0, 0.0], draws=100)


@pytest.mark.parametrize("released", [np.nan, np.inf, -np.inf])
def test_non_finite_release(which, released):
    with pytest.raises(ValueError, match="released must (be finite|hold numbers, not NaN)"):
        _call(which, released=released)


@pytest.mark.parametrize("released", [[0.5], [0.5, 1.0], [[0.5]]])
def test_release_of_the_wrong_shape(which, released):
    with pytest.raises(ValueError, match=re.escape("released must have shape ()")):
        _call(which, released=released)


def test_vector_release_of_the_wrong_shape(which):
    model = _model(lambda p, rng: np.zeros((len(p["theta"]), 2)))
    with pytest.raises(ValueError, match=re.escape("must have shape (2,)") + ".*shape \\(3,\\)"):
        _call(which, model=model, mechanism=dp.Laplace([1.0, 1.0]), released=[0.0, 0.0, 0.0])


@pytest.mark.parametrize("released", ["abc", None])
def test_release_that_is_not_numeric(which, released):
    with pytest.raises((TypeError, ValueError)):
        _call(which, released=released)


@pytest.mark.parametrize("draws", [0, -3])
def test_draws_not_positive(which, draws):
    with pytest.raises(ValueError, match=f"draws must be a positive integer, got {draws}"):
        _call(which, draws=draws)


@pytest.mark.parametrize("draws", [2.5, float("nan"), float("inf")])
def test_draws_not_an_integer(which, draws):
    with pytest.raises(ValueError, match="draws must be a positive integer"):
        _call(which, draws=draws)


@pytest.mark.parametrize("draws", ["10", None, True])
def test_draws_of_the_wrong_type(which, draws):
    with pytest.raises(TypeError, match="draws must be a positive integer"):
        _call(which, draws=draws)


def test_integral_float_draws_are_accepted(which):
    idata = _call(which, draws=16.0)
    assert idata.posterior["theta"].shape == (4, 4)


@pytest.mark.parametrize("batch_size", [0, -1, 0.5])
def test_batch_size_not_positive(which, batch_size):
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        _call(which, batch_size=batch_size)


def test_max_simulations_not_positive():
    with pytest.raises(ValueError, match="max_simulations must be a positive integer"):
        _call(REJECTION, max_simulations=0)


@pytest.mark.parametrize("model", [{"theta": st.norm()}, "model", None])
def test_model_not_a_model(which, model):
    with pytest.raises(TypeError, match="model must be a dpinfer.Model, got"):
        which.function(model, MECH, 0.5, draws=10, progressbar=False)


@pytest.mark.parametrize("mechanism", [st.norm(0, 1), 1.0, "laplace", dp.Gaussian])
def test_mechanism_not_a_mechanism(which, mechanism):
    with pytest.raises(TypeError, match="mechanism must be a dpinfer Mechanism, got"):
        _call(which, mechanism=mechanism)


def test_keyword_only_options(which):
    with pytest.raises(TypeError):
        which.function(_model(), MECH, 0.5, 10)


class SampleOnly:
    def sample(self, n, rng):
        return {"theta": rng.standard_normal(n)}


@pytest.mark.parametrize("proposal", [SampleOnly(), 3.0, st.norm(0, 1)])
def test_proposal_without_logpdf(proposal):
    with pytest.raises(TypeError, match="proposal must be .* sample\\(n, rng\\) and logpdf"):
        _call(IMPORTANCE, proposal=proposal)


def test_proposal_with_a_sampler_only_prior():
    model = dp.Model(
        prior=dp.Prior(lambda n, rng: {"theta": rng.standard_normal(n)}),
        simulate=lambda p, rng: p["theta"],
    )
    with pytest.raises(ValueError, match="needs a prior with a logpdf"):
        _call(IMPORTANCE, model=model, proposal={"theta": st.norm(0, 2)})


def test_proposal_dict_with_a_bad_value():
    with pytest.raises(TypeError, match=re.escape("prior['theta'] must be a frozen")):
        _call(IMPORTANCE, proposal={"theta": 2.0})


def test_budget_exceeded_message():
    with pytest.raises(dp.SimulationBudgetExceeded) as info:
        _call(REJECTION, released=0.5, draws=10**5, max_simulations=300)
    message = str(info.value)
    assert re.search(r"acceptance rate 0\.\d+", message)
    assert re.search(r"expected cost of 100000 draws is about [\d.e+]+ simulations", message)
    assert "max_simulations=300" in message
    assert isinstance(info.value, RuntimeError)


def test_budget_exceeded_with_nothing_accepted():
    # A release far in the tail under tiny noise: nothing is accepted in 100 proposals, yet
    # the acceptance probabilities predict the cost (no longer "unknown"), after one chunk.
    with pytest.raises(
        dp.SimulationBudgetExceeded,
        match=r"stopped after 100 simulations.*with 0 of 20 draws accepted; the acceptance "
        r"rate 10\^-.*expected cost of 20 draws is about 10\^",
    ):
        _call(REJECTION, mechanism=dp.Gaussian(1e-3), released=40.0, max_simulations=200)
