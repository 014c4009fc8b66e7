"""NUTS compiles a PyMC model once: sampled again, with new ``pm.Data``, it reuses the compiled
log-density and gradient, and draws what a fresh compilation would draw, seed for seed."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from dpinfer import _compile_once
from dpinfer.reference import sample_nuts

NUTS = {"draws": 100, "tune": 100, "chains": 2, "var_names": ["mu"]}


def _model(y):
    """mu ~ N(0, 10), y_i | mu ~ N(mu, 1): the posterior mean is about mean(y)."""
    with pm.Model() as model:
        data = pm.Data("y", y)
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("obs", mu, 1.0, observed=data)
    return model


@pytest.fixture
def compiles(monkeypatch):
    """Count the compilations of any model's log-density and gradient."""
    calls = []
    original = pm.Model.logp_dlogp_function

    def counted(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pm.Model, "logp_dlogp_function", counted)
    return calls


def _mu(idata) -> np.ndarray:
    return np.asarray(idata.posterior["mu"])


def test_a_model_sampled_again_is_compiled_once_and_draws_as_a_fresh_one(compiles):
    y = np.linspace(1.0, 3.0, 20)
    model = _model(y)
    first = sample_nuts(model, rng=1, **NUTS)
    again = sample_nuts(model, rng=1, **NUTS)
    assert len(compiles) == 1
    fresh = sample_nuts(_model(y), rng=1, **NUTS)
    assert len(compiles) == 2
    assert np.array_equal(_mu(first), _mu(again))
    assert np.array_equal(_mu(again), _mu(fresh))


def _fit_to_new_data(model):
    """Fit ``model`` at y = 2, then at y = 7 through pm.set_data: the two posterior means."""
    means = []
    for value in (2.0, 7.0):
        pm.set_data({"y": np.full(20, value)}, model=model)
        means.append(float(_mu(sample_nuts(model, rng=2, **NUTS)).mean()))
    return means


def test_new_data_through_set_data_moves_the_posterior_without_compiling_again(compiles):
    model = _model(np.full(20, 2.0))
    means = _fit_to_new_data(model)
    assert len(compiles) == 1
    # posterior sd 1/sqrt(20) = 0.22; 200 draws estimate the mean to about 0.02, so a miss
    # of 0.5 has a probability far below 1e-6
    assert means[0] == pytest.approx(2.0, abs=0.5)
    assert means[1] == pytest.approx(7.0, abs=0.5)


def test_data_of_another_shape_compile_again(compiles):
    model = _model(np.full(20, 2.0))
    sample_nuts(model, rng=2, **NUTS)
    pm.set_data({"y": np.full(5, 7.0)}, model=model)
    idata = sample_nuts(model, rng=2, **NUTS)
    assert len(compiles) == 2
    # the posterior mean is 6.99 (sd 0.45); 200 draws estimate it to about 0.05, so a miss
    # of 1.5 (a stale function fitted to y = 2) cannot happen by chance
    assert float(_mu(idata).mean()) == pytest.approx(7.0, abs=1.5)


def test_companion_a_function_compiled_with_the_data_fixed_fails_the_new_data_check():
    # planted: the cache hands the model a function in which y = 2 is a constant
    model = _model(np.full(20, 2.0))
    with pm.Model() as frozen:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("obs", mu, 1.0, observed=np.full(20, 2.0))
    stale = frozen.logp_dlogp_function(ravel_inputs=True)
    key = ((), (("ravel_inputs", True),), _compile_once._shape(model))
    _compile_once._COMPILED[model] = {key: stale}
    means = _fit_to_new_data(model)
    assert means[1] == pytest.approx(2.0, abs=0.5)  # the new data were never read
    assert not means[1] == pytest.approx(7.0, abs=0.5)


def test_the_model_is_left_as_it_was():
    # cores > 1 pickles the model for the workers: no compiled function stays attached to it
    model = _model(np.full(20, 2.0))
    with _compile_once.compiled_once(model):
        assert "logp_dlogp_function" in vars(model)
    assert "logp_dlogp_function" not in vars(model)
