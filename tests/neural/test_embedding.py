"""SPPE's embedding network on a long release: the SIR curve at L = 50 time points.

One tiny SPPE round per run (100 simulations, two noise copies, two epochs, a
small flow): these tests check the plumbing (shapes, joint training, the flow
conditioned on the embedding's features, saving and loading), not accuracy;
``benchmarks/neural_sir_embedding.py`` measures what the embedding buys.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from dpinfer.models import sir
from dpinfer.neural import CNNEmbedding, MLPEmbedding, load, sppe

from . import _toy

LENGTH = 50
TIMES = np.linspace(0.0, 150.0, LENGTH)
POPULATION = 10_000
TINY = _toy.tiny_settings()


@pytest.fixture(scope="module")
def problem():
    model = sir.model(simulator="approx", population=POPULATION, times=TIMES)
    mech = sir.mechanism(population=POPULATION, length=LENGTH)
    released = sir.simulate_release(
        sir.TRUTH, times=TIMES, population=POPULATION, simulator="approx", rng=3
    )
    return model, mech, released


def _run(problem, **kw):
    model, mech, released = problem
    return sppe(model, mech, released, **{**TINY, "rng": 1, **kw})


def _first_layer(estimator) -> torch.nn.Linear:
    return estimator.density.flow.transform.transforms[0].hyper[0]


@pytest.fixture(scope="module")
def cnn_run(problem):
    return _run(problem, embedding="cnn")


def test_the_flow_is_conditioned_on_the_embedding_features(problem, cnn_run):
    idata, estimator = cnn_run
    assert idata.posterior["log_beta"].shape == (4, 10)
    assert estimator.event_shape == (LENGTH,)
    # two parameters and 8 features instead of 50 release coordinates
    assert _first_layer(estimator).in_features == 2 + 8
    out = estimator.density.embedding(torch.zeros(3, LENGTH))
    assert out.shape == (3, 8)
    _, plain = _run(problem)
    assert _first_layer(plain).in_features == 2 + LENGTH


def _trained_module(problem, freeze: bool):
    net = CNNEmbedding(features=4, channels=4)(LENGTH)
    if freeze:
        net.requires_grad_(False)
    before = copy.deepcopy(net.state_dict())
    _, estimator = _run(problem, embedding=net)
    assert estimator.density.embedding is net
    after = net.state_dict()
    return any(not torch.equal(before[k], after[k]) for k in before)


def test_a_module_is_trained_jointly_with_the_flow(problem):
    assert _trained_module(problem, freeze=False)


def test_companion_a_frozen_module_is_seen_as_untrained(problem):
    # the check above would pass an embedding left out of the optimisation
    assert not _trained_module(problem, freeze=True)


def test_preset_embedding_saves_and_loads(cnn_run, problem, tmp_path):
    _, estimator = cnn_run
    path = tmp_path / "sir50.pt"
    estimator.save(path)
    loaded = load(path)
    params = {"log_beta": np.array([-0.5, -0.4]), "log_gamma": np.array([-3.0, -2.9])}
    released = problem[2]
    np.testing.assert_allclose(
        loaded.log_prob(params, released), estimator.log_prob(params, released), rtol=1e-6
    )
    a = estimator.sample(released, draws=20, rng=4).posterior["log_beta"]
    b = loaded.sample(released, draws=20, rng=4).posterior["log_beta"]
    np.testing.assert_array_equal(a, b)


def test_custom_embedding_needs_to_be_passed_again_to_load(problem, tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(LENGTH, 6), torch.nn.Tanh())
    _, estimator = _run(problem, embedding=net)
    path = tmp_path / "custom.pt"
    estimator.save(path)
    with pytest.raises(ValueError, match="custom embedding network; pass it"):
        load(path)
    fresh = torch.nn.Sequential(torch.nn.Linear(LENGTH, 6), torch.nn.Tanh())
    loaded = load(path, embedding=fresh)
    released = problem[2]
    params = {"log_beta": np.array([-0.5]), "log_gamma": np.array([-3.0])}
    np.testing.assert_allclose(
        loaded.log_prob(params, released), estimator.log_prob(params, released), rtol=1e-6
    )


@pytest.mark.parametrize(
    ("embedding", "error", "match"),
    [
        ("rnn", ValueError, "embedding must be one of"),
        (3, TypeError, "embedding must be None"),
        (lambda size: "net", TypeError, "must return a torch module"),
        (torch.nn.Flatten(0), ValueError, "must map"),
    ],
)
def test_bad_embeddings_are_refused(problem, embedding, error, match):
    with pytest.raises(error, match=match):
        _run(problem, embedding=embedding)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: MLPEmbedding(features=0), "features"),
        (lambda: MLPEmbedding(layers=1.5), "layers"),
        (lambda: CNNEmbedding(kernel=4), "kernel must be odd"),
        (lambda: CNNEmbedding()(3), "at least 4 coordinates"),
    ],
)
def test_embedding_builders_validate(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()
